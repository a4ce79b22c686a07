/*
 * test_ndjson.c: unit tests of proto/ndjson.h (the incremental NDJSON line splitter).
 *
 * Every body is also fed split at every offset (two slices), at every pair of offsets (three
 * slices) and byte by byte: the lines, their numbers and terminators, and the outcome must be
 * those of the body fed in one slice.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ndjson.h"

/* --- a consumer that records every line ---------------------------------------------------- */

#define MAX_LINES 64

struct rec {
  char data[128];
  size_t len;
  size_t number;
  unsigned term;
};

struct sink {
  struct rec lines[MAX_LINES];
  int n;
  int stop_at;               /* 1-based line at which the consumer returns non-zero; 0 never */
  size_t longest;            /* longest line seen */
  const char *in_lo, *in_hi; /* the slice being fed, to tell in-place lines from copies */
  int in_place;              /* lines whose data pointed into the slice being fed */
};

static int on_line(void *ud, const struct abx_ndjson_line *l)
{
  struct sink *s = ud;
  if (s->n < MAX_LINES) {
    struct rec *r = &s->lines[s->n];
    r->len = l->len;
    r->number = l->number;
    r->term = l->term;
    memcpy(r->data, l->data, l->len < sizeof r->data ? l->len : sizeof r->data);
  }
  if (l->len > s->longest)
    s->longest = l->len;
  if (s->in_lo && l->data >= s->in_lo && l->data < s->in_hi)
    s->in_place++;
  s->n++;
  return s->stop_at && s->n == s->stop_at;
}

static int line_is(const struct sink *s, int i, const char *text, size_t number, unsigned term)
{
  const struct rec *r = &s->lines[i];
  return i < s->n && r->len == strlen(text) && memcmp(r->data, text, r->len) == 0 &&
         r->number == number && r->term == term;
}

/* Feeds body[0..n) in slices ending at cuts[0..ncuts) then the rest, then finishes. Returns the
 * first EPROTO or the finish result. */
static int feed_cuts(struct abx_ndjson *d, const char *body, size_t n, const size_t *cuts,
                     size_t ncuts, struct sink *s)
{
  size_t at = 0;
  for (size_t i = 0; i <= ncuts; i++) {
    size_t end = i < ncuts ? cuts[i] : n;
    s->in_lo = body + at;
    s->in_hi = body + end;
    int rc = abx_ndjson_feed(d, body + at, end - at, on_line, s);
    s->in_lo = s->in_hi = NULL;
    if (rc != ABX_NDJSON_OK)
      return rc;
    at = end;
  }
  return abx_ndjson_finish(d, on_line, s);
}

static int run(const char *body, size_t n, const size_t *cuts, size_t ncuts, size_t max_line,
               struct sink *s, char *error, size_t error_len)
{
  struct abx_ndjson d;
  abx_ndjson_init(&d, max_line);
  int rc = feed_cuts(&d, body, n, cuts, ncuts, s);
  if (error)
    snprintf(error, error_len, "%s", d.error);
  abx_ndjson_free(&d);
  return rc;
}

static int same(const struct sink *a, const struct sink *b)
{
  if (a->n != b->n)
    return 0;
  for (int i = 0; i < a->n && i < MAX_LINES; i++) {
    const struct rec *x = &a->lines[i], *y = &b->lines[i];
    if (x->len != y->len || x->number != y->number || x->term != y->term ||
        memcmp(x->data, y->data, x->len < sizeof x->data ? x->len : sizeof x->data) != 0)
      return 0;
  }
  return 1;
}

/* Checks that every slicing of 'body' (two slices at each offset, three slices at each pair,
 * byte by byte) gives the one-slice result: one CHECK per two-slice split, one for all pairs,
 * one for byte by byte. */
static void check_every_split(const char *body, size_t max_line)
{
  size_t n = strlen(body);
  struct sink whole = {0};
  int rc = run(body, n, NULL, 0, max_line, &whole, NULL, 0);
  for (size_t i = 0; i <= n; i++) {
    struct sink two = {0};
    CHECK(run(body, n, &i, 1, max_line, &two, NULL, 0) == rc && same(&whole, &two));
  }
  for (size_t i = 0; i <= n; i++)
    for (size_t j = i; j <= n; j++) {
      size_t cuts[2] = {i, j};
      struct sink three = {0};
      int r3 = run(body, n, cuts, 2, max_line, &three, NULL, 0);
      if (r3 != rc || !same(&whole, &three)) {
        CHECK(!"three slices differ from one");
        fprintf(stderr, "  body \"%s\" cut at %zu and %zu\n", body, i, j);
        return;
      }
    }
  CHECK(1); /* every pair held */
  size_t *cuts = malloc((n ? n : 1) * sizeof *cuts);
  for (size_t i = 0; i < n; i++)
    cuts[i] = i;
  struct sink bytes = {0};
  CHECK(run(body, n, cuts, n, max_line, &bytes, NULL, 0) == rc && same(&whole, &bytes));
  free(cuts);
}

