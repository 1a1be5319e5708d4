/* ops.c: the public calls that compute (fill, GEMM, user functions) and what every op call
 * shares: range checks, building an op with its accesses, and submitting it (waiting for it in
 * synchronous mode). Each call checks every argument before anything is enqueued, picks the
 * device and lane that runs it, declares its read and write sets and hands it to deps.c.
 * Transfers are in transfer.c. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---------------------------------------------------------------- shared by the op calls */

int gpar__check_range(const gpar__buf *b, size_t off, size_t bytes, const char *what) {
  if (bytes == 0) return gpar__errorf(GPAR_EINVAL, "%s: size is 0", what);
  if (off > b->bytes || bytes > b->bytes - off)
    return gpar__errorf(GPAR_ERANGE, "%s: range [%zu, +%zu) exceeds the buffer's %zu bytes", what, off, bytes,
                        b->bytes);
  return GPAR_OK;
}

gpar__op *gpar__op_build_locked(gpar_engine *eng, int kind, gpar__device *dev, int lane, const char *name) {
  gpar__op *op = gpar__op_new_locked(eng);
  if (!op) {
    gpar__errorf(GPAR_ENOMEM, "out of host memory for an operation");
    return NULL;
  }
  op->kind = kind;
  op->dev = dev;
  op->lane = lane;
  op->name = name;
  return op;
}

/* Add an access; on failure the op is discarded. */
int gpar__op_access_locked(gpar_engine *eng, gpar__op *op, gpar__buf *b, int mode) {
  if (gpar__op_add_access(op, b, mode) == GPAR_OK) return GPAR_OK;
  gpar__op_discard_locked(eng, op);
  return gpar__errorf(GPAR_ENOMEM, "out of host memory for an operation");
}

/* Submit a built op. In synchronous mode, outside ops, *sync gets a reference to wait on
 * (gpar__sync_wait) once the engine lock is released. */
int gpar__submit_locked(gpar_engine *eng, gpar__op *op, gpar__op **sync) {
  int keep = eng->cfg.synchronous && !gpar__in_op && !gpar__graph_recording(eng);
  int st = gpar__op_submit_locked(eng, op, keep);
  if (st == GPAR_OK && keep) *sync = op;
  return st;
}

int gpar__sync_wait(gpar_engine *eng, int st, gpar__op *sync) { return sync ? gpar__wait_op(eng, sync) : st; }

/* ---------------------------------------------------------------- fill */

static int fill_locked(gpar_engine *eng, gpar_buffer dst, size_t off, size_t bytes, unsigned char value,
                       gpar__op **sync) {
  gpar__buf *b;
  int st;
  if ((st = gpar__buf_get_locked(eng, dst, &b)) || (st = gpar__check_range(b, off, bytes, "gpar_fill"))) return st;
  gpar__op *op = gpar__op_build_locked(eng, GPAR__OP_FILL, b->host_memory ? eng->host_dev : b->dev,
                                       GPAR__LANE_COMPUTE, "fill");
  if (!op) return GPAR_ENOMEM;
  op->u.fill.mem = b->mem;
  op->u.fill.off = off;
  op->u.fill.bytes = bytes;
  op->u.fill.value = value;
  if ((st = gpar__op_access_locked(eng, op, b, GPAR__WRITE))) return st;
  return gpar__submit_locked(eng, op, sync);
}

GPAR_API int gpar_fill(gpar_buffer dst, size_t off, size_t bytes, unsigned char value) {
  int st;
  gpar__op *sync = NULL;
  gpar_engine *eng = gpar__engine_enter_buf(dst, &st);
  if (!eng) return st;
  pthread_mutex_lock(&eng->mu);
  st = fill_locked(eng, dst, off, bytes, value, &sync);
  pthread_mutex_unlock(&eng->mu);
  st = gpar__sync_wait(eng, st, sync);
  gpar__engine_leave(eng);
  return st;
}

/* ---------------------------------------------------------------- GEMM */

/* Element range [first, last) of a column-major rows x cols matrix with leading dimension ld
 * at element offset off; 0 on overflow. */
static int matrix_extent(size_t off, int rows, int cols, int ld, size_t *end) {
  size_t e = (size_t)(cols - 1) * (size_t)ld;
  if (cols > 1 && e / (size_t)(cols - 1) != (size_t)ld) return 0;
  if (e > SIZE_MAX - (size_t)rows || e + (size_t)rows > SIZE_MAX - off) return 0;
  *end = off + e + (size_t)rows;
  return 1;
}

typedef struct gemm_call {
  int elem;
  gpar_trans ta, tb;
  int m, n, k;
  double alpha, beta;
  gpar_buffer a, b, c;
  size_t a_off, b_off, c_off;
  int lda, ldb, ldc;
} gemm_call;

