/* clock.c: the one clock of libgpar, seconds on the monotonic clock (traces, spins, timeouts,
 * watchdogs), and gpar_now, the same clock for the tools, the tests and users. With backend.h
 * and error.c, the bottom of core/: backends and every layer above call it. */
#include <time.h>

#include "backend.h"

double gpar__now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

GPAR_API double gpar_now(void) { return gpar__now(); }
