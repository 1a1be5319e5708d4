/* raw_cuda.c: the hand-written CUDA + cuBLAS loop gpar-bench compares libgpar against (the D2L
 * "Automatic Parallelism" experiments): one host thread, per device a compute and a copy stream.
 * With lt set, each GEMM is one cublasLtMatmul with a plan (descriptor, layouts, the heuristic's
 * algorithm) made once per device and shape before the timed loop: the eager limit for libgpar's
 * cached cublasLt plans (backends/cuda/cuda_blas_lt.c). With graph set, the same loop captured by
 * hand into one CUDA graph per device and launched. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <cublasLt.h>
#include <cublas_v2.h>

#include "gpar.h" /* gpar_now */
#include "raw.h"

/* Everything one device needs; zeroed = nothing to free. */
struct raw_dev {
  int ordinal;
  cudaStream_t compute, copy;
  cublasHandle_t blas;
  cudaEvent_t done; /* re-recorded per GEMM: cudaStreamWaitEvent takes the record current at the call */
  float *a, *b;
  float *c;       /* ncs results of n*n floats */
  int ncs;
  float *host;    /* pinned, iters results of n*n floats (copy modes) */
  void *ws;       /* graph or lt: RAW_WS bytes of workspace (capture cannot allocate one; cublasLtMatmul
                     takes it per call) */
  cublasLtHandle_t lt; /* lt: the handle and the plan for this case's one shape */
  cublasLtMatmulDesc_t lt_desc;
  cublasLtMatrixLayout_t lt_layout; /* A, B and C are all n x n, leading dimension n */
  cublasLtMatmulAlgo_t lt_algo;
  cudaEvent_t fork, join; /* graph: the copy stream joins the capture and is joined back */
  cudaGraphExec_t exec;
};

static int raw_cuda_ok(cudaError_t e, const char *what, int dev) {
  if (e == cudaSuccess) return 1;
  fprintf(stderr, "raw_cuda: %s on device %d: %s (%s)\n", what, dev, cudaGetErrorName(e), cudaGetErrorString(e));
  return 0;
}

static int raw_blas_ok(cublasStatus_t s, const char *what, int dev) {
  if (s == CUBLAS_STATUS_SUCCESS) return 1;
  fprintf(stderr, "raw_cuda: %s on device %d: %s (%s)\n", what, dev, cublasGetStatusName(s), cublasGetStatusString(s));
  return 0;
}

#define RAW_CK(call, what, dev) \
  do {                          \
    if (!raw_cuda_ok((call), (what), (dev))) goto fail; \
  } while (0)
#define RAW_BK(call, what, dev) \
  do {                          \
    if (!raw_blas_ok((call), (what), (dev))) goto fail; \
  } while (0)

/* Workspace for cuBLAS under capture and for cublasLt: libgpar's CUDA backend uses 32 MiB. */
#define RAW_WS ((size_t)32 << 20)

static void raw_dev_free(struct raw_dev *r) {
  if (cudaSetDevice(r->ordinal) != cudaSuccess) {
    (void)cudaGetLastError();
    return;
  }
  if (r->compute) (void)cudaStreamSynchronize(r->compute);
  if (r->copy) (void)cudaStreamSynchronize(r->copy);
  if (r->blas) (void)cublasDestroy(r->blas);
  if (r->lt_layout) (void)cublasLtMatrixLayoutDestroy(r->lt_layout);
  if (r->lt_desc) (void)cublasLtMatmulDescDestroy(r->lt_desc);
  if (r->lt) (void)cublasLtDestroy(r->lt);
  if (r->exec) (void)cudaGraphExecDestroy(r->exec);
  if (r->ws) (void)cudaFree(r->ws);
  if (r->fork) (void)cudaEventDestroy(r->fork);
  if (r->join) (void)cudaEventDestroy(r->join);
  if (r->done) (void)cudaEventDestroy(r->done);
  if (r->compute) (void)cudaStreamDestroy(r->compute);
  if (r->copy) (void)cudaStreamDestroy(r->copy);
  if (r->a) (void)cudaFree(r->a);
  if (r->b) (void)cudaFree(r->b);
  if (r->c) (void)cudaFree(r->c);
  if (r->host) (void)cudaFreeHost(r->host);
  (void)cudaGetLastError();
}

