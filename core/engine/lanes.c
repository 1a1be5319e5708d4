/* lanes.c: the compute lane of each GPU op, and a GPU's lanes' setup (lanes.h). One file owns the
 * decision. Its rules, in order, from what was measured on an H100 (baselines.md, 2026-12-07):
 * an edge between two streams costs the GPU 0.3-1.9 us eagerly and nothing on one stream; big
 * kernels gain nothing beside each other, small ones beside small ones about 3x; and copies are
 * fed in the order their producers were launched, so big work must end in that order.
 *  1. A chain never leaves its lane: an op whose producer on this device (an event edge) has not
 *     completed takes that producer's lane, if it is the producer's first consumer to ask (its
 *     heir); among several such producers, the one launched last. Same lane: no event, no
 *     hand-off between issuing threads. A fork's later consumers are chosen as independent ops.
 *  2. An op that fills the device (op->width, its builder's estimate of its thread blocks or
 *     work-groups, at least the device's compute units) takes the first lane, in issue order:
 *     big work starts, ends and feeds its copies as it does with one lane.
 *  3. Any other op takes the first lane when nothing is queued or running there, else the least
 *     loaded lane (ops given to it and not completed; round robin among equals): small
 *     independent work spreads only when the first lane is busy.
 * A consumer released while its producer's run is still open (gpar__lane_claim) applies rule 1
 * then and there. Graphs apply the same rules at record time (graph/record.c). */
#include <limits.h>
#include <sched.h>
#include <stdlib.h>

#include "engine/lanes.h"

/* Rule 1's test: p is on a compute lane of dev and not complete; op becomes its heir. */
static int follows(gpar__op *op, gpar__op *p) {
  if (p->dev != op->dev || !gpar__lane_is_compute(p->lane) || atomic_load(&p->state) >= GPAR__ST_DONE) return 0;
  int none = 0;
  return atomic_compare_exchange_strong_explicit(&p->heir, &none, 1, memory_order_relaxed, memory_order_relaxed);
}

int gpar__lane_claim(gpar__op *c, gpar__op *p) {
  int seen = -1, lane = p->lane;
  if (!gpar__lane_is_compute(lane)) return gpar__lane_of(c) == lane; /* a copy lane: never chosen */
  if (gpar__lane_of(c) == -1 && follows(c, p) &&
      atomic_compare_exchange_strong_explicit(&c->pick, &seen, lane, memory_order_relaxed, memory_order_relaxed))
    return 1;
  return gpar__lane_of(c) == lane;
}

/* The lane an open op takes (the rules above). Its event-edge producers are dispatched: their
 * lanes are final. */
static int lane_choose(gpar__op *op) {
  gpar__device *dev = op->dev;
  gpar__op *last = NULL;
  for (int i = 0; i < op->prods.n; i++) { /* rule 1: the last launched of the live producers */
    gpar__op *p = op->prods.v[i].op;
    if ((op->prods.v[i].flags & GPAR__EDGE_EVENT) && p->dev == dev && gpar__lane_is_compute(p->lane) &&
        (!last || p->launched > last->launched))
      last = p;
  }
  if (last && follows(op, last)) return last->lane;
  int units = dev->info.compute_units;
  if ((units > 0 && op->width >= (unsigned)units) || !atomic_load_explicit(&dev->load[0], memory_order_relaxed))
    return GPAR__LANE_COMPUTE; /* rules 2 and 3 */
  unsigned turn = atomic_fetch_add_explicit(&dev->turn, 1, memory_order_relaxed);
  int best = 0, least = INT_MAX;
  for (int i = 0; i < dev->lanes; i++) {
    int k = (int)((turn + (unsigned)i) % (unsigned)dev->lanes);
    int n = atomic_load_explicit(&dev->load[k], memory_order_relaxed);
    if (n < least) best = k, least = n;
  }
  return best;
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
  if (!gpar__lane_is_compute(lane)) return dev->ready;
  atomic_fetch_add_explicit(&dev->load[lane], 1, memory_order_relaxed);
  return dev->lane_ready[lane];
}

void gpar__lane_done(const gpar__op *op) {
  gpar__device *dev = op->dev;
  if (dev->lanes > 1 && gpar__lane_is_compute(op->lane))
    atomic_fetch_sub_explicit(&dev->load[op->lane], 1, memory_order_relaxed);
}

/* The gate (lanes.h): Dekker's handshake, in sequentially consistent atomics. The owner stores
 * owned, then reads each issuer's flag; an issuer stores its flag, then reads owned: one of the
 * two sees the other's store. Owning lasts a graph part's enqueueing (tens of microseconds) or
 * its capture (once): waiting is a yield loop. */
void gpar__lanes_own(gpar__device *dev) {
  atomic_store(&dev->owned, 1);
  for (int k = 1; k < dev->lanes; k++)
    while (atomic_load(&dev->issuer[k].issuing)) sched_yield();
}

void gpar__lanes_share(gpar__device *dev) { atomic_store(&dev->owned, 0); }

void gpar__lane_wait_owner(struct gpar__issuer *me) {
  do {
    atomic_store(&me->issuing, 0);
    while (atomic_load(&me->dev->owned)) sched_yield();
    atomic_store(&me->issuing, 1);
  } while (atomic_load(&me->dev->owned));
}

int gpar__lanes_open(gpar__device *dev) {
  if (!dev->ops->ordered_by_events) {
    dev->lanes = 0;
    return GPAR_OK;
  }
  dev->lane_ready[0] = dev->ready;
  for (int k = 0; k < dev->lanes; k++) {
    dev->issuer[k].dev = dev;
    dev->issuer[k].k = k;
    atomic_store(&dev->issuer[k].issuing, 1); /* running: idle only while it waits for work */
    if (k && !(dev->lane_ready[k] = gpar__queue_new(1))) return gpar__errorf(GPAR_ENOMEM, "out of host memory for a lane");
  }
  return GPAR_OK;
}

void gpar__lanes_close(gpar__device *dev) {
  for (int k = 1; k < GPAR__COMPUTE_LANES_MAX; k++) {
    gpar__queue_free(dev->lane_ready[k]);
    dev->lane_ready[k] = NULL;
  }
}
