/*
 * fuzz_connect.c: libFuzzer target for the Connect envelope decoder (proto/connect.h).
 *
 * Input: byte 0 = how many messages the consumer accepts before it asks to stop (0 = all),
 *        bytes 1-2 = where to split the body (big-endian, modulo the body length + 1),
 *        the rest = the response body.
 * Oracles (abort() on violation, which libFuzzer reports as a crash):
 *   - no delivered message is over ABX_CONNECT_MAX_MSG or carries the compressed/reserved bits;
 *   - the body fed in two slices (split at the chosen boundary), and byte by byte, gives exactly
 *     the messages and the return code of the body fed in one slice;
 *   - after EPROTO the decoder stays dead and its error message is non-empty.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connect.h"

struct trace {
  unsigned limit; /* accept this many messages, then stop (0: no limit) */
  unsigned count; /* messages delivered */
  uint64_t hash;  /* FNV-1a over (flags, len, payload) of every message, in order */
};

static void mix(uint64_t *h, const void *p, size_t n)
{
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) {
    *h ^= b[i];
    *h *= 1099511628211ull;
  }
}

static int on_msg(void *ud, unsigned flags, const char *payload, size_t len)
{
  struct trace *t = ud;
  if (len > ABX_CONNECT_MAX_MSG) {
    fprintf(stderr, "fuzz_connect: message of %zu bytes delivered (limit %u)\n", len,
            ABX_CONNECT_MAX_MSG);
    abort();
  }
  if (flags & ~(unsigned)ABX_CONNECT_FLAG_END) {
    fprintf(stderr, "fuzz_connect: message with flags 0x%x delivered\n", flags);
    abort();
  }
  if (len > 0 && payload == NULL)
    abort();
  mix(&t->hash, &flags, sizeof flags);
  mix(&t->hash, &len, sizeof len);
  mix(&t->hash, payload, len);
  t->count++;
  return t->limit && t->count >= t->limit ? 1 : 0;
}

/* Feeds body[0..n) in slices ending at the offsets cuts[0..ncuts) (then the rest). */
static int run(const char *body, size_t n, const size_t *cuts, size_t ncuts, struct trace *t,
               int *partial)
{
  struct abx_connect_decoder d;
  abx_connect_decoder_init(&d);
  int rc = ABX_CONNECT_OK;
  size_t at = 0;
  for (size_t i = 0; i <= ncuts; i++) {
    size_t end = i < ncuts ? cuts[i] : n;
    if (end < at || end > n)
      abort();
    int r = abx_connect_feed(&d, body + at, end - at, on_msg, t);
    if (rc == ABX_CONNECT_EPROTO && r != ABX_CONNECT_EPROTO) {
      fprintf(stderr, "fuzz_connect: decoder revived after a protocol error\n");
      abort();
    }
    if (r != ABX_CONNECT_OK && r != ABX_CONNECT_EPROTO)
      abort();
    rc = r;
    at = end;
  }
  if (rc == ABX_CONNECT_EPROTO && (!d.dead || d.error[0] == 0)) {
    fprintf(stderr, "fuzz_connect: EPROTO without an error message\n");
    abort();
  }
  *partial = rc == ABX_CONNECT_OK ? abx_connect_partial(&d) : -1;
  abx_connect_decoder_free(&d);
  return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 3)
    return 0;
  unsigned limit = data[0];
  size_t split = ((size_t)data[1] << 8) | data[2];
  const char *body = (const char *)data + 3;
  size_t n = size - 3;
  split %= n + 1;

  struct trace whole = {.limit = limit, .hash = 14695981039346656037ull};
  struct trace two = whole, bytes = whole;
  int p1, p2, p3;
  int rc1 = run(body, n, NULL, 0, &whole, &p1);
  int rc2 = run(body, n, &split, 1, &two, &p2);

  size_t *cuts = n ? malloc(n * sizeof *cuts) : NULL;
  for (size_t i = 0; i < n; i++)
    cuts[i] = i;
  int rc3 = run(body, n, cuts, n, &bytes, &p3);
  free(cuts);

  if (rc1 != rc2 || rc1 != rc3 || whole.count != two.count || whole.count != bytes.count ||
      whole.hash != two.hash || whole.hash != bytes.hash || p1 != p2 || p1 != p3) {
    fprintf(stderr,
            "fuzz_connect: slicing changed the outcome (whole rc=%d n=%u partial=%d; split at %zu "
            "rc=%d n=%u partial=%d; bytewise rc=%d n=%u partial=%d)\n",
            rc1, whole.count, p1, split, rc2, two.count, p2, rc3, bytes.count, p3);
    abort();
  }
  return 0;
}
