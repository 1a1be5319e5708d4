/* blas.c: the GEMM calls (gpar_sgemm, gpar_dgemm, their strided-batched forms and the
 * mixed-precision gpar_gemm_ex) and their kinds: shapes, leading dimensions and strides checked
 * first, then ranges, aliasing and devices (blas_operands.c) before anything is enqueued; the op
 * runs on C's device through the backend's gemm (cuBLAS / cublasLt, CLBlast, OpenBLAS) or, for
 * batches and f16/bf16 operands, its gemm_ex. */
#include <stdlib.h>
#include <string.h>

#include "api/blas_operands.h"

_Static_assert(sizeof(gpar__gemm_args) <= GPAR__OP_PAYLOAD, "GEMM arguments fit an op's payload");
_Static_assert(sizeof(gpar__gemm_ex_args) <= GPAR__OP_PAYLOAD, "general GEMM arguments fit an op's payload");

static int gemm_run(gpar__device *dev, gpar__op *op) {
  gpar__gemm_args *a = gpar__op_args(op);
  int st = gpar__fault(dev->eng, GPAR__FAULT_GEMM);
  if (st) return st;
  a->no_event = !op->need_event; /* OpenCL: no cl_event when nobody waits on this GEMM's own */
  return dev->ops->gemm(dev->bdev, op->lane, a);
}

static int gemm_ex_run(gpar__device *dev, gpar__op *op) {
  gpar__gemm_ex_args *a = gpar__op_args(op);
  int st = gpar__fault(dev->eng, GPAR__FAULT_GEMM);
  if (st) return st;
  a->g.no_event = !op->need_event;
  return dev->ops->gemm_ex(dev->bdev, op->lane, a);
}

static const gpar__op_kind kind_sgemm = {.name = "sgemm", .run = gemm_run};
static const gpar__op_kind kind_dgemm = {.name = "dgemm", .run = gemm_run};
static const gpar__op_kind kind_sgemm_batched = {.name = "sgemm_strided_batched", .run = gemm_ex_run};
static const gpar__op_kind kind_dgemm_batched = {.name = "dgemm_strided_batched", .run = gemm_ex_run};
static const gpar__op_kind kind_gemm_ex = {.name = "gemm_ex", .run = gemm_ex_run};

/* One GEMM call, whichever entry point made it. */
typedef struct gemm_call {
  const char *fn;
  int ab_type, c_type;
  int plain; /* gpar_sgemm / gpar_dgemm: the backend's gemm entry */
  gpar_trans ta, tb;
  int m, n, k;
  double alpha, beta;
  gpar_buffer a, b, c;
  size_t a_off, b_off, c_off;
  int lda, ldb, ldc;
  long long sa, sb, sc;
  int batch;
} gemm_call;

/* Shapes, leading dimensions, strides, the batch count and the types, before any handle. */
static int gemm_check_args(const gemm_call *g) {
  const char *fn = g->fn;
  int st;
  if ((st = gpar__blas_check_trans(fn, "trans_a", g->ta)) || (st = gpar__blas_check_trans(fn, "trans_b", g->tb)))
    return st;
  if (g->m < 0 || g->n < 0 || g->k < 0 || g->batch < 0)
    return gpar__errorf(GPAR_EINVAL, "%s: negative dimension (m=%d n=%d k=%d batch=%d)", fn, g->m, g->n, g->k, g->batch);
  if (g->sa < 0 || g->sb < 0 || g->sc < 0)
    return gpar__errorf(GPAR_EINVAL, "%s: negative stride (%lld, %lld, %lld)", fn, g->sa, g->sb, g->sc);
  const int ar = g->ta == GPAR_NO_TRANS ? g->m : g->k, br = g->tb == GPAR_NO_TRANS ? g->k : g->n;
  if ((st = gpar__blas_check_ld(fn, "lda", g->lda, ar)) || (st = gpar__blas_check_ld(fn, "ldb", g->ldb, br)) ||
      (st = gpar__blas_check_ld(fn, "ldc", g->ldc, g->m)))
    return st;
  const int half = g->ab_type == GPAR_HALF || g->ab_type == GPAR_BFLOAT16;
  if (!(half || g->ab_type == GPAR_FLOAT || g->ab_type == GPAR_DOUBLE) ||
      !(g->c_type == g->ab_type || (half && g->c_type == GPAR_FLOAT)))
    return gpar__errorf(GPAR_EINVAL, "%s: types A/B %d, C %d: A and B GPAR_HALF or GPAR_BFLOAT16 (or GPAR_FLOAT), C GPAR_FLOAT or their type",
                        fn, g->ab_type, g->c_type);
  return GPAR_OK;
}

