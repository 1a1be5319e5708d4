/* wait.c: the host's blocking points inside the engine: waiting for one op (gpar_read,
 * synchronous mode), for the last writer of a buffer (gpar_wait), for everything submitted so
 * far (gpar_wait_all) and for nothing in flight (shutdown's drain). Waiters sleep on the
 * engine's retire condition, broadcast by a retirement pass when anyone waits. The public calls
 * (api/waits.c) refuse waits from inside ops (GPAR_EDEADLK) and while recording. */
#include <stdlib.h>

#include "engine/engine.h"

/* Sleep until op has retired (engine lock held). */
static void wait_retired_locked(gpar_engine *eng, gpar__op *op) {
  eng->nwaiters++;
  while (op->state != GPAR__ST_RETIRED) pthread_cond_wait(&eng->retire_cv, &eng->mu);
  eng->nwaiters--;
}

int gpar__op_wait(gpar__op *op) {
  gpar_engine *eng = op->eng;
  pthread_mutex_lock(&eng->mu);
  wait_retired_locked(eng, op);
  int st = op->status;
  if (st != GPAR_OK) gpar__set_error_msg(st, op->errmsg);
  gpar__op_unref_locked(eng, op);
  pthread_mutex_unlock(&eng->mu);
  return st;
}

int gpar__buf_wait(gpar_engine *eng, gpar__buf *b) {
  const char *msg;
  pthread_mutex_lock(&eng->mu);
  gpar__op *w = b->writer;
  int st;
  if (w) {
    w->refs++;
    wait_retired_locked(eng, w);
    st = gpar__op_write_status(w, b, &msg); /* an op with per-buffer outcomes: its outcome on b */
    if (st != GPAR_OK) gpar__set_error_msg(st, msg);
    gpar__op_unref_locked(eng, w);
  } else {
    st = b->status;
    if (st != GPAR_OK) gpar__set_error_msg(st, b->errmsg);
  }
  pthread_mutex_unlock(&eng->mu);
  return st;
}

/* The first error since the last report, reset (engine lock held). */
static int take_first_error_locked(gpar_engine *eng) {
  int st = eng->first_error;
  if (st != GPAR_OK) gpar__set_error_msg(st, eng->first_errmsg);
  eng->first_error = GPAR_OK;
  free(eng->first_errmsg);
  eng->first_errmsg = NULL;
  return st;
}

/* Sleep until every op submitted so far has retired (engine lock held). */
static void wait_submitted_locked(gpar_engine *eng) {
  uint64_t target = eng->seq;
  eng->nwaiters++;
  while (eng->inflight_head && eng->inflight_head->seq <= target) pthread_cond_wait(&eng->retire_cv, &eng->mu);
  eng->nwaiters--;
}

int gpar__wait_all(gpar_engine *eng) {
  pthread_mutex_lock(&eng->mu);
  wait_submitted_locked(eng);
  int st = take_first_error_locked(eng);
  pthread_mutex_unlock(&eng->mu);
  return st;
}

void gpar__wait_submitted(gpar_engine *eng) {
  pthread_mutex_lock(&eng->mu);
  wait_submitted_locked(eng);
  pthread_mutex_unlock(&eng->mu);
}

int gpar__drain(gpar_engine *eng) {
  pthread_mutex_lock(&eng->mu);
  eng->nwaiters++;
  while (eng->inflight_head) pthread_cond_wait(&eng->retire_cv, &eng->mu);
  eng->nwaiters--;
  atomic_store(&eng->state, GPAR__ENG_CLOSED); /* under the lock: no submit slips in after */
  int st = eng->first_error;
  if (st != GPAR_OK) gpar__set_error_msg(st, eng->first_errmsg);
  pthread_mutex_unlock(&eng->mu);
  return st;
}
