/* deps.h: the dependency engine (deps.c), which orders ops by the buffers they declare:
 * linking an op behind each buffer's last writer and readers, releasing its consumers when it
 * is dispatched or retires, carrying failures to what reads its output. */
#ifndef GPAR_CORE_ENGINE_DEPS_H
#define GPAR_CORE_ENGINE_DEPS_H

#include "engine/op.h"

/* Link ops[0..n-1] into the dependency graph, in that order, counted in flight together, and
 * queue each when nothing holds it back; refs: references each op gets besides its own while
 * in flight (for a waiter). GPAR_ESHUTDOWN (every op discarded) once the engine has drained for
 * shutdown. The way in for the layers above is gpar__op_submit (policy.h). */
GPAR__HIDDEN int gpar__deps_submit(gpar__op **ops, int n, int refs);

/* The device side (dispatch.c, complete.c): */
/* op ran on a CPU worker (status in op->status): complete it. A consumer it makes ready on
 * `local` may be handed back in *next for the calling worker to run at once (NULL: none). */
GPAR__HIDDEN void gpar__op_ran(gpar__op *op, gpar__device *local, gpar__op **next);
/* The device finished op (a GPU op: its event completed; failure in op->async_status):
 * retire it, and what waited on it, once its producers have. */
GPAR__HIDDEN void gpar__op_done(gpar__op *op);
/* op was enqueued on an event lane and its event (or cover) is known: release the consumers
 * that wait on its event; those on `local` are appended to *local_tail (run next by that
 * dispatcher), the others queued. */
GPAR__HIDDEN void gpar__op_dispatched(gpar__op *op, gpar__device *local, gpar__op ***local_tail);
/* op was enqueued on its lane, its event not known yet: release only the consumers on that same
 * lane (the lane orders them; an open one takes the lane, lanes.h), appended to *local_tail. */
GPAR__HIDDEN void gpar__op_release_lane(gpar__op *op, gpar__device *local, gpar__op ***local_tail);

/* Test hook (exported, not in gpar.h): the slots looked at so far by the ops that left the
 * readers of buffer h, so a test can tell that leaving does not search (0: no such buffer). */
GPAR_API uint64_t gpar__test_reader_probes(gpar_buffer h);

#endif
