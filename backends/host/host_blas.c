/* host_blas.c: BLAS on the CPU device through OpenBLAS's CBLAS: GEMM (plain, strided batches
 * as a loop of cblas_sgemm/dgemm, f16/bf16 operands), GEMV, AXPY, SCAL and DOT. Each op runs on
 * one CPU worker with OpenBLAS single-threaded (host_backend.c): a batch is one op, so its
 * entries run one after the other on that worker, and independent ops fill the other workers.
 * bf16 GEMMs use cblas_sbgemm when configure found it in this OpenBLAS (GPAR_HAVE_CBLAS_SBGEMM;
 * Debian's 0.3.21 declares it but does not build it), else, like f16, the operands are converted
 * to f32 (gpar_convert, round to nearest even back) and cblas_sgemm runs. Where a BLAS rule is
 * not the same in every OpenBLAS (scal and gemv with a zero factor keep NaN in some versions),
 * the zeros are written here. */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "host_internal.h"

static enum CBLAS_TRANSPOSE cblas_trans(gpar_trans t) { return t == GPAR_TRANS ? CblasTrans : CblasNoTrans; }

/* ---------------------------------------------------------------- GEMM */

/* alpha == 0 or k == 0: C = beta * C without touching A or B (BLAS: they are not referenced,
 * so NaN or garbage there stays out; no pointer into them is even formed). beta == 0 writes
 * exact zeros, so NaN in C does not survive either. Some OpenBLAS builds read A and B here. */
static void host_gemm_scale_c(const gpar__gemm_args *g) {
  for (int j = 0; j < g->n; j++) {
    const size_t col = g->c_off + (size_t)j * (size_t)g->ldc;
    if (g->elem_size == 4) {
      float *c = (float *)g->c + col;
      const float beta = (float)g->beta;
      for (int i = 0; i < g->m; i++) c[i] = beta == 0.0f ? 0.0f : beta * c[i];
    } else {
      double *c = (double *)g->c + col;
      for (int i = 0; i < g->m; i++) c[i] = g->beta == 0.0 ? 0.0 : g->beta * c[i];
    }
  }
}

int gpar__host_gemm(gpar__bdev *dev, int lane, const gpar__gemm_args *g) {
  if (g->alpha == 0.0 || g->k == 0) {
    if (g->beta != 1.0) host_gemm_scale_c(g);
    return GPAR_OK;
  }
  enum CBLAS_TRANSPOSE ta = cblas_trans(g->trans_a), tb = cblas_trans(g->trans_b);
  if (g->elem_size == 4)
    cblas_sgemm(CblasColMajor, ta, tb, g->m, g->n, g->k, (float)g->alpha, (const float *)g->a + g->a_off, g->lda,
                (const float *)g->b + g->b_off, g->ldb, (float)g->beta, (float *)g->c + g->c_off, g->ldc);
  else
    cblas_dgemm(CblasColMajor, ta, tb, g->m, g->n, g->k, g->alpha, (const double *)g->a + g->a_off, g->lda,
                (const double *)g->b + g->b_off, g->ldb, g->beta, (double *)g->c + g->c_off, g->ldc);
  return GPAR_OK;
}

/* A rows x cols matrix of f16/bf16 (ld, element offset off) to packed f32 (ld = rows), or back
 * (only its rows x cols elements are written). */
static void mat_to_f32(float *dst, gpar_dtype t, const void *src, size_t off, int rows, int cols, int ld) {
  for (int j = 0; j < cols; j++)
    gpar_convert(dst + (size_t)j * (size_t)rows, GPAR_FLOAT, (const uint16_t *)src + off + (size_t)j * (size_t)ld, t,
                 (size_t)rows);
}
static void mat_from_f32(void *dst, gpar_dtype t, size_t off, int ld, const float *src, int rows, int cols) {
  for (int j = 0; j < cols; j++)
    gpar_convert((uint16_t *)dst + off + (size_t)j * (size_t)ld, t, src + (size_t)j * (size_t)rows, GPAR_FLOAT,
                 (size_t)rows);
}

/* bf16 A and B of g straight into f's f32 C, summed in f32 (cblas_sbgemm) where this OpenBLAS
 * has it; HOST_SBGEMM says whether it does. */
