/* inflight.h: ops in flight (inflight.c), the counts the waits of wait.c sleep on, and the
 * first failure gpar_wait_all reports.
 *
 * One 64-bit word (eng->inflight) holds two counters of 31 bits, one per parity of an epoch
 * (bits 0-30 and 32-62), the current parity (bit 31) and the closed mark (bit 63). A submission
 * adds its ops to the current parity's counter, or is refused when the word is closed, in one
 * compare-and-swap, so it never counts in an epoch that has ended nor after the drain; a retired
 * op takes itself off its counter. gpar_wait_all flips the parity and waits for the previous
 * parity's counter to reach 0: every op submitted before the call has retired then, whatever
 * other threads submit meanwhile (they count in the new epoch). Waits for everything happen one
 * at a time (wait_all_busy), so a counter holds no op of an earlier, unwaited epoch. The drain
 * sets the closed mark in the compare-and-swap that finds both counters 0: no submission can
 * slip in between. The only shared writes per op are that CAS and one subtract.
 * Sleeping: waiters sleep on eng->wait_cv under wait_mu and count themselves in nwaiters first.
 * A retirement wakes them only when one may wait for it: an op that a waiter marked (op->waited,
 * written and read under the op's lock, wait.c and deps.c), or the last op of a counter. */
#ifndef GPAR_CORE_ENGINE_INFLIGHT_H
#define GPAR_CORE_ENGINE_INFLIGHT_H

#include "engine/registry.h"

#define GPAR__INFLIGHT_PARITY ((uint64_t)1 << 31)
#define GPAR__INFLIGHT_CLOSED ((uint64_t)1 << 63)
/* The counter of epoch parity p in an in-flight word. */
static inline unsigned gpar__inflight_count(uint64_t word, unsigned p) {
  return (unsigned)((word >> (32 * p)) & 0x7fffffffu);
}
/* Count n ops in flight, in the current epoch's counter (its parity goes to *epoch), unless the
 * drain closed the engine to submissions: GPAR_ESHUTDOWN, nothing counted. */
GPAR__HIDDEN int gpar__inflight_enter(gpar_engine *eng, int n, int *epoch);
/* A retired op of epoch parity `epoch` leaves the counts (failed: it retired with an error);
 * waiters are woken when one waits for this op (waited) or a count reached 0. */
GPAR__HIDDEN void gpar__inflight_leave(gpar_engine *eng, int epoch, int failed, int waited);
/* A failure for gpar_wait_all, kept when it is the first since the last report. */
GPAR__HIDDEN void gpar__first_error(gpar_engine *eng, int status, const char *msg);
/* The engine's counters (gpar_stats_get). */
GPAR__HIDDEN void gpar__stats(gpar_engine *eng, gpar_stats *stats);

#endif
