/* op.c: ops as objects: allocation from the engine's free list, the buffers an op accesses,
 * building and discarding, references, and what an op owns (its buffer references, a pinned
 * block, its kind's private state), given up in one place whether it retires or is discarded.
 * Linking ops into the dependency graph is deps.c's. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

void gpar__op_set_state(gpar__op *op, int state) {
  assert(state == op->state + 1 && "op states advance one step at a time");
  op->state = state;
}

gpar__op *gpar__op_new(gpar_engine *eng, const gpar__op_kind *kind, gpar__device *dev, int lane) {
  pthread_mutex_lock(&eng->mu);
  gpar__op *op = eng->op_free;
  if (op) eng->op_free = op->next;
  pthread_mutex_unlock(&eng->mu);
  if (!op && !(op = malloc(sizeof *op))) {
    gpar__errorf(GPAR_ENOMEM, "out of host memory for an operation");
    return NULL;
  }
  memset(op, 0, sizeof *op);
  op->kind = kind;
  op->eng = eng;
  op->dev = dev;
  op->lane = lane;
  return op;
}

int gpar__op_use(gpar__op *op, gpar__buf *b, int mode) {
  assert(op->state == GPAR__ST_NEW);
  for (int i = 0; i < op->nacc; i++) {
    gpar__access *a = gpar__op_access(op, i);
    if (a->buf == b) {
      a->mode |= mode;
      gpar__buf_put(b); /* the op holds one already */
      return GPAR_OK;
    }
  }
  if (op->nacc >= GPAR__INLINE) {
    int extra = op->nacc - GPAR__INLINE;
    if ((extra & (extra - 1)) == 0) { /* grow at 0, 1, 2, 4, 8, ... */
      gpar__access *m = realloc(op->acc_more, sizeof *m * (size_t)(extra ? extra * 2 : 1));
      if (!m) {
        gpar__buf_put(b);
        return gpar__errorf(GPAR_ENOMEM, "out of host memory for an operation");
      }
      op->acc_more = m;
    }
  }
  gpar__access *a = gpar__op_access(op, op->nacc++);
  a->buf = b;
  a->mode = mode;
  return GPAR_OK;
}

int gpar__op_use_unique(gpar__op *op, const gpar__access *acc, int n) {
  assert(op->state == GPAR__ST_NEW && op->nacc == 0);
  if (n > GPAR__INLINE) {
    /* capacity as gpar__op_use would grow it: the next power of two of the extra entries */
    int extra = n - GPAR__INLINE, cap = 1;
    while (cap < extra) cap *= 2;
    if (!(op->acc_more = malloc(sizeof *op->acc_more * (size_t)cap)))
      return gpar__errorf(GPAR_ENOMEM, "out of host memory for an operation");
  }
  for (int i = 0; i < n; i++) {
    gpar__buf_ref(acc[i].buf);
    *gpar__op_access(op, i) = acc[i];
  }
  op->nacc = n;
  return GPAR_OK;
}

/* What the op owns besides its memory: its kind's state and a pinned block. Given up once, at
 * retirement or discard. */
void gpar__op_release_owned(gpar__op *op) {
  if (op->kind && op->kind->release) op->kind->release(op);
  op->kind = NULL; /* released: a late reader of op->kind is a bug */
  if (op->owned_pinned) gpar__pinned_free(&op->eng->pinned, op->owned_pinned);
  op->owned_pinned = NULL;
}

void gpar__op_discard(gpar__op *op) {
  gpar_engine *eng = op->eng;
  assert(op->state == GPAR__ST_NEW);
  gpar__op_release_owned(op);
  for (int i = 0; i < op->nacc; i++) gpar__buf_put(gpar__op_access(op, i)->buf);
  op->nacc = 0;
  pthread_mutex_lock(&eng->mu);
  gpar__op_free_locked(eng, op);
  pthread_mutex_unlock(&eng->mu);
}

static void edges_free(gpar__edges *e) {
  if (e->v && e->v != e->inl) free(e->v);
  e->v = NULL;
  e->n = e->cap = 0;
}

/* Return the op's memory to the free list (engine lock held): its events, edges and messages.
 * What it owned is given up already (retirement or discard). */
void gpar__op_free_locked(gpar_engine *eng, gpar__op *op) {
  const gpar__backend_ops *ops = op->dev ? op->dev->ops : NULL;
  if (op->event) {
    ops->event_release(op->event);
    atomic_fetch_sub(&eng->events_live, 1);
  }
  if (op->start_event) {
    ops->event_release(op->start_event);
    atomic_fetch_sub(&eng->events_live, 1);
  }
  if (op->cover) gpar__op_unref_locked(eng, op->cover);
  edges_free(&op->prods);
  edges_free(&op->succs);
  free(op->acc_more);
  free(op->errmsg);
  free(op->async_msg);
  op->next = eng->op_free;
  eng->op_free = op;
}

void gpar__op_unref_locked(gpar_engine *eng, gpar__op *op) {
  assert(op->refs > 0);
  if (--op->refs == 0) gpar__op_free_locked(eng, op);
}

void gpar__op_ref(gpar__op *op) {
  pthread_mutex_lock(&op->eng->mu);
  op->refs++;
  pthread_mutex_unlock(&op->eng->mu);
}

void gpar__op_unref(gpar__op *op) {
  gpar_engine *eng = op->eng;
  pthread_mutex_lock(&eng->mu);
  gpar__op_unref_locked(eng, op);
  pthread_mutex_unlock(&eng->mu);
}

void gpar__engine_drop_ops(gpar_engine *eng) {
  while (eng->op_free) {
    gpar__op *op = eng->op_free;
    eng->op_free = op->next;
    free(op);
  }
}

void gpar__op_fail(gpar__op *op, int st) {
  if (op->status != GPAR_OK) return;
  op->status = st;
  free(op->errmsg);
  op->errmsg = strdup(st == GPAR_EDEPFAILED ? gpar_strerror(st) : gpar__error_msg());
}
