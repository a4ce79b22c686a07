/*
 * test_connect.c: unit tests of proto/connect.h (the Connect envelope codec).
 *
 * malloc is wrapped (-Wl,--wrap=malloc in tests.cmake) so the tests can see the largest block the
 * decoder asked for: a rejected over-long envelope must not be allocated.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "connect.h"

/* --- malloc accounting ------------------------------------------------------------------- */

void *__real_malloc(size_t n);
void *__wrap_malloc(size_t n);
static size_t malloc_max; /* largest request since the last reset */

void *__wrap_malloc(size_t n)
{
  if (n > malloc_max)
    malloc_max = n;
  return __real_malloc(n);
}

/* --- a consumer that records every envelope ---------------------------------------------- */

#define MAX_MSGS 16

struct msg {
  unsigned flags;
  char data[256];
  size_t len;
};

struct sink {
  struct msg msgs[MAX_MSGS];
  int n;
  int stop_at;    /* 1-based message number at which the consumer returns non-zero; 0 never */
  size_t big_len; /* length of the last message too large for data[] */
};

static int on_msg(void *ud, unsigned flags, const char *payload, size_t len)
{
  struct sink *s = ud;
  if (s->n < MAX_MSGS) {
    struct msg *m = &s->msgs[s->n];
    m->flags = flags;
    m->len = len;
    if (len <= sizeof m->data)
      memcpy(m->data, payload, len);
    else
      s->big_len = len;
  }
  s->n++;
  return s->stop_at && s->n == s->stop_at;
}

/* Appends one envelope to buf at *off. */
static void put(unsigned char *buf, size_t *off, unsigned flags, const char *payload, size_t len)
{
  abx_connect_prefix(buf + *off, flags, (uint32_t)len);
  memcpy(buf + *off + 5, payload, len);
  *off += 5 + len;
}

static int msg_is(const struct msg *m, unsigned flags, const char *text)
{
  return m->flags == flags && m->len == strlen(text) && memcmp(m->data, text, m->len) == 0;
}

/* --- tests ------------------------------------------------------------------------------- */

static void test_one_envelope(void)
{
  unsigned char buf[64];
  size_t n = 0;
  put(buf, &n, 0, "{\"pid\":7}", 9);
  CHECK(n == 14);

  struct abx_connect_decoder d;
  struct sink s = {0};
  abx_connect_decoder_init(&d);
  CHECK(!abx_connect_partial(&d));
  CHECK(abx_connect_feed(&d, (const char *)buf, n, on_msg, &s) == ABX_CONNECT_OK);
  CHECK(s.n == 1);
  CHECK(msg_is(&s.msgs[0], 0, "{\"pid\":7}"));
  CHECK(!abx_connect_partial(&d));
  CHECK(!d.dead);
  abx_connect_decoder_free(&d);
}

static void test_several_in_one_slice(void)
{
  unsigned char buf[128];
  size_t n = 0;
  put(buf, &n, 0, "{\"a\":1}", 7);
  put(buf, &n, 0, "{\"b\":22}", 8);
  put(buf, &n, 0, "", 0);
  put(buf, &n, ABX_CONNECT_FLAG_END, "{}", 2);

  struct abx_connect_decoder d;
  struct sink s = {0};
  abx_connect_decoder_init(&d);
  CHECK(abx_connect_feed(&d, (const char *)buf, n, on_msg, &s) == ABX_CONNECT_OK);
  CHECK(s.n == 4);
  CHECK(msg_is(&s.msgs[0], 0, "{\"a\":1}"));
  CHECK(msg_is(&s.msgs[1], 0, "{\"b\":22}"));
  CHECK(msg_is(&s.msgs[2], 0, ""));
  CHECK(msg_is(&s.msgs[3], ABX_CONNECT_FLAG_END, "{}"));
  CHECK(!abx_connect_partial(&d));
  abx_connect_decoder_free(&d);
}

