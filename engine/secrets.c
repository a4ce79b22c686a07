/*
 * secrets.c: secret registry and masking. See secrets.h.
 *
 * Masking finds every occurrence of every registered form, then replaces each group of
 * overlapping occurrences by "***", so nested secrets (a Basic header holds the base64 of the key)
 * vanish whole.
 */
#include "secrets.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"

struct abx_sink {
  FILE *f;   /* NULL: unused */
  char *buf; /* bytes held back: the start of what may be a secret */
  size_t len, cap;
};

struct abx_secrets {
  char **forms; /* every registered form, sorted by length, longest first */
  size_t *lens;
  size_t n, cap;
  struct abx_sink sinks[ABX_SINKS_MAX];
};

struct abx_secrets *abx_secrets_new(void)
{
  return calloc(1, sizeof(struct abx_secrets));
}

void abx_secrets_free(struct abx_secrets *s)
{
  if (!s)
    return;
  abx_secrets_flush(s, NULL);
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
  char *out = malloc(ABX_B64_LEN(len) + 1);
  if (!out)
    return;
  size_t n = abx_b64_encode(out, v, len, ABX_B64_STD);
  add_form(s, out, n);
  while (n > 0 && out[n - 1] == '=') /* unpadded form too */
    n--;
  add_form(s, out, n);
  free(out);
}

/* The letter of a control byte's short JSON escape (\b \f \n \r \t), or 0. */
static char short_escape(unsigned char c)
{
  switch (c) {
  case '\b': return 'b';
  case '\f': return 'f';
  case '\n': return 'n';
  case '\r': return 'r';
  case '\t': return 't';
  default: return 0;
  }
}

/* The JSON string forms of a value: '/' escaped as "\/" (PHP, some Java) or left alone (Python,
 * Go, jansson, cjson); \b \f \n \r \t in their short escapes (what encoders write) or as \u00xx;
 * '"', '\\' and other control bytes escaped in every form. Identical forms are kept once. */
static void add_json_escaped(struct abx_secrets *s, const char *v, size_t len)
{
  char *out = malloc(len * 6 + 1);
  if (!out)
    return;
  for (int variant = 0; variant < 4; variant++) {
    int slash = variant & 1, short_ctl = variant & 2;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
      unsigned char c = (unsigned char)v[i];
      char sc = short_ctl ? short_escape(c) : 0;
      if (sc) {
        out[o++] = '\\';
        out[o++] = sc;
      } else if (c == '"' || c == '\\' || (c == '/' && slash)) {
        out[o++] = '\\';
        out[o++] = (char)c;
      } else if (c < 0x20) {
        o += (size_t)snprintf(out + o, 7, "\\u%04x", c);
      } else {
        out[o++] = (char)c;
      }
    }
    add_form(s, out, o);
  }
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

/* Finds every occurrence of every form: ends[i] is one past the furthest end of an occurrence
 * starting at byte i (0: none). */
static void mark(const struct abx_secrets *s, const char *text, size_t len, size_t *ends)
{
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
}

/* One past the end of the group of overlapping occurrences that starts at byte i (ends[i] != 0). */
static size_t group_end(const size_t *ends, size_t i)
{
  size_t stop = ends[i];
  for (size_t j = i + 1; j < stop; j++)
    if (ends[j] > stop)
      stop = ends[j];
  return stop;
}

/* Copies text[0, len) into out with each group of occurrences replaced by "***"; no group may
 * cross len. Returns the bytes written (at most len: a form is longer than 3 bytes). */
static size_t render(const char *text, size_t len, const size_t *ends, char *out)
{
  size_t o = 0;
  for (size_t i = 0; i < len;) {
    if (ends[i]) {
      memcpy(out + o, "***", 3);
      o += 3;
      i = group_end(ends, i);
    } else {
      out[o++] = text[i++];
    }
  }
  return o;
}

char *abx_secrets_mask(const struct abx_secrets *s, const char *text, size_t len, size_t *out_len)
{
  /* overlapping occurrences merge into one "***"; adjacent ones stay separate ("******") */
  size_t *ends = calloc(len ? len : 1, sizeof *ends);
  char *out = malloc(len + 1);
  if (!ends || !out) {
    free(ends);
    free(out);
    return NULL;
  }
  mark(s, text, len, ends);
  size_t o = render(text, len, ends, out);
  out[o] = '\0';
  free(ends);
  if (out_len)
    *out_len = o;
  return out;
}

