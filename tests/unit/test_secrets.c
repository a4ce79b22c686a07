/*
 * test_secrets.c: unit tests of engine/secrets.h (the secret registry and masking) and of
 * bindings/secrets_lua.h (a masked string pushed onto a Lua stack).
 *
 * The derived forms are written out literally (computed with Python's base64 and
 * urllib.parse.quote(v, safe="")), so a wrong encoder in the engine cannot agree with itself.
 */
#include <lauxlib.h>
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "secrets.h"
#include "secrets_lua.h"

/* Masks a NUL-terminated string; returns a malloc'd copy (caller frees). */
static char *mask(const struct abx_secrets *s, const char *text)
{
  size_t n = 0;
  char *m = abx_secrets_mask(s, text, strlen(text), &n);
  CHECK(m != NULL);
  if (m)
    CHECK(n == strlen(m));
  return m;
}

#define CHECK_MASK(s, text, expected)                                                              \
  do {                                                                                             \
    char *m_ = mask((s), (text));                                                                  \
    CHECK_STR(m_, (expected));                                                                     \
    free(m_);                                                                                      \
  } while (0)

#define TOKEN "tok-9f8e7d6c5b4a"

static void add_str(struct abx_secrets *s, const char *v)
{
  abx_secrets_add(s, v, strlen(v));
}

static void test_plain_value(void)
{
  struct abx_secrets *s = abx_secrets_new();
  CHECK(s != NULL);
  add_str(s, TOKEN);
  CHECK_MASK(s, "X-API-Key: " TOKEN "\n", "X-API-Key: ***\n");
  CHECK_MASK(s, TOKEN, "***");
  CHECK_MASK(s, TOKEN TOKEN, "******");
  CHECK_MASK(s, "a" TOKEN "b" TOKEN "c", "a***b***c");
  /* a near miss is left alone */
  CHECK_MASK(s, "tok-9f8e7d6c5b4", "tok-9f8e7d6c5b4");
  CHECK_MASK(s, "Tok-9f8e7d6c5b4a", "Tok-9f8e7d6c5b4a");
  /* registering again changes nothing */
  add_str(s, TOKEN);
  CHECK_MASK(s, "[" TOKEN "]", "[***]");
  abx_secrets_free(s);
}

static void test_derived_forms(void)
{
  struct abx_secrets *s = abx_secrets_new();
  add_str(s, TOKEN);
  /* base64, padded and unpadded */
  CHECK_MASK(s, "b64=dG9rLTlmOGU3ZDZjNWI0YQ==;", "b64=***;");
  CHECK_MASK(s, "b64=dG9rLTlmOGU3ZDZjNWI0YQ;", "b64=***;");
  /* HTTP Basic: base64(value + ":") */
  CHECK_MASK(s, "Authorization: Basic dG9rLTlmOGU3ZDZjNWI0YTo=\r\n",
             "Authorization: Basic ***\r\n");
  abx_secrets_free(s);

  /* a value with characters that every encoding changes */
  static const char v[] = "pa\"ss/wo\\rd+x y";
  s = abx_secrets_new();
  add_str(s, v);
  CHECK_MASK(s, "raw pa\"ss/wo\\rd+x y.", "raw ***.");
  CHECK_MASK(s, "url ?k=pa%22ss%2Fwo%5Crd%2Bx%20y&", "url ?k=***&");
  CHECK_MASK(s, "{\"password\":\"pa\\\"ss\\/wo\\\\rd+x y\"}", "{\"password\":\"***\"}");
  CHECK_MASK(s, "b64 cGEic3Mvd29ccmQreCB5 ", "b64 *** ");
  CHECK_MASK(s, "Basic cGEic3Mvd29ccmQreCB5Og==", "Basic ***");
  CHECK_MASK(s, "Basic cGEic3Mvd29ccmQreCB5Og", "Basic ***");
  abx_secrets_free(s);

  /* a control character is JSON-escaped as \u00XX */
  static const char ctl[] = "line1\nline2";
  s = abx_secrets_new();
  add_str(s, ctl);
  CHECK_MASK(s, "{\"k\":\"line1\\u000aline2\"}", "{\"k\":\"***\"}");
  CHECK_MASK(s, "line1\nline2", "***");
  abx_secrets_free(s);
}

static void test_min_len(void)
{
  struct abx_secrets *s = abx_secrets_new();
  CHECK(ABX_SECRET_MIN_LEN == 6);
  add_str(s, "abcde"); /* 5 bytes: ignored */
  add_str(s, "");
  abx_secrets_add(s, NULL, 0);
  CHECK_MASK(s, "abcde abcdef YWJjZGU=", "abcde abcdef YWJjZGU=");
  add_str(s, "abcdef"); /* 6 bytes: registered */
  CHECK_MASK(s, "abcde abcdef YWJjZGVm YWJjZGVmOg==", "abcde *** *** ***");
  abx_secrets_free(s);
}

