/* engine.c: the dependency engine. Engines and buffer handles, per-buffer reader/writer
 * tracking (MXNet-style var queues), the per-device dispatcher threads that issue vendor calls
 * (so one submitting thread can keep every GPU busy), the completion threads that poll events,
 * retirement with failure propagation, and the waits.
 *
 * Ordering rule: an edge producer -> consumer is ordered on the device (the consumer's lane
 * waits on the producer's event) when both run on lanes of one event backend that can wait
 * across the two devices; every other edge (CPU ops, across backends) waits for the producer to
 * retire. Completion is found by polling events from one completion thread per device rather
 * than by host callbacks: cudaLaunchHostFunc stalls the stream until the callback has run
 * (~3 us per op, baselines.md), while an event query costs well under a microsecond and lets
 * the lane run on. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

_Thread_local int gpar__in_op;

static struct gpar_engine gpar__engines[GPAR__MAX_ENGINES];
static pthread_mutex_t gpar__registry_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned gpar__next_engine;

static const char *const gpar__fault_names[GPAR__FAULT_KINDS] = {
    "alloc", "pinned", "copy", "gemm", "fill", "user", "event", "completion"};

double gpar__now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---------------------------------------------------------------- ready queues */

static void queue_init(gpar__queue *q) {
  pthread_mutex_init(&q->mu, NULL);
  pthread_cond_init(&q->cv, NULL);
  q->head = q->tail = NULL;
  atomic_init(&q->count, 0);
  atomic_init(&q->spinners, 0);
  q->sleepers = 0;
  q->waking = 0;
  q->stop = 0;
}

static void queue_destroy(gpar__queue *q) {
  pthread_mutex_destroy(&q->mu);
  pthread_cond_destroy(&q->cv);
}

/* Wake one sleeping consumer when more ops wait than consumers spin idle, unless a wake-up
 * is already on its way (queue lock held). So a stream of small ops costs about one futex wake
 * per wake-up latency, not one per op (one per op: 6 us per empty op with 32 CPU workers). */
static void queue_wake_locked(gpar__queue *q, int queued) {
  if (q->sleepers && !q->waking && queued > atomic_load_explicit(&q->spinners, memory_order_acquire)) {
    q->waking = 1;
    pthread_cond_signal(&q->cv);
  }
}

static void queue_push(gpar__queue *q, gpar__op *op) {
  op->next = NULL;
  pthread_mutex_lock(&q->mu);
  if (q->tail)
    q->tail->next = op;
  else
    q->head = op;
  q->tail = op;
  int queued = atomic_fetch_add_explicit(&q->count, 1, memory_order_release) + 1;
  queue_wake_locked(q, queued);
  pthread_mutex_unlock(&q->mu);
}

static void queue_stop(gpar__queue *q) {
  pthread_mutex_lock(&q->mu);
  q->stop = 1;
  pthread_cond_broadcast(&q->cv);
  pthread_mutex_unlock(&q->mu);
}

/* Pop one op (all = 0) or the whole queue (all = 1). Spins for a few microseconds before
 * sleeping, so a steady stream of small ops never pays a futex wake-up. NULL once stopped. */
static gpar__op *queue_pop(gpar__queue *q, int all) {
  const double spin_s = 20e-6;
  /* At most two consumers spin; the rest sleep. With one spinner per core (32 CPU workers)
   * every push became a stampede on the lock: 6.5 us per empty op instead of 0.4. */
  if (atomic_load_explicit(&q->count, memory_order_acquire) == 0) {
    if (atomic_fetch_add_explicit(&q->spinners, 1, memory_order_acq_rel) < 2) {
      double until = gpar__now() + spin_s;
      while (atomic_load_explicit(&q->count, memory_order_acquire) == 0 && gpar__now() < until) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
      }
    }
    atomic_fetch_sub_explicit(&q->spinners, 1, memory_order_acq_rel);
  }
  pthread_mutex_lock(&q->mu);
  while (!q->head && !q->stop) {
    q->sleepers++;
    pthread_cond_wait(&q->cv, &q->mu);
    q->sleepers--;
    q->waking = 0;
  }
  gpar__op *op = q->head;
  if (op) {
    if (all) {
      q->head = q->tail = NULL;
      atomic_store_explicit(&q->count, 0, memory_order_relaxed);
    } else {
      q->head = op->next;
      if (!q->head) q->tail = NULL;
      atomic_fetch_sub_explicit(&q->count, 1, memory_order_relaxed);
      op->next = NULL;
      queue_wake_locked(q, atomic_load_explicit(&q->count, memory_order_relaxed)); /* backlog */
    }
  }
  pthread_mutex_unlock(&q->mu);
  return op;
}

/* ---------------------------------------------------------------- faults */

int gpar__fault(gpar_engine *eng, int kind) {
  atomic_ulong *at = &eng->fault_at[kind];
  unsigned long n = atomic_load_explicit(at, memory_order_relaxed);
  while (n) {
    if (atomic_compare_exchange_weak(at, &n, n - 1)) {
      if (n == 1) return gpar__errorf(GPAR_EFAULT, "injected fault: %s", gpar__fault_names[kind]);
      return GPAR_OK;
    }
  }
  return GPAR_OK;
}

static int fault_set(gpar_engine *eng, const char *kind, unsigned long n) {
  if (!kind) return gpar__errorf(GPAR_EINVAL, "gpar_fault_inject: kind is NULL");
  for (int k = 0; k < GPAR__FAULT_KINDS; k++)
    if (!strcmp(kind, gpar__fault_names[k])) {
      atomic_store(&eng->fault_at[k], n);
      return GPAR_OK;
    }
  return gpar__errorf(GPAR_EINVAL, "gpar_fault_inject: unknown kind '%s'", kind);
}

GPAR_API int gpar_fault_inject(gpar_engine *e, const char *kind, unsigned long n) {
  int st;
  gpar_engine *eng = gpar__engine_enter(e, &st);
  if (!eng) return st;
  st = fault_set(eng, kind, n);
  gpar__engine_leave(eng);
  return st;
}

/* ---------------------------------------------------------------- ops and edges */

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

gpar__op *gpar__op_new(gpar_engine *eng) {
  gpar__op *op = eng->op_free;
  if (op)
    eng->op_free = op->next;
  else if (!(op = malloc(sizeof *op)))
    return NULL;
  memset(op, 0, sizeof *op);
  return op;
}

static gpar__access *op_access(gpar__op *op, int i) {
  return i < GPAR__INLINE ? &op->acc[i] : &op->acc_more[i - GPAR__INLINE];
}