/* The longest suffix of text that is a proper prefix of some form (0: none): the bytes that could
 * be the start of a secret whose rest is still to come. */
static size_t partial_tail(const struct abx_secrets *s, const char *text, size_t len)
{
  size_t best = 0;
  for (size_t k = 0; k < s->n && s->lens[k] - 1 > best; k++) { /* longest forms first */
    size_t l = s->lens[k] - 1 < len ? s->lens[k] - 1 : len;
    for (; l > best; l--)
      if (text[len - l] == s->forms[k][0] && memcmp(text + len - l, s->forms[k], l) == 0) {
        best = l;
        break;
      }
  }
  return best;
}

/* The held-back bytes of one output stream. */
static struct abx_sink *sink_for(struct abx_secrets *s, FILE *f)
{
  for (size_t i = 0; i < ABX_SINKS_MAX; i++)
    if (s->sinks[i].f == f)
      return &s->sinks[i];
  for (size_t i = 0; i < ABX_SINKS_MAX; i++)
    if (!s->sinks[i].f) {
      s->sinks[i].f = f;
      return &s->sinks[i];
    }
  return NULL;
}

/* Writes text[0, len) masked to f and returns 0, or -1 when out of memory (nothing written). */
static int write_masked(const struct abx_secrets *s, FILE *f, const char *text, size_t len)
{
  size_t n;
  char *m = abx_secrets_mask(s, text, len, &n);
  if (!m)
    return -1;
  fwrite(m, 1, n, f);
  fflush(f);
  free(m);
  return 0;
}

int abx_secrets_write(struct abx_secrets *s, FILE *f, const char *text, size_t len)
{
  if (len == 0) /* nothing to add; what is held stays held */
    return 0;
  struct abx_sink *k = sink_for(s, f);
  if (!k)
    return write_masked(s, f, text, len);
  if (k->len + len > k->cap) {
    size_t cap = k->cap ? k->cap : 256;
    while (cap < k->len + len)
      cap *= 2;
    char *b = realloc(k->buf, cap);
    if (!b) { /* cannot hold: mask what is held and what is new apart */
      abx_secrets_flush(s, f);
      return write_masked(s, f, text, len);
    }
    k->buf = b;
    k->cap = cap;
  }
  memcpy(k->buf + k->len, text, len);
  size_t n = k->len + len;
  size_t *ends = calloc(n ? n : 1, sizeof *ends);
  char *out = malloc(n + 1);
  if (!ends || !out) {
    free(ends);
    free(out);
    k->len = n;
    abx_secrets_flush(s, f);
    return -1;
  }
  mark(s, k->buf, n, ends);
  size_t cut = n - partial_tail(s, k->buf, n);
  for (size_t i = 0; i < cut;) { /* a group that crosses the cut is held back whole */
    if (!ends[i]) {
      i++;
      continue;
    }
    size_t e = group_end(ends, i);
    if (e > cut) {
      cut = i;
      break;
    }
    i = e;
  }
  size_t o = render(k->buf, cut, ends, out);
  fwrite(out, 1, o, f);
  fflush(f);
  memmove(k->buf, k->buf + cut, n - cut);
  k->len = n - cut;
  if (k->len == 0 && k->cap > 65536) { /* one large write does not keep its size allocated */
    free(k->buf);
    k->buf = NULL;
    k->cap = 0;
  }
  free(ends);
  free(out);
  return 0;
}

void abx_secrets_flush(struct abx_secrets *s, FILE *f)
{
  for (size_t i = 0; s && i < ABX_SINKS_MAX; i++) {
    struct abx_sink *k = &s->sinks[i];
    if (!k->f || (f && k->f != f))
      continue;
    if (k->len && write_masked(s, k->f, k->buf, k->len) != 0)
      fputs("(output dropped: out of memory while masking)\n", k->f);
    free(k->buf); /* the slot is free again; the next write to the stream takes one anew */
    memset(k, 0, sizeof *k);
  }
}
