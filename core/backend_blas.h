/* backend_blas.h: the BLAS arguments of the backend table (core/backend.h includes this): the
 * plain GEMM, the general GEMM (strided batches, f16/bf16 operands), GEMV and the level-1 calls,
 * and the GEMM plan key that the GPU backends cache per shape (cuda_blas_lt.c: cublasLt plans;
 * opencl_blas_clblast.c: CLBlast temp-buffer sizes), with the one helper that fills it. Layer 0:
 * uses gpar.h only. What the core guarantees before a call: every argument checked (shapes,
 * leading dimensions >= max(1, rows), increments >= 1, ranges inside the buffers, no output
 * overlapping an input), m, n, k, batch >= 1 unless a field says otherwise. Offsets, leading
 * dimensions, increments and strides are in elements; memory is what mem_alloc returned (CUDA
 * device pointer, cl_mem) or a host pointer. */
#ifndef GPAR_CORE_BACKEND_BLAS_H
#define GPAR_CORE_BACKEND_BLAS_H

#include <stddef.h>
#include <string.h>

#include "gpar.h"

/* A GEMM in BLAS column-major form; elem_size 4 (float) or 8 (double). m, n >= 1; k >= 0 (with
 * alpha == 0 or k == 0 the backend computes C = beta * C and reads no A or B). Ints first, so the
 * general form below fits an op's payload. */
typedef struct gpar__gemm_args {
  int elem_size;
  gpar_trans trans_a, trans_b;
  int m, n, k;
  int lda, ldb, ldc;
  int no_event; /* hint: the core records no event right after this GEMM (OpenCL: no cl_event) */
  double alpha, beta;
  void *a, *b, *c;
  size_t a_off, b_off, c_off;
} gpar__gemm_args;

/* The general GEMM: batch >= 1 entries, entry i at offsets + i * stride; A and B of ab_type, C
 * of c_type (gpar_dtype): FLOAT/FLOAT and DOUBLE/DOUBLE as the plain GEMM, HALF or BFLOAT16 A
 * and B with C FLOAT or of their type, summed in f32 (alpha, beta: f32 values). g is entry 0,
 * g.elem_size the size of an A or B element. C's entries never overlap (stride_c >= its extent
 * when batch > 1); A's and B's may (stride 0: one matrix for every entry). */
typedef struct gpar__gemm_ex_args {
  gpar__gemm_args g;
  int ab_type, c_type;
  int batch;
  int unused;
  long long stride_a, stride_b, stride_c;
} gpar__gemm_ex_args;

/* y = alpha * op(A) * x + beta * y, A m x n (m, n >= 1), elem_size 4 or 8. alpha == 0: y =
 * beta * y, A and x unread; beta == 0: y is write-only (exact results over NaN). */
typedef struct gpar__gemv_args {
  int elem_size;
  gpar_trans trans;
  int m, n, lda, incx, incy;
  int no_event;
  double alpha, beta;
  void *a, *x, *y;
  size_t a_off, x_off, y_off;
} gpar__gemv_args;

/* The level-1 calls over n elements (elem_size 4 or 8): axpy y += alpha * x (n >= 1, alpha !=
 * 0); scal x *= alpha (n >= 1; alpha == 0 writes exact zeros over NaN); dot r[r_off] = x . y
 * (n >= 0: n == 0 writes 0). */
typedef struct gpar__blas1_args {
  int elem_size;
  int n, incx, incy;
  int no_event;
  double alpha;
  void *x, *y, *r;
  size_t x_off, y_off, r_off;
} gpar__blas1_args;

/* The general form of a plain GEMM: one entry of its own type. */
static inline gpar__gemm_ex_args gpar__gemm_ex_of(const gpar__gemm_args *g) {
  const int t = g->elem_size == 8 ? GPAR_DOUBLE : GPAR_FLOAT;
  gpar__gemm_ex_args x = {.g = *g, .ab_type = t, .c_type = t, .batch = 1};
  return x;
}

/* What identifies a GEMM's cached plan: the shape, types and batch of the call, plus what a
 * backend's planner also saw (CUDA: operand alignments and TF32; OpenCL: the offsets, which
 * change CLBlast's temp-buffer size), zero where a backend does not use it. No padding: keys
 * compare with memcmp. */
typedef struct gpar__gemm_key {
  int ab_type, c_type, trans_a, trans_b, m, n, k, lda, ldb, ldc, batch;
  int align_a, align_b, align_c, tf32;
  int unused;
  long long stride_a, stride_b, stride_c;
  unsigned long long a_off, b_off, c_off;
} gpar__gemm_key;

/* k = the key of GEMM a: shape, types, batch and strides; the backend's own fields zero. */
static inline void gpar__gemm_key_set(gpar__gemm_key *k, const gpar__gemm_ex_args *a) {
  memset(k, 0, sizeof *k);
  k->ab_type = a->ab_type;
  k->c_type = a->c_type;
  k->trans_a = a->g.trans_a == GPAR_TRANS;
  k->trans_b = a->g.trans_b == GPAR_TRANS;
  k->m = a->g.m;
  k->n = a->g.n;
  k->k = a->g.k;
  k->lda = a->g.lda;
  k->ldb = a->g.ldb;
  k->ldc = a->g.ldc;
  k->batch = a->batch;
  if (a->batch > 1) {
    k->stride_a = a->stride_a;
    k->stride_b = a->stride_b;
    k->stride_c = a->stride_c;
  }
}

#endif