/* --- tests --------------------------------------------------------------------------------- */

static void test_lines_in_one_slice(void)
{
  const char *body = "{\"type\": \"stdout\"}\n{\"type\": \"end_of_execution\"}\n";
  struct sink s = {0};
  CHECK(run(body, strlen(body), NULL, 0, 0, &s, NULL, 0) == ABX_NDJSON_OK);
  CHECK(s.n == 2);
  CHECK(line_is(&s, 0, "{\"type\": \"stdout\"}", 1, 1));
  CHECK(line_is(&s, 1, "{\"type\": \"end_of_execution\"}", 2, 1));
  CHECK(s.in_place == 2); /* lines inside one slice are not copied */
}

static void test_crlf_and_lone_cr(void)
{
  const char *body = "a\r\nb\rc\n\r\n\rd\n";
  struct sink s = {0};
  CHECK(run(body, strlen(body), NULL, 0, 0, &s, NULL, 0) == ABX_NDJSON_OK);
  CHECK(s.n == 4);
  CHECK(line_is(&s, 0, "a", 1, 2));
  CHECK(line_is(&s, 1, "b\rc", 2, 1)); /* a CR not before LF is data */
  CHECK(line_is(&s, 2, "", 3, 2));
  CHECK(line_is(&s, 3, "\rd", 4, 1));
}

static void test_empty_lines_are_counted(void)
{
  const char *body = "\n\nx\n\n";
  struct sink s = {0};
  CHECK(run(body, strlen(body), NULL, 0, 0, &s, NULL, 0) == ABX_NDJSON_OK);
  CHECK(s.n == 4);
  CHECK(line_is(&s, 0, "", 1, 1));
  CHECK(line_is(&s, 1, "", 2, 1));
  CHECK(line_is(&s, 2, "x", 3, 1));
  CHECK(line_is(&s, 3, "", 4, 1));
}

static void test_last_line_without_newline(void)
{
  const char *body = "one\n{\"type\": \"end_of_execution\"}";
  struct sink s = {0};
  struct abx_ndjson d;
  abx_ndjson_init(&d, 0);
  CHECK(abx_ndjson_feed(&d, body, strlen(body), on_line, &s) == ABX_NDJSON_OK);
  CHECK(s.n == 1); /* not before the end */
  CHECK(abx_ndjson_pending(&d) == strlen("{\"type\": \"end_of_execution\"}"));
  CHECK(abx_ndjson_finish(&d, on_line, &s) == ABX_NDJSON_OK);
  CHECK(s.n == 2);
  CHECK(line_is(&s, 1, "{\"type\": \"end_of_execution\"}", 2, 0));
  CHECK(abx_ndjson_pending(&d) == 0);
  /* feeding after the end is a protocol error */
  CHECK(abx_ndjson_feed(&d, "x\n", 2, on_line, &s) == ABX_NDJSON_EPROTO);
  CHECK_CONTAINS(d.error, "after the end");
  abx_ndjson_free(&d);

  struct sink e = {0};
  CHECK(run("", 0, NULL, 0, 0, &e, NULL, 0) == ABX_NDJSON_OK && e.n == 0);
  struct sink cr = {0}; /* a final lone CR is data: reported verbatim */
  CHECK(run("a\nb\r", 4, NULL, 0, 0, &cr, NULL, 0) == ABX_NDJSON_OK);
  CHECK(cr.n == 2 && line_is(&cr, 1, "b\r", 2, 0));
}

static void test_default_limit(void)
{
  struct abx_ndjson d;
  abx_ndjson_init(&d, 0);
  CHECK(d.max_line == ABX_NDJSON_MAX_LINE);
  CHECK(ABX_NDJSON_MAX_LINE == 16u * 1024u * 1024u);
  abx_ndjson_free(&d);
  abx_ndjson_init(&d, 5);
  CHECK(d.max_line == 5);
  abx_ndjson_free(&d);
}

