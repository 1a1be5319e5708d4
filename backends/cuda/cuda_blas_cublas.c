/* cuda_blas_cublas.c: GEMM on CUDA: a cuBLAS handle bound to each compute lane, its
 * workspace and math mode, and the gemm and gemm_ex entries, which run every GEMM (plain, strided
 * batches, f16/bf16 operands with f32 sums) through a cached cublasLt plan (cuda_blas_lt.c), and
 * through cuBLAS's own call when cublasLt has none or GPAR_CUBLASLT=0: cublasSgemm/Dgemm, their
 * StridedBatched forms, cublasGemmEx / cublasGemmStridedBatchedEx with CUBLAS_COMPUTE_32F.
 * Calls cuda_errors.c and cuda_blas_lt.c. */
#include "cuda_internal.h"

/* Compute lane k's handle on its stream, with its workspace and math mode, and its plan cache. */
static int blas_open_lane(struct cuda_dev *d, int k) {
  struct cuda_blas *b = &d->blas[k];
  int st;
  b->be = d->be;
  b->s = d->lane[k];
  /* The workspace is set after cublasSetStream, which resets it. */
  if ((st = gpar__cublas_check(cublasCreate(&b->h), "cublasCreate"))) return st;
  if ((st = gpar__cublas_check(cublasSetStream(b->h, b->s), "cublasSetStream"))) return st;
  if ((st = gpar__cublas_check(
           cublasSetMathMode(b->h, d->be->tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH),
           "cublasSetMathMode")))
    return st;
  if ((st = gpar__cuda_check(cudaMalloc(&b->ws, CUDA_BLAS_WORKSPACE), "cudaMalloc(cuBLAS workspace)"))) return st;
  if ((st = gpar__cublas_check(cublasSetWorkspace(b->h, b->ws, CUDA_BLAS_WORKSPACE), "cublasSetWorkspace")))
    return st;
  return d->be->lt ? gpar__cuda_lt_open(b) : GPAR_OK;
}

int gpar__cuda_blas_open(struct cuda_dev *d) {
  int st = GPAR_OK;
  for (int k = 0; k < d->lanes && st == GPAR_OK; k++) st = blas_open_lane(d, k);
  return st;
}

void gpar__cuda_blas_close(struct cuda_dev *d) {
  for (int k = 0; k < GPAR__COMPUTE_LANES_MAX; k++) {
    struct cuda_blas *b = &d->blas[k];
    gpar__cuda_lt_close(b);
    if (b->h) (void)cublasDestroy(b->h);
    if (b->ws) (void)cudaFree(b->ws);
    b->h = NULL;
    b->ws = NULL;
  }
}

/* alpha == 0 or k == 0: C = beta * C without reading A or B (BLAS: they are not referenced, so
 * NaN or garbage there stays out; no pointer into them is formed), for every batch entry. beta 0:
 * zeros by a 2D memset (exact, even over NaN; one for all entries when they lie back to back);
 * beta 1: nothing; else in place, C = beta * C + 0 * C by geam (f32, f64) or cublasScalEx over
 * each column (f16, bf16). Rare. */
