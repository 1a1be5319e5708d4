/* lanes.h: which compute lane runs a GPU op, which issuing thread takes it, and a GPU's lanes'
 * setup and teardown (lanes.c, where the rules are stated). A GPU device has dev->lanes compute
 * lanes, 0 .. lanes - 1 (decided once by gpar_init: gpar_config.lanes, else the backend's
 * default), each issued by its own dispatcher thread: thread 0 issues compute lane 0 and the copy
 * lanes from dev->ready, thread k compute lane k from dev->lane_ready[k]. An op made for
 * GPAR__LANE_COMPUTE on such a device is open (op->pick == -1) until one lane is chosen. With one
 * lane every op's lane is fixed when it is made: nothing here changes what one dispatcher does. */
#ifndef GPAR_CORE_ENGINE_LANES_H
#define GPAR_CORE_ENGINE_LANES_H

#include <stdatomic.h>

#include "engine/device.h"
#include "engine/op.h"
#include "engine/queue.h"

/* op's lane when it is fixed or chosen, -1 while open (any thread). */
static inline int gpar__lane_of(const gpar__op *op) {
  return atomic_load_explicit(&((gpar__op *)op)->pick, memory_order_relaxed);
}
/* Consumer c of producer p, released while p's run on its lane is still open: 1 when c runs on
 * p's lane (it did, or was open and is p's heir: the first consumer to follow it), 0 when it runs
 * elsewhere (its lane is chosen when it becomes ready). */
GPAR__HIDDEN int gpar__lane_claim(gpar__op *c, gpar__op *p);
/* op is ready: choose its lane if open (op->lane is then set), count it on its compute lane, and
 * return the ready queue of the thread that issues that lane. */
GPAR__HIDDEN gpar__queue *gpar__lane_take(gpar__op *op);
/* op is complete on its device: it no longer counts on its lane. */
GPAR__HIDDEN void gpar__lane_done(const gpar__op *op);
/* A GPU device's lanes (dev->lanes set): a ready queue and an issuer per compute lane; nothing
 * for a CPU device. */
GPAR__HIDDEN int gpar__lanes_open(gpar__device *dev);
/* Free them (their dispatchers joined). */
GPAR__HIDDEN void gpar__lanes_close(gpar__device *dev);

/* The gate that lets the first dispatcher issue on every compute lane for a while (a graph part
 * whose branches run on several lanes: its replay or capture uses their streams and BLAS
 * handles, which their own dispatchers must not touch meanwhile). gpar__lanes_own returns once
 * no other dispatcher of dev is issuing, and they issue nothing until gpar__lanes_share. A
 * dispatcher k >= 1 calls gpar__lane_gate before it issues anything and gpar__lane_idle (0)
 * around a wait for work (then 1 after it), so the owner never waits for a thread that waits. */
GPAR__HIDDEN void gpar__lanes_own(gpar__device *dev);
GPAR__HIDDEN void gpar__lanes_share(gpar__device *dev);
static inline void gpar__lane_idle(struct gpar__issuer *me, int idle) { atomic_store(&me->issuing, !idle); }
GPAR__HIDDEN void gpar__lane_wait_owner(struct gpar__issuer *me);
static inline void gpar__lane_gate(struct gpar__issuer *me) {
  if (me->k && atomic_load(&me->dev->owned)) gpar__lane_wait_owner(me);
}

/* Counters of one issuing thread (only it writes them; gpar_stats_get sums them). */
static inline void gpar__issuer_count(atomic_ulong *c, unsigned long n) {
  atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n, memory_order_relaxed);
}

#endif