/* Enqueue step i on one device: the GEMM and/or the copy of its result, as the mode says. */
static int raw_step(const gpar_raw_case *c, struct raw_dev *r, int i, const float *alpha, const float *beta) {
  const size_t nn = (size_t)c->n * (size_t)c->n;
  float *ci = r->c + (r->ncs > 1 ? (size_t)i * nn : 0);
  if (c->mode != GPAR_RAW_COPY && c->lt) {
    RAW_BK(cublasLtMatmul(r->lt, r->lt_desc, alpha, r->a, r->lt_layout, r->b, r->lt_layout, beta, ci, r->lt_layout,
                          ci, r->lt_layout, &r->lt_algo, r->ws, RAW_WS, r->compute),
           "cublasLtMatmul", r->ordinal);
  } else if (c->mode != GPAR_RAW_COPY) {
    RAW_BK(cublasSgemm(r->blas, CUBLAS_OP_N, CUBLAS_OP_N, c->n, c->n, c->n, alpha, r->a, c->n, r->b, c->n, beta,
                       ci, c->n),
           "cublasSgemm", r->ordinal);
  }
  if (c->mode == GPAR_RAW_GEMM_COPY) {
    RAW_CK(cudaEventRecord(r->done, r->compute), "cudaEventRecord", r->ordinal);
    RAW_CK(cudaStreamWaitEvent(r->copy, r->done, 0), "cudaStreamWaitEvent", r->ordinal);
  }
  if (c->mode != GPAR_RAW_GEMM) {
    RAW_CK(cudaMemcpyAsync(r->host + (size_t)i * nn, ci, nn * sizeof(float), cudaMemcpyDeviceToHost, r->copy),
           "cudaMemcpyAsync(D2H)", r->ordinal);
  }
  return 0;
fail:
  return -1;
}

