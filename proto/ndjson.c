/*
 * ndjson.c: incremental NDJSON line splitter. See ndjson.h for the contract.
 *
 * The code interpreter writes one JSON object per line, each followed by "\n"
 * (docs/protocol/envd-protocol.md §10 "/execute stream"); curl hands the body over in whatever
 * pieces the network and the chunked coding produced, so a line may be split across slices at any
 * byte, the "\r\n" pair included, and one slice may hold many lines. A line that ends inside the
 * slice it started in is handed over in place; only a line split across slices is copied, into a
 * buffer that grows with the bytes that arrive and never past max_line + 1.
 */
#include "ndjson.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A buffer larger than this is released after its line is handed over, so one long line does not
 * pin its memory for the rest of the stream. */
#define KEEP_BUF 65536u

void abx_ndjson_init(struct abx_ndjson *s, size_t max_line)
{
  memset(s, 0, sizeof *s);
  s->max_line = max_line ? max_line : ABX_NDJSON_MAX_LINE;
  if (s->max_line > SIZE_MAX / 4) /* max_line + 2 must not wrap */
    s->max_line = SIZE_MAX / 4;
}

void abx_ndjson_free(struct abx_ndjson *s)
{
  free(s->buf);
  s->buf = NULL;
  s->have = s->cap = 0;
}

size_t abx_ndjson_pending(const struct abx_ndjson *s)
{
  return s->have;
}

static int fail(struct abx_ndjson *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(struct abx_ndjson *s, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s->error, sizeof s->error, fmt, ap);
  va_end(ap);
  s->dead = 1;
  return ABX_NDJSON_EPROTO;
}

static int too_long(struct abx_ndjson *s)
{
  return fail(s, "line %zu is longer than %zu bytes", s->lines + 1, s->max_line);
}

/* Whether 'total' bytes of an unfinished line, the last of them 'last', already prove the line is
 * over max_line: it is, unless a final CR could still turn out to be half of "\r\n". */
static int over(const struct abx_ndjson *s, size_t total, char last)
{
  return total > s->max_line && !(total == s->max_line + 1 && last == '\r');
}

/* Appends to the buffer, which holds at most max_line + 1 bytes (callers checked 'over'). */
static int append(struct abx_ndjson *s, const char *p, size_t n)
{
  if (s->have + n > s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 256;
    if (cap < s->have + n)
      cap = s->have + n;
    if (cap > s->max_line + 1)
      cap = s->max_line + 1;
    char *grown = realloc(s->buf, cap);
    if (!grown)
      return fail(s, "out of memory for line %zu (%zu bytes)", s->lines + 1, cap);
    s->buf = grown;
    s->cap = cap;
  }
  memcpy(s->buf + s->have, p, n);
  s->have += n;
  return ABX_NDJSON_OK;
}

/* Hands one line to the consumer. */
static int emit(struct abx_ndjson *s, const char *data, size_t len, unsigned term,
                abx_ndjson_line_fn fn, void *ud)
{
  struct abx_ndjson_line line = {.data = data, .len = len, .number = ++s->lines, .term = term};
  if (fn(ud, &line) != 0)
    return fail(s, "line %zu rejected by the consumer", s->lines);
  return ABX_NDJSON_OK;
}

/* The buffered line is complete: hand it over and empty the buffer. */
static int emit_buffered(struct abx_ndjson *s, unsigned term, abx_ndjson_line_fn fn, void *ud)
{
  size_t len = s->have - (term == 2 ? 1 : 0); /* the CR of "\r\n" is the buffer's last byte */
  s->have = 0;
  int rc = emit(s, s->buf ? s->buf : "", len, term, fn, ud);
  if (s->cap > KEEP_BUF) {
    free(s->buf);
    s->buf = NULL;
    s->cap = 0;
  }
  return rc;
}

int abx_ndjson_feed(struct abx_ndjson *s, const char *data, size_t len, abx_ndjson_line_fn fn,
                    void *ud)
{
  if (s->dead)
    return ABX_NDJSON_EPROTO;
  if (s->finished)
    return fail(s, "bytes fed after the end of the body (after line %zu)", s->lines);
  while (len > 0) {
    const char *nl = memchr(data, '\n', len);
    if (!nl) { /* an unfinished line: keep it, unless it is already too long */
      if (over(s, s->have + len, data[len - 1]))
        return too_long(s);
      return append(s, data, len);
    }
    size_t n = (size_t)(nl - data); /* bytes before the LF */
    if (s->have == 0) {             /* the whole line is in this slice: no copy */
      unsigned term = (n > 0 && data[n - 1] == '\r') ? 2 : 1;
      if (n - (term - 1) > s->max_line)
        return too_long(s);
      if (emit(s, data, n - (term - 1), term, fn, ud) != ABX_NDJSON_OK)
        return ABX_NDJSON_EPROTO;
    } else { /* the line began in an earlier slice */
      char last = n > 0 ? data[n - 1] : s->buf[s->have - 1];
      unsigned term = last == '\r' ? 2 : 1;
      if (s->have + n - (term - 1) > s->max_line)
        return too_long(s);
      if (append(s, data, n) != ABX_NDJSON_OK)
        return ABX_NDJSON_EPROTO;
      if (emit_buffered(s, term, fn, ud) != ABX_NDJSON_OK)
        return ABX_NDJSON_EPROTO;
    }
    data = nl + 1;
    len -= n + 1;
  }
  return ABX_NDJSON_OK;
}

int abx_ndjson_finish(struct abx_ndjson *s, abx_ndjson_line_fn fn, void *ud)
{
  if (s->dead)
    return ABX_NDJSON_EPROTO;
  s->finished = 1;
  if (s->have == 0)
    return ABX_NDJSON_OK;
  if (s->have > s->max_line) /* max_line bytes and a CR that no LF followed */
    return too_long(s);
  return emit_buffered(s, 0, fn, ud);
}
