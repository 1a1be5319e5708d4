/* lanes.c: the compute lane of each GPU op and the issuing thread of each lane (lanes.h). */
#include <limits.h>

#include "engine/lanes.h"

int gpar__lane_claim(gpar__op *c, int lane) {
  int seen = -1;
  if (gpar__lane_compute_index(lane) < 0) return gpar__lane_of(c) == lane; /* a copy lane: never chosen */
  if (atomic_compare_exchange_strong_explicit(&c->pick, &seen, lane, memory_order_relaxed, memory_order_relaxed))
    return 1;
  return seen == lane;
}

/* The lane an open op takes: a producer's compute lane on its device (the producers are
 * dispatched: their lanes are final), else the least loaded one. */
static int lane_choose(gpar__op *op) {
  gpar__device *dev = op->dev;
  for (int i = 0; i < op->prods.n; i++) {
    const gpar__op *p = op->prods.v[i].op;
    if ((op->prods.v[i].flags & GPAR__EDGE_EVENT) && p->dev == dev && gpar__lane_compute_index(p->lane) >= 0)
      return p->lane;
  }
  unsigned turn = atomic_fetch_add_explicit(&dev->turn, 1, memory_order_relaxed);
  int best = 0, least = INT_MAX;
  for (int i = 0; i < dev->lanes; i++) {
    int k = (int)((turn + (unsigned)i) % (unsigned)dev->lanes);
    int n = atomic_load_explicit(&dev->load[k], memory_order_relaxed);
    if (n < least) best = k, least = n;
  }
  return gpar__lane_compute(best);
}

gpar__queue *gpar__lane_take(gpar__op *op) {
  gpar__device *dev = op->dev;
  if (dev->lanes <= 1) return dev->ready;
  int lane = gpar__lane_of(op);
  if (lane < 0) {
    int seen = -1, want = lane_choose(op);
    lane = atomic_compare_exchange_strong_explicit(&op->pick, &seen, want, memory_order_relaxed, memory_order_relaxed)
               ? want
               : seen;
  }
  if (op->lane != lane) op->lane = lane; /* read by others only once it is queued (or through pick) */
  int k = gpar__lane_compute_index(lane);
  if (k < 0) return dev->ready;
  atomic_fetch_add_explicit(&dev->load[k], 1, memory_order_relaxed);
  return dev->lane_ready[k];
}

void gpar__lane_done(const gpar__op *op) {
  gpar__device *dev = op->dev;
  int k = dev->lanes > 1 ? gpar__lane_compute_index(op->lane) : -1;
  if (k >= 0) atomic_fetch_sub_explicit(&dev->load[k], 1, memory_order_relaxed);
}
