/* deps.c: dependency tracking. Edges between ops, the last writer and readers of each buffer
 * (MXNet-style var queues), submission, and retirement with failure propagation. Everything
 * here runs under the engine lock.
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

#include "engine/engine.h"

/* ---------------------------------------------------------------- edges */

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

/* The status op leaves on buffer b that it writes: its own, or with per-buffer outcomes the
 * mark of its access to b. */
int gpar__op_write_status(const gpar__op *op, const gpar__buf *b, const char **msg) {
  *msg = op->errmsg;
  if (!op->partial) return op->status;
  *msg = NULL;
  for (int a = 0; a < op->nacc; a++) {
    const gpar__access *acc = gpar__op_access(op, a);
    if (acc->buf != b) continue;
    if (acc->mode & GPAR__WRITE_FAILED) {
      *msg = op->errmsg;
      return op->status;
    }
    if (acc->mode & GPAR__WRITE_SKIPPED) {
      *msg = gpar_strerror(GPAR_EDEPFAILED);
      return GPAR_EDEPFAILED;
    }
    break;
  }
  return GPAR_OK;
}

/* Whether op writes b. */
static int op_writes(const gpar__op *op, const gpar__buf *b) {
  for (int a = 0; a < op->nacc; a++)
    if (gpar__op_access(op, a)->buf == b) return (gpar__op_access(op, a)->mode & GPAR__WRITE) != 0;
  return 0;
}

/* Consumer c, linked behind op by a data edge, reads what op failed to produce: mark each read
 * access of c whose buffer op wrote and failed (GPAR__READ_FAILED) and the op as a whole
 * (dep_failed). Nothing when op succeeded. */
static void mark_failed_reads(const gpar__op *op, gpar__op *c) {
  const char *msg;
  if (op->status == GPAR_OK) return;
  for (int a = 0; a < c->nacc; a++) {
    gpar__access *acc = gpar__op_access(c, a);
    if ((acc->mode & GPAR__READ) && op_writes(op, acc->buf) && gpar__op_write_status(op, acc->buf, &msg) != GPAR_OK) {
      acc->mode |= GPAR__READ_FAILED;
      atomic_store(&c->dep_failed, 1);
    }
  }
}

static void make_ready_locked(gpar__op *op) {
  gpar__op_set_state(op, GPAR__ST_READY);
  if (op->dev->eng->tracing) op->t_ready = gpar__now();
  gpar__queue_push(&op->dev->ready, op);
}

static int edge_on_device(const gpar__op *p, const gpar__op *c) {
  const gpar__device *pd = p->dev, *cd = c->dev;
  /* A backend whose host-to-device copies may read host memory when enqueued (NVIDIA's OpenCL
   * stages the source at enqueue) cannot order that read behind an event: wait for retirement. */
  if ((c->kind->flags & GPAR__KIND_READS_HOST_AT_ENQUEUE) && cd->ops->h2d_reads_at_enqueue) return 0;
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
  if (p->state >= GPAR__ST_DISPATCHED && data) mark_failed_reads(p, c);
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

_Thread_local gpar__op_sink gpar__sink;

/* Link the op behind the last writer and readers of each buffer it touches and queue it on its
 * device when nothing holds it back (engine lock held; the engine is not closed). */
static void link_locked(gpar_engine *eng, gpar__op *op, int keep) {
  int st = GPAR_OK;
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
    else if ((a->mode & GPAR__READ) && b->status != GPAR_OK) { /* its last writer failed */
      a->mode |= GPAR__READ_FAILED;
      atomic_store(&op->dep_failed, 1);
    }
    if (a->mode & GPAR__WRITE) {
      for (int r = 0; r < b->nreaders && st == GPAR_OK; r++)
        if (b->readers[r] != op) st = add_edge_locked(b->readers[r], op, 0);
      b->nreaders = 0;
      b->writer = op;
    } else if (st == GPAR_OK) {
      st = buf_add_reader_locked(b, op);
    }
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
}

int gpar__op_submit_all(gpar__op **ops, int n, int flags, gpar__op **kept) {
  if (n == 0) return GPAR_OK;
  gpar_engine *eng = ops[0]->eng;
  int keep = (flags & GPAR__SUBMIT_KEEP) || ((flags & GPAR__SUBMIT_SYNC) && eng->cfg.synchronous && !gpar__in_op);
  for (int i = 0; kept && i < n; i++) kept[i] = NULL;
  if (!(flags & GPAR__SUBMIT_NO_SINK) && gpar__sink_active(eng)) { /* recorded, not run: the sink owns them */
    int st = GPAR_OK;
    for (int i = 0; i < n; i++) {
      int s = gpar__sink.take(gpar__sink.ctx, ops[i]);
      if (st == GPAR_OK) st = s;
    }
    return st;
  }
  pthread_mutex_lock(&eng->mu);
  int closed = atomic_load(&eng->state) == GPAR__ENG_CLOSED; /* drained: nothing may start now */
  for (int i = 0; i < n && !closed; i++) {
    link_locked(eng, ops[i], keep);
    if (keep && kept) kept[i] = ops[i];
  }
  pthread_mutex_unlock(&eng->mu);
  if (!closed) return GPAR_OK;
  for (int i = 0; i < n; i++) gpar__op_discard(ops[i]);
  return gpar__errorf(GPAR_ESHUTDOWN, "engine is shut down");
}

int gpar__op_submit(gpar__op *op, int flags, gpar__op **kept) {
  gpar__op *k = NULL;
  int st = gpar__op_submit_all(&op, 1, flags, &k);
  if (kept) *kept = k;
  return st;
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
    if (flags & GPAR__EDGE_DATA) mark_failed_reads(op, c);
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
  if (op->status == GPAR_OK && atomic_load(&op->dep_failed)) gpar__op_fail(op, GPAR_EDEPFAILED);
  for (int i = 0; i < op->nacc; i++) {
    gpar__access *a = gpar__op_access(op, i);
    gpar__buf *b = a->buf;
    if (a->mode & GPAR__WRITE) {
      if (b->writer == op) b->writer = NULL;
      const char *msg; /* with per-buffer outcomes: its outcome on b */
      b->status = gpar__op_write_status(op, b, &msg);
      free(b->errmsg);
      b->errmsg = msg ? strdup(msg) : NULL;
    } else {
      buf_remove_reader_locked(b, op);
    }
    gpar__buf_put_locked(b); /* the op's reference */
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
  gpar__op_release_owned(op);
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
