/* cuda_blas_cublas.c: GEMM on CUDA: the per-device cuBLAS handle bound to the compute lane, its
 * workspace and math mode, and the gemm entry, which runs a GEMM through a cached cublasLt plan
 * (cuda_blas_lt.c) and through cublasSgemm/Dgemm when cublasLt has none or GPAR_CUBLASLT=0.
 * Calls cuda_errors.c and cuda_blas_lt.c. */
#include "cuda_internal.h"

int gpar__cuda_blas_open(struct cuda_dev *d) {
  int st;
  /* The workspace is set after cublasSetStream, which resets it. */
  if ((st = gpar__cublas_check(cublasCreate(&d->blas), "cublasCreate"))) return st;
  if ((st = gpar__cublas_check(cublasSetStream(d->blas, d->lane[GPAR__LANE_COMPUTE]), "cublasSetStream"))) return st;
  if ((st = gpar__cublas_check(
           cublasSetMathMode(d->blas, d->be->tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH),
           "cublasSetMathMode")))
    return st;
  if ((st = gpar__cuda_check(cudaMalloc(&d->blas_ws, CUDA_BLAS_WORKSPACE), "cudaMalloc(cuBLAS workspace)"))) return st;
  if ((st = gpar__cublas_check(cublasSetWorkspace(d->blas, d->blas_ws, CUDA_BLAS_WORKSPACE), "cublasSetWorkspace")))
    return st;
  return d->be->lt ? gpar__cuda_lt_open(d) : GPAR_OK;
}

void gpar__cuda_blas_close(struct cuda_dev *d) {
  gpar__cuda_lt_close(d);
  if (d->blas) (void)cublasDestroy(d->blas);
  if (d->blas_ws) (void)cudaFree(d->blas_ws);
  d->blas = NULL;
  d->blas_ws = NULL;
}

/* alpha == 0 or k == 0: C = beta * C without reading A or B (BLAS: they are not referenced, so
 * NaN or garbage there stays out; no pointer into them is formed). beta 0: zeros by a 2D memset
 * (exact, even over NaN); beta 1: nothing; else an in-place geam C = beta * C + 0 * C. Rare. */
static int cuda_gemm_scale_c(struct cuda_dev *d, const gpar__gemm_args *a) {
  const size_t es = (size_t)a->elem_size;
  if (a->m == 0 || a->n == 0 || a->beta == 1.0) return GPAR_OK;
  if (a->beta == 0.0)
    return gpar__cuda_check(cudaMemset2DAsync((char *)a->c + a->c_off * es, (size_t)a->ldc * es, 0, (size_t)a->m * es,
                                              (size_t)a->n, d->lane[GPAR__LANE_COMPUTE]),
                            "cudaMemset2DAsync (gemm with alpha or k = 0)");
  if (a->elem_size == 4) {
    const float beta = (float)a->beta, zero = 0.0f;
    float *c = (float *)a->c + a->c_off;
    return gpar__cublas_check(
        cublasSgeam(d->blas, CUBLAS_OP_N, CUBLAS_OP_N, a->m, a->n, &beta, c, a->ldc, &zero, c, a->ldc, c, a->ldc),
        "cublasSgeam (sgemm with alpha or k = 0)");
  }
  const double beta = a->beta, zero = 0.0;
  double *c = (double *)a->c + a->c_off;
  return gpar__cublas_check(
      cublasDgeam(d->blas, CUBLAS_OP_N, CUBLAS_OP_N, a->m, a->n, &beta, c, a->ldc, &zero, c, a->ldc, c, a->ldc),
      "cublasDgeam (dgemm with alpha or k = 0)");
}

int gpar__cuda_gemm(gpar__bdev *dev, int lane, const gpar__gemm_args *a) {
  struct cuda_dev *d = &dev->d;
  cublasOperation_t ta = a->trans_a == GPAR_TRANS ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t tb = a->trans_b == GPAR_TRANS ? CUBLAS_OP_T : CUBLAS_OP_N;
  int st, ran = 0;
  if (lane != GPAR__LANE_COMPUTE)
    return gpar__errorf(GPAR_EINVAL, "cuda: gemm on lane %d; the cuBLAS handle is bound to the compute lane", lane);
  if (a->elem_size != 4 && a->elem_size != 8)
    return gpar__errorf(GPAR_EINVAL, "cuda: gemm element size %d", a->elem_size);
  if (a->alpha == 0.0 || a->k == 0) return cuda_gemm_scale_c(d, a);
  if (d->be->lt) {
    if ((st = gpar__cuda_lt_gemm(d, a, &ran))) return st;
    if (ran) {
      atomic_fetch_add_explicit(&d->lt.calls, 1, memory_order_relaxed);
      return GPAR_OK;
    }
  }
  atomic_fetch_add_explicit(&d->lt.fallbacks, 1, memory_order_relaxed);
  if (a->elem_size == 4) {
    const float alpha = (float)a->alpha, beta = (float)a->beta;
    return gpar__cublas_check(cublasSgemm(d->blas, ta, tb, a->m, a->n, a->k, &alpha, (const float *)a->a + a->a_off,
                                          a->lda, (const float *)a->b + a->b_off, a->ldb, &beta,
                                          (float *)a->c + a->c_off, a->ldc),
                              "cublasSgemm");
  }
  const double alpha = a->alpha, beta = a->beta;
  return gpar__cublas_check(cublasDgemm(d->blas, ta, tb, a->m, a->n, a->k, &alpha, (const double *)a->a + a->a_off,
                                        a->lda, (const double *)a->b + a->b_off, a->ldb, &beta,
                                        (double *)a->c + a->c_off, a->ldc),
                            "cublasDgemm");
}

/* Any thread: relaxed reads of counters only the dispatcher writes. */
void gpar__cuda_gemm_counts(gpar__bdev *dev, uint64_t *planned, uint64_t *fallback) {
  *planned = atomic_load_explicit(&dev->d.lt.calls, memory_order_relaxed);
  *fallback = atomic_load_explicit(&dev->d.lt.fallbacks, memory_order_relaxed);
}