/* Shapes and leading dimensions, before any handle is looked at. */
static int gemm_check_args(const gemm_call *g, const char *fn) {
  gpar_trans ta = g->ta, tb = g->tb;
  int m = g->m, n = g->n, k = g->k, lda = g->lda, ldb = g->ldb, ldc = g->ldc;
  if ((ta != GPAR_NO_TRANS && ta != GPAR_TRANS) || (tb != GPAR_NO_TRANS && tb != GPAR_TRANS))
    return gpar__errorf(GPAR_EINVAL, "%s: transpose flag is neither GPAR_NO_TRANS nor GPAR_TRANS", fn);
  if (m < 0 || n < 0 || k < 0) return gpar__errorf(GPAR_EINVAL, "%s: negative dimension (m=%d n=%d k=%d)", fn, m, n, k);
  int ar = ta == GPAR_NO_TRANS ? m : k, br = tb == GPAR_NO_TRANS ? k : n;
  if (lda < (ar > 1 ? ar : 1)) return gpar__errorf(GPAR_EINVAL, "%s: lda=%d < max(1, %d)", fn, lda, ar);
  if (ldb < (br > 1 ? br : 1)) return gpar__errorf(GPAR_EINVAL, "%s: ldb=%d < max(1, %d)", fn, ldb, br);
  if (ldc < (m > 1 ? m : 1)) return gpar__errorf(GPAR_EINVAL, "%s: ldc=%d < max(1, %d)", fn, ldc, m);
  return GPAR_OK;
}

static int gemm_locked(gpar_engine *eng, const gemm_call *g, const char *fn, gpar__op **sync) {
  int elem = g->elem, m = g->m, n = g->n, k = g->k;
  int ar = g->ta == GPAR_NO_TRANS ? m : k, ac = g->ta == GPAR_NO_TRANS ? k : m;
  int br = g->tb == GPAR_NO_TRANS ? k : n, bc = g->tb == GPAR_NO_TRANS ? n : k;
  size_t c_off = g->c_off, a_off = g->a_off, b_off = g->b_off;
  int lda = g->lda, ldb = g->ldb, ldc = g->ldc;
  gpar__buf *b[3];
  int st;
  if ((st = gpar__buf_get_locked(eng, g->c, &b[0])) || (st = gpar__buf_get_locked(eng, g->a, &b[1])) ||
      (st = gpar__buf_get_locked(eng, g->b, &b[2])))
    return st;
  size_t end[3] = {0, 0, 0};
  const size_t off[3] = {c_off, a_off, b_off};
  const int rows[3] = {m, ar, br}, cols[3] = {n, ac, bc}, ld[3] = {ldc, lda, ldb};
  const char *nm[3] = {"C", "A", "B"};
  int empty = m == 0 || n == 0;
  for (int i = 0; i < 3 && st == GPAR_OK; i++) {
    if (rows[i] == 0 || cols[i] == 0) { /* no element read (k == 0, m == 0, n == 0): BLAS view, */
      end[i] = off[i];                    /* the offset is still an argument and must lie in the buffer */
      if (off[i] > b[i]->bytes / (size_t)elem)
        st = gpar__errorf(GPAR_ERANGE, "%s: matrix %s (%dx%d) offset %zu is past its buffer of %zu elements", fn, nm[i],
                          rows[i], cols[i], off[i], b[i]->bytes / (size_t)elem);
      continue;
    }
    if (!matrix_extent(off[i], rows[i], cols[i], ld[i], &end[i]) || end[i] > b[i]->bytes / (size_t)elem)
      st = gpar__errorf(GPAR_ERANGE, "%s: matrix %s (%dx%d, ld %d, offset %zu) exceeds its buffer of %zu elements", fn,
                        nm[i], rows[i], cols[i], ld[i], off[i], b[i]->bytes / (size_t)elem);
  }
  for (int i = 1; i < 3 && st == GPAR_OK; i++)
    if (b[i] == b[0] && end[i] > off[i] && end[0] > off[0] && off[i] < end[0] && off[0] < end[i])
      st = gpar__errorf(GPAR_EALIAS, "%s: C overlaps %s", fn, nm[i]);
  for (int i = 1; i < 3 && st == GPAR_OK; i++)
    if (b[i]->host_memory != b[0]->host_memory || (!b[0]->host_memory && b[i]->dev != b[0]->dev))
      st = gpar__errorf(GPAR_EINVAL, "%s: %s is not on C's device (GEMM runs on C's device)", fn, nm[i]);
  if (st || empty) return st; /* m or n zero: nothing to compute (BLAS quick return) */
  gpar__op *op = gpar__op_build_locked(eng, GPAR__OP_GEMM, b[0]->host_memory ? eng->host_dev : b[0]->dev,
                                       GPAR__LANE_COMPUTE, elem == 4 ? "sgemm" : "dgemm");
  if (!op) return GPAR_ENOMEM;
  op->u.gemm = (gpar__gemm_args){elem, g->ta, g->tb, m, n, k, g->alpha, g->beta, b[1]->mem, a_off, lda,
                                 b[2]->mem, b_off, ldb, b[0]->mem, c_off, ldc, 0};
  if ((st = gpar__op_access_locked(eng, op, b[1], GPAR__READ)) || (st = gpar__op_access_locked(eng, op, b[2], GPAR__READ)) ||
      (st = gpar__op_access_locked(eng, op, b[0], g->beta == 0.0 ? GPAR__WRITE : GPAR__READ | GPAR__WRITE)))
    return st;
  return gpar__submit_locked(eng, op, sync);
}

