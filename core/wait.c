/* wait.c: the host's blocking points: waiting for one op (gpar_read, synchronous mode), for the
 * last writer of a buffer (gpar_wait) and for everything submitted so far (gpar_wait_all).
 * Waiters sleep on the engine's retire condition, broadcast by a retirement pass when anyone
 * waits. None may be called from inside an op (GPAR_EDEADLK). */
#include <stdlib.h>

#include "internal.h"

/* Wait until op has retired; drop the reference the caller held; its status. */
int gpar__wait_op(gpar_engine *eng, gpar__op *op) {
  pthread_mutex_lock(&eng->mu);
  eng->nwaiters++;
  while (op->state != GPAR__ST_RETIRED) pthread_cond_wait(&eng->retire_cv, &eng->mu);
  eng->nwaiters--;
  int st = op->status;
  if (st != GPAR_OK) gpar__set_error_msg(st, op->errmsg);
  gpar__op_unref_locked(eng, op);
  pthread_mutex_unlock(&eng->mu);
  return st;
}

/* The buffer's pending writer with a reference for gpar__wait_op, or NULL and its status. */
static gpar__op *buf_writer_locked(gpar_engine *eng, gpar_buffer h, int *st, gpar__buf **wb) {
  gpar__buf *b;
  if ((*st = gpar__buf_get_locked(eng, h, &b))) return NULL;
  if (gpar__in_op) {
    *st = gpar__errorf(GPAR_EDEADLK, "gpar_wait called from inside an operation");
    return NULL;
  }
  if (gpar__graph_recording(eng)) {
    *st = gpar__errorf(GPAR_ERECORDING, "gpar_wait called while this thread records a graph");
    return NULL;
  }
  gpar__op *w = b->writer;
  if (w) {
    w->refs++;
    *wb = b;
    return w;
  }
  *st = b->status;
  if (*st != GPAR_OK) gpar__set_error_msg(*st, b->errmsg);
  return NULL;
}

GPAR_API int gpar_wait(gpar_buffer handle) {
  int st;
  gpar_engine *eng = gpar__engine_enter_buf(handle, &st);
  if (!eng) return st;
  pthread_mutex_lock(&eng->mu);
  gpar__buf *b = NULL;
  gpar__op *w = buf_writer_locked(eng, handle, &st, &b);
  pthread_mutex_unlock(&eng->mu);
  if (w) st = w->kind == GPAR__OP_GRAPH ? gpar__graph_wait_buf(eng, w, b) : gpar__wait_op(eng, w); /* graph_launch.c: its status on b */
  gpar__engine_leave(eng);
  return st;
}

GPAR_API int gpar_wait_all(gpar_engine *e) {
  int st;
  gpar_engine *eng = gpar__engine_enter(e, &st);
  if (!eng) return st;
  if (gpar__in_op || gpar__graph_recording(eng)) {
    gpar__engine_leave(eng);
    if (!gpar__in_op) return gpar__errorf(GPAR_ERECORDING, "gpar_wait_all called while this thread records a graph");
    return gpar__errorf(GPAR_EDEADLK, "gpar_wait_all called from inside an operation");
  }
  pthread_mutex_lock(&eng->mu);
  uint64_t target = eng->seq;
  eng->nwaiters++;
  while (eng->inflight_head && eng->inflight_head->seq <= target) pthread_cond_wait(&eng->retire_cv, &eng->mu);
  eng->nwaiters--;
  st = eng->first_error;
  if (st != GPAR_OK) gpar__set_error_msg(st, eng->first_errmsg);
  eng->first_error = GPAR_OK;
  free(eng->first_errmsg);
  eng->first_errmsg = NULL;
  pthread_mutex_unlock(&eng->mu);
  gpar__engine_leave(eng);
  return st;
}
