/*
 * check.h: the tiny assertion macros of the C unit tests (no framework).
 *
 * CHECK(cond) records a failure with file:line and goes on; the test's main returns
 * check_report(), which prints the tally and gives 0 only when every check held.
 */
#ifndef ABX_TEST_CHECK_H
#define ABX_TEST_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_failed, check_total;

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    check_total++;                                                                                 \
    if (!(cond)) {                                                                                 \
      check_failed++;                                                                              \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                     \
    }                                                                                              \
  } while (0)

/* Compares two strings; prints both when they differ. */
#define CHECK_STR(actual, expected)                                                                \
  do {                                                                                             \
    const char *a_ = (actual), *e_ = (expected);                                                   \
    check_total++;                                                                                 \
    if (!a_ || strcmp(a_, e_) != 0) {                                                              \
      check_failed++;                                                                              \
      fprintf(stderr, "%s:%d: CHECK_STR failed: %s\n  expected: \"%s\"\n  actual:   \"%s\"\n",     \
              __FILE__, __LINE__, #actual, e_, a_ ? a_ : "(null)");                                \
    }                                                                                              \
  } while (0)

/* Checks that 'hay' contains 'needle'. */
#define CHECK_CONTAINS(hay, needle)                                                                \
  do {                                                                                             \
    const char *h_ = (hay), *n_ = (needle);                                                        \
    check_total++;                                                                                 \
    if (!h_ || !strstr(h_, n_)) {                                                                  \
      check_failed++;                                                                              \
      fprintf(stderr, "%s:%d: CHECK_CONTAINS failed: \"%s\" not in \"%s\"\n", __FILE__, __LINE__,  \
              n_, h_ ? h_ : "(null)");                                                             \
    }                                                                                              \
  } while (0)

#define RUN(fn)                                                                                    \
  do {                                                                                             \
    int before_ = check_failed;                                                                    \
    fn();                                                                                          \
    printf("%s %s\n", check_failed == before_ ? "ok  " : "FAIL", #fn);                             \
  } while (0)

static int check_report(void)
{
  printf("%d checks, %d failed\n", check_total, check_failed);
  return check_failed ? 1 : 0;
}

#endif