int gpar__op_add_access(gpar__op *op, gpar__buf *buf, int mode) {
  for (int i = 0; i < op->nacc; i++) {
    gpar__access *a = op_access(op, i);
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
  gpar__access *a = op_access(op, op->nacc++);
  a->buf = buf;
  a->mode = mode;
  return GPAR_OK;
}

static void op_free(gpar_engine *eng, gpar__op *op);

void gpar__op_unref_locked(gpar_engine *eng, gpar__op *op) {
  if (--op->refs == 0) op_free(eng, op);
}

static void op_free(gpar_engine *eng, gpar__op *op) {
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

/* Discard an op that was built but never submitted (argument error). */
void gpar__op_discard(gpar_engine *eng, gpar__op *op) {
  op->dev = NULL;
  op_free(eng, op);
}

static void make_ready(gpar__op *op) {
  op->state = GPAR__ST_READY;
  queue_push(&op->dev->ready, op);
}

static int edge_on_device(const gpar__op *p, const gpar__op *c) {
  const gpar__device *pd = p->dev, *cd = c->dev;
  /* A backend whose host-to-device copies may read host memory when enqueued (NVIDIA's OpenCL
   * stages the source at enqueue) cannot order that read behind an event: wait for retirement. */
  if ((c->kind == GPAR__OP_COPY && c->u.copy.kind == GPAR__COPY_H2D) || c->kind == GPAR__OP_GRAPH)
    if (cd->ops->h2d_reads_at_enqueue) return 0;
  return pd->ops == cd->ops && pd->ops->ordered_by_events &&
         (pd == cd || pd->ops->can_wait(pd->be, pd->bidx, cd->bidx));
}

/* Link consumer c behind producer p (engine lock held). */
static int add_edge(gpar__op *p, gpar__op *c, int data) {
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

static int buf_add_reader(gpar__buf *b, gpar__op *op) {
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

void gpar__buf_free_locked(gpar_engine *eng, gpar__buf *b);
static void retire_locked(gpar_engine *eng, gpar__op *op);

/* Submit a built op (engine lock held). GPAR_ESHUTDOWN, with the op discarded, once the engine
 * has drained for shutdown; otherwise GPAR_OK (failures to link retire the op with the error).
 * Links it behind the last writer and readers of each
 * buffer it touches and queues it on its device when nothing holds it back. With *keep, an
 * extra reference is returned for gpar__wait_op (synchronous mode, gpar_read). */
int gpar__op_submit(gpar_engine *eng, gpar__op *op, int keep) {
  int st = GPAR_OK;
  if (atomic_load(&eng->state) == GPAR__ENG_CLOSED) { /* drained: nothing may start now */
    if (op->staging) gpar__pinned_free(&eng->pinned, op->staging);
    op->staging = NULL;
    gpar__op_discard(eng, op);
    return gpar__errorf(GPAR_ESHUTDOWN, "engine is shut down");
  }
  if (gpar__graph_recording(eng)) return gpar__graph_record_locked(eng, op); /* graph.c */
  op->refs = 1 + (keep ? 1 : 0);
  op->state = GPAR__ST_WAITING;
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
  if (eng->tracing) op->t_submit = gpar__now();
  for (int i = 0; i < op->nacc && st == GPAR_OK; i++) {
    gpar__access *a = op_access(op, i);
    gpar__buf *b = a->buf;
    /* A read depends on the data of the last writer; a pure overwrite only follows it. */
    if (b->writer) st = add_edge(b->writer, op, (a->mode & GPAR__READ) != 0);
    else if ((a->mode & GPAR__READ) && b->status != GPAR_OK) /* its last writer failed */
      atomic_store(&op->dep_failed, 1);
    if (a->mode & GPAR__WRITE) {
      for (int r = 0; r < b->nreaders && st == GPAR_OK; r++)
        if (b->readers[r] != op) st = add_edge(b->readers[r], op, 0);
      b->nreaders = 0;
      b->writer = op;
    } else if (st == GPAR_OK) {
      st = buf_add_reader(b, op);
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
  if (op->unmet == 0) make_ready(op);
  return GPAR_OK;
}

/* ---------------------------------------------------------------- retirement */

static void buf_remove_reader(gpar__buf *b, gpar__op *op) {
  for (int r = 0; r < b->nreaders; r++)
    if (b->readers[r] == op) {
      memmove(&b->readers[r], &b->readers[r + 1], sizeof *b->readers * (size_t)(b->nreaders - r - 1));
      b->nreaders--;
      return;
    }
}

static void retire_one(gpar_engine *eng, gpar__op *op, gpar__op **work) {
  op->state = GPAR__ST_RETIRED;
  for (int i = 0; i < op->prods.n; i++) gpar__op_unref_locked(eng, op->prods.v[i].op); /* CPU ops */
  op->prods.n = 0;
  if (op->status == GPAR_OK && atomic_load(&op->dep_failed)) op->status = GPAR_EDEPFAILED;
  for (int i = 0; i < op->nacc; i++) {
    gpar__access *a = op_access(op, i);
    gpar__buf *b = a->buf;
    if (a->mode & GPAR__WRITE) {
      if (b->writer == op) b->writer = NULL;
      const char *msg;
      b->status = gpar__op_write_status(op, b, &msg);
      free(b->errmsg);
      b->errmsg = msg ? strdup(msg) : NULL;
    } else {
      buf_remove_reader(b, op);
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
  for (int i = 0; i < op->succs.n; i++) {
    gpar__op *c = op->succs.v[i].op;
    int flags = op->succs.v[i].flags;
    if ((flags & GPAR__EDGE_DATA) && gpar__op_fails_reader(op, c)) atomic_store(&c->dep_failed, 1);
    if (!(flags & GPAR__EDGE_EVENT) && --c->unmet == 0) make_ready(c);
    if (--c->unretired == 0 && c->state == GPAR__ST_DONE) {
      c->next = *work;
      *work = c;
    }
  }
  if (eng->tracing) gpar__trace_op(eng, op);
  if (op->staging) {
    gpar__pinned_free(&eng->pinned, op->staging);
    op->staging = NULL;
  }
  gpar__op_unref_locked(eng, op);
}

static void retire_locked(gpar_engine *eng, gpar__op *op) {
  gpar__op *work = op;
  op->next = NULL;
  while (work) {
    gpar__op *o = work;
    work = o->next;
    retire_one(eng, o, &work);
  }
  if (eng->nwaiters) pthread_cond_broadcast(&eng->retire_cv);
}

/* The device has finished op (engine lock held): retire it once its producers have. */
static void complete_locked(gpar_engine *eng, gpar__op *op, int status) {
  if (status != GPAR_OK && op->status == GPAR_OK) {
    op->status = status;
    free(op->errmsg);
    op->errmsg = strdup(gpar__error_msg());
  }
  op->state = GPAR__ST_DONE;
  if (op->unretired == 0) retire_locked(eng, op);
}

/* ---------------------------------------------------------------- executing ops */

static void op_fail(gpar__op *op, int st) {
  if (op->status != GPAR_OK) return;
  op->status = st;
  free(op->errmsg);
  op->errmsg = strdup(st == GPAR_EDEPFAILED ? gpar_strerror(st) : gpar__error_msg());
}

/* Run (CPU) or enqueue (GPU) the op's work on its lane. */
static int exec_op(gpar__device *dev, gpar__op *op) {
  gpar_engine *eng = dev->eng;
  const gpar__backend_ops *ops = dev->ops;
  int st;
  switch (op->kind) {
  case GPAR__OP_COPY:
    if ((st = gpar__fault(eng, GPAR__FAULT_COPY))) return st;
    return ops->copy(dev->bdev, op->lane, &op->u.copy);
  case GPAR__OP_FILL:
    if ((st = gpar__fault(eng, GPAR__FAULT_FILL))) return st;
    return ops->fill(dev->bdev, op->lane, op->u.fill.mem, op->u.fill.off, op->u.fill.bytes, op->u.fill.value);
  case GPAR__OP_GEMM:
    if ((st = gpar__fault(eng, GPAR__FAULT_GEMM))) return st;
    return ops->gemm(dev->bdev, op->lane, &op->u.gemm);
  case GPAR__OP_USER: {
    if ((st = gpar__fault(eng, GPAR__FAULT_USER))) return st;
    gpar_native nat;
    memset(&nat, 0, sizeof nat);
    if (ops->native && (st = ops->native(dev->bdev, op->lane, &nat))) return st;
    nat.device = dev->index;
    nat.backend_index = dev->bidx;
    gpar__errorf(GPAR_OK, "%s", "");
    st = op->u.user.fn(&nat, op->u.user.arg);
    if (st != GPAR_OK && !*gpar__error_msg())
      gpar__errorf(st, "user function returned %s", gpar_status_name(st));
    return st;
  }
  case GPAR__OP_GRAPH:
    return gpar__graph_exec(dev, op);
  default:
    return GPAR_OK;
  }
}

int gpar__exec_op(gpar__device *dev, gpar__op *op) { return exec_op(dev, op); }

/* CPU workers: run one op to completion, then retire it. */
static void *host_worker(void *arg) {
  gpar__device *dev = arg;
  gpar_engine *eng = dev->eng;
  gpar__in_op = 1;
  gpar__op *op;
  while ((op = queue_pop(&dev->ready, 0))) {
    int st = GPAR_EDEPFAILED;
    if (eng->tracing) op->t_start = gpar__now();
    if (!atomic_load(&op->dep_failed)) st = exec_op(dev, op);
    if (eng->tracing) op->t_end = gpar__now();
    pthread_mutex_lock(&eng->mu);
    if (st != GPAR_OK) op_fail(op, st);
    op->state = GPAR__ST_DISPATCHED;
    complete_locked(eng, op, GPAR_OK);
    pthread_mutex_unlock(&eng->mu);
  }
  return NULL;
}

static int record_event(gpar__device *dev, gpar__op *op, unsigned flags, gpar__event **ev) {
  int st = gpar__fault(dev->eng, GPAR__FAULT_EVENT);
  if (!st) st = dev->ops->event_record(dev->bdev, op->lane, flags, ev);
  if (st) {
    *ev = NULL;
    return st;
  }
  atomic_fetch_add(&dev->eng->events_live, 1);
  return GPAR_OK;
}

/* The event whose completion implies op's: its own, or that of the later op on the same lane
 * that covers it; NULL when its lane was synchronised (already complete). */
static gpar__event *op_done_event(const gpar__op *op) {
  return op->event ? op->event : op->cover ? op->cover->event : NULL;
}

/* GPU dispatcher: make the lane wait on the producers' events, enqueue the work, record the
 * op's event when someone needs it. No engine lock is held during vendor calls. */
static void dispatch_one(gpar__device *dev, gpar__op *op, int need_event) {
  const gpar__backend_ops *ops = dev->ops;
  int tracing = dev->eng->tracing;
  int st = GPAR_OK;
  for (int i = 0; i < op->prods.n; i++) {
    gpar__op *p = op->prods.v[i].op;
    if (!(op->prods.v[i].flags & GPAR__EDGE_EVENT)) continue;
    if (p->dev == dev && p->lane == op->lane) continue; /* same in-order lane: already ordered */
    gpar__event *pe = op_done_event(p);
    if (!pe) continue; /* the producer synchronised its lane: already complete */
    int w = ops->event_wait(dev->bdev, op->lane, pe);
    if (w != GPAR_OK && ops->event_sync(pe) != GPAR_OK && st == GPAR_OK) st = w;
  }
  if (tracing) {
    op->t_dispatch = gpar__now();
    if (ops->event_elapsed) record_event(dev, op, GPAR__EVENT_TIMING, &op->start_event);
  }
  if (op->kind == GPAR__OP_GEMM) op->u.gemm.no_event = !need_event;
  if (st == GPAR_OK) st = atomic_load(&op->dep_failed) ? GPAR_EDEPFAILED : exec_op(dev, op);
  if (st != GPAR_OK) op_fail(op, st);
  if (!need_event) return; /* a later op of this group on the same lane covers it */
  int rec = record_event(dev, op, tracing && ops->event_elapsed ? GPAR__EVENT_TIMING : 0, &op->event);
  if (rec != GPAR_OK) {
    /* Without an event the lane is synchronised here, so consumers need not wait on it. */
    op_fail(op, rec);
    ops->lane_sync(dev->bdev, op->lane);
  }
}

/* Hand dispatched ops to the completion thread, and complete at once those without an event. */
static void hand_to_completer(gpar__device *dev, gpar__op *group) {
  gpar_engine *eng = dev->eng;
  gpar__op *no_event = NULL, *next;
  pthread_mutex_lock(&dev->cmu);
  for (gpar__op *op = group; op; op = next) {
    next = op->next;
    if (!op_done_event(op)) {
      op->next = no_event;
      no_event = op;
      continue;
    }
    op->lane_next = NULL;
    if (dev->lane_tail[op->lane])
      dev->lane_tail[op->lane]->lane_next = op;
    else
      dev->lane_head[op->lane] = op;
    dev->lane_tail[op->lane] = op;
  }
  pthread_cond_signal(&dev->ccv);
  pthread_mutex_unlock(&dev->cmu);
  if (no_event) {
    pthread_mutex_lock(&eng->mu);
    for (gpar__op *op = no_event; op; op = next) {
      next = op->next;
      complete_locked(eng, op, GPAR_OK);
    }
    pthread_mutex_unlock(&eng->mu);
  }
}

/* GPU dispatcher. Ops are taken from the ready queue in batches and dispatched a few at a
 * time; a successor that this releases on the same device is dispatched next, ahead of the
 * rest of the batch. So GEMM i's copy goes out right after GEMM i rather than after every
 * queued GEMM, and the copy lane starts as early as it can (copy-bound pipelines). */
#define GPAR__DISPATCH_GROUP 8
static void *gpu_dispatcher(void *arg) {
  gpar__device *dev = arg;
  gpar_engine *eng = dev->eng;
  gpar__in_op = 1;
  if (dev->ops->bind_thread) dev->ops->bind_thread(dev->bdev);
  gpar__op *todo;
  while ((todo = queue_pop(&dev->ready, 1))) {
    while (todo) {
      gpar__op *group = todo, *last = todo;
      for (int n = 1; n < GPAR__DISPATCH_GROUP && last->next; n++) last = last->next;
      todo = last->next;
      last->next = NULL;
      /* Events only where needed: by a consumer already linked on another lane or device, or
       * as the last op of the group on its lane, whose event then covers the others (an
       * in-order lane completes them first). Consumers linked later wait on the cover. */
      int need[GPAR__DISPATCH_GROUP], k = 0;
      gpar__op *lane_last[GPAR__NLANES] = {0};
      pthread_mutex_lock(&eng->mu);
      for (gpar__op *op = group; op; op = op->next, k++) {
        need[k] = eng->tracing;
        lane_last[op->lane] = op;
        for (int i = 0; i < op->succs.n && !need[k]; i++) {
          const gpar__op *c = op->succs.v[i].op;
          need[k] = (op->succs.v[i].flags & GPAR__EDGE_EVENT) && (c->dev != dev || c->lane != op->lane);
        }
      }
      pthread_mutex_unlock(&eng->mu);
      k = 0;
      for (gpar__op *op = group; op; op = op->next, k++) dispatch_one(dev, op, need[k] || lane_last[op->lane] == op);
      /* Release the successors that wait on these events, in one lock. */
      gpar__op *local = NULL, **local_tail = &local;
      pthread_mutex_lock(&eng->mu);
      for (gpar__op *op = group; op; op = op->next) {
        gpar__op *cover = lane_last[op->lane];
        if (!op->event && cover != op && cover->event) {
          op->cover = cover;
          cover->refs++;
        }
        op->state = GPAR__ST_DISPATCHED;
        for (int i = 0; i < op->prods.n; i++) gpar__op_unref_locked(eng, op->prods.v[i].op);
        op->prods.n = 0;
        for (int i = 0; i < op->succs.n; i++) {
          gpar__op *c = op->succs.v[i].op;
          int flags = op->succs.v[i].flags;
          if ((flags & GPAR__EDGE_DATA) && gpar__op_fails_reader(op, c)) atomic_store(&c->dep_failed, 1);
          if (!(flags & GPAR__EDGE_EVENT) || --c->unmet) continue;
          if (c->dev == dev) {
            c->state = GPAR__ST_READY;
            *local_tail = c;
            local_tail = &c->next;
          } else {
            make_ready(c);
          }
        }
      }
      pthread_mutex_unlock(&eng->mu);
      *local_tail = todo;
      todo = local;
      hand_to_completer(dev, group);
    }
  }
  return NULL;
}

/* Completion thread of a GPU: retire lane heads whose events are done, polling every ~20-60 us
 * (nanosleep) while any lane is busy and sleeping on a condition variable when none is. Each
 * pass retires every finished op in one engine lock. Polling, rather than a blocking
 * cudaEventSynchronize on the oldest event, keeps this thread off the driver's locks while the
 * dispatcher launches small ops, and never holds a short copy behind a long GEMM. */
static void *gpu_completer(void *arg) {
  gpar__device *dev = arg;
  gpar_engine *eng = dev->eng;
  const gpar__backend_ops *ops = dev->ops;
  gpar__in_op = 1;
  if (ops->bind_thread) ops->bind_thread(dev->bdev);
  pthread_mutex_lock(&dev->cmu);
  for (;;) {
    gpar__op *done = NULL, **done_tail = &done;
    int busy = 0;
    for (int l = 0; l < GPAR__NLANES; l++) {
      gpar__op *op;
      while ((op = dev->lane_head[l])) {
        gpar__event *ev = op_done_event(op);
        int q = ev ? ops->event_query(ev) : 1;
        if (q == 0) break;
        dev->lane_head[l] = op->lane_next;
        if (!dev->lane_head[l]) dev->lane_tail[l] = NULL;
        op->async_status = q < 0 ? q : GPAR_OK; /* a failure found by the device */
        if (q < 0) op->async_msg = strdup(gpar__error_msg());
        op->next = NULL;
        *done_tail = op;
        done_tail = &op->next;
      }
      if (dev->lane_head[l]) busy++;
    }
    if (done) {
      pthread_mutex_unlock(&dev->cmu);
      pthread_mutex_lock(&eng->mu);
      gpar__op *next;
      for (gpar__op *op = done; op; op = next) {
        next = op->next;
        int st = gpar__fault(eng, GPAR__FAULT_COMPLETION);
        if (eng->tracing) op->t_end = gpar__now();
        if (op->async_status != GPAR_OK && op->status == GPAR_OK) {
          op->status = op->async_status;
          free(op->errmsg);
          op->errmsg = op->async_msg;
          op->async_msg = NULL;
        }
        complete_locked(eng, op, st);
      }
      pthread_mutex_unlock(&eng->mu);
      pthread_mutex_lock(&dev->cmu);
      continue;
    }
    if (!busy) {
      if (dev->cstop) break;
      pthread_cond_wait(&dev->ccv, &dev->cmu);
      continue;
    }
    pthread_mutex_unlock(&dev->cmu);
    struct timespec ts = {0, 20000};
    nanosleep(&ts, NULL);
    pthread_mutex_lock(&dev->cmu);
  }
  pthread_mutex_unlock(&dev->cmu);
  return NULL;
}

/* ---------------------------------------------------------------- waits */

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

static int wait_buf(gpar_buffer handle) {
  gpar__buf *b;
  gpar_engine *eng;
  int st = gpar__buf_lookup(handle, &b, &eng);
  if (st) return st;
  if (gpar__in_op || gpar__graph_recording(eng)) {
    pthread_mutex_unlock(&eng->mu);
    if (!gpar__in_op) return gpar__errorf(GPAR_ERECORDING, "gpar_wait called while this thread records a graph");
    return gpar__errorf(GPAR_EDEADLK, "gpar_wait called from inside an operation");
  }
  gpar__op *w = b->writer;
  if (!w) {
    st = b->status;
    if (st != GPAR_OK) gpar__set_error_msg(st, b->errmsg);
    pthread_mutex_unlock(&eng->mu);
    return st;
  }
  w->refs++;
  pthread_mutex_unlock(&eng->mu);
  if (w->kind == GPAR__OP_GRAPH) return gpar__graph_wait_buf(eng, w, b); /* its status on b */
  return gpar__wait_op(eng, w);
}

GPAR_API int gpar_wait(gpar_buffer handle) {
  int st;
  gpar_engine *eng = gpar__engine_enter_buf(handle, &st);
  if (!eng) return st;
  st = wait_buf(handle);
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
  while (eng->inflight_head && eng->inflight_head->seq <= target)
    pthread_cond_wait(&eng->retire_cv, &eng->mu);
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

/* ---------------------------------------------------------------- engines */

/* Engine tokens: the user's gpar_engine pointer is (serial << 7 | slot << 1 | 1), never a real
 * address. Serials count up from 1 and are never reused: at their end gpar_init fails rather
 * than wrap. Internal code passes real addresses of gpar__engines, which are even. */
#define GPAR__TOKEN_SLOT_BITS 6
#define GPAR__ENGINE_SERIAL_MAX ((uint64_t)(UINTPTR_MAX >> (GPAR__TOKEN_SLOT_BITS + 1)))
_Static_assert(GPAR__MAX_ENGINES <= 1 << GPAR__TOKEN_SLOT_BITS, "engine slots fit the token");

static pthread_once_t gpar__registry_once = PTHREAD_ONCE_INIT;
static uint64_t gpar__engine_serial; /* last engine serial given (registry lock) */
static _Atomic uint64_t gpar__buf_serial; /* last buffer serial given */
_Thread_local int gpar__depth;

static void registry_init(void) {
  for (int i = 0; i < GPAR__MAX_ENGINES; i++) {
    pthread_mutex_init(&gpar__engines[i].mu, NULL);
    pthread_cond_init(&gpar__engines[i].retire_cv, NULL);
  }
}

static gpar_engine *engine_token(gpar_engine *eng) {
  return (gpar_engine *)(uintptr_t)((atomic_load(&eng->serial) << (GPAR__TOKEN_SLOT_BITS + 1)) |
                                    ((uintptr_t)(eng - gpar__engines) << 1) | 1u);
}

/* Decode a token or an internal pointer; *serial 0 for internal pointers. */
static gpar_engine *engine_decode(gpar_engine *e, uint64_t *serial, int *status) {
  uintptr_t p = (uintptr_t)e, base = (uintptr_t)gpar__engines;
  *serial = 0;
  if (!e) {
    *status = gpar__errorf(GPAR_EINVAL, "engine is NULL");
    return NULL;
  }
  if (p & 1) {
    *serial = (uint64_t)(p >> (GPAR__TOKEN_SLOT_BITS + 1));
    unsigned slot = (unsigned)(p >> 1) & ((1u << GPAR__TOKEN_SLOT_BITS) - 1);
    if (slot < GPAR__MAX_ENGINES && *serial) return &gpar__engines[slot];
  } else if (p >= base && p < base + sizeof gpar__engines && (p - base) % sizeof gpar__engines[0] == 0) {
    return e;
  }
  *status = gpar__errorf(GPAR_EINVAL, "not an engine handle");
  return NULL;
}

/* May a call enter an engine in this state? */
static int state_admits(int state) {
  return state == GPAR__ENG_OPEN || (state == GPAR__ENG_CLOSING && (gpar__in_op || gpar__depth > 0));
}

static gpar_engine *engine_enter(gpar_engine *eng, uint64_t serial, int *status) {
  atomic_fetch_add(&eng->callers, 1);
  int state = atomic_load(&eng->state);
  uint64_t cur = atomic_load(&eng->serial);
  if (state_admits(state) && (!serial || serial == cur)) {
    gpar__depth++;
    return eng;
  }
  atomic_fetch_sub(&eng->callers, 1);
  if (serial > cur)
    *status = gpar__errorf(GPAR_EINVAL, "not an engine handle");
  else if (serial == cur && (state == GPAR__ENG_CLOSING || state == GPAR__ENG_CLOSED))
    *status = gpar__errorf(GPAR_ESHUTDOWN, "engine is shutting down");
  else
    *status = gpar__errorf(GPAR_ESHUTDOWN, "engine is shut down");
  return NULL;
}

gpar_engine *gpar__engine_enter(gpar_engine *e, int *status) {
  uint64_t serial;
  gpar_engine *eng = engine_decode(e, &serial, status);
  if (!eng) return NULL;
  if (!serial) serial = atomic_load(&eng->serial);
  return engine_enter(eng, serial, status);
}

gpar_engine *gpar__engine_enter_buf(gpar_buffer h, int *status) {
  uint64_t s = h.id >> 32;
  if (h.id == 0) {
    *status = gpar__errorf(GPAR_EBADBUF, "null buffer handle");
    return NULL;
  }
  if (s == 0 || s > GPAR__MAX_ENGINES || !h.serial) {
    *status = gpar__errorf(GPAR_EBADBUF, "not a buffer handle");
    return NULL;
  }
  gpar_engine *eng = &gpar__engines[s - 1];
  atomic_fetch_add(&eng->callers, 1);
  int state = atomic_load(&eng->state);
  if (state_admits(state) && h.serial >= atomic_load(&eng->first_buf_serial)) {
    gpar__depth++;
    return eng;
  }
  atomic_fetch_sub(&eng->callers, 1);
  if ((state == GPAR__ENG_CLOSING || state == GPAR__ENG_CLOSED) && h.serial >= atomic_load(&eng->first_buf_serial))
    *status = gpar__errorf(GPAR_ESHUTDOWN, "buffer handle: its engine is shutting down");
  else
    *status = gpar__errorf(GPAR_EBADBUF, "buffer handle: its engine is shut down or unknown");
  return NULL;
}

void gpar__engine_leave(gpar_engine *eng) {
  gpar__depth--;
  atomic_fetch_sub(&eng->callers, 1);
}

gpar_engine *gpar__engine_check(gpar_engine *e, int *status) {
  gpar_engine *eng = gpar__engine_enter(e, status);
  if (eng) gpar__engine_leave(eng);
  return eng;
}

GPAR_API void gpar__test_set_serials(uint64_t next_engine, uint64_t next_buffer) {
  pthread_once(&gpar__registry_once, registry_init);
  pthread_mutex_lock(&gpar__registry_mu);
  if (next_engine) gpar__engine_serial = next_engine - 1;
  if (next_buffer) atomic_store(&gpar__buf_serial, next_buffer - 1);
  pthread_mutex_unlock(&gpar__registry_mu);
}

/* A buffer serial, never 0 and never reused; 0 once they are used up. */
static uint64_t buf_serial_next(void) {
  uint64_t n = atomic_load(&gpar__buf_serial);
  do {
    if (n == UINT64_MAX) return 0;
  } while (!atomic_compare_exchange_weak(&gpar__buf_serial, &n, n + 1));
  return n + 1;
}

static void config_from_env(gpar_config *cfg);

GPAR_API void gpar_config_init(gpar_config *cfg) {
  if (!cfg) return;
  memset(cfg, 0, sizeof *cfg);
  config_from_env(cfg);
}

static void config_from_env(gpar_config *cfg) {
  const char *s;
  if ((s = getenv("GPAR_SYNC"))) cfg->synchronous = atoi(s);
  if ((s = getenv("GPAR_HOST_THREADS"))) cfg->host_threads = atoi(s);
  if ((s = getenv("GPAR_TF32"))) cfg->tf32 = atoi(s);
  if ((s = getenv("GPAR_TRACE")) && *s) cfg->trace_path = s;
  if ((s = getenv("GPAR_PINNED_LIMIT_MB"))) cfg->pinned_limit = (size_t)strtoull(s, NULL, 10) << 20;
  if ((s = getenv("GPAR_QUIET"))) cfg->quiet = atoi(s);
  if ((s = getenv("GPAR_BACKENDS"))) {
    cfg->backends = 0;
    if (strstr(s, "host")) cfg->backends |= GPAR_BACKEND_HOST;
    if (strstr(s, "cuda")) cfg->backends |= GPAR_BACKEND_CUDA;
    if (strstr(s, "opencl")) cfg->backends |= GPAR_BACKEND_OPENCL;
  }
}

static int device_start_threads(gpar__device *dev) {
  dev->nthreads = dev->ops->ordered_by_events ? 1 : dev->eng->cfg.host_threads;
  dev->threads = calloc((size_t)dev->nthreads, sizeof *dev->threads);
  if (!dev->threads) return GPAR_ENOMEM;
  void *(*fn)(void *) = dev->ops->ordered_by_events ? gpu_dispatcher : host_worker;
  for (int i = 0; i < dev->nthreads; i++)
    if (pthread_create(&dev->threads[i], NULL, fn, dev)) {
      dev->nthreads = i;
      return gpar__errorf(GPAR_ENOMEM, "pthread_create failed");
    }
  if (dev->ops->ordered_by_events && pthread_create(&dev->completer, NULL, gpu_completer, dev)) {
    dev->completer = 0;
    return gpar__errorf(GPAR_ENOMEM, "pthread_create failed");
  }
  return GPAR_OK;
}

/* Stop and join a device's threads (its queue is empty: nothing is in flight). */
static void device_join(gpar__device *dev) {
  queue_stop(&dev->ready);
  for (int i = 0; i < dev->nthreads; i++) pthread_join(dev->threads[i], NULL);
  free(dev->threads);
  dev->threads = NULL;
  if (dev->ops->ordered_by_events && dev->completer) {
    pthread_mutex_lock(&dev->cmu);
    dev->cstop = 1;
    pthread_cond_signal(&dev->ccv);
    pthread_mutex_unlock(&dev->cmu);
    pthread_join(dev->completer, NULL);
  }
  dev->nthreads = 0;
  dev->completer = 0;
}

/* Close a device whose threads are joined, and free it. */
static void device_free(gpar__device *dev) {
  if (dev->trace_ref) dev->ops->event_release(dev->trace_ref);
  if (dev->bdev) dev->ops->device_close(dev->bdev);
  queue_destroy(&dev->ready);
  pthread_mutex_destroy(&dev->cmu);
  pthread_cond_destroy(&dev->ccv);
  free(dev);
}

static int engine_add_backend(gpar_engine *eng, const gpar__backend_ops *ops) {
  gpar__backend *be = NULL;
  int n = 0;
  int st = ops->open(&eng->cfg, &be, &n);
  if (st != GPAR_OK) {
    gpar__log("%s: backend unavailable: %s", ops->name, gpar__error_msg());
    return ops == &gpar__host_backend ? st : GPAR_OK;
  }
  int first = eng->ndev;
  gpar__device **devs = realloc(eng->devs, sizeof *devs * (size_t)(eng->ndev + n));
  if (!devs) {
    ops->close(be);
    return GPAR_ENOMEM;
  }
  eng->devs = devs;
  eng->backends[eng->nbackends].ops = ops;
  eng->backends[eng->nbackends].be = be;
  eng->nbackends++;
  for (int i = 0; i < n; i++) {
    gpar__device *dev = calloc(1, sizeof *dev);
    if (!dev) return GPAR_ENOMEM;
    dev->ops = ops;
    dev->be = be;
    dev->bidx = i;
    dev->eng = eng;
    queue_init(&dev->ready);
    pthread_mutex_init(&dev->cmu, NULL);
    pthread_cond_init(&dev->ccv, NULL);
    if ((st = ops->device_info(be, i, &dev->info)) || (st = ops->device_open(be, i, &dev->bdev))) {
      gpar__log("%s: device %d skipped: %s", ops->name, i, gpar__error_msg());
      device_free(dev);
      continue;
    }
    dev->index = eng->ndev;
    eng->devs[eng->ndev++] = dev;
  }
  /* Peer masks: backend-local bits to flat indices. */
  for (int i = first; i < eng->ndev; i++) {
    uint64_t local = eng->devs[i]->info.peer_mask, flat = 0;
    for (int j = first; j < eng->ndev; j++)
      if (eng->devs[j]->bidx < 64 && (local >> eng->devs[j]->bidx & 1) && j < 64) flat |= 1ull << j;
    eng->devs[i]->info.peer_mask = flat;
  }
  return GPAR_OK;
}

/* Free what an engine holds, once no op is in flight and no call is inside. Threads are joined
 * before any buffer is freed. */
static void engine_free_resources(gpar_engine *eng) {
  for (int i = 0; i < eng->ndev; i++) device_join(eng->devs[i]);
  for (uint32_t s = 0; s < eng->nslots; s++)
    if (eng->slots[s]) gpar__buf_free_locked(eng, eng->slots[s]);
  for (int i = 0; i < eng->ndev; i++) device_free(eng->devs[i]);
  gpar__pinned_destroy(&eng->pinned);
  for (int i = 0; i < eng->nbackends; i++) eng->backends[i].ops->close(eng->backends[i].be);
  while (eng->op_free) {
    gpar__op *op = eng->op_free;
    eng->op_free = op->next;
    free(op);
  }
  free(eng->devs);
  free(eng->slots);
  free(eng->free_slots);
  free(eng->first_errmsg);
  free(eng->trace);
}

/* Claim a free slot with a fresh serial (registry lock); NULL with *status on failure. */
static gpar_engine *engine_claim(int *status) {
  pthread_once(&gpar__registry_once, registry_init);
  pthread_mutex_lock(&gpar__registry_mu);
  gpar_engine *eng = NULL;
  if (gpar__engine_serial >= GPAR__ENGINE_SERIAL_MAX) {
    pthread_mutex_unlock(&gpar__registry_mu);
    *status = gpar__errorf(GPAR_ENOMEM, "gpar_init: engine serials used up (%llu engines)",
                           (unsigned long long)GPAR__ENGINE_SERIAL_MAX);
    return NULL;
  }
  for (unsigned i = 0; i < GPAR__MAX_ENGINES && !eng; i++) {
    unsigned s = (gpar__next_engine + i) % GPAR__MAX_ENGINES;
    if (atomic_load(&gpar__engines[s].state) == GPAR__ENG_FREE) {
      eng = &gpar__engines[s];
      gpar__next_engine = s + 1;
    }
  }
  if (eng) {
    memset(&eng->slot, 0, sizeof *eng - offsetof(gpar_engine, slot));
    eng->slot = (int)(eng - gpar__engines);
    atomic_store(&eng->serial, ++gpar__engine_serial);
    atomic_store(&eng->first_buf_serial, atomic_load(&gpar__buf_serial) + 1);
    atomic_store(&eng->state, GPAR__ENG_INIT);
  }
  pthread_mutex_unlock(&gpar__registry_mu);
  if (!eng) *status = gpar__errorf(GPAR_ENOMEM, "gpar_init: more than %d engines alive", GPAR__MAX_ENGINES);
  return eng;
}

static void engine_release_slot(gpar_engine *eng) {
  pthread_mutex_lock(&gpar__registry_mu);
  atomic_store(&eng->state, GPAR__ENG_FREE);
  pthread_mutex_unlock(&gpar__registry_mu);
}

GPAR_API int gpar_init(gpar_engine **out, const gpar_config *cfg) {
  if (!out) return gpar__errorf(GPAR_EINVAL, "gpar_init: out pointer is NULL");
  *out = NULL;
  int st;
  gpar_engine *eng = engine_claim(&st);
  if (!eng) return st;

  if (cfg)
    eng->cfg = *cfg;
  else
    gpar_config_init(&eng->cfg);
  if (!eng->cfg.backends) eng->cfg.backends = GPAR_BACKEND_HOST | GPAR_BACKEND_CUDA | GPAR_BACKEND_OPENCL;
  eng->cfg.backends |= GPAR_BACKEND_HOST;
  if (eng->cfg.host_threads <= 0) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    eng->cfg.host_threads = n > 0 ? (int)n : 2;
  }
  gpar__set_quiet(eng->cfg.quiet);
  const char *fault = getenv("GPAR_FAULT");
  eng->tracing = eng->cfg.trace_path != NULL;
  eng->t0 = gpar__now();

  st = engine_add_backend(eng, &gpar__host_backend);
  if (st == GPAR_OK && &gpar__cuda_backend && (eng->cfg.backends & GPAR_BACKEND_CUDA))
    st = engine_add_backend(eng, &gpar__cuda_backend);
  if (st == GPAR_OK && &gpar__opencl_backend && (eng->cfg.backends & GPAR_BACKEND_OPENCL))
    st = engine_add_backend(eng, &gpar__opencl_backend);
  /* Pinned host memory comes from the first GPU backend that has a device. */
  const gpar__backend_ops *pin_ops = NULL;
  gpar__backend *pin_be = NULL;
  for (int i = 0; i < eng->ndev && !pin_ops; i++)
    if (eng->devs[i]->ops->host_alloc && eng->devs[i]->ops->ordered_by_events) {
      pin_ops = eng->devs[i]->ops;
      pin_be = eng->devs[i]->be;
    }
  gpar__pinned_init(&eng->pinned, pin_ops, pin_be, eng->cfg.pinned_limit);
  for (int i = 0; i < eng->ndev && st == GPAR_OK; i++) {
    if (eng->devs[i]->ops == &gpar__host_backend) eng->host_dev = eng->devs[i];
    st = device_start_threads(eng->devs[i]);
  }
  if (st == GPAR_OK && !eng->host_dev) st = gpar__errorf(GPAR_ENODEV, "host backend has no device");
  if (st != GPAR_OK) {
    engine_free_resources(eng);
    engine_release_slot(eng);
    return st;
  }
  if (eng->tracing)
    for (int i = 0; i < eng->ndev; i++) {
      gpar__device *dev = eng->devs[i];
      if (dev->ops->ordered_by_events && dev->ops->event_elapsed &&
          dev->ops->event_record(dev->bdev, GPAR__LANE_COMPUTE, GPAR__EVENT_TIMING, &dev->trace_ref) == GPAR_OK) {
        dev->ops->event_sync(dev->trace_ref);
        dev->trace_t0 = gpar__now() - eng->t0;
      }
    }
  if (fault) {
    char kind[32];
    unsigned long n;
    if (sscanf(fault, "%31[a-z]:%lu", kind, &n) == 2) fault_set(eng, kind, n);
  }
  atomic_store(&eng->state, GPAR__ENG_OPEN);
  *out = engine_token(eng);
  return GPAR_OK;
}

/* Shutdown: refuse new outside calls (CLOSING), drain until nothing is in flight, then refuse
 * everything (CLOSED, set under the engine lock so no submit slips in after the drain), wait
 * for the calls still inside to leave, join the threads, and only then free memory. */
GPAR_API int gpar_shutdown(gpar_engine *e) {
  int st;
  gpar_engine *eng = gpar__engine_enter(e, &st);
  if (!eng) return st;
  if (gpar__in_op) {
    gpar__engine_leave(eng);
    return gpar__errorf(GPAR_EDEADLK, "gpar_shutdown called from inside an operation");
  }
  int open = GPAR__ENG_OPEN;
  if (!atomic_compare_exchange_strong(&eng->state, &open, GPAR__ENG_CLOSING)) {
    gpar__engine_leave(eng);
    return gpar__errorf(GPAR_ESHUTDOWN, "engine is shutting down");
  }
  pthread_mutex_lock(&eng->mu);
  eng->nwaiters++;
  while (eng->inflight_head) pthread_cond_wait(&eng->retire_cv, &eng->mu);
  eng->nwaiters--;
  atomic_store(&eng->state, GPAR__ENG_CLOSED);
  st = eng->first_error;
  if (st != GPAR_OK) gpar__set_error_msg(st, eng->first_errmsg);
  pthread_mutex_unlock(&eng->mu);
  gpar__engine_leave(eng);
  while (atomic_load(&eng->callers) > 0) {
    struct timespec ts = {0, 50000};
    nanosleep(&ts, NULL);
  }
  gpar__graph_shutdown(eng); /* graph.c: its graphs, their buffers and backend graphs */
  if (eng->tracing) gpar__trace_write(eng);
  engine_free_resources(eng);
  engine_release_slot(eng);
  return st;
}

/* ---------------------------------------------------------------- devices */

GPAR_API int gpar_device_count(gpar_engine *e) {
  int st;
  gpar_engine *eng = gpar__engine_enter(e, &st);
  if (!eng) return st;
  st = eng->ndev;
  gpar__engine_leave(eng);
  return st;
}

GPAR_API int gpar_device_info(gpar_engine *e, int dev, gpar_device_props *info) {
  int st = GPAR_OK;
  gpar_engine *eng = gpar__engine_enter(e, &st);
  if (!eng) return st;
  if (!info)
    st = gpar__errorf(GPAR_EINVAL, "gpar_device_info: info is NULL");
  else if (dev < 0 || dev >= eng->ndev)
    st = gpar__errorf(GPAR_ENODEV, "device %d does not exist (%d devices)", dev, eng->ndev);
  else
    *info = eng->devs[dev]->info;
  gpar__engine_leave(eng);
  return st;
}

GPAR_API int gpar_device_find(gpar_engine *e, int backend_id, int type, int skip) {
  int st;
  gpar_engine *eng = gpar__engine_enter(e, &st);
  if (!eng) return st;
  st = gpar__errorf(GPAR_ENODEV, "no such device (backend %d, type %d)", backend_id, type);
  for (int i = 0; i < eng->ndev; i++) {
    const gpar_device_props *in = &eng->devs[i]->info;
    if ((!backend_id || (in->backend_id & backend_id)) && (type < 0 || (int)in->type == type) && skip-- == 0) {
      st = i;
      break;
    }
  }
  gpar__engine_leave(eng);
  return st;
}

GPAR_API int gpar_stats_get(gpar_engine *e, gpar_stats *stats) {
  int st;
  gpar_engine *eng = gpar__engine_enter(e, &st);
  if (!eng) return st;
  if (!stats) {
    gpar__engine_leave(eng);
    return gpar__errorf(GPAR_EINVAL, "gpar_stats_get: stats is NULL");
  }
  pthread_mutex_lock(&eng->mu);
  *stats = eng->stats;
  pthread_mutex_unlock(&eng->mu);
  pthread_mutex_lock(&eng->pinned.mu);
  stats->pinned_bytes_pool = eng->pinned.held;
  pthread_mutex_unlock(&eng->pinned.mu);
  stats->events_live = (uint64_t)atomic_load(&eng->events_live);
  stats->graph_native_launches = atomic_load(&eng->graph_native);
  gpar__engine_leave(eng);
  return GPAR_OK;
}

/* ---------------------------------------------------------------- buffers */

/* Handles: id = (engine slot + 1) << 32 | buffer slot; serial = the buffer's serial. */
gpar_buffer gpar__buf_handle(const gpar__buf *b) {
  return (gpar_buffer){((uint64_t)(b->eng->slot + 1) << 32) | b->slot, b->serial};
}

/* Resolve a handle for engine eng (engine lock held). A live handle of another engine is
 * GPAR_EENGINE; anything else that is not a live buffer of eng is GPAR_EBADBUF. */
int gpar__buf_get_locked(gpar_engine *eng, gpar_buffer h, gpar__buf **b) {
  if (h.id == 0) return gpar__errorf(GPAR_EBADBUF, "null buffer handle");
  if (atomic_load(&eng->state) == GPAR__ENG_CLOSED) return gpar__errorf(GPAR_ESHUTDOWN, "engine is shut down");
  uint64_t es = h.id >> 32;
  uint32_t slot = (uint32_t)h.id;
  if (es != (uint64_t)eng->slot + 1) {
    const gpar_engine *other = es && es <= GPAR__MAX_ENGINES ? &gpar__engines[es - 1] : NULL;
    int st = other ? atomic_load(&other->state) : GPAR__ENG_FREE;
    if ((st == GPAR__ENG_OPEN || st == GPAR__ENG_CLOSING) && h.serial >= atomic_load(&other->first_buf_serial))
      return gpar__errorf(GPAR_EENGINE, "buffer handle %#llx:%llu belongs to another engine",
                          (unsigned long long)h.id, (unsigned long long)h.serial);
    return gpar__errorf(GPAR_EBADBUF, "buffer handle %#llx:%llu: its engine is shut down or unknown",
                        (unsigned long long)h.id, (unsigned long long)h.serial);
  }
  if (h.serial < atomic_load(&eng->first_buf_serial))
    return gpar__errorf(GPAR_EBADBUF, "buffer handle %#llx:%llu: its engine is shut down", (unsigned long long)h.id,
                        (unsigned long long)h.serial);
  if (slot >= eng->nslots || !eng->slots[slot] || eng->slots[slot]->serial != h.serial || eng->slots[slot]->released)
    return gpar__errorf(GPAR_EBADBUF, "buffer handle %#llx:%llu is released or invalid", (unsigned long long)h.id,
                        (unsigned long long)h.serial);
  *b = eng->slots[slot];
  return GPAR_OK;
}

/* Decode a handle; on success the engine lock is held and *b is live and not released. */
int gpar__buf_lookup(gpar_buffer h, gpar__buf **b, gpar_engine **eng_out) {
  uint64_t es = h.id >> 32;
  if (h.id == 0) return gpar__errorf(GPAR_EBADBUF, "null buffer handle");
  gpar_engine *eng = es && es <= GPAR__MAX_ENGINES ? &gpar__engines[es - 1] : NULL;
  if (!eng || atomic_load(&eng->state) == GPAR__ENG_FREE)
    return gpar__errorf(GPAR_EBADBUF, "buffer handle %#llx:%llu: its engine is shut down or unknown",
                        (unsigned long long)h.id, (unsigned long long)h.serial);
  pthread_mutex_lock(&eng->mu);
  int st = gpar__buf_get_locked(eng, h, b);
  if (st) {
    pthread_mutex_unlock(&eng->mu);
    return st;
  }
  *eng_out = eng;
  return GPAR_OK;
}

void gpar__buf_free_locked(gpar_engine *eng, gpar__buf *b) {
  gpar__buffer_free_mem(eng, b->dev, b->mem);
  eng->slots[b->slot] = NULL;
  eng->free_slots[eng->nfree++] = b->slot;
  eng->stats.buffers_live--;
  free(b->readers);
  free(b->errmsg);
  free(b);
}

int gpar__buffer_alloc(gpar_engine *eng, gpar__device *dev, size_t bytes, void **mem) {
  int st;
  if (dev) {
    st = gpar__fault(eng, GPAR__FAULT_ALLOC);
    if (!st) st = dev->ops->mem_alloc(dev->bdev, bytes, mem);
    return st;
  }
  return gpar__pinned_alloc(eng, bytes, mem);
}

void gpar__buffer_free_mem(gpar_engine *eng, gpar__device *dev, void *mem) {
  if (dev)
    dev->ops->mem_free(dev->bdev, mem);
  else
    gpar__pinned_free(&eng->pinned, mem);
}

int gpar__buffer_register_locked(gpar_engine *eng, gpar__device *dev, size_t bytes, void *mem, gpar__buf **out) {
  if (atomic_load(&eng->state) == GPAR__ENG_CLOSED) return gpar__errorf(GPAR_ESHUTDOWN, "engine is shut down");
  if (!eng->nfree && eng->nslots == eng->capslots) {
    uint32_t cap = eng->capslots ? eng->capslots * 2 : 64;
    if (cap > (1u << 30)) return gpar__errorf(GPAR_ENOMEM, "too many buffers");
    gpar__buf **s = realloc(eng->slots, sizeof *s * cap);
    if (s) eng->slots = s;
    uint32_t *f = realloc(eng->free_slots, sizeof *f * cap);
    if (f) eng->free_slots = f;
    if (!s || !f) return gpar__errorf(GPAR_ENOMEM, "out of host memory for buffer slots");
    eng->capslots = cap;
  }
  uint64_t serial = buf_serial_next();
  if (!serial) return gpar__errorf(GPAR_ENOMEM, "buffer serials used up");
  gpar__buf *b = calloc(1, sizeof *b);
  if (!b) return gpar__errorf(GPAR_ENOMEM, "out of host memory");
  b->mem = mem;
  b->slot = eng->nfree ? eng->free_slots[--eng->nfree] : eng->nslots++;
  b->serial = serial;
  b->eng = eng;
  b->dev = dev;
  b->host_memory = !dev || !dev->ops->ordered_by_events;
  b->bytes = bytes;
  eng->slots[b->slot] = b;
  eng->stats.buffers_live++;
  *out = b;
  return GPAR_OK;
}

int gpar__buffer_create(gpar_engine *eng, int dev, size_t bytes, gpar_buffer *buf) {
  int st;
  if (bytes == 0) return gpar__errorf(GPAR_EINVAL, "gpar_buffer_create: size is 0");
  if (dev != GPAR_HOST && (dev < 0 || dev >= eng->ndev))
    return gpar__errorf(GPAR_ENODEV, "gpar_buffer_create: device %d does not exist (%d devices)", dev, eng->ndev);
  gpar__device *d = dev == GPAR_HOST ? NULL : eng->devs[dev];
  if (d && d->info.memory_bytes && bytes > d->info.memory_bytes)
    return gpar__errorf(d->ops->ordered_by_events ? GPAR_EDEVMEM : GPAR_ENOMEM,
                        "gpar_buffer_create: %zu bytes exceed the %llu bytes of device %d (%s)", bytes,
                        (unsigned long long)d->info.memory_bytes, dev, d->info.name);
  /* Allocation may call the vendor (pool refill): not under the engine lock. */
  void *mem;
  if ((st = gpar__buffer_alloc(eng, d, bytes, &mem))) return st;
  gpar__buf *b;
  pthread_mutex_lock(&eng->mu);
  st = gpar__buffer_register_locked(eng, d, bytes, mem, &b);
  if (st == GPAR_OK) *buf = gpar__buf_handle(b);
  pthread_mutex_unlock(&eng->mu);
  if (st != GPAR_OK) gpar__buffer_free_mem(eng, d, mem);
  return st;
}

GPAR_API int gpar_buffer_create(gpar_engine *e, int dev, size_t bytes, gpar_buffer *buf) {
  int st;
  if (buf) *buf = (gpar_buffer){0, 0};
  gpar_engine *eng = gpar__engine_enter(e, &st);
  if (!eng) return st;
  if (!buf)
    st = gpar__errorf(GPAR_EINVAL, "gpar_buffer_create: buf is NULL");
  else
    st = gpar__buffer_create(eng, dev, bytes, buf);
  gpar__engine_leave(eng);
  return st;
}

int gpar__buffer_release(gpar_buffer handle) {
  gpar__buf *b;
  gpar_engine *eng;
  int st = gpar__buf_lookup(handle, &b, &eng);
  if (st) return st;
  b->released = 1;
  if (b->pending == 0) gpar__buf_free_locked(eng, b);
  pthread_mutex_unlock(&eng->mu);
  return GPAR_OK;
}

GPAR_API int gpar_buffer_release(gpar_buffer handle) {
  int st;
  gpar_engine *eng = gpar__engine_enter_buf(handle, &st);
  if (!eng) return st;
  st = gpar__buffer_release(handle);
  gpar__engine_leave(eng);
  return st;
}

/* What the small queries read of a buffer (engine lock taken and released here). */
static int buf_peek(gpar_buffer handle, int *host, void **mem, size_t *bytes, int *dev) {
  int st;
  gpar_engine *eng = gpar__engine_enter_buf(handle, &st);
  if (!eng) return st;
  gpar__buf *b;
  gpar_engine *e2;
  if ((st = gpar__buf_lookup(handle, &b, &e2)) == GPAR_OK) {
    *host = b->host_memory;
    *mem = b->mem;
    *bytes = b->bytes;
    *dev = b->dev ? b->dev->index : GPAR_HOST;
    pthread_mutex_unlock(&e2->mu);
  }
  gpar__engine_leave(eng);
  return st;
}

GPAR_API void *gpar_buffer_host_ptr(gpar_buffer handle) {
  int host, dev;
  void *mem;
  size_t bytes;
  if (buf_peek(handle, &host, &mem, &bytes, &dev)) return NULL;
  if (!host) gpar__errorf(GPAR_EINVAL, "gpar_buffer_host_ptr: buffer is not in host memory");
  return host ? mem : NULL;
}

GPAR_API void *gpar_buffer_native(gpar_buffer handle) {
  int host, dev;
  void *mem;
  size_t bytes;
  return buf_peek(handle, &host, &mem, &bytes, &dev) ? NULL : mem;
}

GPAR_API int gpar_buffer_query(gpar_buffer handle, size_t *bytes, int *dev) {
  int host, d;
  void *mem;
  size_t n;
  int st = buf_peek(handle, &host, &mem, &n, &d);
  if (st) return st;
  if (bytes) *bytes = n;
  if (dev) *dev = d;
  return GPAR_OK;
}