/* The general form of the call, pointers from the prepared operands (NULL when not read). */
static gpar__gemm_ex_args gemm_args(const gemm_call *g, const gpar__blas_opnd *o) {
  gpar__gemm_ex_args x;
  memset(&x, 0, sizeof x);
  x.g = (gpar__gemm_args){.elem_size = (int)gpar_dtype_size((gpar_dtype)g->ab_type), .trans_a = g->ta,
                          .trans_b = g->tb, .m = g->m, .n = g->n, .k = g->k, .lda = g->lda, .ldb = g->ldb,
                          .ldc = g->ldc, .alpha = g->alpha, .beta = g->beta,
                          .a = o[1].mode ? o[1].b->mem : NULL, .b = o[2].mode ? o[2].b->mem : NULL,
                          .c = o[0].b->mem, .a_off = g->a_off, .b_off = g->b_off, .c_off = g->c_off};
  x.ab_type = g->ab_type;
  x.c_type = g->c_type;
  x.batch = g->batch;
  x.stride_a = g->sa;
  x.stride_b = g->sb;
  x.stride_c = g->sc;
  return x;
}

static const gpar__op_kind *gemm_kind(const gemm_call *g) {
  if (g->plain) return g->ab_type == GPAR_DOUBLE ? &kind_dgemm : &kind_sgemm;
  if (g->ab_type == GPAR_FLOAT || g->ab_type == GPAR_DOUBLE)
    return g->ab_type == GPAR_DOUBLE ? &kind_dgemm_batched : &kind_sgemm_batched;
  return &kind_gemm_ex;
}

static int gemm(const gemm_call *g) {
  int st = gemm_check_args(g);
  if (st) return st;
  gpar_engine *eng = gpar__engine_enter_buf(g->c, &st);
  if (!eng) return st;
  const int ar = g->ta == GPAR_NO_TRANS ? g->m : g->k, ac = g->ta == GPAR_NO_TRANS ? g->k : g->m;
  const int br = g->tb == GPAR_NO_TRANS ? g->k : g->n, bc = g->tb == GPAR_NO_TRANS ? g->n : g->k;
  const int reads = g->alpha != 0.0 && g->k != 0 ? GPAR__READ : 0; /* A and B unread otherwise */
  const size_t es = gpar_dtype_size((gpar_dtype)g->ab_type), cs = gpar_dtype_size((gpar_dtype)g->c_type);
  gpar__blas_opnd o[3] = {
      {"C", g->c, g->c_off, cs, g->m, g->n, g->ldc, g->sc, g->batch, g->beta == 0.0 ? GPAR__WRITE : GPAR__READ | GPAR__WRITE, NULL, 0},
      {"A", g->a, g->a_off, es, ar, ac, g->lda, g->sa, g->batch, reads, NULL, 0},
      {"B", g->b, g->b_off, es, br, bc, g->ldb, g->sb, g->batch, reads, NULL, 0}};
  st = gpar__blas_prepare(eng, g->fn, o, 3);
  /* BLAS quick return: nothing to compute, or C = 1 * C; nothing enqueued */
  const int quick = g->m == 0 || g->n == 0 || g->batch == 0 || (!reads && g->beta == 1.0);
  if (st == GPAR_OK && quick) {
    gpar__blas_release(o, 3);
  } else if (st == GPAR_OK && !g->plain && !gpar__blas_device(eng, o)->ops->gemm_ex) {
    st = gpar__errorf(GPAR_ENOTSUP, "%s: the %s backend has no general GEMM", g->fn, gpar__blas_device(eng, o)->ops->name);
    gpar__blas_release(o, 3);
  } else if (st == GPAR_OK) {
    gpar__gemm_ex_args x = gemm_args(g, o);
    st = g->plain ? gpar__blas_submit(eng, gemm_kind(g), &x.g, sizeof x.g, o, 3)
                  : gpar__blas_submit(eng, gemm_kind(g), &x, sizeof x, o, 3);
  }
  gpar__engine_leave(eng);
  return st;
}