static void test_limit_exact(void)
{
  char err[128];
  struct sink a = {0}, b = {0}, c = {0}, e = {0};
  CHECK(run("12345\n", 6, NULL, 0, 5, &a, NULL, 0) == ABX_NDJSON_OK);
  CHECK(a.n == 1 && line_is(&a, 0, "12345", 1, 1));
  CHECK(run("12345\r\n", 7, NULL, 0, 5, &b, NULL, 0) == ABX_NDJSON_OK); /* CR is no content */
  CHECK(b.n == 1 && line_is(&b, 0, "12345", 1, 2));
  CHECK(run("ok\n123456\n", 10, NULL, 0, 5, &c, err, sizeof err) == ABX_NDJSON_EPROTO);
  CHECK(c.n == 1);
  CHECK_CONTAINS(err, "line 2 is longer than 5 bytes");
  CHECK(run("12345", 5, NULL, 0, 5, &e, NULL, 0) == ABX_NDJSON_OK); /* at the end, too */
  CHECK(e.n == 1 && line_is(&e, 0, "12345", 1, 0));
  struct sink f = {0};
  CHECK(run("12345\r", 6, NULL, 0, 5, &f, err, sizeof err) == ABX_NDJSON_EPROTO);
  CHECK(f.n == 0);
  CHECK_CONTAINS(err, "line 1 is longer");
  check_every_split("12345\n1234\r\n\r\n12345\r\n", 5);
  check_every_split("12345\n123456\n", 5);
  check_every_split("1234\n12345\r\r\n", 5);
}

static void test_limit_split_crlf(void)
{
  /* max_line bytes then a CR: the splitter must wait for the next byte before judging */
  struct abx_ndjson d;
  struct sink s = {0};
  abx_ndjson_init(&d, 5);
  CHECK(abx_ndjson_feed(&d, "12345\r", 6, on_line, &s) == ABX_NDJSON_OK);
  CHECK(abx_ndjson_pending(&d) == 6);
  CHECK(abx_ndjson_feed(&d, "\n", 1, on_line, &s) == ABX_NDJSON_OK);
  CHECK(s.n == 1 && line_is(&s, 0, "12345", 1, 2));
  CHECK(abx_ndjson_feed(&d, "12345\r", 6, on_line, &s) == ABX_NDJSON_OK);
  CHECK(abx_ndjson_feed(&d, "x", 1, on_line, &s) == ABX_NDJSON_EPROTO); /* not an LF */
  CHECK_CONTAINS(d.error, "line 2 is longer than 5 bytes");
  abx_ndjson_free(&d);
  /* max_line + 1 bytes that do not end in a CR prove the line too long at once */
  struct sink t = {0};
  abx_ndjson_init(&d, 5);
  CHECK(abx_ndjson_feed(&d, "1234", 4, on_line, &t) == ABX_NDJSON_OK);
  CHECK(abx_ndjson_feed(&d, "56", 2, on_line, &t) == ABX_NDJSON_EPROTO);
  CHECK(d.cap <= 6 && abx_ndjson_pending(&d) <= 6 && t.n == 0);
  abx_ndjson_free(&d);
}

static void test_over_limit_is_seen_early(void)
{
  /* no LF ever comes: the error comes after max_line + 1 bytes, and the buffer stays bounded */
  struct abx_ndjson d;
  struct sink s = {0};
  abx_ndjson_init(&d, 1000);
  char block[100];
  memset(block, 'x', sizeof block);
  int rc = ABX_NDJSON_OK, fed = 0;
  while (rc == ABX_NDJSON_OK && fed < 100) {
    rc = abx_ndjson_feed(&d, block, sizeof block, on_line, &s);
    fed++;
  }
  CHECK(rc == ABX_NDJSON_EPROTO);
  CHECK(fed == 11); /* 1,100 bytes > 1,000: the 11th slice proves it */
  CHECK(d.cap <= 1001);
  CHECK(s.n == 0);
  CHECK_CONTAINS(d.error, "line 1 is longer than 1000 bytes");
  /* dead stays dead, even for valid input */
  CHECK(abx_ndjson_feed(&d, "\n", 1, on_line, &s) == ABX_NDJSON_EPROTO);
  CHECK(abx_ndjson_finish(&d, on_line, &s) == ABX_NDJSON_EPROTO);
  CHECK(s.n == 0);
  abx_ndjson_free(&d);

  /* one slice holding a whole over-long line is refused without a copy */
  char big[3000];
  memset(big, 'y', sizeof big);
  big[sizeof big - 1] = '\n';
  abx_ndjson_init(&d, 1000);
  CHECK(abx_ndjson_feed(&d, big, sizeof big, on_line, &s) == ABX_NDJSON_EPROTO);
  CHECK(d.cap == 0 && s.n == 0);
  abx_ndjson_free(&d);
}

