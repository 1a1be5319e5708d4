/* queue.c: the ready queue of a device (queue.h): ops whose producers are met, pushed by any
 * thread and taken by the device's CPU workers or its dispatcher, without a lock on the way.
 *
 * A ring of GPAR__RING cells, each with a sequence number (Dmitry Vyukov's bounded MPMC queue):
 * a push or a pop claims a position with one compare-and-swap and publishes it with one store.
 * When the ring is full, pushes go to a locked overflow list that poppers drain when the ring
 * is empty (order is not promised across the two; nothing depends on it).
 * Waiting: a consumer that finds nothing spins for up to GPAR__SPIN_S, a few at a time,
 * then sleeps on the condition variable. A push (or a consumer that takes an op while more
 * wait) wakes one sleeper when the queue holds more ops than consumers spin, unless a wake-up
 * is on its way already: a consumer busy with an op does not count, since the op may be long
 * (or block, like libgpar_mpi's polling ops), and every queued op must find a consumer. A
 * steady stream of small ops keeps a spinner busy and costs no wake-up; a burst fans out, one
 * wake-up per wake-up latency. A spinner yields its core now and then, so spinning on a
 * machine with fewer cores than threads does not starve the submitting thread.
 * Why no op is left with every consumer asleep: a consumer counts itself among the sleepers
 * before it looks at the queue a last time (under mu), and a push claims its cell before it
 * reads the sleepers (both sequentially consistent); so either the push sees the sleeper or
 * the sleeper sees the op. `waking` is set under mu only when a sleeper is there to take it,
 * and every sleeper that leaves its wait clears it. */
#include <stdlib.h>
#include <unistd.h>

#include "engine/queue.h"

#define GPAR__SPIN_S 30e-6

gpar__queue *gpar__queue_new(int nconsumers) {
  gpar__queue *q = aligned_alloc(_Alignof(gpar__queue), sizeof *q);
  if (!q) {
    gpar__errorf(GPAR_ENOMEM, "out of host memory for a ready queue");
    return NULL;
  }
  for (size_t i = 0; i < GPAR__RING; i++) atomic_init(&q->cells[i].seq, i);
  atomic_init(&q->tail, 0);
  atomic_init(&q->head, 0);
  atomic_init(&q->spinners, 0);
  atomic_init(&q->sleepers, 0);
  atomic_init(&q->overflowed, 0);
  atomic_init(&q->stop, 0);
  atomic_init(&q->waking, 0);
  q->nconsumers = nconsumers;
  /* Spinners: enough that one is left when the others took ops (a push that finds none wakes a
   * sleeper: microseconds), few enough to leave the submitting threads their cores: 2, and one
   * more per 8 cores up to 4. */
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  q->max_spin = nconsumers <= 1 ? 1 : cpus >= 32 ? 4 : cpus >= 16 ? 3 : 2;
  if (q->max_spin > nconsumers) q->max_spin = nconsumers;
  q->yield_spin = cpus > 0 && cpus <= q->max_spin; /* spinners and a submitter share the cores */
  pthread_mutex_init(&q->mu, NULL);
  pthread_cond_init(&q->cv, NULL);
  q->ov_head = q->ov_tail = NULL;
  q->wake_gen = 0;
  return q;
}

void gpar__queue_free(gpar__queue *q) {
  if (!q) return;
  pthread_mutex_destroy(&q->mu);
  pthread_cond_destroy(&q->cv);
  free(q);
}

/* ---------------------------------------------------------------- the ring */

static int ring_push(gpar__queue *q, gpar__op *op) {
  size_t pos = atomic_load_explicit(&q->tail, memory_order_relaxed);
  for (;;) {
    gpar__ring_cell *c = &q->cells[pos & (GPAR__RING - 1)];
    size_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
    intptr_t dif = (intptr_t)seq - (intptr_t)pos;
    if (dif == 0) {
      if (atomic_compare_exchange_weak(&q->tail, &pos, pos + 1)) { /* seq_cst: see queue_push */
        c->op = op;
        atomic_store_explicit(&c->seq, pos + 1, memory_order_release);
        return 1;
      }
    } else if (dif < 0) {
      return 0; /* full */
    } else {
      pos = atomic_load_explicit(&q->tail, memory_order_relaxed);
    }
  }
}

static gpar__op *ring_pop(gpar__queue *q) {
  size_t pos = atomic_load_explicit(&q->head, memory_order_relaxed);
  for (;;) {
    gpar__ring_cell *c = &q->cells[pos & (GPAR__RING - 1)];
    size_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
    intptr_t dif = (intptr_t)seq - (intptr_t)(pos + 1);
    if (dif == 0) {
      if (atomic_compare_exchange_weak_explicit(&q->head, &pos, pos + 1, memory_order_relaxed, memory_order_relaxed)) {
        gpar__op *op = c->op;
        atomic_store_explicit(&c->seq, pos + GPAR__RING, memory_order_release);
        return op;
      }
    } else if (dif < 0) {
      return NULL; /* empty (or a push still publishing its cell) */
    } else {
      pos = atomic_load_explicit(&q->head, memory_order_relaxed);
    }
  }
}

