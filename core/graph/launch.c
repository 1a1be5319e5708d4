/* launch.c: op graphs, launching and running (gpar_graph_launch), destroy and shutdown. A
 * launch submits one engine op per part of the graph (kind graph_part, over the union of the
 * part's buffers), so the engine orders a launch against other work exactly as it orders any
 * op. Running a part costs no engine bookkeeping per recorded op: a backend graph (CUDA graph,
 * captured at the first launch) or a replay of the pre-resolved list on the device's
 * dispatcher (GPU lanes, event edges decided at end) or on a CPU worker (host part). A replay
 * that fails gives the op per-buffer outcomes: each buffer the part writes gets how its last
 * recorded writer ended. A part runs even when an input failed (earlier part, or before the
 * launch): it replays, skipping the recorded ops that read a failed value, so a failure travels
 * op by op across parts as it does eagerly. Parts are built in record.c. */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

typedef struct part_args {
  gpar__graph_part *part;
} part_args;
_Static_assert(sizeof(part_args) <= GPAR__OP_PAYLOAD, "a graph part's arguments fit an op's payload");

static int part_run(gpar__device *dev, gpar__op *op);

/* A part reads host memory at enqueue when it holds such copies: ordered as they would be. It
 * runs when an input failed, to skip exactly the recorded ops that read it (part_run). It issues
 * the first compute lane and the copy lanes, which only the first dispatcher issues (a capture
 * takes no other thread's work). */
static const gpar__op_kind kind_part = {.name = "graph",
                                        .run = part_run,
                                        .flags = GPAR__KIND_READS_HOST_AT_ENQUEUE | GPAR__KIND_RUNS_ON_FAILED_INPUT |
                                                 GPAR__KIND_FIRST_LANE};

/* ---------------------------------------------------------------- launch */

/* One op per part, over the part's buffers and the graph's fence; all are submitted at once,
 * as one submission, or none (out of memory). */
static int launch_parts(gpar_engine *eng, gpar__graph *g) {
  gpar__batch b;
  int st = GPAR_OK;
  gpar__batch_init(&b);
  for (int n = 0; n < g->nparts && st == GPAR_OK; n++) {
    gpar__graph_part *p = &g->parts[n];
    gpar__op *op = gpar__op_new(eng, &kind_part, p->dev, GPAR__LANE_COMPUTE);
    gpar__buf *fence = NULL;
    if ((st = gpar__batch_add(&b, op)) != GPAR_OK) break;
    ((part_args *)gpar__op_args(op))->part = p;
    st = gpar__op_use_unique(op, p->acc, p->nacc); /* the union has no duplicates */
    if (st == GPAR_OK && (st = gpar__buf_get_token(eng, g->fence, &fence)) == GPAR_OK) st = gpar__op_use(op, fence, GPAR__READ);
  }
  if (st != GPAR_OK) { /* nothing submitted */
    gpar__batch_discard(&b);
    return gpar__errorf(GPAR_ENOMEM, "gpar_graph_launch: out of host memory");
  }
  return gpar__batch_submit(&b, 0);
}

GPAR_API int gpar_graph_info(gpar_graph *handle, gpar_graph_props *props) {
  if (!handle || !props) return gpar__errorf(GPAR_EINVAL, "gpar_graph_info: %s is NULL", handle ? "props" : "graph");
  gpar__graph *g = gpar__graph_get(handle);
  if (!g) return gpar__errorf(GPAR_EINVAL, "gpar_graph_info: not a live graph (destroyed, or its engine shut down)");
  memset(props, 0, sizeof *props);
  props->ops = g->nnodes;
  props->parts = g->nparts;
  for (int n = 0; n < g->nparts; n++) {
    gpar__graph_part *p = &g->parts[n];
    if (p->branches > props->branches) props->branches = p->branches;
    if (!atomic_load(&p->captured)) continue;
    props->native_parts++;
    props->native_nodes += atomic_load(&p->native_nodes);
    props->native_edges += atomic_load(&p->native_edges);
  }
  if (props->branches < 1) props->branches = 1;
  gpar__handle_put(gpar__graph_table(), g->slot);
  return GPAR_OK;
}

