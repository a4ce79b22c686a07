/*
 * clock.c: the engine's one clock. See clock.h.
 */
#include "clock.h"

#include <time.h>

double abx_now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}
