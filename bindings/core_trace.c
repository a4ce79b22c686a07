/*
 * core_trace.c: HTTP traces of core.request, core.stream and core.ndjson (-vv, -vvv; contract:
 * docs/ENGINE.md, core.set_trace). Every line goes through the secrets registry before stderr.
 */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core.h"
#include "http.h"
#include "loop.h"
#include "secrets.h"

#define TRACE_LINE_MAX 2048 /* bytes of a masked trace line shown; the rest becomes "..." */
#define TRACE_BODY_MAX 512  /* bytes of a masked body shown at -vvv */

/* Writes one trace line to stderr: formatted whole, masked whole, then cut to TRACE_LINE_MAX, so a
 * secret across the cut is masked rather than shown in part. */
static void trace_line(struct abx_loop *loop, const char *fmt, ...)
{
  char *buf = NULL;
  va_list ap;
  va_start(ap, fmt);
  int n = vasprintf(&buf, fmt, ap);
  va_end(ap);
  size_t len = 0;
  char *m = n < 0 ? NULL : abx_secrets_mask(loop->secrets, buf, (size_t)n, &len);
  free(buf);
  if (!m) {
    static const char oom[] = "abxlua: http (trace dropped: out of memory)\n";
    abx_secrets_write(loop->secrets, stderr, oom, sizeof oom - 1);
    return;
  }
  char *line = NULL;
  int w =
      asprintf(&line, "abxlua: http %.*s%s\n", (int)(len < TRACE_LINE_MAX ? len : TRACE_LINE_MAX),
               m, len > TRACE_LINE_MAX ? "..." : "");
  if (w >= 0)
    abx_secrets_write(loop->secrets, stderr, line, (size_t)w);
  free(line);
  free(m);
}

/* See core.h. */
void abx_trace_what(lua_State *L, int idx, const char *method, const char *url, char *out, size_t n)
{
  const char *label = NULL;
  if (lua_getfield(L, idx, "trace_label") == LUA_TSTRING)
    label = lua_tostring(L, -1);
  snprintf(out, n, "%s%s%s%s %s", label ? "[" : "", label ? label : "", label ? "] " : "", method,
           url);
  lua_pop(L, 1);
}

/* The length of what's "[label] " prefix (0 without one): header lines repeat it, so that lines of
 * tests running at once (-j) can be told apart. */
static int label_len(const char *what)
{
  const char *end = what[0] == '[' ? strstr(what, "] ") : NULL;
  return end ? (int)(end - what + 2) : 0;
}

/* See core.h. */
void abx_trace_request(struct abx_loop *loop, const char *what, const char *const *headers,
                       size_t body_len)
{
  if (loop->trace < 1)
    return;
  int ll = label_len(what);
  trace_line(loop, "> %s (%zu bytes)", what, body_len);
  for (const char *const *h = headers; h && *h; h++)
    trace_line(loop, "> %.*s  %s", ll, what, *h);
}

/* Registers as secrets the string values of JSON fields whose names say they are credentials
 * ("...token", "...secret", "...key", "password"), so that a body excerpt traced before the Lua
 * side has seen the answer (envdAccessToken, trafficAccessToken, volume tokens) is masked too. The
 * body may be cut or not JSON at all, so fields are found by a scan; each value is decoded by
 * jansson (escapes such as \/ and \u002b) and registered decoded, with all its forms. */
static void register_body_secrets(struct abx_loop *loop, const char *body, size_t len)
{
  static const char *const words[] = {"token", "secret", "key", "password", NULL};
  for (size_t i = 0; i + 1 < len; i++) {
    if (body[i] != '"')
      continue;
    size_t name = i + 1, j = name; /* "name" : "value" */
    while (j < len && body[j] != '"' && j - name < 64)
      j++;
    if (j >= len || body[j] != '"')
      continue;
    size_t name_len = j - name, k = j + 1;
    while (k < len && (body[k] == ' ' || body[k] == '\t'))
      k++;
    if (k >= len || body[k] != ':')
      continue;
    k++;
    while (k < len && (body[k] == ' ' || body[k] == '\t'))
      k++;
    if (k >= len || body[k] != '"')
      continue;
    size_t v = k + 1; /* the closing quote: escaped quotes are part of the value */
    while (v < len && body[v] != '"' && v - k < 4096)
      v += body[v] == '\\' ? 2 : 1;
    if (v >= len || body[v] != '"')
      continue;
    int hit = 0;
    for (const char *const *w = words; *w && !hit; w++) {
      size_t wl = strlen(*w);
      for (size_t a = 0; a + wl <= name_len && !hit; a++)
        hit = strncasecmp(body + name + a, *w, wl) == 0;
    }
    json_t *value = hit ? json_loadb(body + k, v - k + 1, JSON_DECODE_ANY, NULL) : NULL;
    if (json_is_string(value))
      abx_secrets_add(loop->secrets, json_string_value(value), json_string_length(value));
    json_decref(value);
    i = v;
  }
}

/* See core.h. */
void abx_trace_answer(struct abx_loop *loop, const char *what, struct abx_transfer *t,
                      double started_ms)
{
  if (loop->trace < 1)
    return;
  if (t->failure != ABX_HTTP_OK) {
    trace_line(loop, "< %s failed after %.0f ms: %s", what, abx_now_ms() - started_ms, t->error);
    return;
  }
  trace_line(loop, "< %s %ld (%zu bytes, %.0f ms)", what, t->status, t->body.len,
             abx_now_ms() - started_ms);
  int ll = label_len(what);
  for (size_t i = 0; i < t->nheaders; i++)
    trace_line(loop, "< %.*s  %s: %s", ll, what, t->headers[i].name, t->headers[i].value);
  if (loop->trace < 2 || t->body.len == 0)
    return;
  register_body_secrets(loop, t->body.data, t->body.len);
  /* masked whole, then cut: a secret across the cut is masked, not shown in part */
  size_t n = 0;
  char *m = abx_secrets_mask(loop->secrets, t->body.data, t->body.len, &n);
  if (m)
    trace_line(loop, "< %.*s  body: %.*s%s", ll, what,
               (int)(n < TRACE_BODY_MAX ? n : TRACE_BODY_MAX), m, n > TRACE_BODY_MAX ? "..." : "");
  free(m);
}