static void test_longest_wins(void)
{
  /* one secret is a prefix of the other: the longer one is masked whole, whatever the order */
  for (int order = 0; order < 2; order++) {
    struct abx_secrets *s = abx_secrets_new();
    if (order == 0) {
      add_str(s, "secret123");
      add_str(s, "secret123456");
    } else {
      add_str(s, "secret123456");
      add_str(s, "secret123");
    }
    CHECK_MASK(s, "k=secret123456;", "k=***;");
    CHECK_MASK(s, "k=secret123;", "k=***;");
    CHECK_MASK(s, "k=secret1234;", "k=***4;");
    abx_secrets_free(s);
  }

  /* one secret inside the other */
  struct abx_secrets *s = abx_secrets_new();
  add_str(s, "inner-part");
  add_str(s, "outer-inner-part-x");
  CHECK_MASK(s, "(outer-inner-part-x)", "(***)");
  CHECK_MASK(s, "(inner-part)", "(***)");
  abx_secrets_free(s);
}

/* Two secrets overlap without one containing the other: no byte of either may stay visible. */
static void test_overlap_leaves_nothing(void)
{
  struct abx_secrets *s = abx_secrets_new();
  add_str(s, "abcdefgh");     /* 8 bytes */
  add_str(s, "cdefghijklmn"); /* 12 bytes, overlapping the tail of the first */
  char *m = mask(s, "<abcdefghijklmn>");
  CHECK(m && strstr(m, "ijklmn") == NULL); /* the tail of the second secret must not leak */
  CHECK(m && strstr(m, "ab") == NULL);
  if (m && strstr(m, "ijklmn"))
    fprintf(stderr, "  masked: \"%s\" (6 bytes of \"cdefghijklmn\" visible)\n", m);
  free(m);
  abx_secrets_free(s);
}

static void test_unchanged_bytes(void)
{
  struct abx_secrets *s = abx_secrets_new();
  add_str(s, TOKEN);
  static const char text[] = "no\0secret\0here tok-9f8e7d6c5b4 \xff\xfe\x01 tok-\0-9f8e7d6c5b4a";
  size_t len = sizeof text - 1;
  size_t n = 0;
  char *m = abx_secrets_mask(s, text, len, &n);
  CHECK(m != NULL);
  CHECK(n == len);
  CHECK(m && memcmp(m, text, len) == 0);
  CHECK(m && m[len] == '\0');
  free(m);

  /* a secret after a NUL byte is still found */
  static const char text2[] = "a\0" TOKEN "\0b";
  m = abx_secrets_mask(s, text2, sizeof text2 - 1, &n);
  CHECK(n == 7);
  CHECK(m && memcmp(m, "a\0***\0b", 7) == 0);
  free(m);

  /* empty text; NULL out_len is allowed */
  m = abx_secrets_mask(s, "", 0, &n);
  CHECK(m && n == 0 && m[0] == '\0');
  free(m);
  m = abx_secrets_mask(s, TOKEN, strlen(TOKEN), NULL);
  CHECK_STR(m, "***");
  free(m);

  /* an empty registry changes nothing */
  struct abx_secrets *empty = abx_secrets_new();
  m = abx_secrets_mask(empty, text, len, &n);
  CHECK(n == len && m && memcmp(m, text, len) == 0);
  free(m);
  abx_secrets_free(empty);
  abx_secrets_free(s);
}

/* A run with many sandboxes registers an access token per sandbox, and every one of them must stay
 * masked: 2000 values (about 7 forms each) fit in ABX_SECRETS_MAX forms. */
static void test_many_values(void)
{
  struct abx_secrets *s = abx_secrets_new();
  enum { N = 2000 };
  CHECK(N * 7 <= ABX_SECRETS_MAX);
  char v[32];
  for (int i = 0; i < N; i++) {
    snprintf(v, sizeof v, "token-%08d", i);
    add_str(s, v);
  }
  int unmasked = 0, first_unmasked = -1;
  for (int i = 0; i < N; i++) {
    snprintf(v, sizeof v, "token-%08d", i);
    char *m = abx_secrets_mask(s, v, strlen(v), NULL);
    if (!m || strcmp(m, "***") != 0) {
      if (first_unmasked < 0)
        first_unmasked = i;
      unmasked++;
    }
    free(m);
  }
  CHECK(unmasked == 0);
  if (unmasked)
    fprintf(stderr, "  %d of %d registered values not masked, the first is value #%d\n", unmasked,
            N, first_unmasked + 1);
  abx_secrets_free(s);
}