/* The public GEMM entries: each fills a gemm_call with its types and hands it to gemm(). */
GPAR_API int gpar_sgemm(gpar_trans trans_a, gpar_trans trans_b, int m, int n, int k, float alpha, gpar_buffer a,
                        size_t a_off, int lda, gpar_buffer b, size_t b_off, int ldb, float beta, gpar_buffer c,
                        size_t c_off, int ldc) {
  gemm_call g = {"gpar_sgemm", GPAR_FLOAT, GPAR_FLOAT, 1, trans_a, trans_b, m, n, k, alpha, beta, a, b, c,
                 a_off, b_off, c_off, lda, ldb, ldc, 0, 0, 0, 1};
  return gemm(&g);
}

GPAR_API int gpar_dgemm(gpar_trans trans_a, gpar_trans trans_b, int m, int n, int k, double alpha, gpar_buffer a,
                        size_t a_off, int lda, gpar_buffer b, size_t b_off, int ldb, double beta, gpar_buffer c,
                        size_t c_off, int ldc) {
  gemm_call g = {"gpar_dgemm", GPAR_DOUBLE, GPAR_DOUBLE, 1, trans_a, trans_b, m, n, k, alpha, beta, a, b, c,
                 a_off, b_off, c_off, lda, ldb, ldc, 0, 0, 0, 1};
  return gemm(&g);
}

GPAR_API int gpar_sgemm_strided_batched(gpar_trans trans_a, gpar_trans trans_b, int m, int n, int k, float alpha,
                                        gpar_buffer a, size_t a_off, int lda, long long stride_a, gpar_buffer b,
                                        size_t b_off, int ldb, long long stride_b, float beta, gpar_buffer c,
                                        size_t c_off, int ldc, long long stride_c, int batch) {
  gemm_call g = {"gpar_sgemm_strided_batched", GPAR_FLOAT, GPAR_FLOAT, 0, trans_a, trans_b, m, n, k, alpha, beta,
                 a, b, c, a_off, b_off, c_off, lda, ldb, ldc, stride_a, stride_b, stride_c, batch};
  return gemm(&g);
}

GPAR_API int gpar_dgemm_strided_batched(gpar_trans trans_a, gpar_trans trans_b, int m, int n, int k, double alpha,
                                        gpar_buffer a, size_t a_off, int lda, long long stride_a, gpar_buffer b,
                                        size_t b_off, int ldb, long long stride_b, double beta, gpar_buffer c,
                                        size_t c_off, int ldc, long long stride_c, int batch) {
  gemm_call g = {"gpar_dgemm_strided_batched", GPAR_DOUBLE, GPAR_DOUBLE, 0, trans_a, trans_b, m, n, k, alpha, beta,
                 a, b, c, a_off, b_off, c_off, lda, ldb, ldc, stride_a, stride_b, stride_c, batch};
  return gemm(&g);
}

GPAR_API int gpar_gemm_ex(gpar_trans trans_a, gpar_trans trans_b, int m, int n, int k, float alpha, gpar_dtype ab_type,
                          gpar_buffer a, size_t a_off, int lda, long long stride_a, gpar_buffer b, size_t b_off,
                          int ldb, long long stride_b, float beta, gpar_dtype c_type, gpar_buffer c, size_t c_off,
                          int ldc, long long stride_c, int batch) {
  gemm_call g = {"gpar_gemm_ex", (int)ab_type, (int)c_type, 0, trans_a, trans_b, m, n, k, alpha, beta, a, b, c,
                 a_off, b_off, c_off, lda, ldb, ldc, stride_a, stride_b, stride_c, batch};
  if (ab_type == GPAR_DOUBLE) /* f32 scalars and sums: gpar_dgemm_strided_batched is the double form */
    return gpar__errorf(GPAR_EINVAL, "gpar_gemm_ex: GPAR_DOUBLE operands (use gpar_dgemm_strided_batched)");
  return gemm(&g);
}
