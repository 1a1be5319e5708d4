/* dispatch.c: running ops. Each op runs through its kind's table (op->kind->run); the engine
 * never looks inside. CPU workers run ready ops to completion; one dispatcher thread per compute
 * lane of a GPU (the first also issues the copy lanes; lanes.h) enqueues them on its lanes,
 * makes lanes wait on producers' events and records events only where someone needs them, then
 * hands the ops to the completion thread (complete.c). So one submitting thread keeps every GPU
 * busy. No engine lock is held during vendor calls. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "engine/deps.h"
#include "engine/device.h"
#include "engine/fault.h"
#include "engine/lanes.h"
#include "engine/queue.h"

/* ---------------------------------------------------------------- CPU workers */

/* Run ops to completion and complete them (retiring them and what waited on them). The
 * worker that finishes an op runs one consumer it made ready itself, next (Nanos6): a chain
 * runs on one worker without a hand-off per op. */
static void *host_worker(void *arg) {
  gpar__device *dev = arg;
  gpar_engine *eng = dev->eng;
  gpar__in_op = 1;
  gpar__op *op;
  while ((op = gpar__queue_pop(dev->ready, 1))) {
    while (op) {
      int st = GPAR_EDEPFAILED;
      if (eng->tracing) op->t_taken = op->t_start = gpar__now();
      if (!atomic_load(&op->dep_failed) || (op->kind->flags & GPAR__KIND_RUNS_ON_FAILED_INPUT)) {
        int run = op->kind->run(dev, op);
        st = atomic_load(&op->dep_failed) && run == GPAR_OK && !op->partial ? GPAR_EDEPFAILED : run;
      }
      if (eng->tracing) op->t_ran = op->t_end = gpar__now();
      if (st != GPAR_OK) gpar__op_fail(op, st); /* not dispatched yet: nobody else reads its status */
      gpar__op *next = NULL;
      gpar__op_ran(op, dev, &next); /* deps.c */
      op = next;
    }
  }
  gpar__op_cache_flush(eng);
  return NULL;
}

/* ---------------------------------------------------------------- GPU dispatcher */

/* The issuer of op's lane (the thread that calls this: it dispatches op). */
static struct gpar__issuer *issuer_of(gpar__device *dev, const gpar__op *op) {
  return &dev->issuer[gpar__lane_is_compute(op->lane) ? op->lane : 0];
}

static int record_event(gpar__device *dev, gpar__op *op, unsigned flags, gpar__event **ev) {
  int st = gpar__fault(dev->eng, GPAR__FAULT_EVENT);
  if (!st) st = dev->ops->event_record(dev->bdev, op->lane, flags, ev);
  if (st) {
    *ev = NULL;
    return st;
  }
  atomic_fetch_add(&dev->eng->events_live, 1);
  if (!(flags & GPAR__EVENT_TIMING)) gpar__issuer_count(&issuer_of(dev, op)->events, 1);
  return GPAR_OK;
}

/* Make the lane wait on the producers' events, enqueue the work, record the op's event when
 * someone needs it. */