#ifdef GPAR_HAVE_CBLAS_SBGEMM
#define HOST_SBGEMM 1
static void host_sbgemm(const gpar__gemm_args *f, const gpar__gemm_args *g) {
  cblas_sbgemm(CblasColMajor, cblas_trans(g->trans_a), cblas_trans(g->trans_b), g->m, g->n, g->k, (float)g->alpha,
               (const bfloat16 *)g->a + g->a_off, g->lda, (const bfloat16 *)g->b + g->b_off, g->ldb, (float)f->beta,
               (float *)f->c + f->c_off, f->ldc);
}
#else
#define HOST_SBGEMM 0
static void host_sbgemm(const gpar__gemm_args *f, const gpar__gemm_args *g) {
  (void)f;
  (void)g;
}
#endif

/* Scratch of one mixed-precision call: f32 copies of A, B and (C of a half type) C. */
typedef struct mixed_scratch {
  float *a, *b, *c;
} mixed_scratch;

/* One entry g (offsets of that entry) with f16/bf16 A and B, C of c_type; s holds room for it
 * (and the f32 copies of the previous entry's A and B, reused unless fresh_a / fresh_b).
 * A C of a half type is computed in s->c (f32, ld m: converted from C first unless beta == 0)
 * and rounded back into C's m x n elements. */
static void host_gemm_mixed(const gpar__gemm_args *g, int ab_type, int c_type, const mixed_scratch *s, int fresh_a,
                            int fresh_b) {
  const int m = g->m, n = g->n, k = g->k, half_c = c_type != GPAR_FLOAT;
  const int ar = g->trans_a == GPAR_NO_TRANS ? m : k, ac = g->trans_a == GPAR_NO_TRANS ? k : m;
  const int br = g->trans_b == GPAR_NO_TRANS ? k : n, bc = g->trans_b == GPAR_NO_TRANS ? n : k;
  gpar__gemm_args f = *g; /* the f32 GEMM that runs */
  f.elem_size = 4;
  f.c = half_c ? s->c : g->c;
  f.c_off = half_c ? 0 : g->c_off;
  f.ldc = half_c ? m : g->ldc;
  if (half_c && g->beta != 0.0) mat_to_f32(s->c, (gpar_dtype)c_type, g->c, g->c_off, m, n, g->ldc);
  if (g->alpha == 0.0 || k == 0) {
    host_gemm_scale_c(&f);
  } else if (HOST_SBGEMM && ab_type == GPAR_BFLOAT16) {
    if (g->beta == 0.0) { /* exact zeros first: sbgemm's beta pass is not the same in every version */
      f.beta = 0.0;
      host_gemm_scale_c(&f);
    }
    host_sbgemm(&f, g);
  } else {
    if (fresh_a) mat_to_f32(s->a, (gpar_dtype)ab_type, g->a, g->a_off, ar, ac, g->lda);
    if (fresh_b) mat_to_f32(s->b, (gpar_dtype)ab_type, g->b, g->b_off, br, bc, g->ldb);
    f.a = s->a, f.a_off = 0, f.lda = ar > 1 ? ar : 1;
    f.b = s->b, f.b_off = 0, f.ldb = br > 1 ? br : 1;
    gpar__host_gemm(NULL, 0, &f);
  }
  if (half_c) mat_from_f32(g->c, (gpar_dtype)c_type, g->c_off, g->ldc, s->c, m, n);
}

int gpar__host_gemm_ex(gpar__bdev *dev, int lane, const gpar__gemm_ex_args *x) {
  const int mixed = x->ab_type == GPAR_HALF || x->ab_type == GPAR_BFLOAT16;
  mixed_scratch s = {NULL, NULL, NULL};
  if (mixed) {
    const size_t m = (size_t)x->g.m, n = (size_t)x->g.n, k = (size_t)x->g.k;
    s.a = malloc(sizeof(float) * (m * k + k * n + (x->c_type != GPAR_FLOAT ? m * n : 0) + 1));
    if (!s.a) return gpar__errorf(GPAR_ENOMEM, "host: no memory for the f32 copies of a %s GEMM (%zux%zux%zu)",
                                  x->ab_type == GPAR_HALF ? "f16" : "bf16", m, n, k);
    s.b = s.a + m * k;
    s.c = s.b + k * n;
  }
  for (int i = 0; i < x->batch; i++) {
    gpar__gemm_args g = x->g;
    g.a_off += (size_t)i * (size_t)x->stride_a;
    g.b_off += (size_t)i * (size_t)x->stride_b;
    g.c_off += (size_t)i * (size_t)x->stride_c;
    if (mixed) /* a stride of 0 shares one A (B) with every entry: converted once */
      host_gemm_mixed(&g, x->ab_type, x->c_type, &s, i == 0 || x->stride_a, i == 0 || x->stride_b);
    else
      gpar__host_gemm(dev, lane, &g);
  }
  free(s.a);
  return GPAR_OK;
}

