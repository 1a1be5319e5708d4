/* complete.c: completion. Retiring finished ops under the engine lock, directly or by combining
 * (gpar__complete_finished, for CPU workers and GPU completion threads alike), and the
 * completion threads of GPU devices. The dispatcher hands each dispatched op to its device's
 * completion thread, in one FIFO per lane; the thread polls the event at the head of each lane
 * every ~20-60 us (nanosleep) while any lane is busy, sleeps on a condition variable when none
 * is, and completes every finished op of a pass in one engine lock. Polling, rather than host
 * callbacks (cudaLaunchHostFunc stalls the stream ~3 us per op, baselines.md) or a blocking
 * cudaEventSynchronize on the oldest event, keeps this thread off the driver's locks while the
 * dispatcher launches small ops, and never holds a short copy behind a long GEMM. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

/* ---------------------------------------------------------------- retiring finished ops */

/* One finished op under the engine lock: a CPU op becomes DISPATCHED (it ran), a failure the
 * device or the completion pass found becomes its status, then it completes. */
static void finished_locked(gpar_engine *eng, gpar__op *op) {
  if (op->state == GPAR__ST_READY) gpar__op_set_state(op, GPAR__ST_DISPATCHED);
  if (op->async_status != GPAR_OK && op->status == GPAR_OK) {
    op->status = op->async_status;
    free(op->errmsg);
    op->errmsg = op->async_msg;
    op->async_msg = NULL;
  }
  gpar__op_complete_locked(eng, op, GPAR_OK);
}

/* Combining retirement. eng->done is a lock-free LIFO of finished ops (a CAS on the head; the
 * only consumer takes the whole list with one exchange, so no ABA) whose low bit, COMBINING,
 * says that one thread, the combiner, owns the list. A finishing thread:
 *  - fast path: when the list is empty and idle and a trylock of the engine lock succeeds, it
 *    retires its ops there and then (what direct retirement does, at the same cost);
 *  - else it pushes them with one CAS that also sets COMBINING. If the bit was set already, it
 *    goes back to its work at once: the combiner retires them. If not, it is the combiner: it
 *    takes the engine lock (blocking: the only finishing thread that waits for it), takes the
 *    whole list (exchange, leaving COMBINING), retires it, and gives the role up only by a CAS
 *    from COMBINING-and-empty to 0; when that CAS fails, ops came meanwhile: it takes them too.
 * So 32 CPU workers no longer queue on eng->mu one op each: one of them retires for all.
 *
 * No finished op is left behind. Invariant: while the list holds an op, COMBINING is set and
 * exactly one thread, the combiner, is between its push that set the bit and its CAS that
 * clears it. Pushes always leave the bit set; the only store that clears it is the combiner's
 * CAS, which succeeds only when the list is empty; a failed CAS sends the combiner back to
 * take the list. So every pushed op is taken by the combiner that owns the bit at that moment,
 * and retired under the engine lock before that combiner can clear the bit. (A plain trylock
 * on eng->mu could not promise this: the lock's holder may be a submitter or a waiter, whose
 * cond_wait unlocks without looking at the list, so an op could wait for the next finishing
 * thread: bench/results/overhead-2core.md, variant D, 6-13 ms. The fast path is safe: it
 * retires only its own ops, and a thread that pushes meanwhile becomes the combiner.)
 * Order: a pass retires in push order; ops of different threads may retire in any order.
 * Nothing depends on it: gpar__op_complete_locked retires an op only after its producers
 * (unretired == 0), whatever order completions arrive in. */
#define GPAR__COMBINING ((uintptr_t)1)
#define GPAR__COMBINE_SPIN 200  /* trylocks before the combiner sleeps on the lock */
#define GPAR__COMBINE_PASSES 8 /* passes per lock hold, so the submitter gets the lock too */

