/* clock.c: the engine's clock, seconds on a monotonic clock (timestamps, spins, watchdogs). */
#include <time.h>

#include "engine/clock.h"

double gpar__now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
