/*
 * fuzz_ndjson.c: libFuzzer target for the NDJSON line splitter (proto/ndjson.h), which reads the
 * code interpreter's /execute stream (docs/protocol/envd-protocol.md §10).
 *
 * Input: byte 0 = max_line (0: the default ABX_NDJSON_MAX_LINE, 16 MiB; else 1..255 bytes, so
 *        over-long lines are reachable), byte 1 = how many lines the consumer accepts before it
 *        asks to stop (0 = all), bytes 2-5 = slice sizes used in turn (0 feeds an empty slice),
 *        the rest = the body.
 * Oracles (abort() on violation, which libFuzzer reports as a crash):
 *   - every line is at most max_line bytes, holds no LF, is numbered 1, 2, 3, ..., ends in "\n"
 *     (term 1, and then does not end in CR), "\r\n" (term 2) or nothing (term 0, the last line,
 *     only from abx_ndjson_finish); the splitter never holds more than max_line + 1 bytes;
 *   - the lines with their terminators, concatenated, are the body when the outcome is OK, and a
 *     prefix of it on EPROTO, where the rest must start with a line over max_line (unless the
 *     consumer asked to stop); after EPROTO the splitter stays dead with a message;
 *   - fed in the chosen slices, in one slice and byte by byte, the body gives the same lines and
 *     outcome.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ndjson.h"

struct trace {
  size_t max_line;
  unsigned stop_at; /* accept this many lines, then stop (0: no limit) */
  size_t count;     /* lines delivered */
  int finishing;    /* inside abx_ndjson_finish: term 0 is allowed */
  char *rebuilt;    /* lines + terminators, concatenated */
  size_t rebuilt_len, rebuilt_cap;
  uint64_t hash; /* FNV-1a over (number, term, len, data) of every line */
};

static void mix(uint64_t *h, const void *p, size_t n)
{
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) {
    *h ^= b[i];
    *h *= 1099511628211ull;
  }
}

static void put(struct trace *t, const char *p, size_t n)
{
  if (n == 0)
    return;
  if (t->rebuilt_len + n > t->rebuilt_cap) {
    t->rebuilt_cap = (t->rebuilt_len + n) * 2 + 16;
    t->rebuilt = realloc(t->rebuilt, t->rebuilt_cap);
    if (!t->rebuilt)
      abort();
  }
  memcpy(t->rebuilt + t->rebuilt_len, p, n);
  t->rebuilt_len += n;
}

static void die(const char *why)
{
  fprintf(stderr, "fuzz_ndjson: %s\n", why);
  abort();
}

static int on_line(void *ud, const struct abx_ndjson_line *l)
{
  struct trace *t = ud;
  if (l->len > t->max_line)
    die("a line over max_line was delivered");
  if (l->len > 0 && l->data == NULL)
    die("NULL data");
  if (memchr(l->data, '\n', l->len))
    die("a line holds an LF");
  if (l->number != t->count + 1)
    die("line numbers are not consecutive");
  if (l->term > 2 || (l->term == 0 && !t->finishing) || (l->term != 0 && t->finishing))
    die("a terminator that cannot be");
  if (l->term == 1 && l->len > 0 && l->data[l->len - 1] == '\r')
    die("a line ending in CR before LF was not given term 2");
  mix(&t->hash, &l->number, sizeof l->number);
  mix(&t->hash, &l->term, sizeof l->term);
  mix(&t->hash, &l->len, sizeof l->len);
  mix(&t->hash, l->data, l->len);
  put(t, l->data, l->len);
  put(t, l->term == 2 ? "\r\n" : "\n", l->term);
  t->count++;
  return t->stop_at && t->count >= t->stop_at ? 1 : 0;
}

/* Feeds body[0..n) in slices of sizes[i % 4] (n as one slice when sizes is NULL), then finishes.
 * Checks the bounds after every call. Returns the outcome. */
