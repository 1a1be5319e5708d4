/* graph_launch.c: op graphs, launching and running (gpar_graph_launch, gpar_graph_destroy). A
 * launch submits one engine op per part of the graph (kind GPAR__OP_GRAPH, over the union of
 * the part's buffers), so the engine orders a launch against other work exactly as it orders
 * any op. Running a part costs no engine bookkeeping per recorded op: a backend graph (CUDA
 * graph, captured at the first launch) or a replay of the pre-resolved list on the device's
 * dispatcher (GPU lanes, event edges decided at end) or on a CPU worker (host part). A replay
 * that fails marks, per buffer, how its last writer ended. Parts are built in graph_record.c. */
#include <stdlib.h>
#include <string.h>

#include "graph.h"

/* ---------------------------------------------------------------- launch */

static int launch_parts(gpar_engine *eng, gpar_graph *g);

GPAR_API int gpar_graph_launch(gpar_graph *g) {
  gpar_engine *token, *eng;
  int st;
  if (!g) return gpar__errorf(GPAR_EINVAL, "gpar_graph_launch: graph is NULL");
  if (!gpar__graph_registry_find(g, 0, &token))
    return gpar__errorf(GPAR_EINVAL, "gpar_graph_launch: not a live graph (destroyed, or its engine shut down)");
  if (!(eng = gpar__engine_enter(token, &st))) return st;
  if (gpar__graph_recording(eng))
    st = gpar__errorf(GPAR_ERECORDING, "gpar_graph_launch: this thread is recording a graph on this engine");
  else
    st = launch_parts(eng, g);
  gpar__engine_leave(eng);
  return st;
}

/* Submit one engine op per part, all in one engine lock (nothing when one cannot be built). */
static int launch_parts(gpar_engine *eng, gpar_graph *g) {
  int st = GPAR_OK;
  enum { MAX_STACK = 8 };
  gpar__op *stack_ops[MAX_STACK], **ops = g->nparts <= MAX_STACK ? stack_ops : malloc(sizeof *ops * (size_t)g->nparts);
  if (!ops) return gpar__errorf(GPAR_ENOMEM, "gpar_graph_launch: out of host memory");
  int wait = eng->cfg.synchronous && !gpar__in_op;
  pthread_mutex_lock(&eng->mu);
  int n = 0;
  for (; n < g->nparts; n++) {
    gpar__graph_part *p = &g->parts[n];
    gpar__op *op = ops[n] = gpar__op_new_locked(eng);
    if (!op) {
      st = GPAR_ENOMEM;
      break;
    }
    op->kind = GPAR__OP_GRAPH;
    op->dev = p->dev;
    op->lane = GPAR__LANE_COMPUTE;
    op->name = "graph";
    op->u.graph.part = p;
    /* The union has no duplicates: copy it in (gpar__op_add_access would search it per entry). */
    if (p->nacc > GPAR__INLINE && !(op->acc_more = malloc(sizeof *op->acc_more * (size_t)(p->nacc - GPAR__INLINE))))
      st = GPAR_ENOMEM;
    for (int a = 0; a < p->nacc && st == GPAR_OK; a++) *gpar__op_access(op, a) = p->acc[a];
    if (st == GPAR_OK) op->nacc = p->nacc;
    if (st != GPAR_OK) {
      n++;
      break;
    }
  }
  if (st != GPAR_OK) { /* nothing submitted */
    for (int i = 0; i < n; i++)
      if (ops[i]) gpar__op_discard_locked(eng, ops[i]);
    pthread_mutex_unlock(&eng->mu);
    if (ops != stack_ops) free(ops);
    return gpar__errorf(GPAR_ENOMEM, "gpar_graph_launch: out of host memory");
  }
  for (int i = 0; i < n; i++) { /* refused (engine closed meanwhile): discarded, not waited on */
    int s = gpar__op_submit_locked(eng, ops[i], wait);
    if (s != GPAR_OK) {
      ops[i] = NULL;
      if (st == GPAR_OK) st = s;
    }
  }
  pthread_mutex_unlock(&eng->mu);
  for (int i = 0; wait && i < n; i++) {
    int s = ops[i] ? gpar__wait_op(eng, ops[i]) : GPAR_OK;
    if (st == GPAR_OK) st = s;
  }
  if (ops != stack_ops) free(ops);
  return st;
}

/* ---------------------------------------------------------------- running a part */

