/* queue.c: the ready queue of a device: a multi-producer queue of ops whose producers are met,
 * consumed by that device's dispatcher or CPU workers. Consumers spin briefly before they sleep,
 * and a push wakes a sleeper only when more ops wait than consumers spin. */
#include "engine/engine.h"

void gpar__queue_init(gpar__queue *q) {
  pthread_mutex_init(&q->mu, NULL);
  pthread_cond_init(&q->cv, NULL);
  q->head = q->tail = NULL;
  atomic_init(&q->count, 0);
  atomic_init(&q->spinners, 0);
  q->sleepers = 0;
  q->waking = 0;
  q->stop = 0;
}

void gpar__queue_destroy(gpar__queue *q) {
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

void gpar__queue_push(gpar__queue *q, gpar__op *op) {
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

void gpar__queue_stop(gpar__queue *q) {
  pthread_mutex_lock(&q->mu);
  q->stop = 1;
  pthread_cond_broadcast(&q->cv);
  pthread_mutex_unlock(&q->mu);
}

/* Pop one op (all = 0) or the whole queue (all = 1). Spins for a few microseconds before
 * sleeping, so a steady stream of small ops never pays a futex wake-up. NULL once stopped. */
gpar__op *gpar__queue_pop(gpar__queue *q, int all) {
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