/* Two envelopes, fed in two slices split at every possible offset, then one byte at a time. */
static void test_split_everywhere(void)
{
  unsigned char buf[128];
  size_t n = 0;
  put(buf, &n, 0, "{\"event\":{\"data\":{\"stdout\":\"aGk=\"}}}", 36);
  put(buf, &n, ABX_CONNECT_FLAG_END, "{\"metadata\":{}}", 15);

  for (size_t cut = 0; cut <= n; cut++) {
    struct abx_connect_decoder d;
    struct sink s = {0};
    abx_connect_decoder_init(&d);
    int rc1 = abx_connect_feed(&d, (const char *)buf, cut, on_msg, &s);
    int expect_partial = cut != 0 && cut != 41 && cut != n; /* 41 = end of the first envelope */
    int partial = abx_connect_partial(&d);
    int rc2 = abx_connect_feed(&d, (const char *)buf + cut, n - cut, on_msg, &s);
    CHECK(rc1 == ABX_CONNECT_OK && rc2 == ABX_CONNECT_OK);
    CHECK(partial == expect_partial);
    CHECK(s.n == 2);
    CHECK(msg_is(&s.msgs[0], 0, "{\"event\":{\"data\":{\"stdout\":\"aGk=\"}}}"));
    CHECK(msg_is(&s.msgs[1], ABX_CONNECT_FLAG_END, "{\"metadata\":{}}"));
    CHECK(!abx_connect_partial(&d));
    if (s.n != 2)
      fprintf(stderr, "  (split at byte %zu)\n", cut);
    abx_connect_decoder_free(&d);
  }

  struct abx_connect_decoder d;
  struct sink s = {0};
  abx_connect_decoder_init(&d);
  int partial_ok = 1;
  for (size_t i = 0; i < n; i++) {
    CHECK(abx_connect_feed(&d, (const char *)buf + i, 1, on_msg, &s) == ABX_CONNECT_OK);
    /* a message is delivered exactly when its last byte arrives */
    int want_msgs = i + 1 >= n ? 2 : (i + 1 >= 41 ? 1 : 0);
    if (s.n != want_msgs)
      partial_ok = 0;
    if (abx_connect_partial(&d) != (i + 1 != 41 && i + 1 != n))
      partial_ok = 0;
  }
  CHECK(partial_ok);
  CHECK(s.n == 2);
  CHECK(msg_is(&s.msgs[0], 0, "{\"event\":{\"data\":{\"stdout\":\"aGk=\"}}}"));
  CHECK(msg_is(&s.msgs[1], ABX_CONNECT_FLAG_END, "{\"metadata\":{}}"));
  abx_connect_decoder_free(&d);
}

static void test_empty_slice(void)
{
  struct abx_connect_decoder d;
  struct sink s = {0};
  abx_connect_decoder_init(&d);
  CHECK(abx_connect_feed(&d, "", 0, on_msg, &s) == ABX_CONNECT_OK);
  CHECK(s.n == 0);
  CHECK(!abx_connect_partial(&d));
  abx_connect_decoder_free(&d);
}

static void test_zero_length_end(void)
{
  unsigned char buf[8];
  size_t n = 0;
  put(buf, &n, ABX_CONNECT_FLAG_END, "", 0);
  CHECK(n == 5);
  CHECK(memcmp(buf, "\x02\0\0\0\0", 5) == 0);

  /* in one slice */
  struct abx_connect_decoder d;
  struct sink s = {0};
  abx_connect_decoder_init(&d);
  CHECK(abx_connect_feed(&d, (const char *)buf, n, on_msg, &s) == ABX_CONNECT_OK);
  CHECK(s.n == 1);
  CHECK(s.msgs[0].flags == ABX_CONNECT_FLAG_END && s.msgs[0].len == 0);
  CHECK(!abx_connect_partial(&d));
  abx_connect_decoder_free(&d);

  /* byte by byte: delivered when the 5th header byte arrives, with no payload byte to wait for */
  struct sink s2 = {0};
  abx_connect_decoder_init(&d);
  for (size_t i = 0; i < n; i++) {
    CHECK(abx_connect_feed(&d, (const char *)buf + i, 1, on_msg, &s2) == ABX_CONNECT_OK);
    CHECK(s2.n == (i == 4 ? 1 : 0));
  }
  CHECK(s2.msgs[0].flags == ABX_CONNECT_FLAG_END && s2.msgs[0].len == 0);
  CHECK(!abx_connect_partial(&d));
  abx_connect_decoder_free(&d);
}

/* A valid envelope fed after a protocol error must still be refused and not delivered. */
static void check_dead(struct abx_connect_decoder *d, struct sink *s)
{
  unsigned char ok[16];
  size_t n = 0;
  put(ok, &n, 0, "{}", 2);
  int before = s->n;
  CHECK(d->dead);
  CHECK(d->error[0] != '\0');
  CHECK(abx_connect_feed(d, (const char *)ok, n, on_msg, s) == ABX_CONNECT_EPROTO);
  CHECK(s->n == before);
}