static void dispatch_one(gpar__device *dev, gpar__op *op, int need_event) {
  const gpar__backend_ops *ops = dev->ops;
  int tracing = dev->eng->tracing;
  int st = GPAR_OK;
  struct gpar__issuer *me = issuer_of(dev, op);
  unsigned long waits = 0;
  if (tracing) op->t_taken = gpar__now();
  for (int i = 0; i < op->prods.n; i++) {
    gpar__op *p = op->prods.v[i].op;
    if (!(op->prods.v[i].flags & GPAR__EDGE_EVENT)) continue;
    if (p->dev == dev && p->lane == op->lane) continue; /* same in-order lane: already ordered */
    gpar__event *pe = gpar__op_done_event(p);
    if (!pe) continue; /* the producer synchronised its lane: already complete */
    int w = ops->event_wait(dev->bdev, op->lane, pe);
    waits++;
    if (w != GPAR_OK && ops->event_sync(pe) != GPAR_OK && st == GPAR_OK) st = w;
  }
  if (waits) gpar__issuer_count(&me->waits, waits);
  if (op->lane != GPAR__LANE_COMPUTE && gpar__lane_is_compute(op->lane)) gpar__issuer_count(&me->moved, 1);
  op->launched = atomic_fetch_add_explicit(&dev->launches, 1, memory_order_relaxed) + 1;
  if (tracing) {
    op->t_dispatch = gpar__now();
    if (ops->event_elapsed) record_event(dev, op, GPAR__EVENT_TIMING, &op->start_event);
  } else if (op->kind->flags & GPAR__KIND_TIMED) {
    op->t_dispatch = gpar__now(); /* for its kind's `pending` watchdog */
  }
  op->need_event = need_event;
  /* A kind that runs on failed input (a collective's member must join, or the others wait for
   * it forever) still retires as GPAR_EDEPFAILED. */
  int failed_in = atomic_load(&op->dep_failed);
  if (st == GPAR_OK && failed_in && !(op->kind->flags & GPAR__KIND_RUNS_ON_FAILED_INPUT)) st = GPAR_EDEPFAILED;
  if (st == GPAR_OK) st = op->kind->run(dev, op);
  if (st == GPAR_OK && failed_in && !op->partial) st = GPAR_EDEPFAILED;
  if (st != GPAR_OK) gpar__op_fail(op, st);
  if (!need_event) { /* a later op of its run on the same lane covers it */
    if (tracing) op->t_ran = gpar__now();
    return;
  }
  int rec = record_event(dev, op, tracing && ops->event_elapsed ? GPAR__EVENT_TIMING : 0, &op->event);
  if (rec != GPAR_OK) {
    /* Without an event the lane is synchronised here, so consumers need not wait on it. */
    gpar__op_fail(op, rec);
    ops->lane_sync(dev->bdev, op->lane);
    op->lane_synced = 1;
  }
  if (tracing) op->t_ran = gpar__now();
}

/* Whether op needs an event of its own right after it: tracing (per-op device times), or a
 * consumer already linked on another lane or device that waits on it. Consumers linked later
 * wait on its cover. */
static int needs_own_event(gpar__device *dev, gpar__op *op) {
  int need = dev->eng->tracing;
  gpar__spin_lock(&op->lock); /* consumers may be linked meanwhile */
  for (int i = 0; i < op->succs.n && !need; i++) {
    const gpar__op *c = op->succs.v[i].op;
    int cl = gpar__lane_of(c); /* open (-1): it may still take op's compute lane (lanes.h) */
    int other = cl >= 0 ? cl != op->lane : !gpar__lane_is_compute(op->lane);
    need = (op->succs.v[i].flags & GPAR__EDGE_EVENT) && (c->dev != dev || other);
  }
  gpar__spin_unlock(&op->lock);
  return need;
}

/* A run: the ops a dispatcher enqueued on one lane since that lane's last event. An in-order
 * lane completes them in order, so one event after the last covers them all. */
typedef struct lane_run {
  gpar__op *head, *tail;
  int n;
  unsigned long opened; /* the dispatcher's count of dispatched ops when its first op came */
} lane_run;

/* Close a run: the event after its last op (recorded now if that op has none, unless the lane
 * was synchronised) covers the others; all become dispatched (their remaining consumers are
 * released: local ones appended to *local_tail) and go to the completion thread. */
static void close_run(gpar__device *dev, lane_run *r, gpar__op ***local_tail) {
  gpar__op *cover = r->tail;
  if (!cover) return;
  if (!cover->event && !cover->lane_synced) {
    int rec = record_event(dev, cover, 0, &cover->event);
    if (rec != GPAR_OK) { /* without an event the lane is synchronised: the whole run is complete */
      gpar__op_fail(cover, rec);
      dev->ops->lane_sync(dev->bdev, cover->lane);
      cover->lane_synced = 1;
    }
  }
  for (gpar__op *op = r->head; op; op = op->next) {
    if (op != cover && cover->event) {
      op->cover = cover;
      gpar__op_ref(cover);
    }
    gpar__op_dispatched(op, dev, local_tail); /* deps.c */
  }
  gpar__completer_hand(dev, r->head);
  r->head = r->tail = NULL;
  r->n = 0;
}

