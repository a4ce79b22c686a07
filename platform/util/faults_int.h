/*
 * faults_int.h: the rule table shared by faults_load.c (parsing the --faults file) and faults.c
 * (firing rules on requests). Internal to platform/; the contract is faults.h.
 *
 * Threads: the table is written by abx_faults_load before the daemon starts and freed after it
 *          stops; in between only the counters (seen, fired, rng) change, under faults.c's mutex.
 */
#ifndef ABX_UTIL_FAULTS_INT_H
#define ABX_UTIL_FAULTS_INT_H

#include <stddef.h>
#include <stdint.h>

enum kind { K_NONE, K_STATUS, K_RESET, K_TRUNCATE, K_MALFORMED, K_ENVELOPE, K_NO_ANSWER };
enum envelope { E_HUGE, E_COMPRESSED, E_GARBAGE };

struct hdr {
  char *name, *value;
};

struct fault_rule {
  char method[16]; /* "*" for any */
  char *glob;
  unsigned long every;
  double probability; /* < 0: not set */
  uint64_t rng;
  long long limit; /* < 0: none */
  /* counters, under g_mu */
  unsigned long long seen, fired;
  /* action */
  enum kind kind;
  long delay_ms;
  int status;
  char *body;
  struct hdr *hdrs;
  size_t nhdrs;
  int reset_after;
  int status_after; /* status + after: true: handle the request, then answer the status */
  unsigned long long truncate;
  enum envelope envelope;
};

/* The loaded rules in file order (*n of them; NULL and 0 when none are loaded). */
struct fault_rule *abx_faults_table(size_t *n);

#endif
