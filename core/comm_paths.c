/* comm_paths.c: how a checked collective becomes engine ops (comm.c checks it and picks the
 * path), and the engine's hooks that run those ops:
 * - backend path (NCCL): one GPAR__OP_COLL per member on its device's peer lane, issued by the
 *   device's own dispatcher thread (NCCL allows one thread per rank, and the engine already has
 *   exactly one dispatcher per device, so no group call is needed and no thread ever blocks on
 *   another device's queue); a watchdog names a collective that never completes;
 * - staged path: copies into GPAR_HOST staging, one GPAR__OP_REDUCE on the CPU, copies back. */
#include <stdio.h>
#include <stdlib.h>

#include "comm.h"

/* ---------------------------------------------------------------- backend path */

/* One GPAR__OP_COLL per member, on its device's peer lane (NCCL's own stream per device; the
 * engine joins it to the compute and copy lanes by events). */
int gpar__comm_backend(gpar__comm *c, const gpar_coll *a, const gpar__comm_member *m) {
  gpar_engine *eng = c->eng;
  int st = GPAR_OK;
  for (int i = 0; i < c->nlocal && st == GPAR_OK; i++) {
    gpar__buf *b, *tok;
    pthread_mutex_lock(&eng->mu);
    if ((st = gpar__buf_get_locked(eng, m[i].h, &b)) || (st = gpar__buf_get_locked(eng, c->tokens[i], &tok))) {
      pthread_mutex_unlock(&eng->mu);
      break;
    }
    gpar__op *op = gpar__op_new(eng);
    if (!op) {
      pthread_mutex_unlock(&eng->mu);
      st = gpar__errorf(GPAR_ENOMEM, "out of host memory for an operation");
      break;
    }
    op->kind = GPAR__OP_COLL;
    op->dev = eng->devs[c->devs[i]];
    op->lane = GPAR__LANE_PEER;
    op->name = gpar__coll_names[a->kind] + 5;
    op->u.coll = (gpar__coll_args){(int)a->kind, c->bcomm, i, b->mem, m[i].off, a->count,
                                   (int)gpar_dtype_size(a->dtype), (int)a->op, a->root, 0};
    int mode = a->kind == GPAR_COLL_BROADCAST && a->root == i ? GPAR__READ : GPAR__READ | GPAR__WRITE;
    if (gpar__op_add_access(op, b, mode) || gpar__op_add_access(op, tok, GPAR__WRITE)) {
      gpar__op_discard(eng, op);
      pthread_mutex_unlock(&eng->mu);
      st = gpar__errorf(GPAR_ENOMEM, "out of host memory for an operation");
      break;
    }
    int wait = eng->cfg.synchronous && !gpar__in_op && i == c->nlocal - 1;
    gpar__op_submit(eng, op, wait);
    pthread_mutex_unlock(&eng->mu);
    if (wait) st = gpar__wait_op(eng, op);
  }
  return st;
}

/* ---------------------------------------------------------------- staged path */

/* The CPU reduction: reads srcs, writes the result buffer R and every host member, and the
 * tokens. Sources and outputs are host pointers (offsets applied). */
static int submit_reduce(gpar__comm *c, const gpar_coll *a, size_t count, const gpar_buffer *srcs, const size_t *soff,
                         int nsrc, gpar_buffer r, const gpar__comm_member *m) {
  gpar_engine *eng = c->eng;
  void **src = malloc(sizeof *src * (size_t)(nsrc + c->nlocal + 1));
  if (!src) return gpar__errorf(GPAR_ENOMEM, "out of host memory for an operation");
  void **dst = src + nsrc;
  int ndst = 0, st = GPAR_OK;
  pthread_mutex_lock(&eng->mu);
  gpar__op *op = gpar__op_new(eng);
  if (!op) {
    pthread_mutex_unlock(&eng->mu);
    free(src);
    return gpar__errorf(GPAR_ENOMEM, "out of host memory for an operation");
  }
  op->kind = GPAR__OP_REDUCE;
  op->dev = eng->host_dev;
  op->lane = GPAR__LANE_COMPUTE;
  op->name = "comm_reduce";
  op->u.reduce = (gpar__reduce_args){(int)gpar_dtype_size(a->dtype), (int)a->op, count, nsrc, 0, src, dst};
  gpar__buf *b;
  if ((st = gpar__buf_get_locked(eng, r, &b)) == GPAR_OK) {
    dst[ndst++] = b->mem;
    st = gpar__op_add_access(op, b, GPAR__WRITE);
  }
  for (int i = 0; i < nsrc && st == GPAR_OK; i++)
    if ((st = gpar__buf_get_locked(eng, srcs[i], &b)) == GPAR_OK) {
      src[i] = (char *)b->mem + soff[i];
      st = gpar__op_add_access(op, b, GPAR__READ);
    }
  for (int i = 0; i < c->nlocal && st == GPAR_OK; i++)
    if (m[i].host && (st = gpar__buf_get_locked(eng, m[i].h, &b)) == GPAR_OK) {
      dst[ndst++] = (char *)b->mem + m[i].off;
      st = gpar__op_add_access(op, b, GPAR__READ | GPAR__WRITE);
    }
  for (int i = 0; i < c->nlocal && st == GPAR_OK; i++)
    if ((st = gpar__buf_get_locked(eng, c->tokens[i], &b)) == GPAR_OK) st = gpar__op_add_access(op, b, GPAR__WRITE);
  op->u.reduce.ndst = ndst;
  if (st != GPAR_OK) {
    gpar__op_discard(eng, op); /* frees src with the op */
    pthread_mutex_unlock(&eng->mu);
    return st == GPAR_ENOMEM ? gpar__errorf(st, "out of host memory for an operation") : st;
  }
  int wait = eng->cfg.synchronous && !gpar__in_op;
  gpar__op_submit(eng, op, wait);
  pthread_mutex_unlock(&eng->mu);
  return wait ? gpar__wait_op(eng, op) : GPAR_OK;
}

