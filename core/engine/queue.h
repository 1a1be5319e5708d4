/* queue.h: the ready queue of a device (queue.c): ops whose producers are met, pushed by any
 * thread without a lock and taken by the device's CPU workers or its dispatcher. A ring of cells
 * with sequence numbers (Vyukov's bounded MPMC queue) for the common case, a locked list when
 * the ring is full. Consumers spin briefly, a few at a time, before they sleep; a push wakes a
 * sleeper only when no consumer spins, and a consumer that takes an op from a queue that still
 * holds more wakes the next sleeper, so a burst fans out without a wake-up per op. */
#ifndef GPAR_CORE_ENGINE_QUEUE_H
#define GPAR_CORE_ENGINE_QUEUE_H

#include <pthread.h>
#include <stdatomic.h>

#include "engine/op.h"

#define GPAR__RING 4096
typedef struct gpar__ring_cell {
  atomic_size_t seq;
  gpar__op *op;
} gpar__ring_cell;
typedef struct gpar__queue {
  _Alignas(64) atomic_size_t tail;    /* producers */
  _Alignas(64) atomic_size_t head;    /* consumers */
  _Alignas(64) atomic_int spinners;   /* consumers spinning before they sleep */
  atomic_int sleepers;                /* consumers asleep or about to sleep */
  atomic_int overflowed;              /* ops in the locked list */
  atomic_int stop;
  atomic_int waking;                  /* a wake-up is on its way (set under mu) */
  int nconsumers;                     /* threads that pop (a device's workers, or its dispatcher) */
  int max_spin;                       /* consumers that may spin at once */
  int yield_spin;                     /* spinners yield the core now and then (few cores) */
  pthread_mutex_t mu;                 /* the overflow list and sleeping */
  pthread_cond_t cv;
  gpar__op *ov_head, *ov_tail;
  int wake_gen;                       /* bumped by every wake-up (mu) */
  gpar__ring_cell cells[GPAR__RING];
} gpar__queue;

/* A queue for nconsumers popping threads; NULL (GPAR_ENOMEM) without memory. */
GPAR__HIDDEN gpar__queue *gpar__queue_new(int nconsumers);
GPAR__HIDDEN void gpar__queue_free(gpar__queue *q);
GPAR__HIDDEN void gpar__queue_push(gpar__queue *q, gpar__op *op);
/* Wake every consumer for good: pops return NULL once the queue is empty. */
GPAR__HIDDEN void gpar__queue_stop(gpar__queue *q);
/* One ready op, waiting for one (spinning, then asleep) when there is none; NULL once stopped
 * and empty. max > 1: up to max ops, chained by ->next, oldest first. */
GPAR__HIDDEN gpar__op *gpar__queue_pop(gpar__queue *q, int max);
/* Up to max ready ops without waiting; NULL when none is queued. */
GPAR__HIDDEN gpar__op *gpar__queue_take(gpar__queue *q, int max);

#endif
