/* deps.c: dependency tracking. Ops and their edges, the last writer and readers of each buffer
 * (MXNet-style var queues), submission, and retirement with failure propagation. Everything
 * here runs under the engine lock, except gpar__op_add_access (touches only an unsubmitted op).
 *
 * Ordering rule: an edge producer -> consumer is ordered on the device (the consumer's lane
 * waits on the producer's event) when both run on lanes of one event backend that can wait
 * across the two devices; every other edge (CPU ops, across backends) waits for the producer to
 * retire. A consumer's `unmet` counts producers not yet dispatched (event edges) or retired
 * (the others); `unretired` counts producers not yet retired: an op retires only after its
 * producers, so a buffer's status always comes from its last writer. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---------------------------------------------------------------- ops */

void gpar__op_set_state(gpar__op *op, int state) {
  assert(state == op->state + 1 && "op states advance one step at a time");
  op->state = state;
}

static int edges_push(gpar__edges *e, gpar__op *op, int flags) {
  if (!e->v) {
    e->v = e->inl;
    e->cap = GPAR__INLINE;
  }
  if (e->n == e->cap) {
    int cap = e->cap * 2;
    gpar__edge *v = malloc(sizeof *v * (size_t)cap);
    if (!v) return GPAR_ENOMEM;
    memcpy(v, e->v, sizeof *v * (size_t)e->n);
    if (e->v != e->inl) free(e->v);
    e->v = v;
    e->cap = cap;
  }
  e->v[e->n].op = op;
  e->v[e->n].flags = flags;
  e->n++;
  return GPAR_OK;
}

static void edges_free(gpar__edges *e) {
  if (e->v && e->v != e->inl) free(e->v);
  e->v = NULL;
  e->n = e->cap = 0;
}

gpar__op *gpar__op_new_locked(gpar_engine *eng) {
  gpar__op *op = eng->op_free;
  if (op)
    eng->op_free = op->next;
  else if (!(op = malloc(sizeof *op)))
    return NULL;
  memset(op, 0, sizeof *op);
  return op;
}

int gpar__op_add_access(gpar__op *op, gpar__buf *buf, int mode) {
  for (int i = 0; i < op->nacc; i++) {
    gpar__access *a = gpar__op_access(op, i);
    if (a->buf == buf) {
      a->mode |= mode;
      return GPAR_OK;
    }
  }
  if (op->nacc >= GPAR__INLINE) {
    int extra = op->nacc - GPAR__INLINE;
    if ((extra & (extra - 1)) == 0) { /* grow at 0, 1, 2, 4, 8, ... */
      gpar__access *m = realloc(op->acc_more, sizeof *m * (size_t)(extra ? extra * 2 : 1));
      if (!m) return GPAR_ENOMEM;
      op->acc_more = m;
    }
  }
  gpar__access *a = gpar__op_access(op, op->nacc++);
  a->buf = buf;
  a->mode = mode;
  return GPAR_OK;
}

static void op_free_locked(gpar_engine *eng, gpar__op *op) {
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
  gpar__comm_op_free(op);
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
  if (--op->refs == 0) op_free_locked(eng, op);
}

/* Discard an op that was built but never submitted (argument error). */
void gpar__op_discard_locked(gpar_engine *eng, gpar__op *op) {
  assert(op->state == GPAR__ST_NEW);
  op->dev = NULL;
  op_free_locked(eng, op);
}

/* Free the op free list (shutdown: nothing is in flight). */
void gpar__engine_drop_ops(gpar_engine *eng) {
  while (eng->op_free) {
    gpar__op *op = eng->op_free;
    eng->op_free = op->next;
    free(op);
  }
}

/* Record the first failure of an op; EDEPFAILED keeps its short text. */
void gpar__op_fail(gpar__op *op, int st) {
  if (op->status != GPAR_OK) return;
  op->status = st;
  free(op->errmsg);
  op->errmsg = strdup(st == GPAR_EDEPFAILED ? gpar_strerror(st) : gpar__error_msg());
}

static void make_ready_locked(gpar__op *op) {
  gpar__op_set_state(op, GPAR__ST_READY);
  if (op->dev->eng->tracing) op->t_ready = gpar__now();
  gpar__queue_push(&op->dev->ready, op);
}

/* ---------------------------------------------------------------- edges */

static int edge_on_device(const gpar__op *p, const gpar__op *c) {
  const gpar__device *pd = p->dev, *cd = c->dev;
  /* A backend whose host-to-device copies may read host memory when enqueued (NVIDIA's OpenCL
   * stages the source at enqueue) cannot order that read behind an event: wait for retirement. */
  if ((c->kind == GPAR__OP_COPY && c->u.copy.kind == GPAR__COPY_H2D) || c->kind == GPAR__OP_GRAPH)
    if (cd->ops->h2d_reads_at_enqueue) return 0;
  return pd->ops == cd->ops && pd->ops->ordered_by_events &&
         (pd == cd || pd->ops->can_wait(pd->be, pd->bidx, cd->bidx));
}

