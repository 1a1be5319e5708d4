/* collectives.c: the public collectives and their argument checks. A checked collective is
 * expressed as engine ops, so the engine's buffer tracking orders it with all other work and
 * carries failures to its outputs, by one of three paths:
 * - backend path (CUDA members with NCCL): one member op per member on that device's peer
 *   lane, issued by the device's own dispatcher thread (paths.c). Each member op writes the
 *   member's token, so the engine's write-after-write ordering issues them in program order on
 *   every member; all members of one collective are submitted at once, under issue_mu;
 * - staged path (everything else): copies into GPAR_HOST staging, one reduction op on the CPU
 *   (OpenBLAS axpy for sums), copies back: a small DAG of ordinary engine ops (paths.c);
 * - transport path (libgpar_mpi): the transport builds the ops through the public API. */
#include <stdio.h>
#include <stdlib.h>

#include "comm/comm.h"

/* ---------------------------------------------------------------- argument checks */

/* Check a collective's arguments; fill m[] (nlocal entries). Nothing is enqueued. */
static int coll_check(gpar__comm *c, const gpar_coll *a, gpar__comm_member *m) {
  const char *fn = gpar__coll_names[a->kind];
  size_t es = gpar_dtype_size(a->dtype);
  if (!a->bufs) return gpar__errorf(GPAR_EINVAL, "%s: bufs is NULL", fn);
  if (a->count == 0) return gpar__errorf(GPAR_EINVAL, "%s: count is 0", fn);
  if (!es) return gpar__errorf(GPAR_EINVAL, "%s: unknown element type %d", fn, (int)a->dtype);
  if ((a->kind == GPAR_COLL_ALLREDUCE || a->kind == GPAR_COLL_REDUCE_SCATTER) &&
      (a->op != GPAR_SUM && a->op != GPAR_MAX && a->op != GPAR_MIN))
    return gpar__errorf(GPAR_EINVAL, "%s: unknown reduction %d", fn, (int)a->op);
  if (a->kind == GPAR_COLL_BROADCAST && (a->root < 0 || a->root >= c->nmembers))
    return gpar__errorf(GPAR_EINVAL, "%s: root %d is not a member (0..%d)", fn, a->root, c->nmembers - 1);
  size_t blocks = a->kind == GPAR_COLL_REDUCE_SCATTER || a->kind == GPAR_COLL_ALL_GATHER ? (size_t)c->nmembers : 1;
  if (a->count > SIZE_MAX / es / blocks) return gpar__errorf(GPAR_ERANGE, "%s: count %zu overflows", fn, a->count);
  size_t bytes = a->count * blocks * es;
  for (int i = 0; i < c->nlocal; i++) {
    gpar__buf *b;
    int st = gpar__buf_get(c->eng, a->bufs[i], &b);
    if (st) {
      char why[256];
      snprintf(why, sizeof why, "%s", gpar__error_msg()); /* not formatted into itself */
      return gpar__errorf(st, "%s: buffer of member %d: %s", fn, c->first_local + i, why);
    }
    gpar__device *want = c->eng->devs[c->devs[i]];
    size_t off = a->offs ? a->offs[i] : 0;
    if (b->dev != want && !(b->dev == NULL && want == c->eng->host_dev))
      st = gpar__errorf(GPAR_ENODEV, "%s: buffer of member %d is on device %d, not in the communicator's member %d (device %d)",
                        fn, c->first_local + i, b->dev ? b->dev->index : GPAR_HOST, c->first_local + i, c->devs[i]);
    else if (off > b->bytes / es || bytes > b->bytes - off * es)
      st = gpar__errorf(GPAR_ERANGE, "%s: member %d: elements [%zu, +%zu) exceed the buffer's %zu bytes", fn,
                        c->first_local + i, off, a->count * blocks, b->bytes);
    m[i].h = a->bufs[i];
    m[i].off = off * es;
    m[i].host = b->host_memory;
    gpar__buf_put(b);
    if (st) return st;
    for (int j = 0; j < i; j++)
      if (m[j].h.id == m[i].h.id && m[j].h.serial == m[i].h.serial)
        return gpar__errorf(GPAR_EALIAS, "%s: members %d and %d share one buffer", fn, j, i);
  }
  return GPAR_OK;
}

/* ---------------------------------------------------------------- the collectives */

static int collective(gpar_comm h, const gpar_coll *a) {
  const char *fn = gpar__coll_names[a->kind];
  gpar__comm *c;
  int st = gpar__comm_get(h, fn, &c);
  if (st) return st;
  /* Counted as a call inside the engine, so a concurrent shutdown frees nothing meanwhile. */
  gpar_engine *eng = gpar__engine_enter(c->token, &st);
  if (!eng) {
    gpar__comm_put(c);
    return st;
  }
  gpar__comm_member *m = calloc((size_t)c->nlocal, sizeof *m);
  size_t *offs = calloc((size_t)c->nlocal, sizeof *offs);
  if (!m || !offs)
    st = gpar__errorf(GPAR_ENOMEM, "out of host memory");
  else if (gpar__sink_active(eng))
    st = gpar__errorf(GPAR_ERECORDING, "%s called while this thread records a graph (collectives are not recorded)", fn);
  else
    st = coll_check(c, a, m);
  if (st == GPAR_OK) {
    pthread_mutex_lock(&c->issue_mu); /* one collective at a time per communicator, whole */
    if (c->t.collective) {
      gpar_coll t = *a;
      for (int i = 0; i < c->nlocal; i++) offs[i] = a->offs ? a->offs[i] : 0;
      t.offs = offs;
      st = c->t.collective(c->ctx, &t);
    } else if (c->bops) {
      st = gpar__comm_backend(c, a, m);
    } else {
      st = gpar__comm_staged(c, a, m);
    }
    pthread_mutex_unlock(&c->issue_mu);
  }
  free(m);
  free(offs);
  gpar__engine_leave(eng);
  gpar__comm_put(c);
  return st;
}

GPAR_API int gpar_allreduce(gpar_comm comm, const gpar_buffer *bufs, const size_t *offs, size_t count,
                            gpar_dtype dtype, gpar_redop op) {
  gpar_coll a = {GPAR_COLL_ALLREDUCE, bufs, offs, count, dtype, op, 0};
  return collective(comm, &a);
}

GPAR_API int gpar_broadcast(gpar_comm comm, const gpar_buffer *bufs, const size_t *offs, size_t count,
                            gpar_dtype dtype, int root) {
  gpar_coll a = {GPAR_COLL_BROADCAST, bufs, offs, count, dtype, GPAR_SUM, root};
  return collective(comm, &a);
}

GPAR_API int gpar_reduce_scatter(gpar_comm comm, const gpar_buffer *bufs, const size_t *offs, size_t count,
                                 gpar_dtype dtype, gpar_redop op) {
  gpar_coll a = {GPAR_COLL_REDUCE_SCATTER, bufs, offs, count, dtype, op, 0};
  return collective(comm, &a);
}

GPAR_API int gpar_all_gather(gpar_comm comm, const gpar_buffer *bufs, const size_t *offs, size_t count,
                             gpar_dtype dtype) {
  gpar_coll a = {GPAR_COLL_ALL_GATHER, bufs, offs, count, dtype, GPAR_SUM, 0};
  return collective(comm, &a);
}
