/*
 * core_trace.c: HTTP traces of core.request, core.stream and core.ndjson (-vv, -vvv; contract:
 * docs/ENGINE.md, core.set_trace). Every line goes through the secrets registry before stderr.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core.h"
#include "http.h"
#include "loop.h"
#include "secrets.h"

/* Writes one masked trace line to stderr. */
static void trace_line(struct abx_loop *loop, const char *fmt, ...)
{
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0)
    return;
  size_t len = (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1;
  char *m = abx_secrets_mask(loop->secrets, buf, len, NULL);
  fprintf(stderr, "abxlua: http %s\n", m ? m : "(trace dropped: out of memory)");
  free(m);
}

/* See core.h. */
void abx_trace_request(struct abx_loop *loop, const char *what, const char *const *headers,
                       size_t body_len)
{
  if (loop->trace < 1)
    return;
  trace_line(loop, "> %s (%zu bytes)", what, body_len);
  for (const char *const *h = headers; h && *h; h++)
    trace_line(loop, ">   %s", *h);
}

/* Registers as secrets the string values of JSON fields whose names say they are credentials
 * ("...token", "...secret", "...key", "password"), so that a body excerpt traced before the Lua
 * side has seen the answer (envdAccessToken, trafficAccessToken, volume tokens) is masked too. */
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
    size_t value = k + 1, v = value;
    while (v < len && body[v] != '"' && v - value < 4096)
      v++;
    if (v >= len || body[v] != '"')
      continue;
    int hit = 0;
    for (const char *const *w = words; *w && !hit; w++) {
      size_t wl = strlen(*w);
      for (size_t a = 0; a + wl <= name_len && !hit; a++)
        hit = strncasecmp(body + name + a, *w, wl) == 0;
    }
    if (hit)
      abx_secrets_add(loop->secrets, body + value, v - value);
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
  for (size_t i = 0; i < t->nheaders; i++)
    trace_line(loop, "<   %s: %s", t->headers[i].name, t->headers[i].value);
  if (loop->trace >= 2 && t->body.len > 0)
    register_body_secrets(loop, t->body.data, t->body.len);
  if (loop->trace >= 2 && t->body.len > 0)
    trace_line(loop, "<   body: %.*s%s", (int)(t->body.len < 512 ? t->body.len : 512), t->body.data,
               t->body.len > 512 ? "..." : "");
}