/* ---------------------------------------------------------------- GEMV and level 1 */

/* n elements of x, inc apart, set to exact zeros. */
static void zero_strided(int es, void *x, size_t off, int n, int inc) {
  for (int i = 0; i < n; i++) memset((char *)x + (off + (size_t)i * (size_t)inc) * (size_t)es, 0, (size_t)es);
}

int gpar__host_gemv(gpar__bdev *dev, int lane, const gpar__gemv_args *a) {
  const int ly = a->trans == GPAR_NO_TRANS ? a->m : a->n;
  if (a->beta == 0.0) zero_strided(a->elem_size, a->y, a->y_off, ly, a->incy); /* y write-only: exact */
  if (a->alpha == 0.0) { /* y = beta * y, A and x unread */
    if (a->beta != 0.0 && a->beta != 1.0) {
      if (a->elem_size == 4) cblas_sscal(ly, (float)a->beta, (float *)a->y + a->y_off, a->incy);
      else cblas_dscal(ly, a->beta, (double *)a->y + a->y_off, a->incy);
    }
    return GPAR_OK;
  }
  const double beta = a->beta == 0.0 ? 1.0 : a->beta; /* over the zeros above: no scaling pass */
  if (a->elem_size == 4)
    cblas_sgemv(CblasColMajor, cblas_trans(a->trans), a->m, a->n, (float)a->alpha, (const float *)a->a + a->a_off,
                a->lda, (const float *)a->x + a->x_off, a->incx, (float)beta, (float *)a->y + a->y_off, a->incy);
  else
    cblas_dgemv(CblasColMajor, cblas_trans(a->trans), a->m, a->n, a->alpha, (const double *)a->a + a->a_off, a->lda,
                (const double *)a->x + a->x_off, a->incx, beta, (double *)a->y + a->y_off, a->incy);
  return GPAR_OK;
}

int gpar__host_axpy(gpar__bdev *dev, int lane, const gpar__blas1_args *a) {
  if (a->elem_size == 4)
    cblas_saxpy(a->n, (float)a->alpha, (const float *)a->x + a->x_off, a->incx, (float *)a->y + a->y_off, a->incy);
  else
    cblas_daxpy(a->n, a->alpha, (const double *)a->x + a->x_off, a->incx, (double *)a->y + a->y_off, a->incy);
  return GPAR_OK;
}

int gpar__host_scal(gpar__bdev *dev, int lane, const gpar__blas1_args *a) {
  if (a->alpha == 0.0)
    zero_strided(a->elem_size, a->x, a->x_off, a->n, a->incx);
  else if (a->elem_size == 4)
    cblas_sscal(a->n, (float)a->alpha, (float *)a->x + a->x_off, a->incx);
  else
    cblas_dscal(a->n, a->alpha, (double *)a->x + a->x_off, a->incx);
  return GPAR_OK;
}

int gpar__host_dot(gpar__bdev *dev, int lane, const gpar__blas1_args *a) {
  if (a->elem_size == 4)
    ((float *)a->r)[a->r_off] =
        a->n ? cblas_sdot(a->n, (const float *)a->x + a->x_off, a->incx, (const float *)a->y + a->y_off, a->incy) : 0.0f;
  else
    ((double *)a->r)[a->r_off] =
        a->n ? cblas_ddot(a->n, (const double *)a->x + a->x_off, a->incx, (const double *)a->y + a->y_off, a->incy)
             : 0.0;
  return GPAR_OK;
}
