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
  uint64_t w = atomic_load_explicit(&eng->inflight, memory_order_relaxed);
  unsigned p;
  do {
    if (w & GPAR__INFLIGHT_CLOSED) return GPAR_ESHUTDOWN; /* the drain is over: refused */
    p = (w & GPAR__INFLIGHT_PARITY) != 0;
  } while (!atomic_compare_exchange_weak(&eng->inflight, &w, w + ONE(p) * (uint64_t)n));
  *epoch = (int)p;
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
