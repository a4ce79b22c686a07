/*
 * text.h: text codecs of the platform's HTTP inputs and outputs: percent-decoding and RFC3339 time.
 * Units: times are int64 nanoseconds since the Unix epoch (CLOCK_REALTIME).
 */
#ifndef ABX_UTIL_TEXT_H
#define ABX_UTIL_TEXT_H

#include <stdint.h>

/* Decode %XX escapes (and '+' as space when plus_space) in place. Returns 0, or -1 on a bad escape
 * or a decoded NUL byte. */
int abx_percent_decode(char *s, int plus_space);

/* Format `ns` as RFC3339 UTC with millisecond precision ("2025-01-02T03:04:05.678Z") into out[32]. */
void abx_rfc3339(int64_t ns, char out[32]);

/* Parse an RFC3339 date-time ("2025-01-02T03:04:05Z", optional fraction, "Z" or "±hh:mm") into
 * nanoseconds since the epoch. 0, or -1 when `s` is not one (trailing text included). */
int abx_rfc3339_parse(const char *s, int64_t *ns);

#endif
