/* blas.c: the GEMM calls (gpar_sgemm, gpar_dgemm) and their kind: shapes, leading dimensions,
 * ranges and aliasing checked before anything is enqueued; the op runs on C's device through
 * the backend's gemm (cuBLAS / cublasLt, CLBlast, OpenBLAS). */
#include <stdlib.h>
#include <string.h>

#include "api/api.h"

_Static_assert(sizeof(gpar__gemm_args) <= GPAR__OP_PAYLOAD, "GEMM arguments fit an op's payload");

static int gemm_run(gpar__device *dev, gpar__op *op) {
  gpar__gemm_args *a = gpar__op_args(op);
  int st = gpar__fault(dev->eng, GPAR__FAULT_GEMM);
  if (st) return st;
  a->no_event = !op->need_event; /* OpenCL: no cl_event when nobody waits on this GEMM's own */
  return dev->ops->gemm(dev->bdev, op->lane, a);
}

static const gpar__op_kind kind_sgemm = {.name = "sgemm", .run = gemm_run};
static const gpar__op_kind kind_dgemm = {.name = "dgemm", .run = gemm_run};

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

/* Ranges, aliasing and devices of the three operands (b[0] = C, b[1] = A, b[2] = B). */
static int gemm_check_buffers(const gemm_call *g, const char *fn, gpar__buf *const *b) {
  int elem = g->elem, m = g->m, n = g->n, k = g->k, st = GPAR_OK;
  int ar = g->ta == GPAR_NO_TRANS ? m : k, ac = g->ta == GPAR_NO_TRANS ? k : m;
  int br = g->tb == GPAR_NO_TRANS ? k : n, bc = g->tb == GPAR_NO_TRANS ? n : k;
  size_t end[3] = {0, 0, 0};
  const size_t off[3] = {g->c_off, g->a_off, g->b_off};
  const int rows[3] = {m, ar, br}, cols[3] = {n, ac, bc}, ld[3] = {g->ldc, g->lda, g->ldb};
  const char *nm[3] = {"C", "A", "B"};
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
  return st;
}

/* Build and submit the op; the op takes over the references in b[] (set to NULL). */
static int gemm_submit(gpar_engine *eng, const gemm_call *g, gpar__buf **b) {
  gpar__op *op = gpar__op_new(eng, g->elem == 4 ? &kind_sgemm : &kind_dgemm,
                              b[0]->host_memory ? eng->host_dev : b[0]->dev, GPAR__LANE_COMPUTE);
  if (!op) return GPAR_ENOMEM;
  *(gpar__gemm_args *)gpar__op_args(op) =
      (gpar__gemm_args){g->elem, g->ta, g->tb, g->m, g->n, g->k, g->alpha, g->beta, b[1]->mem, g->a_off, g->lda,
                        b[2]->mem, g->b_off, g->ldb, b[0]->mem, g->c_off, g->ldc, 0};
  const int mode[3] = {g->beta == 0.0 ? GPAR__WRITE : GPAR__READ | GPAR__WRITE, GPAR__READ, GPAR__READ};
  int st = GPAR_OK;
  for (int i = 0; i < 3; i++) {
    if (st == GPAR_OK)
      st = gpar__op_use(op, b[i], mode[i]);
    else
      gpar__buf_put(b[i]);
    b[i] = NULL;
  }
  if (st != GPAR_OK) {
    gpar__op_discard(op);
    return st;
  }
  return gpar__api_submit(op);
}

static int gemm(const gemm_call *g) {
  const char *fn = g->elem == 4 ? "gpar_sgemm" : "gpar_dgemm";
  int st = gemm_check_args(g, fn);
  if (st) return st;
  gpar_engine *eng = gpar__engine_enter_buf(g->c, &st);
  if (!eng) return st;
  gpar__buf *b[3] = {NULL, NULL, NULL};
  const gpar_buffer h[3] = {g->c, g->a, g->b};
  for (int i = 0; i < 3 && st == GPAR_OK; i++) st = gpar__buf_get(eng, h[i], &b[i]);
  if (st == GPAR_OK) st = gemm_check_buffers(g, fn, b);
  /* m or n zero: nothing to compute (BLAS quick return), nothing enqueued */
  if (st == GPAR_OK && g->m != 0 && g->n != 0) st = gemm_submit(eng, g, b);
  for (int i = 0; i < 3; i++)
    if (b[i]) gpar__buf_put(b[i]);
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
