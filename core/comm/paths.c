/* paths.c: how a checked collective becomes engine ops (comm.c checks it and picks the path),
 * and the kinds of those ops:
 * - backend path (NCCL): one member op per member on its device's peer lane, issued by the
 *   device's own dispatcher thread (NCCL allows one thread per rank, and the engine already has
 *   exactly one dispatcher per device, so no group call is needed and no thread ever blocks on
 *   another device's queue); all members of a collective are built first and submitted at once
 *   (or none); a watchdog names a collective that never completes;
 * - staged path: copies into GPAR_HOST staging, one reduction op on the CPU, copies back
 *   (allreduce, reduce-scatter), or copies between the members (broadcast, all-gather). Issue
 *   order (gpar.h): the reduction, or for copies an order op before them, writes the member
 *   tokens after reading every member's buffer, so nothing the collective writes starts before
 *   the communicator's previous collective has finished; a closing op then reads what the
 *   copies wrote and writes the tokens, so the next collective waits for those copies too. */
#include <stdio.h>
#include <stdlib.h>

#include "comm/comm.h"

/* ---------------------------------------------------------------- the kinds */

_Static_assert(sizeof(gpar__coll_args) <= GPAR__OP_PAYLOAD, "collective arguments fit an op's payload");
_Static_assert(sizeof(gpar__reduce_args) <= GPAR__OP_PAYLOAD, "reduction arguments fit an op's payload");

static int member_run(gpar__device *dev, gpar__op *op) {
  return dev->ops->coll(dev->bdev, op->lane, gpar__op_args(op));
}

/* Watchdog of backend collectives (PyTorch's model), called by the device's completion thread
 * with no lock held while the op is pending: a collective that some member never joins
 * (mismatched calls, a member whose input never comes) would wait forever inside NCCL. When
 * the communicator reports a failure (comm_check: ncclCommGetAsyncError), or after
 * gpar_config.comm_timeout seconds (GPAR_COMM_TIMEOUT, default 300), the watchdog names it on
 * stderr once and aborts the communicator (comm_abort: ncclCommAbort on every member, which
 * returns once its kernels have exited); the op's event then completes, and member_finished
 * fails it (GPAR_ETIMEDOUT, or the failure), so its buffers are handed on only after the abort.
 * A backend without comm_abort can only name it, and the collective keeps waiting. */
static void member_pending(gpar__device *dev, gpar__op *op) {
  gpar__coll_args *a = gpar__op_args(op);
  const gpar__backend_ops *ops = dev->ops;
  if (a->warned) return;
  double waited = gpar__now() - op->t_dispatch;
  int failed = ops->comm_check && ops->comm_check(a->comm) != GPAR_OK;
  if (!failed && waited < dev->eng->cfg.comm_timeout) return;
  a->warned = 1;
  fprintf(stderr, "libgpar: %s: collective %s (member %d, %zu elements) %s after %.1f s: %s\n", dev->info.name,
          gpar__coll_names[a->kind] + 5, a->rank, a->count, failed ? "failed" : "not complete", waited,
          ops->comm_abort ? "aborting its communicator (every member must issue a communicator's collectives in the "
                            "same order)"
                          : "the vendor library cannot cancel it and still waits");
  if (ops->comm_abort) ops->comm_abort(a->comm);
}

/* A member whose event completed: its communicator may have been aborted meanwhile (its kernel
 * then exits early and the event completes as if it ran). */
static int member_finished(gpar__device *dev, gpar__op *op) {
  gpar__coll_args *a = gpar__op_args(op);
  return dev->ops->comm_check ? dev->ops->comm_check(a->comm) : GPAR_OK;
}

/* A member joins even when its input failed (it still retires as GPAR_EDEPFAILED): the other
 * members would wait for it forever. */
static const gpar__op_kind kind_member = {.name = "collective",
                                          .run = member_run,
                                          .pending = member_pending,
                                          .finished = member_finished,
                                          .flags = GPAR__KIND_RUNS_ON_FAILED_INPUT | GPAR__KIND_TIMED};