/* Link consumer c behind producer p. */
static int add_edge_locked(gpar__op *p, gpar__op *c, int data) {
  for (int i = 0; i < c->prods.n; i++)
    if (c->prods.v[i].op == p) { /* already linked through another buffer */
      if (data && !(c->prods.v[i].flags & GPAR__EDGE_DATA)) {
        c->prods.v[i].flags |= GPAR__EDGE_DATA;
        for (int j = 0; j < p->succs.n; j++)
          if (p->succs.v[j].op == c) p->succs.v[j].flags |= GPAR__EDGE_DATA;
      }
      return GPAR_OK;
    }
  int flags = (data ? GPAR__EDGE_DATA : 0) | (edge_on_device(p, c) ? GPAR__EDGE_EVENT : 0);
  if (edges_push(&p->succs, c, flags) || edges_push(&c->prods, p, flags)) return GPAR_ENOMEM;
  p->refs++;
  c->unretired++;
  if (!(flags & GPAR__EDGE_EVENT) || p->state < GPAR__ST_DISPATCHED) c->unmet++;
  if (p->state >= GPAR__ST_DISPATCHED && data && gpar__op_fails_reader(p, c)) atomic_store(&c->dep_failed, 1);
  return GPAR_OK;
}

static int buf_add_reader_locked(gpar__buf *b, gpar__op *op) {
  if (b->nreaders && b->readers[b->nreaders - 1] == op) return GPAR_OK;
  if (b->nreaders == b->capreaders) {
    int cap = b->capreaders ? b->capreaders * 2 : 4;
    gpar__op **r = realloc(b->readers, sizeof *r * (size_t)cap);
    if (!r) return GPAR_ENOMEM;
    b->readers = r;
    b->capreaders = cap;
  }
  b->readers[b->nreaders++] = op;
  return GPAR_OK;
}

static void buf_remove_reader_locked(gpar__buf *b, gpar__op *op) {
  for (int r = 0; r < b->nreaders; r++)
    if (b->readers[r] == op) {
      memmove(&b->readers[r], &b->readers[r + 1], sizeof *b->readers * (size_t)(b->nreaders - r - 1));
      b->nreaders--;
      return;
    }
}

/* ---------------------------------------------------------------- submit */

/* Link the op behind the last writer and readers of each buffer it touches and queue it on its
 * device when nothing holds it back. */
int gpar__op_submit_locked(gpar_engine *eng, gpar__op *op, int keep) {
  int st = GPAR_OK;
  if (atomic_load(&eng->state) == GPAR__ENG_CLOSED) { /* drained: nothing may start now */
    if (op->staging) gpar__pinned_free(&eng->pinned, op->staging);
    op->staging = NULL;
    gpar__op_discard_locked(eng, op);
    return gpar__errorf(GPAR_ESHUTDOWN, "engine is shut down");
  }
  if (gpar__graph_recording(eng)) return gpar__graph_record_locked(eng, op); /* graph_record.c */
  op->refs = 1 + (keep ? 1 : 0);
  gpar__op_set_state(op, GPAR__ST_WAITING);
  op->seq = ++eng->seq;
  op->inflight_prev = eng->inflight_tail;
  op->inflight_next = NULL;
  if (eng->inflight_tail)
    eng->inflight_tail->inflight_next = op;
  else
    eng->inflight_head = op;
  eng->inflight_tail = op;
  eng->stats.ops_submitted++;
  eng->stats.ops_in_flight++;
  if (eng->tracing) op->t_call = gpar__depth ? gpar__t_call : gpar__now();
  for (int i = 0; i < op->nacc && st == GPAR_OK; i++) {
    gpar__access *a = gpar__op_access(op, i);
    gpar__buf *b = a->buf;
    /* A read depends on the data of the last writer; a pure overwrite only follows it. */
    if (b->writer)
      st = add_edge_locked(b->writer, op, (a->mode & GPAR__READ) != 0);
    else if ((a->mode & GPAR__READ) && b->status != GPAR_OK) /* its last writer failed */
      atomic_store(&op->dep_failed, 1);
    if (a->mode & GPAR__WRITE) {
      for (int r = 0; r < b->nreaders && st == GPAR_OK; r++)
        if (b->readers[r] != op) st = add_edge_locked(b->readers[r], op, 0);
      b->nreaders = 0;
      b->writer = op;
    } else if (st == GPAR_OK) {
      st = buf_add_reader_locked(b, op);
    }
    b->pending++;
  }
  if (st != GPAR_OK) {
    /* Host memory ran out while linking: the op cannot run, but it is linked, so it retires
     * through the normal path with the error (its writes are poisoned, waits report it). */
    gpar__errorf(st, "out of host memory while linking an operation");
    op->status = st;
    free(op->errmsg);
    op->errmsg = strdup(gpar__error_msg());
    atomic_store(&op->dep_failed, 1);
  }
  if (eng->tracing) op->t_submit = gpar__now();
  if (op->unmet == 0) make_ready_locked(op);
  return GPAR_OK;
}