static int faults_armed(gpar_engine *eng) {
  static const int kinds[] = {GPAR__FAULT_COPY, GPAR__FAULT_GEMM, GPAR__FAULT_FILL, GPAR__FAULT_USER};
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
    if (atomic_load_explicit(&eng->fault_at[kinds[k]], memory_order_relaxed)) return 1;
  return 0;
}

/* The first failure of a replay: its status and message. */
typedef struct {
  int status;
  char *msg;
} first_failure;

static void note_failure(first_failure *f, int st) {
  if (f->status != GPAR_OK) return;
  f->status = st;
  f->msg = strdup(gpar__error_msg());
}

/* A capture stops at its first failure (replay_gpu). */
static int halted(const first_failure *f, int capturing) { return capturing && f->status != GPAR_OK; }

static int report(first_failure *f) {
  if (f->status != GPAR_OK) gpar__errorf(f->status, "%s", f->msg ? f->msg : gpar_strerror(f->status));
  free(f->msg);
  return f->status;
}

/* A recorded op whose data producer failed is skipped, as the engine would skip it. */
static int producer_failed(const gpar__gnode *nd, const int *status) {
  for (int k = 0; k < nd->nprods; k++)
    if ((nd->prods[k] & 1) && status[nd->prods[k] >> 1] != GPAR_OK) return 1;
  return 0;
}

/* Host part: run the ops in record order on this CPU worker. */
static int replay_host(gpar__device *dev, gpar__graph_part *p, int *status) {
  gpar__gnode *nodes = p->g->nodes;
  first_failure f = {GPAR_OK, NULL};
  for (int k = 0; k < p->nnodes; k++) {
    gpar__gnode *nd = &nodes[p->nodes[k]];
    int st = producer_failed(nd, status) ? GPAR_EDEPFAILED : gpar__op_run(dev, nd->op);
    status[k] = st;
    if (st != GPAR_OK) note_failure(&f, st);
  }
  return report(&f);
}

/* GPU part: enqueue the ops on the device's lanes in record order. A lane other than the
 * compute lane first waits on an event of the compute lane (where the engine put the part's
 * waits on its producers), and at the end the compute lane waits on each such lane's last op,
 * so the event the engine records after the part covers all of it. The same sequence serves
 * for a stream capture (capturing = 1): there the first failure stops it at once, since a
 * failed call may have invalidated the capture, which then refuses every further call, and
 * synchronising a lane is refused anyway; capture() ends it and the part is replayed. */
static int replay_gpu(gpar__device *dev, gpar__graph_part *p, int *status, gpar__event **ev, int capturing) {
  const gpar__backend_ops *ops = dev->ops;
  gpar__gnode *nodes = p->g->nodes;
  first_failure f = {GPAR_OK, NULL};
  gpar__event *fork = NULL;
  int forked[GPAR__NLANES] = {0}, st;
  for (int k = 0; k < p->nnodes; k++) ev[k] = NULL;
  for (int k = 0; k < p->nnodes && !halted(&f, capturing); k++) {
    gpar__gnode *nd = &nodes[p->nodes[k]];
    gpar__op *op = nd->op;
    if (op->lane != GPAR__LANE_COMPUTE && !forked[op->lane]) {
      forked[op->lane] = 1;
      st = fork ? GPAR_OK : ops->event_record(dev->bdev, GPAR__LANE_COMPUTE, 0, &fork);
      if (st == GPAR_OK) st = ops->event_wait(dev->bdev, op->lane, fork);
      if (st != GPAR_OK) note_failure(&f, st);
    }
    for (int j = 0; j < nd->nprods && !halted(&f, capturing); j++) {
      int pk = nd->prods[j] >> 1;
      gpar__event *pe = ev[pk];
      if (!pe) continue; /* same lane (in order), or its lane was synchronised */
      st = nd->host_sync ? ops->event_sync(pe) : ops->event_wait(dev->bdev, op->lane, pe);
      if (st != GPAR_OK) note_failure(&f, st);
    }
    if (halted(&f, capturing)) break;
    st = producer_failed(nd, status) ? GPAR_EDEPFAILED : gpar__op_run(dev, op);
    status[k] = st;
    if (st != GPAR_OK) note_failure(&f, st);
    if (halted(&f, capturing)) break;
    if (nd->need_event && ops->event_record(dev->bdev, op->lane, 0, &ev[k]) != GPAR_OK) {
      note_failure(&f, GPAR_EBACKEND);
      ev[k] = NULL;
      if (!capturing) ops->lane_sync(dev->bdev, op->lane);
    }
  }
  /* Fault "capture": a failure with every lane forked and none joined back (tests). */
  if (capturing && !halted(&f, capturing) && (st = gpar__fault(dev->eng, GPAR__FAULT_CAPTURE)) != GPAR_OK)
    note_failure(&f, st);
  for (int l = 1; l < GPAR__NLANES && !halted(&f, capturing); l++) {
    int last = p->lane_last[l];
    if (last >= 0 && ev[last] && (st = ops->event_wait(dev->bdev, GPAR__LANE_COMPUTE, ev[last])) != GPAR_OK)
      note_failure(&f, st);
  }
  for (int k = 0; k < p->nnodes; k++)
    if (ev[k]) ops->event_release(ev[k]);
  if (fork) ops->event_release(fork);
  return report(&f);
}