static void retire_list_locked(gpar_engine *eng, uintptr_t list) {
  gpar__op *fifo = NULL, *next;
  for (gpar__op *op = (gpar__op *)(list & ~GPAR__COMBINING); op; op = next) { /* newest first */
    next = op->done_next;
    op->done_next = fifo;
    fifo = op;
  }
  for (gpar__op *op = fifo; op; op = next) {
    next = op->done_next;
    finished_locked(eng, op);
  }
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

void gpar__complete_finished(gpar_engine *eng, gpar__op *ops) {
  gpar__op *next;
  if (!ops) return;
  if (!eng->combine || (atomic_load(&eng->done) == 0 && pthread_mutex_trylock(&eng->mu) == 0)) {
    if (!eng->combine) pthread_mutex_lock(&eng->mu); /* direct; else the trylock above holds it */
    for (gpar__op *op = ops; op; op = next) {
      next = op->next;
      finished_locked(eng, op);
    }
    pthread_mutex_unlock(&eng->mu);
    return;
  }
  gpar__op *newest = NULL, *oldest = ops;
  for (gpar__op *op = ops; op; op = next) {
    next = op->next;
    op->done_next = newest;
    newest = op;
  }
  uintptr_t head = atomic_load(&eng->done);
  do oldest->done_next = (gpar__op *)(head & ~GPAR__COMBINING);
  while (!atomic_compare_exchange_weak(&eng->done, &head, (uintptr_t)newest | GPAR__COMBINING));
  if (head & GPAR__COMBINING) return; /* the combiner retires them */
  for (int idle = 0; !idle;) {
    /* Spin on trylock a little before sleeping on the lock, so that a submitter that re-takes
     * it at once cannot keep the combiner asleep while finished ops pile up behind it. */
    int locked = 0;
    for (int i = 0; i < GPAR__COMBINE_SPIN && !locked; i++)
      if (!(locked = pthread_mutex_trylock(&eng->mu) == 0)) cpu_relax();
    if (!locked) pthread_mutex_lock(&eng->mu);
    for (int pass = 0; pass < GPAR__COMBINE_PASSES && !idle; pass++) {
      retire_list_locked(eng, atomic_exchange(&eng->done, GPAR__COMBINING));
      uintptr_t empty = GPAR__COMBINING;
      idle = atomic_compare_exchange_strong(&eng->done, &empty, 0);
    }
    pthread_mutex_unlock(&eng->mu);
  }
}

/* ---------------------------------------------------------------- GPU completion thread */

/* Hand dispatched ops to the completion thread, and complete at once those without an event. */
void gpar__completer_hand(gpar__device *dev, gpar__op *group) {
  gpar_engine *eng = dev->eng;
  gpar__op *no_event = NULL, *next;
  pthread_mutex_lock(&dev->cmu);
  for (gpar__op *op = group; op; op = next) {
    next = op->next;
    if (!gpar__op_done_event(op)) {
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
  if (no_event) gpar__complete_finished(eng, no_event);
}

/* Take the finished heads of every lane, in lane order; *busy: lanes still running. */
static gpar__op *take_done_locked(gpar__device *dev, int *busy) {
  gpar__op *done = NULL, **done_tail = &done;
  *busy = 0;
  for (int l = 0; l < GPAR__NLANES; l++) {
    gpar__op *op;
    while ((op = dev->lane_head[l])) {
      gpar__event *ev = gpar__op_done_event(op);
      int q = ev ? dev->ops->event_query(ev) : 1;
      if (q == 0) {
        if (op->kind == GPAR__OP_COLL) gpar__comm_watch(dev, op);
        break;
      }
      dev->lane_head[l] = op->lane_next;
      if (!dev->lane_head[l]) dev->lane_tail[l] = NULL;
      op->async_status = q < 0 ? q : GPAR_OK; /* a failure found by the device */
      if (q < 0) op->async_msg = strdup(gpar__error_msg());
      op->next = NULL;
      *done_tail = op;
      done_tail = &op->next;
    }
    if (dev->lane_head[l]) (*busy)++;
  }
  return done;
}

/* Complete a pass's finished ops. The fault to inject and the device's failure are settled
 * here (their messages are this thread's), then the ops retire together. */
static void complete_done(gpar_engine *eng, gpar__op *done) {
  for (gpar__op *op = done; op; op = op->next) {
    int st = gpar__fault(eng, GPAR__FAULT_COMPLETION);
    if (eng->tracing) op->t_end = gpar__now();
    if (st != GPAR_OK && op->async_status == GPAR_OK) { /* applies where the device saw none */
      op->async_status = st;
      free(op->async_msg);
      op->async_msg = strdup(gpar__error_msg());
    }
  }
  gpar__complete_finished(eng, done);
}

void *gpar__completer_main(void *arg) {
  gpar__device *dev = arg;
  gpar__in_op = 1;
  if (dev->ops->bind_thread) dev->ops->bind_thread(dev->bdev);
  for (;;) {
    int busy, stop;
    pthread_mutex_lock(&dev->cmu);
    gpar__op *done = take_done_locked(dev, &busy);
    while (!done && !busy && !dev->cstop) {
      pthread_cond_wait(&dev->ccv, &dev->cmu);
      done = take_done_locked(dev, &busy);
    }
    stop = !done && !busy && dev->cstop;
    pthread_mutex_unlock(&dev->cmu);
    if (stop) break;
    if (done) {
      complete_done(dev->eng, done);
    } else {
      struct timespec ts = {0, 20000};
      nanosleep(&ts, NULL);
    }
  }
  return NULL;
}

void gpar__completer_stop(gpar__device *dev) {
  pthread_mutex_lock(&dev->cmu);
  dev->cstop = 1;
  pthread_cond_signal(&dev->ccv);
  pthread_mutex_unlock(&dev->cmu);
  pthread_join(dev->completer, NULL);
}