/* Ops queued or being queued (a claimed cell not yet published counts). */
static size_t backlog(gpar__queue *q) {
  size_t h = atomic_load(&q->head), t = atomic_load(&q->tail);
  return (t > h ? t - h : 0) + (size_t)atomic_load(&q->overflowed);
}

static int queue_nonempty(gpar__queue *q) { return backlog(q) > 0; }

/* ---------------------------------------------------------------- overflow, sleeping */

static void overflow_push(gpar__queue *q, gpar__op *op) {
  op->next = NULL;
  pthread_mutex_lock(&q->mu);
  if (q->ov_tail)
    q->ov_tail->next = op;
  else
    q->ov_head = op;
  q->ov_tail = op;
  atomic_fetch_add(&q->overflowed, 1);
  pthread_mutex_unlock(&q->mu);
}

static gpar__op *overflow_pop(gpar__queue *q) {
  if (atomic_load_explicit(&q->overflowed, memory_order_relaxed) == 0) return NULL;
  pthread_mutex_lock(&q->mu);
  gpar__op *op = q->ov_head;
  if (op) {
    q->ov_head = op->next;
    if (!q->ov_head) q->ov_tail = NULL;
    atomic_fetch_sub(&q->overflowed, 1);
  }
  pthread_mutex_unlock(&q->mu);
  return op;
}

/* Wake one sleeper when the queue holds more ops than consumers spin and no wake-up is on its
 * way already. */
static void maybe_wake(gpar__queue *q) {
  if (atomic_load(&q->sleepers) == 0 || atomic_load_explicit(&q->waking, memory_order_relaxed)) return;
  if (backlog(q) <= (size_t)atomic_load(&q->spinners)) return;
  pthread_mutex_lock(&q->mu);
  if (atomic_load(&q->sleepers) > 0 && !atomic_load(&q->waking)) {
    atomic_store(&q->waking, 1);
    q->wake_gen++;
    pthread_cond_signal(&q->cv);
  }
  pthread_mutex_unlock(&q->mu);
}

/* Sleep until a push or a stop wakes this consumer, unless something is queued already. */
static void sleep_until_woken(gpar__queue *q) {
  pthread_mutex_lock(&q->mu);
  atomic_fetch_add(&q->sleepers, 1);
  int gen = q->wake_gen;
  while (gen == q->wake_gen && !queue_nonempty(q) && !atomic_load(&q->stop)) pthread_cond_wait(&q->cv, &q->mu);
  atomic_fetch_sub(&q->sleepers, 1);
  atomic_store(&q->waking, 0); /* whoever was meant, one sleeper is up: the next may be woken */
  pthread_mutex_unlock(&q->mu);
}

/* ---------------------------------------------------------------- push, pop */

void gpar__queue_push(gpar__queue *q, gpar__op *op) {
  if (!ring_push(q, op)) overflow_push(q, op);
  maybe_wake(q);
}

void gpar__queue_stop(gpar__queue *q) {
  atomic_store(&q->stop, 1);
  pthread_mutex_lock(&q->mu);
  q->wake_gen++;
  pthread_cond_broadcast(&q->cv);
  pthread_mutex_unlock(&q->mu);
}

static gpar__op *try_pop(gpar__queue *q) {
  gpar__op *op = ring_pop(q);
  return op ? op : overflow_pop(q);
}

/* Spin for an op a little while (at most max_spinners consumers at once). */
static gpar__op *spin_pop(gpar__queue *q) {
  gpar__op *op = NULL;
  if (atomic_fetch_add(&q->spinners, 1) < q->max_spin) {
    double until = gpar__now() + GPAR__SPIN_S;
    for (int i = 0; !(op = try_pop(q)) && !atomic_load_explicit(&q->stop, memory_order_relaxed); i++) {
      gpar__cpu_relax();
      if ((i & 63) != 63) continue;
      if (gpar__now() > until) break;
      if (q->yield_spin) gpar__spin_yield(); /* fewer cores than threads: let the submitter run */
    }
  }
  atomic_fetch_sub(&q->spinners, 1);
  return op;
}

/* op and up to max - 1 more queued now, chained oldest first. */
static gpar__op *take_more(gpar__queue *q, gpar__op *op, int max) {
  op->next = NULL;
  gpar__op *last = op;
  for (int n = 1; n < max; n++) { /* a batch (a dispatcher): what is queued now */
    gpar__op *more = try_pop(q);
    if (!more) break;
    more->next = NULL;
    last->next = more;
    last = more;
  }
  maybe_wake(q); /* more than the spinning consumers take: the next sleeper */
  return op;
}

gpar__op *gpar__queue_take(gpar__queue *q, int max) {
  gpar__op *op = try_pop(q);
  return op ? take_more(q, op, max) : NULL;
}

gpar__op *gpar__queue_pop(gpar__queue *q, int max) {
  gpar__op *op;
  for (;;) {
    if ((op = try_pop(q)) || (op = spin_pop(q))) break;
    if (atomic_load(&q->stop)) return NULL;
    sleep_until_woken(q);
  }
  return take_more(q, op, max);
}
