/*
 * secrets.c: secret registry and masking. See secrets.h.
 *
 * Masking finds every occurrence of every registered form, then replaces each group of
 * overlapping occurrences by "***", so nested secrets (a Basic header holds the base64 of the key)
 * vanish whole.
 */
#include "secrets.h"

#include <curl/curl.h>
#include <lauxlib.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct abx_secrets {
  char **forms;     /* every registered form, sorted by length, longest first */
  size_t *lens;
  size_t n, cap;
};

struct abx_secrets *abx_secrets_new(void)
{
  return calloc(1, sizeof(struct abx_secrets));
}

void abx_secrets_free(struct abx_secrets *s)
{
  if (!s)
    return;
  for (size_t i = 0; i < s->n; i++)
    free(s->forms[i]);
  free(s->forms);
  free(s->lens);
  free(s);
}

static void add_form(struct abx_secrets *s, const char *v, size_t len)
{
  if (len < ABX_SECRET_MIN_LEN || s->n >= ABX_SECRETS_MAX)
    return;
  for (size_t i = 0; i < s->n; i++)
    if (s->lens[i] == len && memcmp(s->forms[i], v, len) == 0)
      return;
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 16;
    char **f = realloc(s->forms, cap * sizeof *f);
    if (!f)
      goto oom;
    s->forms = f;
    size_t *l = realloc(s->lens, cap * sizeof *l);
    if (!l)
      goto oom;
    s->lens = l;
    s->cap = cap;
  }
  char *copy = malloc(len + 1);
  if (!copy)
    goto oom;
  memcpy(copy, v, len);
  copy[len] = '\0';
  size_t at = 0; /* keep longest first */
  while (at < s->n && s->lens[at] >= len)
    at++;
  memmove(s->forms + at + 1, s->forms + at, (s->n - at) * sizeof *s->forms);
  memmove(s->lens + at + 1, s->lens + at, (s->n - at) * sizeof *s->lens);
  s->forms[at] = copy;
  s->lens[at] = len;
  s->n++;
  return;
oom:
  fprintf(stderr, "abxlua: out of memory registering a secret\n");
}

static void add_base64(struct abx_secrets *s, const char *v, size_t len)
{
  size_t out_cap = 4 * ((len + 2) / 3) + 1;
  unsigned char *out = malloc(out_cap);
  if (!out)
    return;
  int n = EVP_EncodeBlock(out, (const unsigned char *)v, (int)len);
  add_form(s, (char *)out, (size_t)n);
  while (n > 0 && out[n - 1] == '=') /* unpadded form too */
    n--;
  add_form(s, (char *)out, (size_t)n);
  free(out);
}

static void add_json_escaped(struct abx_secrets *s, const char *v, size_t len)
{
  char *out = malloc(len * 6 + 1);
  if (!out)
    return;
  size_t o = 0;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)v[i];
    if (c == '"' || c == '\\' || c == '/') {
      out[o++] = '\\';
      out[o++] = (char)c;
    } else if (c < 0x20) {
      o += (size_t)sprintf(out + o, "\\u%04x", c);
    } else {
      out[o++] = (char)c;
    }
  }
  add_form(s, out, o);
  free(out);
}

void abx_secrets_add(struct abx_secrets *s, const char *value, size_t len)
{
  if (!s || !value || len < ABX_SECRET_MIN_LEN)
    return;
  add_form(s, value, len);
  add_base64(s, value, len);
  add_json_escaped(s, value, len);
  char *esc = curl_easy_escape(NULL, value, (int)len);
  if (esc) {
    add_form(s, esc, strlen(esc));
    curl_free(esc);
  }
  char *basic = malloc(len + 2); /* HTTP Basic "<user>:" as the E2B SDKs send it */
  if (basic) {
    memcpy(basic, value, len);
    basic[len] = ':';
    add_base64(s, basic, len + 1);
    free(basic);
  }
}

char *abx_secrets_mask(const struct abx_secrets *s, const char *text, size_t len, size_t *out_len)
{
  /* ends[i]: one past the furthest end of an occurrence starting at byte i (0: none). Overlapping
   * occurrences merge into one "***"; adjacent ones stay separate ("******"). */
  size_t *ends = calloc(len ? len : 1, sizeof *ends);
  char *out = malloc(len + 1); /* each occurrence is >= ABX_SECRET_MIN_LEN bytes, becomes 3 */
  if (!ends || !out) {
    free(ends);
    free(out);
    return NULL;
  }
  for (size_t k = 0; s && k < s->n; k++) {
    const char *from = text;
    size_t left = len;
    const char *hit;
    while (left >= s->lens[k] && (hit = memmem(from, left, s->forms[k], s->lens[k])) != NULL) {
      size_t at = (size_t)(hit - text);
      if (ends[at] < at + s->lens[k])
        ends[at] = at + s->lens[k];
      size_t adv = (size_t)(hit - from) + 1;
      from += adv;
      left -= adv;
    }
  }
  size_t o = 0;
  for (size_t i = 0; i < len;) {
    if (ends[i]) {
      size_t stop = ends[i];
      for (size_t j = i + 1; j < stop; j++) /* extend over occurrences that overlap this one */
        if (ends[j] > stop)
          stop = ends[j];
      memcpy(out + o, "***", 3);
      o += 3;
      i = stop;
    } else {
      out[o++] = text[i++];
    }
  }
  out[o] = '\0';
  free(ends);
  if (out_len)
    *out_len = o;
  return out;
}

void abx_secrets_push_masked(lua_State *L, const struct abx_secrets *s, const char *text)
{
  size_t n;
  char *m = abx_secrets_mask(s, text, strlen(text), &n);
  if (!m) {
    lua_pushliteral(L, "(message dropped: out of memory while masking)");
    return;
  }
  lua_pushlstring(L, m, n);
  free(m);
}