/* Capture the part into a backend graph (first launch with no fault armed). A failure ends the
 * capture (the backend discards it) before anything else runs; the caller then replays. */
static int capture(gpar__device *dev, gpar__graph_part *p, int *status, gpar__event **ev) {
  const gpar__backend_ops *ops = dev->ops;
  void *native = NULL;
  int st = ops->graph_begin(dev->bdev, GPAR__LANE_COMPUTE);
  if (st == GPAR_OK) {
    st = replay_gpu(dev, p, status, ev, 1);
    char *why = st != GPAR_OK ? strdup(gpar__error_msg()) : NULL; /* ending may log its own */
    int e = ops->graph_end(dev->bdev, GPAR__LANE_COMPUTE, st == GPAR_OK ? &native : NULL);
    if (st == GPAR_OK)
      st = e;
    else
      gpar__errorf(st, "%s", why ? why : gpar_strerror(st));
    free(why);
  }
  if (st != GPAR_OK) {
    gpar__log("%s: device %d: graph capture failed (%s); this part replays op by op", ops->name, dev->index,
              gpar__error_msg());
    p->no_capture = 1;
    return st;
  }
  p->native = native;
  return GPAR_OK;
}

/* After a replay with failures: mark each buffer the part writes with how its last recorded
 * writer ended, so the failure reaches exactly the buffers it would reach eagerly. */
static void mark_failures(gpar__op *op, gpar__graph_part *p, const int *status) {
  int any = 0;
  for (int k = 0; k < p->nnodes; k++) {
    gpar__gnode *nd = &p->g->nodes[p->nodes[k]];
    any |= status[k] != GPAR_OK;
    for (int a = 0; a < nd->op->nacc; a++) {
      if (!(gpar__op_access(nd->op, a)->mode & GPAR__WRITE)) continue;
      int *m = &gpar__op_access(op, nd->accidx[a])->mode;
      *m &= ~(GPAR__WRITE_FAILED | GPAR__WRITE_SKIPPED);
      if (status[k] != GPAR_OK) *m |= status[k] == GPAR_EDEPFAILED ? GPAR__WRITE_SKIPPED : GPAR__WRITE_FAILED;
    }
  }
  op->u.graph.partial = any; /* else the failure was no op's (an event): the whole part has it */
}