/* The JSON forms encoders actually write: '/' left alone or escaped, \n short or \u000a. */
static void test_json_variants(void)
{
  struct abx_secrets *s = abx_secrets_new();
  add_str(s, "to/ken\nline");
  CHECK_MASK(s, "{\"t\":\"to/ken\\nline\"}", "{\"t\":\"***\"}");   /* Python, Go, jansson */
  CHECK_MASK(s, "{\"t\":\"to\\/ken\\nline\"}", "{\"t\":\"***\"}"); /* PHP */
  CHECK_MASK(s, "{\"t\":\"to/ken\\u000aline\"}", "{\"t\":\"***\"}");
  CHECK_MASK(s, "{\"t\":\"to\\/ken\\u000aline\"}", "{\"t\":\"***\"}");
  abx_secrets_free(s);
}

/* Writes each piece through abx_secrets_write to one stream; returns what reached the stream
 * before the final flush (*early) and in all (returned); both malloc'd. */
static char *write_pieces(struct abx_secrets *s, const char *const *pieces, char **early)
{
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  CHECK(f != NULL);
  for (const char *const *p = pieces; *p; p++)
    CHECK(abx_secrets_write(s, f, *p, strlen(*p)) == 0);
  fflush(f);
  *early = strndup(buf, len);
  abx_secrets_flush(s, f);
  fclose(f);
  return buf;
}

/* A secret written in two pieces is masked whatever the cut; what cannot begin a secret is written
 * at once; a tail never completed is written at the flush, as is. */
static void test_write_across_pieces(void)
{
  struct abx_secrets *s = abx_secrets_new();
  add_str(s, TOKEN);
  char line[64];
  snprintf(line, sizeof line, "key=%s end\n", TOKEN);
  for (size_t cut = 0; cut <= strlen(line); cut++) {
    char a[64], *early;
    snprintf(a, sizeof a, "%.*s", (int)cut, line);
    const char *pieces[] = {a, line + cut, NULL};
    char *all = write_pieces(s, pieces, &early);
    CHECK_STR(all, "key=*** end\n");
    CHECK_STR(early, "key=*** end\n"); /* nothing held once the line is complete */
    free(all);
    free(early);
  }
  /* every byte its own write */
  char *bytes[64];
  size_t n = strlen(line);
  for (size_t i = 0; i < n; i++)
    bytes[i] = strndup(line + i, 1);
  bytes[n] = NULL;
  char *early, *all = write_pieces(s, (const char *const *)bytes, &early);
  CHECK_STR(all, "key=*** end\n");
  free(all);
  free(early);
  for (size_t i = 0; i < n; i++)
    free(bytes[i]);

  const char *empty[] = {"", "tok-9f", "", "8e7d6c5b4a!",
                         "", NULL}; /* empty writes change nothing */
  all = write_pieces(s, empty, &early);
  CHECK_STR(early, "***!");
  free(all);
  free(early);
  const char *status[] = {"running 3 tests", NULL}; /* no tail that may begin a secret */
  all = write_pieces(s, status, &early);
  CHECK_STR(early, "running 3 tests");
  free(all);
  free(early);
  const char *unfinished[] = {"ends with tok-9f8", NULL}; /* held until the flush, then as is */
  all = write_pieces(s, unfinished, &early);
  CHECK_STR(early, "ends with ");
  CHECK_STR(all, "ends with tok-9f8");
  free(all);
  free(early);
  abx_secrets_free(s);
}

/* A complete occurrence that overlaps the start of another secret is held until the other is
 * complete or refuted, so the two still merge into one "***". */
static void test_write_overlap_across_pieces(void)
{
  struct abx_secrets *s = abx_secrets_new();
  add_str(s, "abcdef");
  add_str(s, "defghijk");
  const char *merged[] = {"x abcdef", "ghijk y", NULL};
  char *early, *all = write_pieces(s, merged, &early);
  CHECK_STR(all, "x *** y");
  free(all);
  free(early);
  const char *refuted[] = {"x abcdef", "gz", NULL};
  all = write_pieces(s, refuted, &early);
  CHECK_STR(all, "x ***gz");
  CHECK_STR(early, "x ***gz");
  free(all);
  free(early);
  abx_secrets_free(s);
}

static void test_push_masked(void)
{
  lua_State *L = luaL_newstate();
  struct abx_secrets *s = abx_secrets_new();
  add_str(s, TOKEN);
  int top = lua_gettop(L);
  abx_secrets_push_masked(L, s, "key " TOKEN " end");
  CHECK(lua_gettop(L) == top + 1);
  CHECK_STR(lua_tostring(L, -1), "key *** end");
  lua_close(L);
  abx_secrets_free(s);
  abx_secrets_free(NULL); /* allowed */
}

int main(void)
{
  RUN(test_plain_value);
  RUN(test_derived_forms);
  RUN(test_min_len);
  RUN(test_longest_wins);
  RUN(test_overlap_leaves_nothing);
  RUN(test_unchanged_bytes);
  RUN(test_many_values);
  RUN(test_json_variants);
  RUN(test_write_across_pieces);
  RUN(test_write_overlap_across_pieces);
  RUN(test_push_masked);
  return check_report();
}
