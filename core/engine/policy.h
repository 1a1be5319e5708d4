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
 * (graph recording). Its submissions go to take(); its waits are refused (GPAR_ERECORDING). */
typedef struct gpar__op_sink {
  gpar_engine *eng;
  uint64_t serial;             /* the engine lifetime it diverts */
  int (*take)(void *ctx, gpar__op *op); /* owns op from now on, even when it fails */
  /* A call whose ops went to the sink failed after some of them were taken (a multi-chunk
   * write): the sink must not keep a part of that call as if it succeeded. */
  void (*call_failed)(void *ctx, int status);
  void *ctx;
} gpar__op_sink;
GPAR__HIDDEN extern GPAR__TLS gpar__op_sink gpar__sink;
/* 1 when the calling thread's submissions on eng go to a sink. */
static inline int gpar__sink_active(gpar_engine *eng) {
  return gpar__sink.take && gpar__sink.eng == eng && gpar__sink.serial == atomic_load(&eng->serial);
}
/* Tell the calling thread's sink on eng, if any, that a call failed part way (see above). */
static inline void gpar__sink_call_failed(gpar_engine *eng, int status) {
  if (gpar__sink_active(eng) && gpar__sink.call_failed) gpar__sink.call_failed(gpar__sink.ctx, status);
}

enum {
  GPAR__SUBMIT_KEEP = 1,   /* the caller waits itself: *kept gets a reference for gpar__op_wait */
  GPAR__SUBMIT_NO_SINK = 2 /* run it even when the calling thread's submissions are diverted */
};
/* Submit a built op by the calling thread's policy (above): GPAR_OK, GPAR_ESHUTDOWN (op
 * discarded) once the engine has drained for shutdown, or in synchronous mode the op's failure
 * (its message set). *kept (GPAR__SUBMIT_KEEP only, else may be NULL): the op with a reference
 * for gpar__op_wait, or NULL (recorded, refused). */
GPAR__HIDDEN int gpar__op_submit(gpar__op *op, int flags, gpar__op **kept);
/* Submit several ops at once: all are linked, or (engine shut down) none; in synchronous mode
 * the first failure among them, in order, once all have retired. */
GPAR__HIDDEN int gpar__op_submit_all(gpar__op **ops, int n, int flags, gpar__op **kept);

#endif