GPAR_API int gpar_graph_launch(gpar_graph *handle) {
  int st;
  if (!handle) return gpar__errorf(GPAR_EINVAL, "gpar_graph_launch: graph is NULL");
  gpar__graph *g = gpar__graph_get(handle);
  if (!g) return gpar__errorf(GPAR_EINVAL, "gpar_graph_launch: not a live graph (destroyed, or its engine shut down)");
  gpar_engine *eng = gpar__engine_enter(g->token, &st);
  if (!eng)
    st = gpar__errorf(GPAR_EINVAL, "gpar_graph_launch: not a live graph (its engine is shut down)");
  else if (gpar__sink_active(eng))
    st = gpar__errorf(GPAR_ERECORDING, "gpar_graph_launch: this thread is recording a graph on this engine");
  else
    st = launch_parts(eng, g);
  gpar__handle_put(gpar__graph_table(), g->slot);
  if (eng) gpar__engine_leave(eng);
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

/* A failure of the op's own comes before skips (GPAR_EDEPFAILED), which may come first in record
 * order when an input of the part failed: the buffers marked failed get the part's status. */
static void note_failure(first_failure *f, int st) {
  if (f->status != GPAR_OK && !(f->status == GPAR_EDEPFAILED && st != GPAR_EDEPFAILED)) return;
  f->status = st;
  free(f->msg);
  f->msg = strdup(gpar__error_msg());
}

/* A capture stops at its first failure (replay_gpu). */
static int halted(const first_failure *f, int capturing) { return capturing && f->status != GPAR_OK; }

static int report(first_failure *f) {
  if (f->status != GPAR_OK) gpar__errorf(f->status, "%s", f->msg ? f->msg : gpar_strerror(f->status));
  free(f->msg);
  return f->status;
}

/* A recorded op is skipped, as the engine would skip it eagerly, when it reads a value from
 * before the part whose writer failed (the engine marked the part's access GPAR__READ_FAILED)
 * or a value of the part whose op failed or was skipped. */
static int skipped(const gpar__op *part, const gpar__gnode *nd, const int *status) {
  for (int k = 0; k < nd->nins; k++)
    if (gpar__op_access(part, nd->ins[k])->mode & GPAR__READ_FAILED) return 1;
  for (int k = 0; k < nd->nprods; k++)
    if ((nd->prods[k] & 1) && status[nd->prods[k] >> 1] != GPAR_OK) return 1;
  return 0;
}

/* Host part: run the ops in record order on this CPU worker. */
static int replay_host(gpar__device *dev, gpar__op *part, gpar__graph_part *p, int *status) {
  gpar__gnode *nodes = p->g->nodes;
  first_failure f = {GPAR_OK, NULL};
  for (int k = 0; k < p->nnodes; k++) {
    gpar__gnode *nd = &nodes[p->nodes[k]];
    int st = skipped(part, nd, status) ? GPAR_EDEPFAILED : nd->op->kind->run(dev, nd->op);
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
static int replay_gpu(gpar__device *dev, gpar__op *part, gpar__graph_part *p, int *status, gpar__event **ev,
                      int capturing) {
  const gpar__backend_ops *ops = dev->ops;
  gpar__gnode *nodes = p->g->nodes;
  first_failure f = {GPAR_OK, NULL};
  gpar__event *fork = NULL;
  int forked[GPAR__NLANES] = {0}, st, others = 0;
  for (int k = 0; k < p->nnodes; k++) ev[k] = NULL;
  for (int l = 1; l < GPAR__NLANES; l++) others |= p->lane_last[l] >= 0; /* a node on a lane past the first */
  /* The fork: before the part's first node, so a branch on another lane follows only what the
   * part follows (a captured graph gets no edge from the first branch's first node). */
  if (others && (st = ops->event_record(dev->bdev, GPAR__LANE_COMPUTE, 0, &fork)) != GPAR_OK) note_failure(&f, st);
  for (int k = 0; k < p->nnodes && !halted(&f, capturing); k++) {
    gpar__gnode *nd = &nodes[p->nodes[k]];
    gpar__op *op = nd->op;
    if (op->lane != GPAR__LANE_COMPUTE && !forked[op->lane]) {
      forked[op->lane] = 1;
      /* (no fork: its failure is noted) */
      if (fork && (st = ops->event_wait(dev->bdev, op->lane, fork)) != GPAR_OK) note_failure(&f, st);
    }
    for (int j = 0; j < nd->nprods && !halted(&f, capturing); j++) {
      int pk = nd->prods[j] >> 1;
      gpar__event *pe = ev[pk];
      if (!pe) continue; /* same lane (in order), or its lane was synchronised */
      st = nd->host_sync ? ops->event_sync(pe) : ops->event_wait(dev->bdev, op->lane, pe);
      if (st != GPAR_OK) note_failure(&f, st);
    }
    if (halted(&f, capturing)) break;
    st = skipped(part, nd, status) ? GPAR_EDEPFAILED : op->kind->run(dev, op);
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
static int capture(gpar__device *dev, gpar__op *part, gpar__graph_part *p, int *status, gpar__event **ev) {
  const gpar__backend_ops *ops = dev->ops;
  void *native = NULL;
  int st = ops->graph_begin(dev->bdev, GPAR__LANE_COMPUTE);
  if (st == GPAR_OK) {
    st = replay_gpu(dev, part, p, status, ev, 1);
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
  uint64_t nodes = 0, edges = 0;
  if (ops->graph_shape) ops->graph_shape(dev->bdev, native, &nodes, &edges);
  atomic_store(&p->native_nodes, nodes);
  atomic_store(&p->native_edges, edges);
  atomic_store(&p->captured, 1);
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
  op->partial = any; /* else the failure was no op's (an event): the whole part has it */
}

/* Whether the engine marked an input of the part failed; -1 when it failed the op without
 * naming an input (it could not be linked: out of memory). */
static int inputs_failed(const gpar__op *op) {
  if (!atomic_load(&op->dep_failed)) return 0;
  for (int a = 0; a < op->nacc; a++)
    if (gpar__op_access(op, a)->mode & GPAR__READ_FAILED) return 1;
  return -1;
}

/* Run a part: its backend graph, or a replay. A part whose input failed is replayed (never its
 * backend graph), skipping exactly the recorded ops that read a failed value; its per-buffer
 * outcomes then say which buffers were written, failed or skipped (mark_failures). */
static int part_run(gpar__device *dev, gpar__op *op) {
  gpar__graph_part *p = ((part_args *)gpar__op_args(op))->part;
  enum { STACK_NODES = 64 };
  int stack_status[STACK_NODES];
  gpar__event *stack_ev[STACK_NODES];
  int failed_in = inputs_failed(op);
  if (failed_in < 0) return GPAR_EDEPFAILED; /* not linked as it should be: run nothing */
  /* Armed faults land on the op they name; failed inputs skip ops: both replay op by op. */
  int replay_only = faults_armed(dev->eng) || failed_in;
  if (p->native && !replay_only) {
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
    st = replay_host(dev, op, p, status);
  } else {
    /* Branches on several compute lanes: their streams and BLAS handles are this dispatcher's
     * while it enqueues or captures the part (core/engine/lanes.h). */
    if (p->branches > 1) gpar__lanes_own(dev);
    if (!replay_only && !p->no_capture && capture(dev, op, p, status, ev) == GPAR_OK) {
      atomic_fetch_add_explicit(&dev->eng->graph_native, 1, memory_order_relaxed);
      st = dev->ops->graph_launch(dev->bdev, GPAR__LANE_COMPUTE, p->native);
      replayed = 0;
    } else {
      st = replay_gpu(dev, op, p, status, ev, 0);
    }
    if (p->branches > 1) gpar__lanes_share(dev);
  }
  if (st != GPAR_OK && replayed) mark_failures(op, p, status);
  if (!small) {
    free(status);
    free(ev);
  }
  return st;
}

/* ---------------------------------------------------------------- destroy */

/* Wait until every launch submitted before now has retired: an op that writes the fence every
 * part of every launch reads (not diverted: the caller may be recording another graph). */
static int wait_launches(gpar_engine *eng, gpar__graph *g) {
  gpar__buf *fence;
  gpar__op *op = gpar__op_new(eng, &gpar__kind_order, eng->host_dev, GPAR__LANE_COMPUTE);
  int st = op ? gpar__buf_get_token(eng, g->fence, &fence) : GPAR_ENOMEM;
  if (st == GPAR_OK) st = gpar__op_use(op, fence, GPAR__WRITE);
  if (st == GPAR_OK) return gpar__op_submit(op, GPAR__SUBMIT_WAIT);
  if (op) gpar__op_discard(op);
  return st;
}

GPAR_API int gpar_graph_destroy(gpar_graph *handle) {
  int st;
  if (!handle) return gpar__errorf(GPAR_EINVAL, "gpar_graph_destroy: graph is NULL");
  if (gpar__in_op) return gpar__errorf(GPAR_EDEADLK, "gpar_graph_destroy called from inside an operation");
  gpar__handle_table *t = gpar__graph_table();
  gpar__graph *g = gpar__graph_get(handle);
  gpar_engine *eng = g ? gpar__engine_enter(g->token, &st) : NULL;
  /* Entered first, so a concurrent gpar_shutdown waits for this call before it destroys the
   * engine's graphs; an engine that is shutting down destroys them itself. */
  gpar__graph *mine = eng ? gpar__handle_kill(t, g->slot, g->serial) : NULL;
  if (g) gpar__handle_put(t, g->slot);
  if (!mine) {
    if (eng) gpar__engine_leave(eng);
    return gpar__errorf(GPAR_EINVAL, "gpar_graph_destroy: not a live graph (destroyed already, or its engine shut down)");
  }
  gpar__handle_recycle(t, g->slot); /* no call holds it any more: no new launch */
  /* GPAR_ESHUTDOWN: the engine drained meanwhile, so nothing is in flight; without memory for
   * the fence, wait for everything submitted so far instead. */
  if (wait_launches(eng, g) == GPAR_ENOMEM) gpar__wait_submitted(eng);
  gpar__graph_free(g);
  gpar__engine_leave(eng);
  return GPAR_OK;
}

static int graph_of(void *obj, void *token) { return ((gpar__graph *)obj)->token == token; }
static void graph_drop(void *obj, void *token) {
  (void)token;
  if (gpar__sink.ctx == obj) memset(&gpar__sink, 0, sizeof gpar__sink); /* the caller's own recording */
  gpar__graph_free(obj); /* nothing is in flight after the drain */
}

void gpar__graph_shutdown(gpar_engine *eng) {
  gpar__handle_drain(gpar__graph_table(), graph_of, graph_drop, gpar__engine_token(eng));
}