static int cuda_scale_entry(struct cuda_blas *b, const gpar__gemm_ex_args *x, char *c) {
  const gpar__gemm_args *a = &x->g;
  if (x->c_type == GPAR_FLOAT) {
    const float beta = (float)a->beta, zero = 0.0f;
    float *f = (float *)c;
    return gpar__cublas_check(
        cublasSgeam(b->h, CUBLAS_OP_N, CUBLAS_OP_N, a->m, a->n, &beta, f, a->ldc, &zero, f, a->ldc, f, a->ldc),
        "cublasSgeam (gemm with alpha or k = 0)");
  }
  if (x->c_type == GPAR_DOUBLE) {
    const double beta = a->beta, zero = 0.0;
    double *f = (double *)c;
    return gpar__cublas_check(
        cublasDgeam(b->h, CUBLAS_OP_N, CUBLAS_OP_N, a->m, a->n, &beta, f, a->ldc, &zero, f, a->ldc, f, a->ldc),
        "cublasDgeam (gemm with alpha or k = 0)");
  }
  const float beta = (float)a->beta;
  const cudaDataType_t t = x->c_type == GPAR_HALF ? CUDA_R_16F : CUDA_R_16BF;
  const int whole = a->ldc == a->m; /* the columns lie back to back: one call */
  for (int j = 0; j < (whole ? 1 : a->n); j++) {
    int st = gpar__cublas_check(cublasScalEx(b->h, whole ? a->m * a->n : a->m, &beta, CUDA_R_32F,
                                             c + (size_t)j * (size_t)a->ldc * 2, t, 1, CUDA_R_32F),
                                "cublasScalEx (gemm with alpha or k = 0)");
    if (st) return st;
  }
  return GPAR_OK;
}

static int cuda_gemm_scale_c(struct cuda_blas *b, const gpar__gemm_ex_args *x) {
  const gpar__gemm_args *a = &x->g;
  const size_t cs = gpar_dtype_size((gpar_dtype)x->c_type);
  char *c = (char *)a->c + a->c_off * cs;
  if (a->m == 0 || a->n == 0 || a->beta == 1.0) return GPAR_OK;
  if (a->beta == 0.0) {
    const int joined = x->batch == 1 || x->stride_c == (long long)a->ldc * a->n;
    for (int i = 0; i < (joined ? 1 : x->batch); i++) {
      int st = gpar__cuda_check(cudaMemset2DAsync(c + (size_t)i * (size_t)x->stride_c * cs, (size_t)a->ldc * cs, 0,
                                                  (size_t)a->m * cs, (size_t)a->n * (size_t)(joined ? x->batch : 1),
                                                  b->s),
                                "cudaMemset2DAsync (gemm with alpha or k = 0)");
      if (st) return st;
    }
    return GPAR_OK;
  }
  for (int i = 0; i < x->batch; i++) {
    int st = cuda_scale_entry(b, x, c + (size_t)i * (size_t)x->stride_c * cs);
    if (st) return st;
  }
  return GPAR_OK;
}