static void test_bad_flags(void)
{
  static const unsigned bad[] = {ABX_CONNECT_FLAG_COMPRESSED,
                                 ABX_CONNECT_FLAG_COMPRESSED | ABX_CONNECT_FLAG_END,
                                 0x04,
                                 0x08,
                                 0x10,
                                 0x80,
                                 0x80 | ABX_CONNECT_FLAG_END};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    unsigned char buf[32];
    size_t n = 0;
    put(buf, &n, bad[i], "{}", 2);
    struct abx_connect_decoder d;
    struct sink s = {0};
    abx_connect_decoder_init(&d);
    int rc = abx_connect_feed(&d, (const char *)buf, n, on_msg, &s);
    CHECK(rc == ABX_CONNECT_EPROTO);
    CHECK(s.n == 0);
    if (bad[i] & ABX_CONNECT_FLAG_COMPRESSED)
      CHECK_CONTAINS(d.error, "compress");
    else
      CHECK_CONTAINS(d.error, "reserved");
    check_dead(&d, &s);
    abx_connect_decoder_free(&d);
  }

  /* the bad flag detected when the header completes, even byte by byte */
  unsigned char buf[16];
  size_t n = 0;
  put(buf, &n, ABX_CONNECT_FLAG_COMPRESSED, "{}", 2);
  struct abx_connect_decoder d;
  struct sink s = {0};
  abx_connect_decoder_init(&d);
  for (size_t i = 0; i < 4; i++)
    CHECK(abx_connect_feed(&d, (const char *)buf + i, 1, on_msg, &s) == ABX_CONNECT_OK);
  CHECK(abx_connect_feed(&d, (const char *)buf + 4, 1, on_msg, &s) == ABX_CONNECT_EPROTO);
  check_dead(&d, &s);
  abx_connect_decoder_free(&d);
}

static void test_too_long(void)
{
  static const uint32_t lens[] = {ABX_CONNECT_MAX_MSG + 1, 0x7fffffffu, 0xffffffffu};
  for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
    unsigned char hdr[5];
    abx_connect_prefix(hdr, 0, lens[i]);
    struct abx_connect_decoder d;
    struct sink s = {0};
    abx_connect_decoder_init(&d);
    malloc_max = 0;
    CHECK(abx_connect_feed(&d, (const char *)hdr, 5, on_msg, &s) == ABX_CONNECT_EPROTO);
    CHECK(malloc_max < 4096); /* nothing near the announced length was requested */
    CHECK(d.payload == NULL);
    CHECK(s.n == 0);
    CHECK_CONTAINS(d.error, "limit");
    check_dead(&d, &s);
    abx_connect_decoder_free(&d);
  }

  /* exactly the limit is accepted and delivered whole */
  char *big = calloc(1, ABX_CONNECT_MAX_MSG);
  CHECK(big != NULL);
  if (!big)
    return;
  unsigned char hdr[5];
  abx_connect_prefix(hdr, 0, ABX_CONNECT_MAX_MSG);
  big[ABX_CONNECT_MAX_MSG - 1] = 'z';
  struct abx_connect_decoder d;
  struct sink s = {0};
  abx_connect_decoder_init(&d);
  CHECK(abx_connect_feed(&d, (const char *)hdr, 5, on_msg, &s) == ABX_CONNECT_OK);
  CHECK(abx_connect_partial(&d));
  CHECK(abx_connect_feed(&d, big, ABX_CONNECT_MAX_MSG, on_msg, &s) == ABX_CONNECT_OK);
  CHECK(s.n == 1);
  CHECK(s.big_len == ABX_CONNECT_MAX_MSG);
  CHECK(!abx_connect_partial(&d));
  abx_connect_decoder_free(&d);
  free(big);
}

static void test_consumer_stops(void)
{
  unsigned char buf[64];
  size_t n = 0;
  put(buf, &n, 0, "one", 3);
  put(buf, &n, 0, "two", 3);
  put(buf, &n, 0, "three", 5);
  struct abx_connect_decoder d;
  struct sink s = {.stop_at = 2};
  abx_connect_decoder_init(&d);
  CHECK(abx_connect_feed(&d, (const char *)buf, n, on_msg, &s) == ABX_CONNECT_EPROTO);
  CHECK(s.n == 2); /* the third envelope is not delivered */
  check_dead(&d, &s);
  abx_connect_decoder_free(&d);
}