/* ---------------------------------------------------------------- release and retire */

/* Producers' references are held until the consumer no longer reads their events. */
static void drop_producers_locked(gpar_engine *eng, gpar__op *op) {
  for (int i = 0; i < op->prods.n; i++) gpar__op_unref_locked(eng, op->prods.v[i].op);
  op->prods.n = 0;
}

/* The one place successors are released. At dispatch (retired = 0) the consumers that wait on
 * op's event; at retirement the others, and every consumer learns one more producer retired
 * (those now complete are pushed on *work). A failure of op reaches consumers of its data. */
static void release_succs_locked(gpar__op *op, int retired, gpar__device *local, gpar__op ***local_tail,
                                 gpar__op **work) {
  for (int i = 0; i < op->succs.n; i++) {
    gpar__op *c = op->succs.v[i].op;
    int flags = op->succs.v[i].flags;
    if ((flags & GPAR__EDGE_DATA) && gpar__op_fails_reader(op, c)) atomic_store(&c->dep_failed, 1);
    if ((flags & GPAR__EDGE_EVENT ? 0 : 1) == retired && --c->unmet == 0) {
      if (c->dev == local) { /* the dispatcher runs it next, ahead of its batch */
        gpar__op_set_state(c, GPAR__ST_READY);
        if (local->eng->tracing) c->t_ready = gpar__now();
        c->next = NULL;
        **local_tail = c;
        *local_tail = &c->next;
      } else {
        make_ready_locked(c);
      }
    }
    if (retired && --c->unretired == 0 && c->state == GPAR__ST_DONE) {
      c->next = *work;
      *work = c;
    }
  }
}

void gpar__op_dispatched_locked(gpar_engine *eng, gpar__op *op, gpar__device *local, gpar__op ***local_tail) {
  gpar__op_set_state(op, GPAR__ST_DISPATCHED);
  drop_producers_locked(eng, op);
  release_succs_locked(op, 0, local, local_tail, NULL);
}

static void retire_one_locked(gpar_engine *eng, gpar__op *op, gpar__op **work) {
  assert(op->unretired == 0);
  gpar__op_set_state(op, GPAR__ST_RETIRED);
  drop_producers_locked(eng, op); /* CPU ops: dispatch dropped nothing */
  if (op->status == GPAR_OK && atomic_load(&op->dep_failed)) op->status = GPAR_EDEPFAILED;
  for (int i = 0; i < op->nacc; i++) {
    gpar__access *a = gpar__op_access(op, i);
    gpar__buf *b = a->buf;
    if (a->mode & GPAR__WRITE) {
      if (b->writer == op) b->writer = NULL;
      const char *msg; /* a graph launch's op: the status its ops left on b */
      b->status = gpar__op_write_status(op, b, &msg);
      free(b->errmsg);
      b->errmsg = msg ? strdup(msg) : NULL;
    } else {
      buf_remove_reader_locked(b, op);
    }
    if (--b->pending == 0 && b->released) gpar__buf_free_locked(eng, b);
  }
  if (op->inflight_prev)
    op->inflight_prev->inflight_next = op->inflight_next;
  else
    eng->inflight_head = op->inflight_next;
  if (op->inflight_next)
    op->inflight_next->inflight_prev = op->inflight_prev;
  else
    eng->inflight_tail = op->inflight_prev;
  eng->stats.ops_in_flight--;
  eng->stats.ops_completed++;
  if (op->status != GPAR_OK) {
    eng->stats.ops_failed++;
    if (eng->first_error == GPAR_OK && !op->reported) {
      eng->first_error = op->status;
      free(eng->first_errmsg);
      eng->first_errmsg = op->errmsg ? strdup(op->errmsg) : NULL;
    }
  }
  release_succs_locked(op, 1, NULL, NULL, work);
  if (eng->tracing) gpar__trace_op_locked(eng, op, gpar__now());
  if (op->staging) {
    gpar__pinned_free(&eng->pinned, op->staging);
    op->staging = NULL;
  }
  gpar__op_unref_locked(eng, op);
}

void gpar__op_complete_locked(gpar_engine *eng, gpar__op *op, int status) {
  if (status != GPAR_OK && op->status == GPAR_OK) {
    op->status = status;
    free(op->errmsg);
    op->errmsg = strdup(gpar__error_msg());
  }
  gpar__op_set_state(op, GPAR__ST_DONE);
  if (eng->tracing) op->t_seen = gpar__now();
  if (op->unretired) return;
  gpar__op *work = op;
  op->next = NULL;
  while (work) {
    gpar__op *o = work;
    work = o->next;
    retire_one_locked(eng, o, &work);
  }
  if (eng->nwaiters) pthread_cond_broadcast(&eng->retire_cv);
}
