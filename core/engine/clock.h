/* clock.h: the engine's clock (clock.c): seconds on a monotonic clock, for timestamps, spins
 * and watchdogs. */
#ifndef GPAR_CORE_ENGINE_CLOCK_H
#define GPAR_CORE_ENGINE_CLOCK_H

#include "backend.h"

/* Seconds on a monotonic clock. */
GPAR__HIDDEN double gpar__now(void);

#endif