static void test_partial(void)
{
  unsigned char buf[32];
  size_t n = 0;
  put(buf, &n, 0, "hello", 5);
  struct abx_connect_decoder d;
  struct sink s = {0};
  abx_connect_decoder_init(&d);
  CHECK(!abx_connect_partial(&d));
  CHECK(abx_connect_feed(&d, (const char *)buf, 1, on_msg, &s) == ABX_CONNECT_OK);
  CHECK(abx_connect_partial(&d)); /* inside the header */
  CHECK(abx_connect_feed(&d, (const char *)buf + 1, 4, on_msg, &s) == ABX_CONNECT_OK);
  CHECK(abx_connect_partial(&d)); /* header complete, no payload yet */
  CHECK(abx_connect_feed(&d, (const char *)buf + 5, 4, on_msg, &s) == ABX_CONNECT_OK);
  CHECK(abx_connect_partial(&d)); /* 4 of 5 payload bytes */
  CHECK(s.n == 0);
  CHECK(abx_connect_feed(&d, (const char *)buf + 9, 1, on_msg, &s) == ABX_CONNECT_OK);
  CHECK(!abx_connect_partial(&d));
  CHECK(s.n == 1 && msg_is(&s.msgs[0], 0, "hello"));
  abx_connect_decoder_free(&d);

  /* free then re-init gives a fresh decoder */
  abx_connect_decoder_init(&d);
  CHECK(!abx_connect_partial(&d) && !d.dead);
  abx_connect_decoder_free(&d);
}

static void test_prefix(void)
{
  unsigned char out[5];
  abx_connect_prefix(out, ABX_CONNECT_FLAG_END, 0x01020304u);
  CHECK(memcmp(out, "\x02\x01\x02\x03\x04", 5) == 0);
  abx_connect_prefix(out, 0, 0);
  CHECK(memcmp(out, "\0\0\0\0\0", 5) == 0);
  abx_connect_prefix(out, 0, 0xffffffffu);
  CHECK(memcmp(out, "\0\xff\xff\xff\xff", 5) == 0);
  abx_connect_prefix(out, 0, 300);
  CHECK(memcmp(out, "\0\0\0\x01\x2c", 5) == 0);

  /* round trip through the decoder for a range of lengths and both legal flag values */
  static const size_t lens[] = {0, 1, 5, 127, 128, 255, 256, 257, 1000, 65535, 65536, 70000};
  char *payload = malloc(70000);
  unsigned char *buf = malloc(70005);
  CHECK(payload && buf);
  if (!payload || !buf) {
    free(payload);
    free(buf);
    return;
  }
  for (size_t i = 0; i < 70000; i++)
    payload[i] = (char)(i * 7 + 3);
  int all_ok = 1;
  for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
    for (unsigned flags = 0; flags <= ABX_CONNECT_FLAG_END; flags += ABX_CONNECT_FLAG_END) {
      abx_connect_prefix(buf, flags, (uint32_t)lens[i]);
      memcpy(buf + 5, payload, lens[i]);
      struct abx_connect_decoder d;
      struct sink s = {0};
      abx_connect_decoder_init(&d);
      if (abx_connect_feed(&d, (const char *)buf, lens[i] + 5, on_msg, &s) != ABX_CONNECT_OK ||
          s.n != 1 || s.msgs[0].flags != flags || s.msgs[0].len != lens[i] ||
          (lens[i] <= sizeof s.msgs[0].data && memcmp(s.msgs[0].data, payload, lens[i]) != 0)) {
        fprintf(stderr, "  round trip failed for length %zu flags %u\n", lens[i], flags);
        all_ok = 0;
      }
      abx_connect_decoder_free(&d);
    }
  }
  CHECK(all_ok);
  free(payload);
  free(buf);
}

int main(void)
{
  RUN(test_one_envelope);
  RUN(test_several_in_one_slice);
  RUN(test_split_everywhere);
  RUN(test_empty_slice);
  RUN(test_zero_length_end);
  RUN(test_bad_flags);
  RUN(test_too_long);
  RUN(test_consumer_stops);
  RUN(test_partial);
  RUN(test_prefix);
  return check_report();
}
