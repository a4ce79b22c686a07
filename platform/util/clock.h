/*
 * clock.h: the platform's clocks, in int64 nanoseconds: wall time (CLOCK_REALTIME, for timestamps and
 * TTL deadlines shown to clients) and monotonic time (CLOCK_MONOTONIC, for intervals and waits).
 */
#ifndef ABX_UTIL_CLOCK_H
#define ABX_UTIL_CLOCK_H

#include <stdint.h>

/* Current CLOCK_REALTIME / CLOCK_MONOTONIC time in nanoseconds. */
int64_t abx_now_ns(void);
int64_t abx_mono_ns(void);

#endif