/* Allreduce (and reduce-scatter, as an allreduce of the whole range) through host memory:
 * device members' ranges are copied into staging, reduced on the CPU into R, and R copied back.
 * Host members are read and written in place by the reduction. */
static int staged_allreduce(gpar__comm *c, const gpar_coll *a, const gpar__comm_member *m) {
  gpar_engine *eng = c->eng;
  size_t es = gpar_dtype_size(a->dtype);
  size_t count = a->count * (a->kind == GPAR_COLL_REDUCE_SCATTER ? (size_t)c->nmembers : 1), bytes = count * es;
  int n = c->nlocal, st;
  gpar_buffer r = {0}, *srcs = calloc((size_t)n, sizeof *srcs);
  size_t *soff = calloc((size_t)n, sizeof *soff);
  if (!srcs || !soff) {
    free(srcs);
    free(soff);
    return gpar__errorf(GPAR_ENOMEM, "out of host memory");
  }
  st = gpar_buffer_create(eng, GPAR_HOST, bytes, &r);
  for (int i = 0; i < n && st == GPAR_OK; i++) {
    if (m[i].host) {
      srcs[i] = m[i].h;
      soff[i] = m[i].off;
      continue;
    }
    if ((st = gpar_buffer_create(eng, GPAR_HOST, bytes, &srcs[i])) == GPAR_OK)
      st = gpar_copy(srcs[i], 0, m[i].h, m[i].off, bytes);
  }
  if (st == GPAR_OK) st = submit_reduce(c, a, count, srcs, soff, n, r, m);
  for (int i = 0; i < n && st == GPAR_OK; i++)
    if (!m[i].host) st = gpar_copy(m[i].h, m[i].off, r, 0, bytes);
  for (int i = 0; i < n; i++)
    if (!m[i].host && srcs[i].id) gpar_buffer_release(srcs[i]); /* freed once their ops are done */
  if (r.id) gpar_buffer_release(r);
  free(srcs);
  free(soff);
  return st;
}

/* Broadcast and all-gather are copies between the members (gpar_copy picks peer, staged or
 * host paths). */
static int staged_copies(gpar__comm *c, const gpar_coll *a, const gpar__comm_member *m) {
  size_t es = gpar_dtype_size(a->dtype), blk = a->count * es;
  int st = GPAR_OK;
  for (int i = 0; i < c->nlocal && st == GPAR_OK; i++)
    for (int j = 0; j < c->nlocal && st == GPAR_OK; j++) {
      if (i == j) continue;
      if (a->kind == GPAR_COLL_BROADCAST && i == a->root)
        st = gpar_copy(m[j].h, m[j].off, m[i].h, m[i].off, blk);
      else if (a->kind == GPAR_COLL_ALL_GATHER)
        st = gpar_copy(m[j].h, m[j].off + (size_t)i * blk, m[i].h, m[i].off + (size_t)i * blk, blk);
    }
  return st;
}

/* The staged path of a collective (comm.h). */
int gpar__comm_staged(gpar__comm *c, const gpar_coll *a, const gpar__comm_member *m) {
  int reduces = a->kind == GPAR_COLL_ALLREDUCE || a->kind == GPAR_COLL_REDUCE_SCATTER;
  return reduces ? staged_allreduce(c, a, m) : staged_copies(c, a, m);
}

/* ---------------------------------------------------------------- engine hooks */

/* Run a collective's op (called from the engine's dispatch switch). */
int gpar__comm_exec(gpar__device *dev, gpar__op *op) {
  if (op->kind == GPAR__OP_REDUCE) {
    if (!dev->ops->reduce) return gpar__errorf(GPAR_ENOTSUP, "%s: no CPU reduction", dev->ops->name);
    return dev->ops->reduce(dev->bdev, &op->u.reduce);
  }
  return dev->ops->coll(dev->bdev, op->lane, &op->u.coll);
}

/* Free what an op of this file owns (engine's op_free). */
void gpar__comm_op_free(gpar__op *op) {
  if (op->kind == GPAR__OP_REDUCE) {
    free(op->u.reduce.src); /* dst lives in the same block */
    op->u.reduce.src = NULL;
  }
}

/* Watchdog of backend collectives, called by the device's completion thread while the op is
 * pending: a collective that some member never joins (mismatched calls) waits forever inside
 * NCCL, which cannot cancel it. After GPAR_COMM_TIMEOUT seconds (default 300) it is named on
 * stderr, once, so the hang is never silent. */
void gpar__comm_watch(gpar__device *dev, gpar__op *op) {
  const double timeout = dev->eng->cfg.comm_timeout;
  if (op->u.coll.warned) return;
  double waited = gpar__now() - op->t_dispatch;
  if (waited < timeout) return;
  op->u.coll.warned = 1;
  fprintf(stderr,
          "libgpar: %s: collective %s (member %d, %zu elements) not complete after %.0f s: every member must issue "
          "a communicator's collectives in the same order; the vendor library cannot cancel it and still waits\n",
          dev->info.name, op->name, op->u.coll.rank, op->u.coll.count, waited);
}