/* The dispatcher: ops from the ready queue, one at a time; a consumer an op releases on this
 * device is dispatched soon, ahead of the backlog (so GEMM i's copy goes out right after GEMM
 * i, not after every queued GEMM, and a copy-bound pipeline's copy lane starts as early as it
 * can). Events are recorded only where needed: after an op that a consumer on another lane or
 * device waits on, after every GPAR__DISPATCH_GROUP-th op of a lane, after a lane's last op once
 * GPAR__DISPATCH_GROUP ops (of any lane) were dispatched since its run opened, and after every
 * lane's last op when the dispatcher runs out of work; a consumer on the same lane follows its
 * producer at once, before any event (the lane orders them). So a loop of small ops on one lane
 * records one event per group of ops, and the completion thread polls one event per group;
 * and every op dispatched reaches the completion thread within GPAR__DISPATCH_GROUP dispatched
 * ops, whatever the other lanes do: a copy behind a busy compute lane, its waiters and the
 * consumers linked after its dispatch never wait for the device to run out of work.
 *
 * Nor does an op wait unboundedly to be dispatched. The released consumers form one FIFO (a
 * chain's next op queues behind a copy released before it, never ahead), the backlog another
 * (ops from the ready queue, oldest first). Released consumers go first, but every
 * GPAR__DISPATCH_GROUP dispatched ops the ready queue is looked at and, when both lists hold
 * ops, the backlog's GPAR__DISPATCH_GROUP oldest go next. */
#define GPAR__DISPATCH_GROUP 8
#define GPAR__DISPATCH_BATCH 256 /* ops taken from the ready queue at once */

/* A FIFO of ops linked through next. */
typedef struct op_fifo {
  gpar__op *head, **tail;
} op_fifo;

static void fifo_init(op_fifo *f) {
  f->head = NULL;
  f->tail = &f->head;
}

/* Append a list (linked through next, NULL-terminated). */
static void fifo_append(op_fifo *f, gpar__op *list) {
  if (!list) return;
  *f->tail = list;
  while (*f->tail) f->tail = &(*f->tail)->next;
}

static gpar__op *fifo_pop(op_fifo *f) {
  gpar__op *op = f->head;
  if (!op) return NULL;
  if (!(f->head = op->next)) f->tail = &f->head;
  op->next = NULL;
  return op;
}

/* What a dispatcher holds: the released consumers, and the backlog with its due turns. */
typedef struct dispatch_todo {
  op_fifo released, backlog;
  int due; /* backlog ops to dispatch before the released ones go first again */
} dispatch_todo;

static gpar__op *next_op(dispatch_todo *t) {
  if (t->due > 0 && t->backlog.head) {
    t->due--;
    return fifo_pop(&t->backlog);
  }
  t->due = 0;
  gpar__op *op = fifo_pop(&t->released);
  return op ? op : fifo_pop(&t->backlog);
}

/* Every GPAR__DISPATCH_GROUP dispatched ops: what waits in the ready queue joins the backlog,
 * and the backlog's turn comes when released consumers compete with it. */
static void look_at_queue(gpar__queue *q, dispatch_todo *t) {
  fifo_append(&t->backlog, gpar__queue_take(q, GPAR__DISPATCH_BATCH));
  if (t->backlog.head && t->released.head) t->due = GPAR__DISPATCH_GROUP;
}

/* Close the runs of the other lanes that opened GPAR__DISPATCH_GROUP dispatched ops ago. */
static void close_old_runs(gpar__device *dev, lane_run *run, int lane, unsigned long dispatched,
                           gpar__op ***local_tail) {
  for (int l = 0; l < GPAR__NLANES; l++)
    if (l != lane && run[l].head && dispatched - run[l].opened >= GPAR__DISPATCH_GROUP)
      close_run(dev, &run[l], local_tail);
}

/* Consumers released on this device (a list by ->next): with several compute lanes, those of
 * another dispatcher's lane go to its queue (lanes.c picks the lane of an open one); the rest,
 * in order, to *t. 1 when any stays here. */
static int keep_released(struct gpar__issuer *me, dispatch_todo *t, gpar__op *list) {
  gpar__queue *mine = me->dev->lane_ready[me->k];
  int kept = 0;
  unsigned long handed = 0;
  if (me->dev->lanes <= 1) {
    fifo_append(&t->released, list);
    return list != NULL;
  }
  for (gpar__op *op = list, *next; op; op = next) {
    next = op->next;
    op->next = NULL;
    gpar__queue *q = gpar__lane_take(op);
    if (q != mine) {
      gpar__queue_push(q, op);
      handed++;
      continue;
    }
    fifo_append(&t->released, op);
    kept = 1;
  }
  if (handed) gpar__issuer_count(&me->handoffs, handed);
  return kept;
}

/* Out of work: close every run (their consumers on this device are released), else wait for
 * the ready queue. 0 when the queue is stopped and empty. */
