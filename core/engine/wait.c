/* wait.c: the host's blocking points inside the engine (wait.h): one op, a buffer's last
 * writer, everything submitted so far, nothing in flight. Waiters sleep on eng->wait_cv; the
 * retirements that may end a wait wake them (inflight.h says when, and why none is lost). */
#include <stdlib.h>
#include <string.h>

#include "engine/buffer.h"
#include "engine/inflight.h"
#include "engine/wait.h"

/* ---------------------------------------------------------------- waits */

int gpar__op_wait(gpar__op *op) {
  gpar_engine *eng = op->eng;
  if (atomic_load(&op->state) != GPAR__ST_RETIRED) {
    pthread_mutex_lock(&eng->wait_mu);
    atomic_fetch_add(&eng->nwaiters, 1); /* before the mark: a retirement that sees it sees us */
    gpar__spin_lock(&op->lock);          /* its retirement reads the mark under the same lock */
    op->waited = 1;
    gpar__spin_unlock(&op->lock);
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
  while (gpar__inflight_count(atomic_load(&eng->inflight), p) != 0) pthread_cond_wait(&eng->wait_cv, &eng->wait_mu);
  atomic_fetch_sub(&eng->nwaiters, 1);
}

/* Wait until every op submitted before the call has retired (wait_mu held): one wait at a
 * time, so the counter it waits on holds no op of an earlier epoch nobody waited for. */
static void wait_submitted_locked(gpar_engine *eng) {
  atomic_fetch_add(&eng->nwaiters, 1);
  while (eng->wait_all_busy) pthread_cond_wait(&eng->wait_cv, &eng->wait_mu);
  atomic_fetch_sub(&eng->nwaiters, 1);
  eng->wait_all_busy = 1;
  unsigned e = (atomic_fetch_xor(&eng->inflight, GPAR__INFLIGHT_PARITY) & GPAR__INFLIGHT_PARITY) != 0;
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
  for (;;) { /* closed in the step that finds nothing in flight: no submission slips in */
    uint64_t w = atomic_load(&eng->inflight);
    if (gpar__inflight_count(w, 0) == 0 && gpar__inflight_count(w, 1) == 0 &&
        atomic_compare_exchange_strong(&eng->inflight, &w, w | GPAR__INFLIGHT_CLOSED))
      break;
    if (gpar__inflight_count(w, 0) || gpar__inflight_count(w, 1)) pthread_cond_wait(&eng->wait_cv, &eng->wait_mu);
  }
  atomic_store(&eng->state, GPAR__ENG_CLOSED);
  atomic_fetch_sub(&eng->nwaiters, 1);
  int st = eng->first_error;
  if (st != GPAR_OK) gpar__set_error_msg(st, eng->first_errmsg);
  pthread_mutex_unlock(&eng->wait_mu);
  return st;
}
