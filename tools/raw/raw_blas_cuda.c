/* raw_blas_cuda.c: the hand-written cuBLAS calls gpar-bench batched and gemm-ex time next to
 * libgpar: cublasSgemmStridedBatched for f32 batches, cublasGemmEx (cublasGemmStridedBatchedEx
 * for batches) with CUDA_R_16F / CUDA_R_16BF operands and CUBLAS_COMPUTE_32F, on one stream with
 * a 32 MiB workspace set as libgpar's backend sets it, FP32 math mode (no TF32). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "gpar.h"
#include "raw_blas.h"

#define RAW_WS ((size_t)32 << 20)

static int cu_ok(cudaError_t e, const char *what) {
  if (e == cudaSuccess) return 1;
  fprintf(stderr, "raw_blas_cuda: %s: %s\n", what, cudaGetErrorName(e));
  return 0;
}

static int bl_ok(cublasStatus_t s, const char *what) {
  if (s == CUBLAS_STATUS_SUCCESS) return 1;
  fprintf(stderr, "raw_blas_cuda: %s: %s\n", what, cublasGetStatusName(s));
  return 0;
}

static cudaDataType_t raw_type(int t) { return t == GPAR_HALF ? CUDA_R_16F : t == GPAR_BFLOAT16 ? CUDA_R_16BF : CUDA_R_32F; }

/* Fill n elements of type t at p with v (through a host copy). */
static int raw_fill(void *p, int t, size_t n, float v) {
  size_t es = t == GPAR_FLOAT ? 4 : 2;
  void *h = malloc(n * es);
  if (!h) return 0;
  gpar_convert(h, (gpar_dtype)t, (float[1]){v}, GPAR_FLOAT, 1);
  for (size_t i = 1; i < n; i++) memcpy((char *)h + i * es, h, es);
  int ok = cu_ok(cudaMemcpy(p, h, n * es, cudaMemcpyHostToDevice), "cudaMemcpy");
  free(h);
  return ok;
}

static int raw_call(cublasHandle_t h, const gpar_raw_blas_case *c, const void *a, const void *b, void *cc) {
  const float one = 1.0f, zero = 0.0f;
  const int m = c->m, n = c->n, k = c->k;
  const long long sa = (long long)m * k, sb = (long long)k * n, sc = (long long)m * n;
  if (c->ab_type == GPAR_FLOAT)
    return bl_ok(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, a, m, sa, b, k, sb, &zero, cc, m,
                                           sc, c->batch),
                 "cublasSgemmStridedBatched");
  const cudaDataType_t t = raw_type(c->ab_type), ct = raw_type(c->c_type);
  if (c->batch == 1)
    return bl_ok(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, a, t, m, b, t, k, &zero, cc, ct, m,
                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx");
  return bl_ok(cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, a, t, m, sa, b, t, k, sb, &zero,
                                          cc, ct, m, sc, c->batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "cublasGemmStridedBatchedEx");
}

int gpar_raw_blas_cuda(const gpar_raw_blas_case *c, double *seconds, const char **what) {
  const size_t es = c->ab_type == GPAR_FLOAT ? 4 : 2, cs = c->c_type == GPAR_FLOAT ? 4 : 2, nb = (size_t)c->batch;
  const size_t na = (size_t)c->m * c->k * nb, nbb = (size_t)c->k * c->n * nb, nc = (size_t)c->m * c->n * nb;
  *what = c->ab_type == GPAR_FLOAT ? "raw cublasSgemmStridedBatched"
          : c->batch == 1          ? "raw cublasGemmEx (CUBLAS_COMPUTE_32F)"
                                   : "raw cublasGemmStridedBatchedEx (CUBLAS_COMPUTE_32F)";
  cudaStream_t s = NULL;
  cublasHandle_t h = NULL;
  void *a = NULL, *b = NULL, *cc = NULL, *ws = NULL;
  int rc = -1;
  if (!cu_ok(cudaSetDevice(c->dev), "cudaSetDevice") ||
      !cu_ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags") ||
      !bl_ok(cublasCreate(&h), "cublasCreate") || !bl_ok(cublasSetStream(h, s), "cublasSetStream") ||
      !cu_ok(cudaMalloc(&ws, RAW_WS), "cudaMalloc(workspace)") ||
      !bl_ok(cublasSetWorkspace(h, ws, RAW_WS), "cublasSetWorkspace") ||
      !cu_ok(cudaMalloc(&a, na * es), "cudaMalloc(A)") || !cu_ok(cudaMalloc(&b, nbb * es), "cudaMalloc(B)") ||
      !cu_ok(cudaMalloc(&cc, nc * cs), "cudaMalloc(C)") || !raw_fill(a, c->ab_type, na, 1.0f) ||
      !raw_fill(b, c->ab_type, nbb, 0.5f))
    goto done;
  if (!raw_call(h, c, a, b, cc) || !cu_ok(cudaStreamSynchronize(s), "cudaStreamSynchronize")) goto done;
  double t0 = gpar_now();
  for (int i = 0; i < c->iters; i++)
    if (!raw_call(h, c, a, b, cc)) goto done;
  if (!cu_ok(cudaStreamSynchronize(s), "cudaStreamSynchronize")) goto done;
  *seconds = gpar_now() - t0;
  unsigned char first[4], last[4];
  float v0, v1;
  if (!cu_ok(cudaMemcpy(first, cc, cs, cudaMemcpyDeviceToHost), "cudaMemcpy") ||
      !cu_ok(cudaMemcpy(last, (char *)cc + (nc - 1) * cs, cs, cudaMemcpyDeviceToHost), "cudaMemcpy"))
    goto done;
  gpar_convert(&v0, GPAR_FLOAT, first, (gpar_dtype)c->c_type, 1);
  gpar_convert(&v1, GPAR_FLOAT, last, (gpar_dtype)c->c_type, 1);
  const float want = 0.5f * (float)c->k; /* exact in f32; in f16/bf16 within one rounding */
  if (!(v0 >= want * 0.99f && v0 <= want * 1.01f && v1 >= want * 0.99f && v1 <= want * 1.01f)) {
    fprintf(stderr, "raw_blas_cuda: %s computed C = %g, %g, want %g\n", *what, (double)v0, (double)v1, (double)want);
    goto done;
  }
  rc = 0;
done:
  if (h) cublasDestroy(h);
  if (s) cudaStreamDestroy(s);
  cudaFree(a), cudaFree(b), cudaFree(cc), cudaFree(ws);
  (void)cudaGetLastError();
  return rc;
}
