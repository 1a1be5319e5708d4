/* lanes.h: which compute lane runs a GPU op, and which issuing thread takes it (lanes.c). A GPU
 * device has dev->lanes compute lanes (gpar_config.lanes), each issued by its own dispatcher
 * thread: thread 0 issues the first compute lane and the copy lanes from dev->ready, thread k
 * compute lane k from dev->lane_ready[k]. An op made for GPAR__LANE_COMPUTE on such a device is
 * open (op->pick == -1) until one lane is chosen: the lane of a producer that releases it while
 * still in its lane's open run (gpar__lane_claim: a chain stays on one lane, with no event), else
 * when it becomes ready the lane of a producer of its own on that device, else the least loaded
 * compute lane (ops given the lane and not completed; round robin among equals). With one lane
 * every op's lane is fixed when it is made: nothing here changes what one dispatcher does. */
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
/* Consumer c of a producer on `lane` of its device, released while that producer's run is open:
 * 1 when c runs on `lane` (it did, or was open and takes it now), 0 when it runs elsewhere. */
GPAR__HIDDEN int gpar__lane_claim(gpar__op *c, int lane);
/* op is ready: choose its lane if open (op->lane is then set), count it on its compute lane, and
 * return the ready queue of the thread that issues that lane. */
GPAR__HIDDEN gpar__queue *gpar__lane_take(gpar__op *op);
/* op is complete on its device: it no longer counts on its lane. */
GPAR__HIDDEN void gpar__lane_done(const gpar__op *op);

#endif
