/* complete.c: completion of GPU ops: the completion thread of each GPU device. The dispatcher
 * hands each dispatched op to its device's completion thread, in one FIFO per lane; the thread
 * polls the event at the head of each lane every ~20-60 us (nanosleep) while any lane is busy
 * and a little longer, sleeps on a condition variable when none has been for a while (the
 * dispatcher signals only a sleeping thread), and completes every finished op of a pass,
 * retiring it and what waited on it (deps.c) itself. Polling, rather than host
 * callbacks (cudaLaunchHostFunc stalls the stream ~3 us per op, baselines.md) or a blocking
 * cudaEventSynchronize on the oldest event, keeps this thread off the driver's locks while the
 * dispatcher launches small ops, and never holds a short copy behind a long GEMM. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/deps.h"
#include "engine/device.h"
#include "engine/fault.h"
#include "engine/lanes.h"

/* ---------------------------------------------------------------- GPU completion thread */

/* Hand dispatched ops to the completion thread, and complete at once those without an event. */
void gpar__completer_hand(gpar__device *dev, gpar__op *group) {
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
  if (dev->csleeping) pthread_cond_signal(&dev->ccv); /* else it polls and finds them */
  pthread_mutex_unlock(&dev->cmu);
  for (gpar__op *op = no_event; op; op = next) { /* its lane was synchronised: done already */
    next = op->next;
    gpar__lane_done(op);
    gpar__op_done(op);
  }
}

/* Take the finished heads of every lane, in lane order; *busy: lanes still running. watch[l]:
 * lane l's pending head when its kind watches pending ops (called after the lock is dropped:
 * only this thread takes ops off the lanes, so it stays pending until then). */
static gpar__op *take_done_locked(gpar__device *dev, int *busy, gpar__op **watch) {
  gpar__op *done = NULL, **done_tail = &done;
  *busy = 0;
  for (int l = 0; l < GPAR__NLANES; l++) { /* lanes not in use have no head */
    gpar__op *op;
    gpar__event *seen = NULL; /* a run's ops share their cover's event: query it once */
    int seen_q = 0;
    while ((op = dev->lane_head[l])) {
      gpar__event *ev = gpar__op_done_event(op);
      int q = !ev ? 1 : ev == seen ? seen_q : dev->ops->event_query(ev);
      seen = ev;
      seen_q = q;
      if (q == 0) {
        if (op->kind->pending) watch[l] = op;
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
 * here (their messages are this thread's), then each retires (with what waited on it). */
static void complete_done(gpar__device *dev, gpar__op *done) {
  gpar_engine *eng = dev->eng;
  for (gpar__op *op = done; op; op = op->next) {
    if (op->kind->finished && op->async_status == GPAR_OK) { /* a failure only its kind sees */
      int k = op->kind->finished(dev, op);
      if (k != GPAR_OK) {
        op->async_status = k;
        free(op->async_msg);
        op->async_msg = strdup(gpar__error_msg());
      }
    }
    int st = gpar__fault(eng, GPAR__FAULT_COMPLETION);
    if (eng->tracing) op->t_end = gpar__now();
    if (st != GPAR_OK && op->async_status == GPAR_OK) { /* applies where the device saw none */
      op->async_status = st;
      free(op->async_msg);
      op->async_msg = strdup(gpar__error_msg());
    }
  }
  for (gpar__op *op = done, *next; op; op = next) {
    next = op->next;
    gpar__lane_done(op); /* lanes.c: its lane's load */
    gpar__op_done(op);   /* deps.c */
  }
}

/* Polls while idle before the thread sleeps on the condition variable: a dispatcher that hands
 * ops over while the thread polls pays no wake-up (a futex call per small op otherwise). */
#define GPAR__IDLE_POLLS 16

void *gpar__completer_main(void *arg) {
  gpar__device *dev = arg;
  gpar__in_op = 1;
  if (dev->ops->bind_thread) dev->ops->bind_thread(dev->bdev);
  for (int idle = 0;;) {
    int busy, stop;
    gpar__op *watch[GPAR__NLANES] = {0};
    pthread_mutex_lock(&dev->cmu);
    gpar__op *done = take_done_locked(dev, &busy, watch);
    while (!done && !busy && !dev->cstop && idle >= GPAR__IDLE_POLLS) {
      dev->csleeping = 1;
      pthread_cond_wait(&dev->ccv, &dev->cmu);
      dev->csleeping = 0;
      idle = 0;
      done = take_done_locked(dev, &busy, watch);
    }
    stop = !done && !busy && dev->cstop;
    pthread_mutex_unlock(&dev->cmu);
    for (int l = 0; l < GPAR__NLANES; l++) /* watchdogs, outside every lock */
      if (watch[l]) watch[l]->kind->pending(dev, watch[l]);
    if (stop) break;
    if (done) {
      idle = 0;
      complete_done(dev, done);
    } else {
      idle += !busy;
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