static int gemm(const gemm_call *g) {
  const char *fn = g->elem == 4 ? "gpar_sgemm" : "gpar_dgemm";
  int st = gemm_check_args(g, fn);
  if (st) return st;
  gpar__op *sync = NULL;
  gpar_engine *eng = gpar__engine_enter_buf(g->c, &st);
  if (!eng) return st;
  pthread_mutex_lock(&eng->mu);
  st = gemm_locked(eng, g, fn, &sync);
  pthread_mutex_unlock(&eng->mu);
  st = gpar__sync_wait(eng, st, sync);
  gpar__engine_leave(eng);
  return st;
}

GPAR_API int gpar_sgemm(gpar_trans trans_a, gpar_trans trans_b, int m, int n, int k, float alpha, gpar_buffer a,
                        size_t a_off, int lda, gpar_buffer b, size_t b_off, int ldb, float beta, gpar_buffer c,
                        size_t c_off, int ldc) {
  gemm_call g = {4, trans_a, trans_b, m, n, k, alpha, beta, a, b, c, a_off, b_off, c_off, lda, ldb, ldc};
  return gemm(&g);
}

GPAR_API int gpar_dgemm(gpar_trans trans_a, gpar_trans trans_b, int m, int n, int k, double alpha, gpar_buffer a,
                        size_t a_off, int lda, gpar_buffer b, size_t b_off, int ldb, double beta, gpar_buffer c,
                        size_t c_off, int ldc) {
  gemm_call g = {8, trans_a, trans_b, m, n, k, alpha, beta, a, b, c, a_off, b_off, c_off, lda, ldb, ldc};
  return gemm(&g);
}

/* ---------------------------------------------------------------- user functions */

static int user_locked(gpar_engine *eng, gpar__device *dev, gpar_user_fn fn, void *arg, const gpar_buffer *reads,
                       int nreads, const gpar_buffer *writes, int nwrites, gpar__op **sync) {
  gpar__op *op = gpar__op_build_locked(eng, GPAR__OP_USER, dev, GPAR__LANE_COMPUTE, "user");
  if (!op) return GPAR_ENOMEM;
  op->u.user.fn = fn;
  op->u.user.arg = arg;
  for (int i = 0; i < nreads + nwrites; i++) {
    gpar__buf *b;
    int w = i >= nreads, st;
    if ((st = gpar__buf_get_locked(eng, w ? writes[i - nreads] : reads[i], &b))) {
      gpar__op_discard_locked(eng, op);
      return st;
    }
    if ((st = gpar__op_access_locked(eng, op, b, w ? GPAR__WRITE : GPAR__READ))) return st;
  }
  return gpar__submit_locked(eng, op, sync);
}

GPAR_API int gpar_submit(gpar_engine *e, int dev, gpar_user_fn fn, void *arg, const gpar_buffer *reads, int nreads,
                         const gpar_buffer *writes, int nwrites) {
  int st;
  gpar__op *sync = NULL;
  gpar_engine *eng = gpar__engine_enter(e, &st);
  if (!eng) return st;
  if (!fn)
    st = gpar__errorf(GPAR_EINVAL, "gpar_submit: fn is NULL");
  else if (nreads < 0 || nwrites < 0 || (nreads && !reads) || (nwrites && !writes))
    st = gpar__errorf(GPAR_EINVAL, "gpar_submit: bad read/write set (%d reads at %p, %d writes at %p)", nreads,
                      (const void *)reads, nwrites, (const void *)writes);
  else if (dev != GPAR_HOST && (dev < 0 || dev >= eng->ndev))
    st = gpar__errorf(GPAR_ENODEV, "gpar_submit: device %d does not exist (%d devices)", dev, eng->ndev);
  if (st == GPAR_OK) {
    pthread_mutex_lock(&eng->mu);
    st = user_locked(eng, dev == GPAR_HOST ? eng->host_dev : eng->devs[dev], fn, arg, reads, nreads, writes, nwrites,
                     &sync);
    pthread_mutex_unlock(&eng->mu);
  }
  st = gpar__sync_wait(eng, st, sync);
  gpar__engine_leave(eng);
  return st;
}
