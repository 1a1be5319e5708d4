/* policy.h: how a submission runs (policy.c), the way in for the layers above. Three policies,
 * one per thread and engine, none known to the callers:
 *   recording: a thread that records a graph diverts its submissions to a sink (graph/), which
 *              keeps them instead of running them;
 *   threaded:  the ops are linked (deps.c) and the call returns at once (the default);
 *   synchronous (gpar_config.synchronous, outside ops): the call returns once its ops have
 *              retired, with the first failure among them (MXNet's naive engine; races and
 *              ordering bugs become reproducible). */
#ifndef GPAR_CORE_ENGINE_POLICY_H
#define GPAR_CORE_ENGINE_POLICY_H

#include "engine/op.h"

/* A thread may divert the ops it submits on one engine to a sink instead of running them
 * (graph recording). Its submissions go to take(); its waits are refused (GPAR_ERECORDING). A
 * call gives the sink all of its ops or none (a submission is built whole first, gpar__batch). */
typedef struct gpar__op_sink {
  gpar_engine *eng;
  uint64_t serial;             /* the engine lifetime it diverts */
  int (*take)(void *ctx, gpar__op *op); /* owns op from now on, even when it fails */
  void *ctx;
} gpar__op_sink;
GPAR__HIDDEN extern GPAR__TLS gpar__op_sink gpar__sink;
/* 1 when the calling thread's submissions on eng go to a sink. */
static inline int gpar__sink_active(gpar_engine *eng) {
  return gpar__sink.take && gpar__sink.eng == eng && gpar__sink.serial == atomic_load(&eng->serial);
}

enum {
  /* Return once the ops have retired, with the first failure among them (their statuses go to
   * the caller, not to gpar_wait_all), whatever the policy: never recorded, even when the
   * calling thread's submissions are diverted. */
  GPAR__SUBMIT_WAIT = 1
};
/* Submit a built op by the calling thread's policy (above): GPAR_OK, GPAR_ESHUTDOWN (op
 * discarded) once the engine has drained for shutdown, or, waiting (synchronous mode,
 * GPAR__SUBMIT_WAIT), the op's failure with its message. */
GPAR__HIDDEN int gpar__op_submit(gpar__op *op, int flags);
/* Submit several ops as one submission: linked together, atomically against every other
 * thread's ops on the same buffers (deps.c), or (engine shut down) none; waiting, the first
 * failure among them in order, once all have retired. */
GPAR__HIDDEN int gpar__op_submit_all(gpar__op **ops, int n, int flags);

/* A submission built whole before any of its ops is submitted: a call that needs several ops
 * (chunks of a transfer, the legs of a staged copy, a staged collective) adds them one by one,
 * then submits them together or, when building fails, discards them all. So a call applies all
 * of its ops or none of them, and no other thread's op comes between two of them. */
typedef struct gpar__batch {
  int n, cap;
  gpar__op **ops;
  gpar__op *stack[GPAR__INLINE];
} gpar__batch;
static inline void gpar__batch_init(gpar__batch *b) {
  b->n = 0;
  b->cap = GPAR__INLINE;
  b->ops = b->stack;
}
/* op joins b (b owns it from now on). NULL, or no memory to keep it: GPAR_ENOMEM (op
 * discarded); the caller then discards b. */
GPAR__HIDDEN int gpar__batch_add(gpar__batch *b, gpar__op *op);
/* Submit b's ops as one submission (gpar__op_submit_all); b is empty after. */
GPAR__HIDDEN int gpar__batch_submit(gpar__batch *b, int flags);
/* Discard b's ops (nothing submitted); b is empty after. */
GPAR__HIDDEN void gpar__batch_discard(gpar__batch *b);

#endif
