/*
 * fuzz_api_route.c: libFuzzer target for the control plane's request routing and its
 * metadata-filter parser (platform/api/api_internal.h):
 *   - abx_api_lookup: api.c's route table walk (found / 400 / 404 / 405);
 *   - abx_api_match: the segment matcher, on the table's patterns and on a pattern of the input;
 *   - abx_api_parse_metadata_filter: GET /sandboxes?metadata=... (two layers of %XX, '+').
 * None of them needs a connection, so no libmicrohttpd state is faked.
 *
 * Input: byte 0 picks the method (GET POST DELETE PUT PATCH HEAD OPTIONS, by value mod 7), then
 * up to four '\n'-separated fields: url, metadata query, a free pattern, a segment value.
 * Oracles (abort() on violation):
 *   - match: a 1 rebuilds url exactly from the pattern with each "{x}" segment replaced by its
 *     param, in order; params are NUL-terminated inside their 128 bytes, non-empty, without '/';
 *     a pattern of at most two "{x}" filled with a segment value (non-empty, no '/', < 128
 *     bytes) matches and gives that value back (completeness), and gives -1 from 128 bytes on;
 *   - lookup: 0 names a row whose method is the request's and whose pattern matches (the first
 *     such row); 404, 405 and 400 agree with abx_api_match over the rows in table order; every
 *     row's pattern filled with a segment value finds that row (or an earlier one that matches);
 *   - metadata: NULL exactly when a piece between '&' has no '=', a bad escape or an empty key;
 *     otherwise an object of strings equal to the documented model below (last key wins).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_fields.h"
#include "api/api_internal.h"
#include "util/util.h"

#define FAIL(...)                                                                                  \
  do {                                                                                             \
    fprintf(stderr, "fuzz_api_route: " __VA_ARGS__);                                               \
    fputc('\n', stderr);                                                                           \
    abort();                                                                                       \
  } while (0)

static int is_slot(const char *seg, size_t n)
{
  return n > 1 && seg[0] == '{';
}

/* Fresh request whose params are filled with a non-NUL byte, so a missing terminator shows. */
static void req_reset(struct abx_api_req *r)
{
  memset(r, 0, sizeof *r);
  memset(r->params, 'Z', sizeof r->params);
}

/* After abx_api_match(pattern, url) == 1: rebuild url from the pattern and the params. */
static void check_match(const char *pattern, const char *url, const struct abx_api_req *r)
{
  size_t cap = strlen(pattern) + ABX_API_MAX_PARAMS * 128 + 1, o = 0;
  char *re = malloc(cap);
  if (!re)
    return;
  int np = 0;
  for (const char *p = pattern; *p;) {
    if (*p == '/') {
      re[o++] = *p++;
      continue;
    }
    size_t n = strcspn(p, "/");
    if (is_slot(p, n)) {
      if (np >= ABX_API_MAX_PARAMS)
        FAIL("'%s' matched '%s' with more than %d params", url, pattern, ABX_API_MAX_PARAMS);
      const char *v = r->params[np++];
      const char *end = memchr(v, 0, 128);
      if (!end || end == v || memchr(v, '/', (size_t)(end - v)))
        FAIL("'%s' matched '%s' with a bad param %d", url, pattern, np);
      memcpy(re + o, v, (size_t)(end - v));
      o += (size_t)(end - v);
    } else {
      memcpy(re + o, p, n);
      o += n;
    }
    p += n;
  }
  re[o] = 0;
  if (strcmp(re, url) != 0)
    FAIL("'%s' matched '%s', which rebuilds as '%s'", url, pattern, re);
  free(re);
}

/* Fill every "{x}" of pattern with value (*slots gets their count); NULL when there are more
 * than ABX_API_MAX_PARAMS. */
static char *fill(const char *pattern, const char *value, size_t *slots)
{
  size_t pl = strlen(pattern), vl = strlen(value);
  *slots = 0;
  for (const char *p = pattern; *p; p += strcspn(p, "/"), p += *p == '/')
    *slots += is_slot(p, strcspn(p, "/"));
  char *out = *slots <= ABX_API_MAX_PARAMS ? malloc(pl + *slots * vl + 1) : NULL;
  if (!out)
    return NULL;
  size_t o = 0;
  for (const char *p = pattern; *p;) {
    size_t n = *p == '/' ? 1 : strcspn(p, "/");
    const char *src = *p != '/' && is_slot(p, n) ? value : p;
    size_t k = src == value ? vl : n;
    memcpy(out + o, src, k);
    o += k;
    p += n;
  }
  out[o] = 0;
  return out;
}

static void fuzz_match(const char *pattern, const char *url, const char *value)
{
  struct abx_api_req r;
  req_reset(&r);
  int m = abx_api_match(pattern, url, &r);
  if (m < -1 || m > 1)
    FAIL("match('%s', '%s') returned %d", pattern, url, m);
  if (m == 1)
    check_match(pattern, url, &r);
  /* Completeness: a well-formed pattern filled with a good segment value matches. */
  size_t vl = strlen(value);
  if ((pattern[0] && pattern[0] != '/') || vl == 0 || strchr(value, '/'))
    return;
  size_t slots;
  char *u = fill(pattern, value, &slots);
  if (!u)
    return;
  req_reset(&r);
  m = abx_api_match(pattern, u, &r);
  if (slots > 0 && vl >= 128 ? m != -1 : m != 1)
    FAIL("'%s' filled as '%s' (%zu params of %zu bytes) gave %d", pattern, u, slots, vl, m);
  if (m == 1)
    check_match(pattern, u, &r);
  free(u);
}

