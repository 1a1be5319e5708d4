/* device.h: a device of an engine: its backend handles, its ready queue (queue.h), the threads
 * that run its ops (CPU workers, or a GPU's dispatcher, dispatch.c) and, on event backends, the
 * completion thread that sees them finish (complete.c). */
#ifndef GPAR_CORE_ENGINE_DEVICE_H
#define GPAR_CORE_ENGINE_DEVICE_H

#include <pthread.h>
#include <stdatomic.h>

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
  gpar__queue *ready;          /* CPU workers' queue, or a GPU's dispatcher 0: copy lanes, compute lane 0 */
  int nthreads;
  pthread_t *threads;          /* dispatchers (GPU: one per compute lane) or workers (CPU) */
  /* GPU: compute lanes 0 .. lanes - 1 (decided by gpar_init; the copy lanes come after them:
   * gpar__lane_in_use) and what lanes.c keeps of them. */
  int lanes;
  gpar__queue *lane_ready[GPAR__COMPUTE_LANES_MAX]; /* [k]: ready ops of compute lane k's dispatcher ([0]: ready) */
  struct gpar__issuer {
    gpar__device *dev;
    int k;                     /* the compute lane it issues (0: also the copy lanes) */
    /* counters, written by this issuer only (gpar_stats): event waits across lanes or devices,
     * events recorded, ops handed to another issuer, ops issued on a compute lane but the first */
    atomic_ulong waits, events, handoffs, moved;
    atomic_int issuing;        /* it may call the backend on its lane now (lanes.c's gate) */
    char pad[64];              /* issuers' counters on cache lines of their own */
  } issuer[GPAR__COMPUTE_LANES_MAX];
  atomic_int load[GPAR__COMPUTE_LANES_MAX]; /* ops given compute lane k and not completed */
  atomic_uint turn;            /* round robin among equally loaded lanes */
  atomic_ulong launches;       /* ops dispatched on its lanes so far (op->launched) */
  atomic_int owned;            /* the first dispatcher issues on every compute lane (a graph part) */
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