static int refill(struct gpar__issuer *me, lane_run *run, dispatch_todo *t) {
  gpar__device *dev = me->dev;
  gpar__queue *q = dev->lane_ready[me->k];
  gpar__op *got = gpar__queue_take(q, GPAR__DISPATCH_BATCH);
  if (!got) {
    gpar__op *local = NULL, **local_tail = &local;
    for (int l = 0; l < GPAR__NLANES; l++) close_run(dev, &run[l], &local_tail);
    if (keep_released(me, t, local)) return 1;
    gpar__lane_idle(me, 1); /* a graph part may own every lane while this thread waits */
    got = gpar__queue_pop(q, GPAR__DISPATCH_BATCH);
    gpar__lane_idle(me, 0);
    if (!got) return 0;
  }
  fifo_append(&t->backlog, got);
  return 1;
}

static void *gpu_dispatcher(void *arg) {
  struct gpar__issuer *me = arg;
  gpar__device *dev = me->dev;
  gpar__queue *q = dev->lane_ready[me->k];
  gpar__in_op = 1;
  if (dev->ops->bind_thread) dev->ops->bind_thread(dev->bdev);
  lane_run run[GPAR__NLANES] = {{0}};
  dispatch_todo t = {.due = 0};
  fifo_init(&t.released);
  fifo_init(&t.backlog);
  unsigned long dispatched = 0, looked = 0; /* ops dispatched; when the queue was last looked at */
  for (;;) {
    gpar__lane_gate(me); /* lanes.h: not while a graph part owns every lane */
    if (dispatched - looked >= GPAR__DISPATCH_GROUP) {
      look_at_queue(q, &t);
      looked = dispatched;
    }
    gpar__op *op = next_op(&t);
    if (!op) {
      if (!refill(me, run, &t)) break;
      looked = dispatched;
      continue;
    }
    int lane = op->lane; /* op is not ours to read once its run is closed (it may have retired) */
    lane_run *r = &run[lane];
    int need = needs_own_event(dev, op) || r->n + 1 >= GPAR__DISPATCH_GROUP;
    dispatch_one(dev, op, need);
    if (r->tail)
      r->tail->next = op;
    else
      r->head = op, r->opened = dispatched;
    r->tail = op;
    r->n++;
    dispatched++;
    gpar__op *local = NULL, **local_tail = &local;
    if (need)
      close_run(dev, r, &local_tail);
    else
      gpar__op_release_lane(op, dev, &local_tail); /* consumers on this lane follow soon */
    close_old_runs(dev, run, lane, dispatched, &local_tail);
    keep_released(me, &t, local);
  }
  for (int l = 0; l < GPAR__NLANES; l++) assert(!run[l].head);
  assert(!t.released.head && !t.backlog.head);
  gpar__op_cache_flush(dev->eng);
  return NULL;
}

/* ---------------------------------------------------------------- threads of a device */

int gpar__device_start(gpar__device *dev) {
  int st = gpar__lanes_open(dev);
  if (st != GPAR_OK) return st;
  dev->nthreads = dev->ops->ordered_by_events ? dev->lanes : dev->eng->cfg.host_threads;
  dev->threads = calloc((size_t)dev->nthreads, sizeof *dev->threads);
  if (!dev->threads) {
    dev->nthreads = 0;
    return gpar__errorf(GPAR_ENOMEM, "out of host memory for threads");
  }
  for (int i = 0; i < dev->nthreads; i++)
    if (dev->ops->ordered_by_events ? pthread_create(&dev->threads[i], NULL, gpu_dispatcher, &dev->issuer[i])
                                    : pthread_create(&dev->threads[i], NULL, host_worker, dev)) {
      dev->nthreads = i;
      return gpar__errorf(GPAR_ENOMEM, "pthread_create failed");
    }
  if (dev->ops->ordered_by_events && pthread_create(&dev->completer, NULL, gpar__completer_main, dev)) {
    dev->completer = 0;
    return gpar__errorf(GPAR_ENOMEM, "pthread_create failed");
  }
  return GPAR_OK;
}

/* Stop and join a device's threads (nothing is in flight). */
void gpar__device_join(gpar__device *dev) {
  gpar__queue_stop(dev->ready);
  for (int k = 1; k < GPAR__COMPUTE_LANES_MAX; k++)
    if (dev->lane_ready[k]) gpar__queue_stop(dev->lane_ready[k]);
  for (int i = 0; i < dev->nthreads; i++) pthread_join(dev->threads[i], NULL);
  gpar__lanes_close(dev);
  free(dev->threads);
  dev->threads = NULL;
  dev->nthreads = 0;
  if (dev->completer) gpar__completer_stop(dev);
  dev->completer = 0;
}