static int reduce_run(gpar__device *dev, gpar__op *op) {
  if (!dev->ops->reduce) return gpar__errorf(GPAR_ENOTSUP, "%s: no CPU reduction", dev->ops->name);
  return dev->ops->reduce(dev->bdev, gpar__op_args(op));
}

static void reduce_release(gpar__op *op) {
  gpar__reduce_args *r = gpar__op_args(op);
  free(r->src); /* dst lives in the same block */
  r->src = NULL;
}

static const gpar__op_kind kind_reduce = {.name = "comm_reduce", .run = reduce_run, .release = reduce_release};

/* ---------------------------------------------------------------- backend path */

/* Member n's op: its buffer and its member token (every ordered collective writes it). */
static int member_op(gpar__comm *c, const gpar_coll *a, const gpar__comm_member *m, int n, gpar__batch *sub) {
  gpar_engine *eng = c->eng;
  gpar__buf *b = NULL, *tok = NULL;
  gpar__op *op = gpar__op_new(eng, &kind_member, eng->devs[c->devs[n]], GPAR__LANE_PEER);
  int st = gpar__batch_add(sub, op);
  if (st == GPAR_OK && ((st = gpar__buf_get(eng, m[n].h, &b)) || (st = gpar__buf_get_token(eng, c->tokens[n], &tok)))) {
    if (b) gpar__buf_put(b);
    return st;
  }
  if (st != GPAR_OK) return st;
  *(gpar__coll_args *)gpar__op_args(op) = (gpar__coll_args){(int)a->kind, c->bcomm, n, b->mem, m[n].off, a->count,
                                                            (int)gpar_dtype_size(a->dtype), (int)a->op, a->root, 0,
                                                            (int)a->dtype};
  int mode = a->kind == GPAR_COLL_BROADCAST && a->root == n ? GPAR__READ : GPAR__READ | GPAR__WRITE;
  if ((st = gpar__op_use(op, b, mode)) != GPAR_OK) {
    gpar__buf_put(tok);
    return st;
  }
  return gpar__op_use(op, tok, GPAR__WRITE);
}

/* Submit what a collective built, or discard it all when building failed. */
static int submit_built(gpar__batch *sub, int st) {
  if (st == GPAR_OK) return gpar__batch_submit(sub, 0);
  gpar__batch_discard(sub);
  return st;
}

/* One member op per member, on its device's peer lane (NCCL's own stream per device; the
 * engine joins it to the compute and copy lanes by events). All are built, then submitted as
 * one submission: a failure leaves nothing enqueued, and no other thread's op comes between
 * two members on any buffer. */
int gpar__comm_backend(gpar__comm *c, const gpar_coll *a, const gpar__comm_member *m) {
  gpar__batch sub;
  int st = GPAR_OK;
  gpar__batch_init(&sub);
  for (int n = 0; n < c->nlocal && st == GPAR_OK; n++) st = member_op(c, a, m, n, &sub);
  return submit_built(&sub, st);
}

/* ---------------------------------------------------------------- staged path */

/* The staged path builds every op of a collective (copies, a reduction, order ops) into one
 * submission: it applies whole or not at all, and another thread's write of a member cannot
 * land between its copy-in and its copy-back. */

/* An op on the CPU that reads each member's buffer and writes every member token: issue order
 * (see the head of this file). Its failure (an input whose writer failed) only repeats one
 * that reaches the collective's outputs where it should (a kind that echoes: neither reported
 * to gpar_wait_all nor returned). */
