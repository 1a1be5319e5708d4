/* device.h: a device of an engine: its backend handles, its ready queue (queue.h), the threads
 * that run its ops (CPU workers, or a GPU's dispatcher, dispatch.c) and, on event backends, the
 * completion thread that sees them finish (complete.c). */
#ifndef GPAR_CORE_ENGINE_DEVICE_H
#define GPAR_CORE_ENGINE_DEVICE_H

#include <pthread.h>

#include "backend.h"

typedef struct gpar__device gpar__device;
typedef struct gpar__op gpar__op;
typedef struct gpar__queue gpar__queue;

struct gpar__device {
  int index;                   /* flat index */
  int bidx;                    /* backend-local index */
  const gpar__backend_ops *ops;
  gpar__backend *be;
  gpar__bdev *bdev;
  gpar_device_props info;
  gpar_engine *eng;
  gpar__queue *ready;
  int nthreads;
  pthread_t *threads;          /* dispatcher (GPU) or workers (CPU) */
  /* completion (event backends): per-lane FIFO of dispatched ops */
  pthread_t completer;
  pthread_mutex_t cmu;
  pthread_cond_t ccv;
  gpar__op *lane_head[GPAR__NLANES], *lane_tail[GPAR__NLANES];
  int cstop;
  int csleeping;               /* the completion thread sleeps on ccv (cmu): a hand-over signals */
  double trace_t0;             /* host time of trace_ref */
  gpar__event *trace_ref;
};

/* dispatch.c: start a device's threads (CPU workers, or a GPU's dispatcher and completion
 * thread); stop and join them (nothing in flight). */
GPAR__HIDDEN int gpar__device_start(gpar__device *dev);
GPAR__HIDDEN void gpar__device_join(gpar__device *dev);
/* complete.c: hand dispatched ops (a list by ->next) to the completion thread; its body; stop
 * and join it. */
GPAR__HIDDEN void gpar__completer_hand(gpar__device *dev, gpar__op *group);
GPAR__HIDDEN void *gpar__completer_main(void *arg);
GPAR__HIDDEN void gpar__completer_stop(gpar__device *dev);

#endif
