/*
 * clock.h: the engine's one clock.
 *
 * Units:   milliseconds of CLOCK_MONOTONIC, as a double (sub-millisecond precision), the unit of
 *          every engine time (loop.h): deadlines, timers, transfer timings.
 */
#ifndef ABX_CLOCK_H
#define ABX_CLOCK_H

/* Monotonic clock in milliseconds. */
double abx_now_ms(void);

#endif
