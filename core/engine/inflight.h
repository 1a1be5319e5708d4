/* inflight.h: ops in flight (inflight.c), the counts the waits of wait.c sleep on, and the
 * first failure gpar_wait_all reports.
 *
 * One 64-bit word holds two counters, one per parity of an epoch number (low and high 32 bits).
 * A submitted op adds itself to the counter of the current epoch's parity; a retired op takes
 * itself off it. gpar_wait_all moves the epoch on and waits for the previous epoch's counter to
 * reach 0: every op submitted before the call has retired then, whatever other threads submit
 * meanwhile (they count in the new epoch). The only shared writes per op are one add and one
 * subtract on that word; waits happen one at a time (wait_all_busy) so an epoch's counter holds
 * no op of an earlier, unwaited epoch.
 * Sleeping: waiters sleep on eng->wait_cv under wait_mu and count themselves in nwaiters; a
 * retirement takes the lock to wake them only when nwaiters says someone sleeps and the
 * retirement is one they may wait for: the op a waiter marked (op->waited), or the last op of a
 * count. Both sides are sequentially consistent (the waiter marks, then rereads the state; the
 * retirement sets the state, then reads the mark), so either the retirement sees the waiter or
 * the waiter sees the retirement. */
#ifndef GPAR_CORE_ENGINE_INFLIGHT_H
#define GPAR_CORE_ENGINE_INFLIGHT_H

#include "engine/registry.h"

/* The counter of epoch parity p in an in-flight word. */
static inline unsigned gpar__inflight_count(uint64_t word, unsigned p) {
  return (unsigned)((word >> (32 * p)) & 0xffffffffu);
}
/* Count n ops in flight (in the current epoch's counter, whose parity goes to *epoch) and check
 * the engine is open to submissions: GPAR_ESHUTDOWN (counts undone) once the drain closed it. */
GPAR__HIDDEN int gpar__inflight_enter(gpar_engine *eng, int n, int *epoch);
/* A retired op of epoch parity `epoch` leaves the counts (failed: it retired with an error);
 * waiters are woken when one waits for this op (waited) or a count reached 0. */
GPAR__HIDDEN void gpar__inflight_leave(gpar_engine *eng, int epoch, int failed, int waited);
/* A failure for gpar_wait_all, kept when it is the first since the last report. */
GPAR__HIDDEN void gpar__first_error(gpar_engine *eng, int status, const char *msg);
/* The engine's counters (gpar_stats_get). */
GPAR__HIDDEN void gpar__stats(gpar_engine *eng, gpar_stats *stats);

#endif
