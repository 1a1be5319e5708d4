/* inflight.c: ops in flight, counted per epoch in one word, the wake-ups of the waiters that
 * sleep on those counts (wait.c), and the first failure gpar_wait_all reports (inflight.h says
 * how the counts and the wake-ups work). */
#include <stdlib.h>
#include <string.h>

#include "engine/inflight.h"

#define ONE(parity) ((uint64_t)1 << (32 * (parity)))

/* Wake sleeping waiters, if any. */
static void wake_waiters(gpar_engine *eng) {
  if (atomic_load(&eng->nwaiters) == 0) return;
  pthread_mutex_lock(&eng->wait_mu);
  pthread_cond_broadcast(&eng->wait_cv);
  pthread_mutex_unlock(&eng->wait_mu);
}

int gpar__inflight_enter(gpar_engine *eng, int n, int *epoch) {
  unsigned e = atomic_load(&eng->epoch) & 1;
  uint64_t w = atomic_fetch_add(&eng->inflight, ONE(e) * (uint64_t)n) + ONE(e) * (uint64_t)n;
  unsigned now = atomic_load(&eng->epoch) & 1;
  if (now != e) { /* a wait_all moved the epoch meanwhile: count in the new one (one add) */
    const uint64_t move = (ONE(now) - ONE(e)) * (uint64_t)n;
    w = atomic_fetch_add(&eng->inflight, move) + move;
    /* That count may have reached 0 here rather than in a retirement: the wait_all waiting
     * for it must hear of it. */
    if (gpar__inflight_count(w, e) == 0) wake_waiters(eng);
    e = now;
  }
  if (atomic_load(&eng->state) == GPAR__ENG_CLOSED) { /* the drain is over: refused */
    w = atomic_fetch_sub(&eng->inflight, ONE(e) * (uint64_t)n) - ONE(e) * (uint64_t)n;
    if (w == 0) wake_waiters(eng); /* the drain rechecking after it closed must hear of it */
    return GPAR_ESHUTDOWN;
  }
  *epoch = (int)e;
  atomic_fetch_add_explicit(&eng->ops_submitted, (uint64_t)n, memory_order_relaxed);
  return GPAR_OK;
}

void gpar__inflight_leave(gpar_engine *eng, int epoch, int failed, int waited) {
  if (failed) atomic_fetch_add_explicit(&eng->ops_failed, 1, memory_order_relaxed);
  uint64_t w = atomic_fetch_sub(&eng->inflight, ONE(epoch)) - ONE(epoch);
  /* Who may be waiting for this retirement: a waiter on this op, or a wait for a count that
   * just reached 0 (wait_all, the drain). No other retirement wakes anyone. */
  if (waited || gpar__inflight_count(w, (unsigned)epoch) == 0) wake_waiters(eng);
}

void gpar__first_error(gpar_engine *eng, int status, const char *msg) {
  char *copy = msg ? strdup(msg) : NULL;
  pthread_mutex_lock(&eng->wait_mu);
  if (eng->first_error == GPAR_OK) { /* only the first is kept */
    eng->first_error = status;
    eng->first_errmsg = copy;
    copy = NULL;
  }
  pthread_mutex_unlock(&eng->wait_mu);
  free(copy);
}

void gpar__stats(gpar_engine *eng, gpar_stats *s) {
  uint64_t w = atomic_load(&eng->inflight);
  s->ops_failed = atomic_load(&eng->ops_failed);
  s->ops_submitted = atomic_load(&eng->ops_submitted);
  s->ops_in_flight = gpar__inflight_count(w, 0) + gpar__inflight_count(w, 1);
  /* Retired: counted in, not in flight (exact when nothing is submitted meanwhile). */
  s->ops_completed = s->ops_submitted > s->ops_in_flight ? s->ops_submitted - s->ops_in_flight : 0;
  s->buffers_live = (uint64_t)atomic_load(&eng->buffers_live);
}