static int order_op(gpar__comm *c, const gpar__comm_member *m, gpar__batch *sub) {
  gpar_engine *eng = c->eng;
  gpar__op *op = gpar__op_new(eng, &gpar__kind_order, eng->host_dev, GPAR__LANE_COMPUTE);
  int st = gpar__batch_add(sub, op);
  gpar__buf *b;
  for (int i = 0; i < c->nlocal && st == GPAR_OK; i++)
    if ((st = gpar__buf_get(eng, m[i].h, &b)) == GPAR_OK) st = gpar__op_use(op, b, GPAR__READ);
  for (int i = 0; i < c->nlocal && st == GPAR_OK; i++)
    if ((st = gpar__buf_get_token(eng, c->tokens[i], &b)) == GPAR_OK) st = gpar__op_use(op, b, GPAR__WRITE);
  return st;
}

/* The CPU reduction: reads srcs, writes the result buffer R and every host member, and the
 * tokens (after the previous collective's closing op: the copies back follow it). Sources and
 * outputs are host pointers (offsets applied). */
static int reduce_op(gpar__comm *c, const gpar_coll *a, size_t count, const gpar_buffer *srcs, const size_t *soff,
                     int nsrc, gpar_buffer r, const gpar__comm_member *m, gpar__batch *sub) {
  gpar_engine *eng = c->eng;
  void **src = malloc(sizeof *src * (size_t)(nsrc + c->nlocal + 1));
  if (!src) return gpar__errorf(GPAR_ENOMEM, "out of host memory for an operation");
  void **dst = src + nsrc;
  int ndst = 0, st;
  gpar__op *op = gpar__op_new(eng, &kind_reduce, eng->host_dev, GPAR__LANE_COMPUTE);
  if (op) *(gpar__reduce_args *)gpar__op_args(op) = (gpar__reduce_args){(int)gpar_dtype_size(a->dtype), (int)a->op,
                                                                        count, nsrc, 0, src, dst, (int)a->dtype};
  else free(src);
  if ((st = gpar__batch_add(sub, op)) != GPAR_OK) return st; /* from here on src is the op's */
  gpar__reduce_args *ra = gpar__op_args(op);
  gpar__buf *b;
  if ((st = gpar__buf_get(eng, r, &b)) == GPAR_OK) {
    dst[ndst++] = b->mem;
    st = gpar__op_use(op, b, GPAR__WRITE);
  }
  for (int i = 0; i < nsrc && st == GPAR_OK; i++)
    if ((st = gpar__buf_get(eng, srcs[i], &b)) == GPAR_OK) {
      src[i] = (char *)b->mem + soff[i];
      st = gpar__op_use(op, b, GPAR__READ);
    }
  for (int i = 0; i < c->nlocal && st == GPAR_OK; i++)
    if (m[i].host && (st = gpar__buf_get(eng, m[i].h, &b)) == GPAR_OK) {
      dst[ndst++] = (char *)b->mem + m[i].off;
      st = gpar__op_use(op, b, GPAR__READ | GPAR__WRITE);
    }
  for (int i = 0; i < c->nlocal && st == GPAR_OK; i++)
    if ((st = gpar__buf_get_token(eng, c->tokens[i], &b)) == GPAR_OK) st = gpar__op_use(op, b, GPAR__WRITE);
  ra->ndst = ndst;
  return st;
}

/* The staging of an allreduce: the result R and, per device member, a source buffer in host
 * memory (host members are read in place): buffers first, so a collective that cannot get its
 * staging issues nothing. */
typedef struct staging {
  gpar_buffer r, *srcs;
  size_t *soff;
} staging;

static int staging_make(gpar__comm *c, const gpar__comm_member *m, size_t bytes, staging *sg) {
  int st = GPAR_OK;
  sg->r.id = 0;
  sg->srcs = calloc((size_t)c->nlocal, sizeof *sg->srcs);
  sg->soff = calloc((size_t)c->nlocal, sizeof *sg->soff);
  if (!sg->srcs || !sg->soff) return gpar__errorf(GPAR_ENOMEM, "out of host memory");
  if ((st = gpar__buf_create(c->eng, GPAR_HOST, bytes, &sg->r))) sg->r.id = 0;
  for (int i = 0; i < c->nlocal && st == GPAR_OK; i++) {
    if (m[i].host) {
      sg->srcs[i] = m[i].h;
      sg->soff[i] = m[i].off;
    } else if ((st = gpar__buf_create(c->eng, GPAR_HOST, bytes, &sg->srcs[i]))) {
      sg->srcs[i].id = 0;
    }
  }
  return st;
}