static void test_default_limit_16mib(void)
{
  size_t max = ABX_NDJSON_MAX_LINE;
  char *big = malloc(max + 2);
  memset(big, 'z', max + 2);
  big[max] = '\n';
  struct sink s = {0};
  struct abx_ndjson d;
  abx_ndjson_init(&d, 0);
  /* exactly 16 MiB in 1 MiB slices: accepted, and the buffer is released after the line */
  int rc = ABX_NDJSON_OK;
  for (size_t at = 0; at < max + 1 && rc == ABX_NDJSON_OK; at += 1u << 20) {
    size_t n = max + 1 - at < (1u << 20) ? max + 1 - at : (1u << 20);
    rc = abx_ndjson_feed(&d, big + at, n, on_line, &s);
  }
  CHECK(rc == ABX_NDJSON_OK);
  CHECK(s.n == 1 && s.longest == max);
  CHECK(d.cap == 0 && d.buf == NULL);
  /* one byte more is refused */
  big[max] = 'z';
  big[max + 1] = '\n';
  rc = ABX_NDJSON_OK;
  for (size_t at = 0; at < max + 2 && rc == ABX_NDJSON_OK; at += 1u << 20) {
    size_t n = max + 2 - at < (1u << 20) ? max + 2 - at : (1u << 20);
    rc = abx_ndjson_feed(&d, big + at, n, on_line, &s);
  }
  CHECK(rc == ABX_NDJSON_EPROTO);
  CHECK(s.n == 1 && d.cap <= max + 1);
  CHECK_CONTAINS(d.error, "line 2 is longer than 16777216 bytes");
  abx_ndjson_free(&d);
  free(big);
}

static void test_consumer_stops(void)
{
  struct sink s = {.stop_at = 2};
  char err[128];
  CHECK(run("a\nb\nc\n", 6, NULL, 0, 0, &s, err, sizeof err) == ABX_NDJSON_EPROTO);
  CHECK(s.n == 2);
  CHECK_CONTAINS(err, "line 2 rejected by the consumer");
  struct sink t = {.stop_at = 1}; /* also for the last line at finish */
  CHECK(run("tail", 4, NULL, 0, 0, &t, err, sizeof err) == ABX_NDJSON_EPROTO);
  CHECK(t.n == 1);
}

static void test_every_split(void)
{
  /* a code-interpreter stream: LF and CRLF lines, an empty line, a keepalive, no final LF */
  check_every_split("{\"type\": \"number_of_executions\", \"execution_count\": 1}\n"
                    "{\"type\": \"stdout\", \"text\": \"a\\n\"}\r\n"
                    "\n{\"type\": \"keepalive\"}\n"
                    "{\"type\": \"end_of_execution\"}",
                    0);
  check_every_split("\r\n\r\n\n\r\r\n", 0);
  check_every_split("x", 0);
  check_every_split("", 0);
  check_every_split("ab\ncd\nef\n", 2);
  check_every_split("ab\ncde\nef\n", 2);
}

static void test_split_lines_are_copied(void)
{
  /* a line split across slices arrives whole (copied), one inside a slice in place */
  const char *body = "first\nsecond\nthird\n";
  size_t cut = 9; /* inside "second" */
  struct sink s = {0};
  CHECK(run(body, strlen(body), &cut, 1, 0, &s, NULL, 0) == ABX_NDJSON_OK);
  CHECK(s.n == 3);
  CHECK(line_is(&s, 0, "first", 1, 1));
  CHECK(line_is(&s, 1, "second", 2, 1));
  CHECK(line_is(&s, 2, "third", 3, 1));
  CHECK(s.in_place == 2);
}

int main(void)
{
  RUN(test_lines_in_one_slice);
  RUN(test_crlf_and_lone_cr);
  RUN(test_empty_lines_are_counted);
  RUN(test_last_line_without_newline);
  RUN(test_default_limit);
  RUN(test_limit_exact);
  RUN(test_limit_split_crlf);
  RUN(test_over_limit_is_seen_early);
  RUN(test_default_limit_16mib);
  RUN(test_consumer_stops);
  RUN(test_every_split);
  RUN(test_split_lines_are_copied);
  return check_report();
}