int gpar__graph_write_status(const gpar__op *op, const gpar__buf *b, const char **msg) {
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

int gpar__graph_fails_reader(const gpar__op *op, const gpar__op *c) {
  const char *msg;
  for (int a = 0; a < c->nacc; a++) {
    const gpar__access *acc = gpar__op_access(c, a);
    if ((acc->mode & GPAR__READ) && gpar__graph_write_status(op, acc->buf, &msg) != GPAR_OK) return 1;
  }
  return 0;
}

/* gpar_wait on b whose last writer is the launch op w (the caller holds a reference on w):
 * the status w left on b rather than w's own. */
int gpar__graph_wait_buf(gpar_engine *eng, gpar__op *w, const gpar__buf *b) {
  const char *msg;
  pthread_mutex_lock(&eng->mu);
  w->refs++; /* kept past gpar__wait_op, which drops one */
  pthread_mutex_unlock(&eng->mu);
  gpar__wait_op(eng, w);
  pthread_mutex_lock(&eng->mu);
  int st = gpar__op_write_status(w, b, &msg);
  if (st != GPAR_OK) gpar__set_error_msg(st, msg);
  gpar__op_unref_locked(eng, w);
  pthread_mutex_unlock(&eng->mu);
  return st;
}

int gpar__graph_exec(gpar__device *dev, gpar__op *op) {
  gpar__graph_part *p = op->u.graph.part;
  enum { STACK_NODES = 64 };
  int stack_status[STACK_NODES];
  gpar__event *stack_ev[STACK_NODES];
  int armed = faults_armed(dev->eng);
  if (p->native && !armed) {
    atomic_fetch_add_explicit(&dev->eng->graph_native, 1, memory_order_relaxed);
    return dev->ops->graph_launch(dev->bdev, GPAR__LANE_COMPUTE, p->native);
  }
  int small = p->nnodes <= STACK_NODES, replayed = 1;
  int *status = small ? stack_status : malloc(sizeof *status * (size_t)p->nnodes);
  gpar__event **ev = small ? stack_ev : malloc(sizeof *ev * (size_t)p->nnodes);
  int st;
  if (!status || !ev) {
    st = gpar__errorf(GPAR_ENOMEM, "graph launch: out of host memory");
    replayed = 0;
  } else if (!dev->ops->ordered_by_events) {
    st = replay_host(dev, p, status);
  } else if (!armed && !p->no_capture && capture(dev, p, status, ev) == GPAR_OK) {
    atomic_fetch_add_explicit(&dev->eng->graph_native, 1, memory_order_relaxed);
    st = dev->ops->graph_launch(dev->bdev, GPAR__LANE_COMPUTE, p->native);
    replayed = 0;
  } else {
    st = replay_gpu(dev, p, status, ev, 0);
  }
  if (st != GPAR_OK && replayed) mark_failures(op, p, status);
  if (!small) {
    free(status);
    free(ev);
  }
  return st;
}

/* ---------------------------------------------------------------- destroy */

/* Wait until no launch of g is in flight. */
static void wait_launches(gpar_engine *eng, gpar_graph *g) {
  for (;;) {
    gpar__op *w = NULL;
    pthread_mutex_lock(&eng->mu);
    for (gpar__op *op = eng->inflight_head; op && !w; op = op->inflight_next)
      if (op->kind == GPAR__OP_GRAPH && op->u.graph.part->g == g) w = op;
    if (w) w->refs++;
    pthread_mutex_unlock(&eng->mu);
    if (!w) return;
    gpar__wait_op(eng, w);
  }
}

/* Free everything a graph holds (graph.h). */
void gpar__graph_free(gpar_graph *g) {
  gpar_engine *eng = g->eng;
  for (int L = 0; L < g->nparts; L++) {
    gpar__graph_part *p = &g->parts[L];
    if (p->native) p->dev->ops->graph_destroy(p->dev->bdev, p->native);
    free(p->nodes);
    free(p->acc);
  }
  pthread_mutex_lock(&eng->mu);
  for (int i = 0; i < g->nnodes; i++) {
    gpar__op *op = g->nodes[i].op;
    if (op->staging) gpar__pinned_free(&eng->pinned, op->staging);
    op->staging = NULL;
    gpar__op_discard_locked(eng, op);
    free(g->nodes[i].prods);
    free(g->nodes[i].accidx);
  }
  for (int b = 0; b < g->nbufs; b++)
    if (--g->bufs[b]->pending == 0 && g->bufs[b]->released) gpar__buf_free_locked(eng, g->bufs[b]);
  pthread_mutex_unlock(&eng->mu);
  free(g->nodes);
  free(g->parts);
  free(g->bufs);
  free(g->bufhash);
  free(g);
}

GPAR_API int gpar_graph_destroy(gpar_graph *g) {
  gpar_engine *eng;
  int st;
  if (!g) return gpar__errorf(GPAR_EINVAL, "gpar_graph_destroy: graph is NULL");
  if (gpar__in_op) return gpar__errorf(GPAR_EDEADLK, "gpar_graph_destroy called from inside an operation");
  gpar_engine *token;
  if (!gpar__graph_registry_find(g, 0, &token) || !(eng = gpar__engine_enter(token, &st)))
    return gpar__errorf(GPAR_EINVAL, "gpar_graph_destroy: not a live graph (destroyed already, or its engine shut down)");
  if (gpar__graph_registry_find(g, 1, &token)) { /* taken: a racing destroy finds it no more */
    wait_launches(eng, g);
    gpar__graph_free(g);
    st = GPAR_OK;
  } else {
    st = gpar__errorf(GPAR_EINVAL, "gpar_graph_destroy: not a live graph (destroyed already)");
  }
  gpar__engine_leave(eng);
  return st;
}

void gpar__graph_shutdown(gpar_engine *eng) {
  for (gpar_graph *g; (g = gpar__graph_registry_take(eng));) {
    if (gpar__rec.g == g) memset(&gpar__rec, 0, sizeof gpar__rec);
    gpar__graph_free(g);
  }
}