/* What abx_api_lookup must answer, from abx_api_match over the rows in order. */
static int model_lookup(const char *method, const char *url, size_t *row)
{
  int known = 0;
  for (size_t i = 0; i < abx_api_nroutes; i++) {
    struct abx_api_req r;
    req_reset(&r);
    int m = abx_api_match(abx_api_routes[i].pattern, url, &r);
    if (m < 0)
      return 400;
    if (m == 1 && strcmp(abx_api_routes[i].method, method) == 0) {
      *row = i;
      return 0;
    }
    known |= m == 1;
  }
  return known ? 405 : 404;
}

static void fuzz_lookup(const char *method, const char *url)
{
  struct abx_api_req r;
  req_reset(&r);
  const struct abx_api_route *route = NULL;
  int st = abx_api_lookup(method, url, &r, &route);
  size_t row = abx_api_nroutes;
  int want = model_lookup(method, url, &row);
  if (st != want)
    FAIL("lookup(%s '%s') gave %d, the table says %d", method, url, st, want);
  if (st == 0) {
    if (route != &abx_api_routes[row])
      FAIL("lookup(%s '%s') picked row %td, not the first fit %zu", method, url,
           route - abx_api_routes, row);
    check_match(route->pattern, url, &r);
  }
}

/* Every row, filled with the value, routes to itself or to an earlier row that fits as well. */
static void fuzz_rows(const char *value)
{
  size_t vl = strlen(value);
  if (vl == 0 || strchr(value, '/'))
    return;
  for (size_t i = 0; i < abx_api_nroutes; i++) {
    size_t slots;
    char *u = fill(abx_api_routes[i].pattern, value, &slots);
    if (!u)
      continue;
    struct abx_api_req r;
    req_reset(&r);
    const struct abx_api_route *route = NULL;
    int st = abx_api_lookup(abx_api_routes[i].method, u, &r, &route);
    if (slots > 0 && vl >= 128 ? st != 400 : (st != 0 || route > &abx_api_routes[i]))
      FAIL("row %zu (%s %s) filled as '%s' gave %d", i, abx_api_routes[i].method,
           abx_api_routes[i].pattern, u, st);
    free(u);
  }
}

/* Whether jansson takes s as a string (valid UTF-8). */
static int utf8_ok(const char *s)
{
  json_t *j = json_string(s);
  int ok = j != NULL;
  json_decref(j);
  return ok;
}

/* The documented filter, built independently: pieces between '&' (empty ones skipped) are
 * "k=v" (first '='), both decoded with '+' as space, key non-empty; a second %XX layer is undone
 * when it decodes cleanly in both; the last of repeated keys wins. A pair whose key or value is
 * not UTF-8 is absent from the object (jansson refuses it, so the pair silently drops out). */
static json_t *model_filter(const char *q)
{
  json_t *o = json_object();
  char *dup = strdup(q ? q : "");
  int ok = o && dup;
  for (char *p = dup; ok && p && *p;) {
    char *amp = strchr(p, '&'), *next = amp ? amp + 1 : NULL;
    if (amp)
      *amp = 0;
    char *eq = strchr(p, '=');
    if (*p && !eq)
      ok = 0;
    if (*p && eq) {
      *eq = 0;
      char *v = eq + 1;
      ok = abx_percent_decode(p, 1) == 0 && abx_percent_decode(v, 1) == 0 && *p;
      char *k2 = ok ? strdup(p) : NULL, *v2 = ok ? strdup(v) : NULL;
      int twice = k2 && v2 && abx_percent_decode(k2, 0) == 0 && abx_percent_decode(v2, 0) == 0;
      json_t *s = ok && utf8_ok(twice ? k2 : p) ? json_string(twice ? v2 : v) : NULL;
      if (s)
        json_object_set_new(o, twice ? k2 : p, s);
      free(k2);
      free(v2);
    }
    p = next;
  }
  free(dup);
  if (!ok) {
    json_decref(o);
    return NULL;
  }
  return o;
}

static void fuzz_filter(const char *q, int null_q)
{
  json_t *got = abx_api_parse_metadata_filter(null_q ? NULL : q);
  json_t *want = model_filter(null_q ? NULL : q);
  if (!got != !want)
    FAIL("metadata '%s': parser %s, model %s", q, got ? "accepted" : "refused",
         want ? "accepted" : "refused");
  if (got) {
    const char *k;
    json_t *v;
    json_object_foreach(got, k, v) if (!*k || !json_is_string(v))
        FAIL("metadata '%s': key '%s' is empty or its value not a string", q, k);
    if (!json_equal(got, want)) {
      char *g = json_dumps(got, JSON_COMPACT), *w = json_dumps(want, JSON_COMPACT);
      FAIL("metadata '%s': parser gave %s, model %s", q, g ? g : "?", w ? w : "?");
    }
  }
  json_decref(got);
  json_decref(want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static const char *const methods[] = {"GET", "POST", "DELETE", "PUT", "PATCH", "HEAD", "OPTIONS"};
  if (size < 1)
    return 0;
  const char *method = methods[data[0] % 7];
  char *field[FUZZ_FIELDS];
  char *buf = fuzz_fields(data, size, field);
  if (!buf)
    return 0;
  fuzz_lookup(method, field[0]);
  for (size_t i = 0; i < abx_api_nroutes; i++)
    fuzz_match(abx_api_routes[i].pattern, field[0], field[3]);
  fuzz_match(field[2], field[0], field[3]);
  fuzz_rows(field[3]);
  fuzz_filter(field[1], data[0] & 0x80 && !field[1][0]);
  free(buf);
  return 0;
}