/* cuBLAS's own call for the GEMM (no cublasLt plan, or GPAR_CUBLASLT=0). */
static int cuda_gemm_cublas(struct cuda_blas *b, const gpar__gemm_ex_args *x) {
  const gpar__gemm_args *a = &x->g;
  const cublasOperation_t ta = a->trans_a == GPAR_TRANS ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t tb = a->trans_b == GPAR_TRANS ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int m = a->m, n = a->n, k = a->k, lda = a->lda, ldb = a->ldb, ldc = a->ldc, nb = x->batch;
  const long long sa = x->stride_a, sb = x->stride_b, sc = x->stride_c;
  /* S and D stay apart: cuBLAS's typed calls take typed scalars; a macro would hide which call runs. */
  if (x->ab_type == GPAR_FLOAT) {
    const float alpha = (float)a->alpha, beta = (float)a->beta;
    const float *A = (const float *)a->a + a->a_off, *B = (const float *)a->b + a->b_off;
    float *C = (float *)a->c + a->c_off;
    return nb == 1 ? gpar__cublas_check(cublasSgemm(b->h, ta, tb, m, n, k, &alpha, A, lda, B, ldb, &beta, C, ldc),
                                        "cublasSgemm")
                   : gpar__cublas_check(cublasSgemmStridedBatched(b->h, ta, tb, m, n, k, &alpha, A, lda, sa, B, ldb,
                                                                  sb, &beta, C, ldc, sc, nb),
                                        "cublasSgemmStridedBatched");
  }
  if (x->ab_type == GPAR_DOUBLE) {
    const double alpha = a->alpha, beta = a->beta;
    const double *A = (const double *)a->a + a->a_off, *B = (const double *)a->b + a->b_off;
    double *C = (double *)a->c + a->c_off;
    return nb == 1 ? gpar__cublas_check(cublasDgemm(b->h, ta, tb, m, n, k, &alpha, A, lda, B, ldb, &beta, C, ldc),
                                        "cublasDgemm")
                   : gpar__cublas_check(cublasDgemmStridedBatched(b->h, ta, tb, m, n, k, &alpha, A, lda, sa, B, ldb,
                                                                  sb, &beta, C, ldc, sc, nb),
                                        "cublasDgemmStridedBatched");
  }
  const float alpha = (float)a->alpha, beta = (float)a->beta;
  const cudaDataType_t t = x->ab_type == GPAR_HALF ? CUDA_R_16F : CUDA_R_16BF;
  const cudaDataType_t ct = x->c_type == GPAR_FLOAT ? CUDA_R_32F : t;
  const size_t cs = gpar_dtype_size((gpar_dtype)x->c_type);
  const char *A = (const char *)a->a + a->a_off * 2, *B = (const char *)a->b + a->b_off * 2;
  char *C = (char *)a->c + a->c_off * cs;
  return nb == 1 ? gpar__cublas_check(cublasGemmEx(b->h, ta, tb, m, n, k, &alpha, A, t, lda, B, t, ldb, &beta, C, ct,
                                                   ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                                      "cublasGemmEx")
                 : gpar__cublas_check(cublasGemmStridedBatchedEx(b->h, ta, tb, m, n, k, &alpha, A, t, lda, sa, B, t,
                                                                 ldb, sb, &beta, C, ct, ldc, sc, nb,
                                                                 CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                                      "cublasGemmStridedBatchedEx");
}

/* Every GEMM: C = beta * C when alpha or k is 0, else a cached cublasLt plan, else cuBLAS. */
static int cuda_gemm_any(gpar__bdev *dev, int lane, const gpar__gemm_ex_args *x) {
  struct cuda_blas *b = gpar__cuda_blas_of(&dev->d, lane);
  int st, ran = 0;
  if (!b) return gpar__errorf(GPAR_EINVAL, "cuda: gemm on lane %d; cuBLAS handles are bound to compute lanes", lane);
  if (x->g.alpha == 0.0 || x->g.k == 0) return cuda_gemm_scale_c(b, x);
  if (b->be->lt) {
    if ((st = gpar__cuda_lt_gemm(b, x, &ran))) return st;
    if (ran) {
      atomic_fetch_add_explicit(&b->lt.calls, 1, memory_order_relaxed);
      return GPAR_OK;
    }
  }
  atomic_fetch_add_explicit(&b->lt.fallbacks, 1, memory_order_relaxed);
  return cuda_gemm_cublas(b, x);
}

int gpar__cuda_gemm(gpar__bdev *dev, int lane, const gpar__gemm_args *a) {
  if (a->elem_size != 4 && a->elem_size != 8)
    return gpar__errorf(GPAR_EINVAL, "cuda: gemm element size %d", a->elem_size);
  const gpar__gemm_ex_args x = gpar__gemm_ex_of(a);
  return cuda_gemm_any(dev, lane, &x);
}

int gpar__cuda_gemm_ex(gpar__bdev *dev, int lane, const gpar__gemm_ex_args *a) { return cuda_gemm_any(dev, lane, a); }

/* Any thread: relaxed reads of counters only the lanes' dispatchers write, summed. */
void gpar__cuda_gemm_counts(gpar__bdev *dev, uint64_t *planned, uint64_t *fallback) {
  *planned = *fallback = 0;
  for (int k = 0; k < GPAR__COMPUTE_LANES_MAX; k++) {
    *planned += atomic_load_explicit(&dev->d.blas[k].lt.calls, memory_order_relaxed);
    *fallback += atomic_load_explicit(&dev->d.blas[k].lt.fallbacks, memory_order_relaxed);
  }
}