/* Capture the iters steps of one device into r->exec (the device is current). */
static int raw_capture(const gpar_raw_case *c, struct raw_dev *r, const float *alpha, const float *beta) {
  cudaGraph_t g = NULL;
  int copies = c->mode != GPAR_RAW_GEMM;
  RAW_CK(cudaStreamBeginCapture(r->compute, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture", r->ordinal);
  if (copies) {
    RAW_CK(cudaEventRecord(r->fork, r->compute), "cudaEventRecord(fork)", r->ordinal);
    RAW_CK(cudaStreamWaitEvent(r->copy, r->fork, 0), "cudaStreamWaitEvent(fork)", r->ordinal);
  }
  for (int i = 0; i < c->iters; i++)
    if (raw_step(c, r, i, alpha, beta)) goto fail;
  if (copies) {
    RAW_CK(cudaEventRecord(r->join, r->copy), "cudaEventRecord(join)", r->ordinal);
    RAW_CK(cudaStreamWaitEvent(r->compute, r->join, 0), "cudaStreamWaitEvent(join)", r->ordinal);
  }
  RAW_CK(cudaStreamEndCapture(r->compute, &g), "cudaStreamEndCapture", r->ordinal);
  RAW_CK(cudaGraphInstantiateWithFlags(&r->exec, g, 0), "cudaGraphInstantiateWithFlags", r->ordinal);
  (void)cudaGraphDestroy(g);
  return 0;
fail:
  if (!g) { /* a step failed: leave capture mode */
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(r->compute, &cs) == cudaSuccess && cs != cudaStreamCaptureStatusNone)
      (void)cudaStreamEndCapture(r->compute, &g);
  }
  if (g) (void)cudaGraphDestroy(g);
  (void)cudaGetLastError();
  return -1;
}

/* Largest power of two, at most 256, dividing every address the GEMMs use and the leading
 * dimension in bytes: what the heuristic may assume (as libgpar's lt_align). */
static uint32_t raw_lt_align(const struct raw_dev *r, int n) {
  uintptr_t v = (uintptr_t)r->a | (uintptr_t)r->b | (uintptr_t)r->c | (uintptr_t)((size_t)n * sizeof(float)) | 256u;
  if (r->ncs > 1) v |= (uintptr_t)((size_t)n * (size_t)n * sizeof(float)); /* C_i = c + i * n * n */
  return (uint32_t)(v & (~v + 1));
}

/* The cublasLt plan of this case's shape on one device (current): FP32 (TF32 with tf32),
 * column-major, no transposes, the same operands as cublasSgemm; the heuristic's first algorithm
 * within RAW_WS bytes of workspace. Made once, before the warm-up. */
static int raw_lt_plan(const gpar_raw_case *c, struct raw_dev *r) {
  const cublasComputeType_t ct = c->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const cublasOperation_t op = CUBLAS_OP_N;
  const cublasLtPointerMode_t pm = CUBLASLT_POINTER_MODE_HOST;
  const uint64_t ws = RAW_WS;
  const uint32_t al = raw_lt_align(r, c->n);
  static const cublasLtMatmulPreferenceAttributes_t al_attr[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  cublasLtMatmulPreference_t pref = NULL;
  cublasLtMatmulHeuristicResult_t res;
  int got = 0;
  const int o = r->ordinal;
  memset(&res, 0, sizeof res);
  RAW_BK(cublasLtCreate(&r->lt), "cublasLtCreate", o);
  RAW_BK(cublasLtMatmulDescCreate(&r->lt_desc, ct, CUDA_R_32F), "cublasLtMatmulDescCreate", o);
  RAW_BK(cublasLtMatmulDescSetAttribute(r->lt_desc, CUBLASLT_MATMUL_DESC_TRANSA, &op, sizeof op),
         "cublasLtMatmulDescSetAttribute(TRANSA)", o);
  RAW_BK(cublasLtMatmulDescSetAttribute(r->lt_desc, CUBLASLT_MATMUL_DESC_TRANSB, &op, sizeof op),
         "cublasLtMatmulDescSetAttribute(TRANSB)", o);
  RAW_BK(cublasLtMatmulDescSetAttribute(r->lt_desc, CUBLASLT_MATMUL_DESC_POINTER_MODE, &pm, sizeof pm),
         "cublasLtMatmulDescSetAttribute(POINTER_MODE)", o);
  RAW_BK(cublasLtMatrixLayoutCreate(&r->lt_layout, CUDA_R_32F, (uint64_t)c->n, (uint64_t)c->n, c->n),
         "cublasLtMatrixLayoutCreate", o);
  RAW_BK(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate", o);
  RAW_BK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws),
         "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)", o);
  for (int i = 0; i < 4; i++)
    RAW_BK(cublasLtMatmulPreferenceSetAttribute(pref, al_attr[i], &al, sizeof al),
           "cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT)", o);
  RAW_BK(cublasLtMatmulAlgoGetHeuristic(r->lt, r->lt_desc, r->lt_layout, r->lt_layout, r->lt_layout, r->lt_layout,
                                        pref, 1, &res, &got),
         "cublasLtMatmulAlgoGetHeuristic", o);
  if (got < 1 || res.state != CUBLAS_STATUS_SUCCESS) {
    fprintf(stderr, "raw_cuda: cublasLt has no algorithm for %d^3 FP32%s on device %d\n", c->n,
            c->tf32 ? " (TF32)" : "", o);
    goto fail;
  }
  r->lt_algo = res.algo;
  (void)cublasLtMatmulPreferenceDestroy(pref);
  return 0;
fail:
  if (pref) (void)cublasLtMatmulPreferenceDestroy(pref);
  return -1;
}

/* After the timed part (untimed): the first and the last entry the GEMMs wrote hold n * a * a,
 * a = the float with bytes 0x3c (relative 1e-3 in FP32, which 4096 sequential FP32 additions stay
 * within; TF32 rounds the inputs: 1e-2), so a loop that runs but does not compute (C left as the
 * zeros it started as, a plan that reads the wrong memory) fails. With A and B constant, a
 * transposed layout gives the same numbers: this is no layout check. */
static int raw_check(const gpar_raw_case *c, struct raw_dev *rd, int ndev) {
  const size_t nn = (size_t)c->n * (size_t)c->n;
  uint32_t bits = 0x3c3c3c3cu;
  float a, v[2];
  memcpy(&a, &bits, sizeof a);
  const double want = (double)c->n * a * a, tol = c->tf32 ? 1e-2 : 1e-3;
  for (int d = 0; d < ndev; d++) {
    struct raw_dev *r = &rd[d];
    RAW_CK(cudaSetDevice(r->ordinal), "cudaSetDevice", r->ordinal);
    RAW_CK(cudaMemcpy(&v[0], r->c, sizeof v[0], cudaMemcpyDeviceToHost), "cudaMemcpy(check)", r->ordinal);
    RAW_CK(cudaMemcpy(&v[1], r->c + (size_t)r->ncs * nn - 1, sizeof v[1], cudaMemcpyDeviceToHost), "cudaMemcpy(check)",
           r->ordinal);
    for (int k = 0; k < 2; k++)
      if (!(v[k] >= want * (1 - tol) && v[k] <= want * (1 + tol))) {
        fprintf(stderr, "raw_cuda: %s computed C = %g on device %d, want %g\n", c->lt ? "cublasLtMatmul" : "cublasSgemm",
                (double)v[k], r->ordinal, want);
        return -1;
      }
  }
  return 0;
fail:
  return -1;
}

static int raw_sync_all(struct raw_dev *rd, int ndev) {
  for (int d = 0; d < ndev; d++) {
    RAW_CK(cudaStreamSynchronize(rd[d].compute), "cudaStreamSynchronize(compute)", rd[d].ordinal);
    RAW_CK(cudaStreamSynchronize(rd[d].copy), "cudaStreamSynchronize(copy)", rd[d].ordinal);
  }
  return 0;
fail:
  return -1;
}

int gpar_raw_cuda(const gpar_raw_case *c, double *seconds) {
  const float alpha = 1.0f, beta = 0.0f;
  struct raw_dev *rd;
  int ret = -1, ndev;
  size_t nn;

  if (!c || !seconds || c->n <= 0 || c->iters <= 0 || c->ndev <= 0 || !c->devs ||
      c->mode < GPAR_RAW_GEMM || c->mode > GPAR_RAW_COPY) {
    fprintf(stderr, "raw_cuda: invalid case\n");
    return -1;
  }
  ndev = c->ndev;
  nn = (size_t)c->n * (size_t)c->n;
  rd = calloc((size_t)ndev, sizeof *rd);
  if (!rd) {
    fprintf(stderr, "raw_cuda: out of host memory\n");
    return -1;
  }
  for (int d = 0; d < ndev; d++) rd[d].ordinal = c->devs[d];

  /* Setup (untimed). */
  for (int d = 0; d < ndev; d++) {
    struct raw_dev *r = &rd[d];
    const int o = r->ordinal;
    /* Results that get copied stay distinct (one C per GEMM); otherwise one C is reused. */
    r->ncs = c->mode == GPAR_RAW_GEMM ? 1 : c->iters;
    RAW_CK(cudaSetDevice(o), "cudaSetDevice", o);
    RAW_CK(cudaStreamCreateWithFlags(&r->compute, cudaStreamNonBlocking), "cudaStreamCreateWithFlags", o);
    RAW_CK(cudaStreamCreateWithFlags(&r->copy, cudaStreamNonBlocking), "cudaStreamCreateWithFlags", o);
    RAW_CK(cudaEventCreateWithFlags(&r->done, cudaEventDisableTiming), "cudaEventCreateWithFlags", o);
    RAW_BK(cublasCreate(&r->blas), "cublasCreate", o);
    RAW_BK(cublasSetStream(r->blas, r->compute), "cublasSetStream", o);
    RAW_BK(cublasSetMathMode(r->blas, c->tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH),
           "cublasSetMathMode", o);
    if (c->graph || c->lt) RAW_CK(cudaMalloc(&r->ws, RAW_WS), "cudaMalloc(workspace)", o);
    if (c->graph) { /* as libgpar's CUDA backend: set after cublasSetStream */
      RAW_BK(cublasSetWorkspace(r->blas, r->ws, RAW_WS), "cublasSetWorkspace", o);
      RAW_CK(cudaEventCreateWithFlags(&r->fork, cudaEventDisableTiming), "cudaEventCreateWithFlags", o);
      RAW_CK(cudaEventCreateWithFlags(&r->join, cudaEventDisableTiming), "cudaEventCreateWithFlags", o);
    }
    RAW_CK(cudaMalloc((void **)&r->a, nn * sizeof(float)), "cudaMalloc(A)", o);
    RAW_CK(cudaMalloc((void **)&r->b, nn * sizeof(float)), "cudaMalloc(B)", o);
    RAW_CK(cudaMalloc((void **)&r->c, (size_t)r->ncs * nn * sizeof(float)), "cudaMalloc(C)", o);
    /* Byte 0x3c everywhere: every float is 0x3c3c3c3c ~ 0.0115, small and finite. */
    RAW_CK(cudaMemsetAsync(r->a, 0x3c, nn * sizeof(float), r->compute), "cudaMemsetAsync(A)", o);
    RAW_CK(cudaMemsetAsync(r->b, 0x3c, nn * sizeof(float), r->compute), "cudaMemsetAsync(B)", o);
    RAW_CK(cudaMemsetAsync(r->c, 0, (size_t)r->ncs * nn * sizeof(float), r->compute), "cudaMemsetAsync(C)", o);
    if (c->mode != GPAR_RAW_GEMM) {
      RAW_CK(cudaHostAlloc((void **)&r->host, (size_t)c->iters * nn * sizeof(float), cudaHostAllocPortable),
             "cudaHostAlloc", o);
      /* Touch every page now so the timed copies never fault them in. */
      memset(r->host, 0, (size_t)c->iters * nn * sizeof(float));
    }
    if (c->lt && c->mode != GPAR_RAW_COPY && raw_lt_plan(c, r)) goto fail;
  }

  /* Warm-up: one GEMM (and one copy) per device: cuBLAS heuristics, kernel load, copy path. */
  for (int d = 0; d < ndev; d++) {
    RAW_CK(cudaSetDevice(rd[d].ordinal), "cudaSetDevice", rd[d].ordinal);
    if (c->mode != GPAR_RAW_GEMM) {
      gpar_raw_case both = *c;
      both.mode = GPAR_RAW_GEMM_COPY;
      both.graph = 0;
      if (c->mode == GPAR_RAW_COPY) both.lt = 0; /* no plan was made */
      if (raw_step(&both, &rd[d], 0, &alpha, &beta)) goto fail;
    } else if (raw_step(c, &rd[d], 0, &alpha, &beta)) {
      goto fail;
    }
  }
  if (raw_sync_all(rd, ndev)) goto fail;

  /* Graph: capture and instantiate (timed apart), one warm-up launch, then time one launch per
   * device. */
  if (c->graph) {
    const double t0 = gpar_now();
    for (int d = 0; d < ndev; d++) {
      RAW_CK(cudaSetDevice(rd[d].ordinal), "cudaSetDevice", rd[d].ordinal);
      if (raw_capture(c, &rd[d], &alpha, &beta)) goto fail;
    }
    if (c->capture_seconds) *c->capture_seconds = gpar_now() - t0;
    for (int d = 0; d < ndev; d++) {
      RAW_CK(cudaSetDevice(rd[d].ordinal), "cudaSetDevice", rd[d].ordinal);
      RAW_CK(cudaGraphLaunch(rd[d].exec, rd[d].compute), "cudaGraphLaunch", rd[d].ordinal);
    }
    if (raw_sync_all(rd, ndev)) goto fail;
    const double t1 = gpar_now();
    for (int d = 0; d < ndev; d++) {
      if (ndev > 1) RAW_CK(cudaSetDevice(rd[d].ordinal), "cudaSetDevice", rd[d].ordinal);
      RAW_CK(cudaGraphLaunch(rd[d].exec, rd[d].compute), "cudaGraphLaunch", rd[d].ordinal);
    }
    if (raw_sync_all(rd, ndev)) goto fail;
    *seconds = gpar_now() - t1;
    if (c->mode != GPAR_RAW_COPY && raw_check(c, rd, ndev)) goto fail;
    ret = 0;
    goto fail;
  }

  /* Timed part: everything enqueued from this thread, one wait at the end. */
  {
    const double t0 = gpar_now();
    for (int i = 0; i < c->iters; i++)
      for (int d = 0; d < ndev; d++) {
        if (ndev > 1) RAW_CK(cudaSetDevice(rd[d].ordinal), "cudaSetDevice", rd[d].ordinal);
        if (raw_step(c, &rd[d], i, &alpha, &beta)) goto fail;
      }
    if (raw_sync_all(rd, ndev)) goto fail;
    *seconds = gpar_now() - t0;
  }
  if (c->mode != GPAR_RAW_COPY && raw_check(c, rd, ndev)) goto fail;
  ret = 0;

fail:
  for (int d = 0; d < ndev; d++) raw_dev_free(&rd[d]);
  free(rd);
  return ret;
}
