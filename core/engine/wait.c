/* wait.c: ops in flight and the host's blocking points inside the engine: waiting for one op
 * (gpar_read, synchronous mode), for the last writer of a buffer (gpar_wait), for everything
 * submitted so far (gpar_wait_all) and for nothing in flight (shutdown's drain).
 *
 * In flight: one 64-bit word holds two counters, one per parity of an epoch number (low and
 * high 32 bits). A submitted op adds itself to the counter of the current epoch's parity; a
 * retired op takes itself off it. gpar_wait_all moves the epoch on and waits for the previous
 * epoch's counter to reach 0: every op submitted before the call has retired then, whatever
 * other threads submit meanwhile (they count in the new epoch). The only shared writes per op
 * are one add and one subtract on that word; waits happen one at a time (wait_all_busy) so an
 * epoch's counter holds no op of an earlier, unwaited epoch.
 * Sleeping: waiters sleep on one condition variable under wait_mu and count themselves in
 * nwaiters; a retirement takes the lock to wake them only when nwaiters says someone sleeps
 * and the retirement is one they may wait for: the op a waiter marked (op->waited), or the
 * last op of a count. Both sides are sequentially consistent (the waiter marks, then rereads
 * the state; the retirement sets the state, then reads the mark), so either the retirement
 * sees the waiter or the waiter sees the retirement. */
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

#define ONE(parity) ((uint64_t)1 << (32 * (parity)))
#define COUNT(word, parity) (((word) >> (32 * (parity))) & 0xffffffffu)

void gpar__engine_sync_init(gpar_engine *eng) {
  pthread_mutex_init(&eng->wait_mu, NULL);
  pthread_cond_init(&eng->wait_cv, NULL);
  pthread_mutex_init(&eng->buf_mu, NULL);
  pthread_mutex_init(&eng->trace_mu, NULL);
  atomic_init(&eng->inflight, 0);
  atomic_init(&eng->epoch, 0);
  atomic_init(&eng->nwaiters, 0);
}

void gpar__engine_sync_destroy(gpar_engine *eng) {
  pthread_mutex_destroy(&eng->wait_mu);
  pthread_cond_destroy(&eng->wait_cv);
  pthread_mutex_destroy(&eng->buf_mu);
  pthread_mutex_destroy(&eng->trace_mu);
}

/* ---------------------------------------------------------------- in flight */

/* Wake sleeping waiters, if any. */
static void wake_waiters(gpar_engine *eng) {
  if (atomic_load(&eng->nwaiters) == 0) return;
  pthread_mutex_lock(&eng->wait_mu);
  pthread_cond_broadcast(&eng->wait_cv);
  pthread_mutex_unlock(&eng->wait_mu);
}