static int run(const char *body, size_t n, const uint8_t *sizes, struct trace *t)
{
  struct abx_ndjson d;
  abx_ndjson_init(&d, t->max_line);
  if (d.max_line != t->max_line)
    die("max_line not as asked");
  int rc = ABX_NDJSON_OK;
  size_t at = 0;
  for (unsigned i = 0; rc == ABX_NDJSON_OK && (at < n || (sizes && i < 4)); i++) {
    size_t len = sizes ? sizes[i % 4] : n;
    if (len > n - at)
      len = n - at;
    rc = abx_ndjson_feed(&d, body + at, len, on_line, t);
    if (rc != ABX_NDJSON_OK && rc != ABX_NDJSON_EPROTO)
      die("feed returned neither OK nor EPROTO");
    if (d.cap > t->max_line + 1 || abx_ndjson_pending(&d) > t->max_line + 1)
      die("the splitter holds more than max_line + 1 bytes");
    at += len;
    if (sizes && sizes[0] == 0 && sizes[1] == 0 && sizes[2] == 0 && sizes[3] == 0 && i >= 3)
      sizes = NULL; /* all-zero pattern: feed the rest at once */
  }
  if (rc == ABX_NDJSON_OK) {
    t->finishing = 1;
    rc = abx_ndjson_finish(&d, on_line, t);
    t->finishing = 0;
  }
  if (rc == ABX_NDJSON_EPROTO) {
    if (!d.dead || d.error[0] == '\0')
      die("EPROTO without a dead splitter and a message");
    if (abx_ndjson_feed(&d, "\n", 1, on_line, t) != ABX_NDJSON_EPROTO ||
        abx_ndjson_finish(&d, on_line, t) != ABX_NDJSON_EPROTO)
      die("the splitter revived after EPROTO");
  }
  abx_ndjson_free(&d);
  return rc;
}

/* The rebuilt text against the body: all of it on OK, a justified prefix on EPROTO. */
static void check_rebuilt(const char *body, size_t n, const struct trace *t, int rc)
{
  if (t->rebuilt_len > n || (t->rebuilt_len && memcmp(t->rebuilt, body, t->rebuilt_len) != 0))
    die("the lines and terminators are not a prefix of the body");
  if (rc == ABX_NDJSON_OK) {
    if (t->rebuilt_len != n)
      die("OK, but the lines and terminators are not the whole body");
    return;
  }
  if (t->stop_at && t->count == t->stop_at)
    return; /* the consumer stopped it */
  const char *rest = body + t->rebuilt_len;
  size_t left = n - t->rebuilt_len;
  const char *nl = memchr(rest, '\n', left);
  size_t content = nl ? (size_t)(nl - rest) : left;
  if (nl && content > 0 && rest[content - 1] == '\r')
    content--;
  if (content <= t->max_line)
    die("EPROTO, but the next line is within max_line");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 6)
    return 0;
  size_t max_line = data[0] ? data[0] : ABX_NDJSON_MAX_LINE;
  const uint8_t *sizes = data + 2;
  const char *body = (const char *)data + 6;
  size_t n = size - 6;

  struct trace a = {.max_line = max_line, .stop_at = data[1], .hash = 14695981039346656037ull};
  struct trace b = a, c = a;
  int rc_a = run(body, n, sizes, &a);
  check_rebuilt(body, n, &a, rc_a);
  int rc_b = run(body, n, NULL, &b);
  check_rebuilt(body, n, &b, rc_b);
  static const uint8_t ones[4] = {1, 1, 1, 1};
  int rc_c = run(body, n, ones, &c);
  check_rebuilt(body, n, &c, rc_c);
  if (rc_a != rc_b || rc_a != rc_c || a.count != b.count || a.count != c.count ||
      a.hash != b.hash || a.hash != c.hash) {
    fprintf(stderr,
            "fuzz_ndjson: slicing changed the outcome (slices rc=%d n=%zu; one rc=%d "
            "n=%zu; bytes rc=%d n=%zu)\n",
            rc_a, a.count, rc_b, b.count, rc_c, c.count);
    abort();
  }
  free(a.rebuilt);
  free(b.rebuilt);
  free(c.rebuilt);
  return 0;
}