/* Release the staging's handles (the ops that use it hold it until they are done). */
static void staging_free(gpar__comm *c, const gpar__comm_member *m, staging *sg) {
  for (int i = 0; sg->srcs && i < c->nlocal; i++)
    if (!m[i].host && sg->srcs[i].id) gpar__buf_release(c->eng, sg->srcs[i]);
  if (sg->r.id) gpar__buf_release(c->eng, sg->r);
  free(sg->srcs);
  free(sg->soff);
}

/* Allreduce (and reduce-scatter, as an allreduce of the whole range) through host memory:
 * device members' ranges are copied into staging, reduced on the CPU into R, and R copied back,
 * then a closing op. Host members are read and written in place by the reduction. */
static int staged_allreduce(gpar__comm *c, const gpar_coll *a, const gpar__comm_member *m, gpar__batch *sub) {
  size_t es = gpar_dtype_size(a->dtype);
  size_t count = a->count * (a->kind == GPAR_COLL_REDUCE_SCATTER ? (size_t)c->nmembers : 1), bytes = count * es;
  int n = c->nlocal, copies = 0;
  staging sg;
  int st = staging_make(c, m, bytes, &sg);
  for (int i = 0; i < n && st == GPAR_OK; i++)
    if (!m[i].host) st = gpar__copy_build(c->eng, sg.srcs[i], 0, m[i].h, m[i].off, bytes, sub);
  if (st == GPAR_OK) st = reduce_op(c, a, count, sg.srcs, sg.soff, n, sg.r, m, sub);
  for (int i = 0; i < n && st == GPAR_OK; i++)
    if (!m[i].host) {
      st = gpar__copy_build(c->eng, m[i].h, m[i].off, sg.r, 0, bytes, sub);
      copies++;
    }
  if (copies && st == GPAR_OK) st = order_op(c, m, sub); /* closing: after the copies back */
  staging_free(c, m, &sg);
  return st;
}

/* Broadcast and all-gather are copies between the members (gpar_copy picks peer, staged or
 * host paths), between an order op and a closing op (see the head of this file). */
static int staged_copies(gpar__comm *c, const gpar_coll *a, const gpar__comm_member *m, gpar__batch *sub) {
  size_t es = gpar_dtype_size(a->dtype), blk = a->count * es;
  int copies = 0, st = order_op(c, m, sub);
  for (int i = 0; i < c->nlocal && st == GPAR_OK; i++)
    for (int j = 0; j < c->nlocal && st == GPAR_OK; j++) {
      if (i == j) continue;
      if (a->kind == GPAR_COLL_BROADCAST && i == a->root - c->first_local) {
        st = gpar__copy_build(c->eng, m[j].h, m[j].off, m[i].h, m[i].off, blk, sub);
        copies++;
      } else if (a->kind == GPAR_COLL_ALL_GATHER) {
        st = gpar__copy_build(c->eng, m[j].h, m[j].off + (size_t)i * blk, m[i].h, m[i].off + (size_t)i * blk, blk, sub);
        copies++;
      }
    }
  if (copies && st == GPAR_OK) st = order_op(c, m, sub);
  return st;
}

/* The staged path of a collective (comm.h). */
int gpar__comm_staged(gpar__comm *c, const gpar_coll *a, const gpar__comm_member *m) {
  gpar__batch sub;
  gpar__batch_init(&sub);
  int reduces = a->kind == GPAR_COLL_ALLREDUCE || a->kind == GPAR_COLL_REDUCE_SCATTER;
  int st = reduces ? staged_allreduce(c, a, m, &sub) : staged_copies(c, a, m, &sub);
  return submit_built(&sub, st);
}