int gpar__inflight_enter(gpar_engine *eng, gpar__op **ops, int n) {
  unsigned e = atomic_load(&eng->epoch) & 1;
  uint64_t w = atomic_fetch_add(&eng->inflight, ONE(e) * (uint64_t)n) + ONE(e) * (uint64_t)n;
  unsigned now = atomic_load(&eng->epoch) & 1;
  if (now != e) { /* a wait_all moved the epoch meanwhile: count in the new one (one add) */
    const uint64_t move = (ONE(now) - ONE(e)) * (uint64_t)n;
    w = atomic_fetch_add(&eng->inflight, move) + move;
    /* That count may have reached 0 here rather than in a retirement: the wait_all waiting
     * for it must hear of it. */
    if (COUNT(w, e) == 0) wake_waiters(eng);
    e = now;
  }
  if (atomic_load(&eng->state) == GPAR__ENG_CLOSED) { /* the drain is over: refused */
    w = atomic_fetch_sub(&eng->inflight, ONE(e) * (uint64_t)n) - ONE(e) * (uint64_t)n;
    if (w == 0) wake_waiters(eng); /* the drain rechecking after it closed must hear of it */
    return GPAR_ESHUTDOWN;
  }
  for (int i = 0; i < n; i++) ops[i]->epoch = (int)e;
  atomic_fetch_add_explicit(&eng->ops_submitted, (uint64_t)n, memory_order_relaxed);
  return GPAR_OK;
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

void gpar__inflight_leave(gpar_engine *eng, int epoch, int failed, int waited) {
  if (failed) atomic_fetch_add_explicit(&eng->ops_failed, 1, memory_order_relaxed);
  uint64_t w = atomic_fetch_sub(&eng->inflight, ONE(epoch)) - ONE(epoch);
  /* Who may be waiting for this retirement: a waiter on this op, or a wait for a count that
   * just reached 0 (wait_all, the drain). No other retirement wakes anyone. */
  if (waited || COUNT(w, epoch) == 0) wake_waiters(eng);
}

void gpar__stats(gpar_engine *eng, gpar_stats *s) {
  uint64_t w = atomic_load(&eng->inflight);
  s->ops_failed = atomic_load(&eng->ops_failed);
  s->ops_submitted = atomic_load(&eng->ops_submitted);
  s->ops_in_flight = COUNT(w, 0) + COUNT(w, 1);
  /* Retired: counted in, not in flight (exact when nothing is submitted meanwhile). */
  s->ops_completed = s->ops_submitted > s->ops_in_flight ? s->ops_submitted - s->ops_in_flight : 0;
  s->buffers_live = (uint64_t)atomic_load(&eng->buffers_live);
}

/* ---------------------------------------------------------------- waits */

int gpar__op_wait(gpar__op *op) {
  gpar_engine *eng = op->eng;
  if (atomic_load(&op->state) != GPAR__ST_RETIRED) {
    pthread_mutex_lock(&eng->wait_mu);
    atomic_fetch_add(&eng->nwaiters, 1);
    atomic_store(&op->waited, 1); /* its retirement wakes the waiters (then reread the state) */
    while (atomic_load(&op->state) != GPAR__ST_RETIRED) pthread_cond_wait(&eng->wait_cv, &eng->wait_mu);
    atomic_fetch_sub(&eng->nwaiters, 1);
    pthread_mutex_unlock(&eng->wait_mu);
  }
  int st = op->status;
  if (st != GPAR_OK) gpar__set_error_msg(st, op->errmsg);
  gpar__op_unref(op);
  return st;
}

int gpar__buf_wait(gpar_engine *eng, gpar__buf *b) {
  (void)eng;
  gpar__spin_lock(&b->lock);
  gpar__op *w = b->writer;
  if (w) gpar__op_ref(w); /* still in the buffer: not retired, not freed */
  int st = b->status;
  char *msg = st != GPAR_OK && b->errmsg ? strdup(b->errmsg) : NULL;
  gpar__spin_unlock(&b->lock);
  if (w) {
    const char *m;
    gpar__op_ref(w); /* one for gpar__op_wait to drop, one to read its outcome on b after */
    gpar__op_wait(w);
    st = gpar__op_write_status(w, b, &m); /* an op with per-buffer outcomes: its outcome on b */
    if (st != GPAR_OK) gpar__set_error_msg(st, m);
    gpar__op_unref(w);
  } else if (st != GPAR_OK) {
    gpar__set_error_msg(st, msg);
  }
  free(msg);
  return st;
}

/* Wait until the counter of parity p is 0 (wait_mu held). */
static void wait_count_locked(gpar_engine *eng, unsigned p) {
  atomic_fetch_add(&eng->nwaiters, 1);
  while (COUNT(atomic_load(&eng->inflight), p) != 0) pthread_cond_wait(&eng->wait_cv, &eng->wait_mu);
  atomic_fetch_sub(&eng->nwaiters, 1);
}

/* Wait until every op submitted before the call has retired (wait_mu held): one wait at a
 * time, so the counter it waits on holds no op of an earlier epoch nobody waited for. */
static void wait_submitted_locked(gpar_engine *eng) {
  atomic_fetch_add(&eng->nwaiters, 1);
  while (eng->wait_all_busy) pthread_cond_wait(&eng->wait_cv, &eng->wait_mu);
  atomic_fetch_sub(&eng->nwaiters, 1);
  eng->wait_all_busy = 1;
  unsigned e = atomic_fetch_add(&eng->epoch, 1) & 1;
  wait_count_locked(eng, e);
  eng->wait_all_busy = 0;
  pthread_cond_broadcast(&eng->wait_cv); /* the next wait_all */
}

/* The first error since the last report, reset (wait_mu held). */
static int take_first_error_locked(gpar_engine *eng) {
  int st = eng->first_error;
  if (st != GPAR_OK) gpar__set_error_msg(st, eng->first_errmsg);
  eng->first_error = GPAR_OK;
  free(eng->first_errmsg);
  eng->first_errmsg = NULL;
  return st;
}

int gpar__wait_all(gpar_engine *eng) {
  pthread_mutex_lock(&eng->wait_mu);
  wait_submitted_locked(eng);
  int st = take_first_error_locked(eng);
  pthread_mutex_unlock(&eng->wait_mu);
  return st;
}

void gpar__wait_submitted(gpar_engine *eng) {
  pthread_mutex_lock(&eng->wait_mu);
  wait_submitted_locked(eng);
  pthread_mutex_unlock(&eng->wait_mu);
}

int gpar__drain(gpar_engine *eng) {
  pthread_mutex_lock(&eng->wait_mu);
  atomic_fetch_add(&eng->nwaiters, 1);
  for (;;) {
    while (atomic_load(&eng->inflight) != 0) pthread_cond_wait(&eng->wait_cv, &eng->wait_mu);
    /* Closed, then counted once more: a submission that counted itself before it could see
     * CLOSED is waited for; any later one sees CLOSED and is refused (inflight_enter). */
    atomic_store(&eng->state, GPAR__ENG_CLOSED);
    if (atomic_load(&eng->inflight) == 0) break;
  }
  atomic_fetch_sub(&eng->nwaiters, 1);
  int st = eng->first_error;
  if (st != GPAR_OK) gpar__set_error_msg(st, eng->first_errmsg);
  pthread_mutex_unlock(&eng->wait_mu);
  return st;
}
