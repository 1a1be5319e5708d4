/* raw_branches_cuda.c: the hand-written CUDA branches (raw_branches.h): one thread, K
 * non-blocking streams with a cuBLAS handle each (a 32 MiB workspace, as libgpar sets one),
 * K x (L + 1) activations and K x L weights of n x n floats; a step issues, layer by layer
 * across the branches, the SGEMM and the ReLU of each branch on its stream; the graph is that
 * step captured once from stream 0, the other streams forked from it and joined back by events. */
#include <stdio.h>
#include <stdlib.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nvrtc.h>

#include "gpar.h" /* gpar_now */
#include "raw_branches.h"

#define RB_MAX 16
#define RB_WS ((size_t)32 << 20)

static struct {
  int ready, dev, k, l, n;
  cudaStream_t s[RB_MAX];
  cublasHandle_t h[RB_MAX];
  void *ws[RB_MAX];
  float *act, *w; /* [k][l + 1][n * n], [k][l][n * n] */
  cudaKernel_t relu;
  cudaGraphExec_t graph;
  cudaEvent_t fork, join[RB_MAX];
} R;

static const char relu_src[] = "extern \"C\" __global__ void relu(float *x, int n) {\n"
                               "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                               "  if (i < n && x[i] < 0.0f) x[i] = 0.0f;\n"
                               "}\n";

static int cu(cudaError_t e, const char *what) {
  if (e == cudaSuccess) return 0;
  fprintf(stderr, "raw_branches_cuda: %s: %s\n", what, cudaGetErrorString(e));
  return -1;
}

static int bl(cublasStatus_t s, const char *what) {
  if (s == CUBLAS_STATUS_SUCCESS) return 0;
  fprintf(stderr, "raw_branches_cuda: %s: %s\n", what, cublasGetStatusName(s));
  return -1;
}

/* The ReLU kernel for R.dev (NVRTC, its sm_XY). */
static int relu_kernel(void) {
  int major = 0, minor = 0;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, R.dev);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, R.dev);
  char arch[64], *cubin = NULL;
  snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d%d", major, minor);
  const char *opts[] = {arch};
  nvrtcProgram p = NULL;
  size_t size = 0;
  nvrtcResult r = nvrtcCreateProgram(&p, relu_src, "raw_branches.cu", 0, NULL, NULL);
  if (r == NVRTC_SUCCESS) r = nvrtcCompileProgram(p, 1, opts);
  if (r == NVRTC_SUCCESS) r = nvrtcGetCUBINSize(p, &size);
  if (r == NVRTC_SUCCESS && (cubin = malloc(size))) r = nvrtcGetCUBIN(p, cubin);
  if (p) nvrtcDestroyProgram(&p);
  cudaLibrary_t lib;
  int rc = r != NVRTC_SUCCESS || !cubin ? (fprintf(stderr, "raw_branches_cuda: NVRTC: %s\n", nvrtcGetErrorString(r)), -1)
           : cu(cudaLibraryLoadData(&lib, cubin, NULL, NULL, 0, NULL, NULL, 0), "cudaLibraryLoadData")
               ? -1
               : cu(cudaLibraryGetKernel(&R.relu, lib, "relu"), "cudaLibraryGetKernel");
  free(cubin);
  return rc;
}

/* One step: the K x L SGEMMs and ReLUs, layer by layer across the branches. */
static int step(void) {
  const float one = 1.0f, zero = 0.0f;
  size_t nn = (size_t)R.n * R.n;
  int n2 = (int)nn;
  for (int l = 0; l < R.l; l++)
    for (int b = 0; b < R.k; b++) {
      float *in = R.act + ((size_t)b * (R.l + 1) + l) * nn, *out = in + nn, *w = R.w + ((size_t)b * R.l + l) * nn;
      void *args[] = {&out, &n2};
      dim3 g = {(unsigned)((nn + 255) / 256), 1, 1}, bs = {256, 1, 1};
      if (bl(cublasSgemm(R.h[b], CUBLAS_OP_N, CUBLAS_OP_N, R.n, R.n, R.n, &one, w, R.n, in, R.n, &zero, out, R.n),
             "cublasSgemm") ||
          cu(cudaLaunchKernel((const void *)R.relu, g, bs, args, 0, R.s[b]), "cudaLaunchKernel"))
        return -1;
    }
  return 0;
}

/* The step captured once on the K streams (stream 0 the origin), instantiated. */
static int capture(void) {
  cudaGraph_t g = NULL;
  if (cu(cudaStreamBeginCapture(R.s[0], cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture") ||
      cu(cudaEventRecord(R.fork, R.s[0]), "cudaEventRecord"))
    return -1;
  for (int b = 1; b < R.k; b++)
    if (cu(cudaStreamWaitEvent(R.s[b], R.fork, 0), "cudaStreamWaitEvent")) return -1;
  int rc = step();
  for (int b = 1; b < R.k && !rc; b++)
    rc = cu(cudaEventRecord(R.join[b], R.s[b]), "cudaEventRecord") ||
         cu(cudaStreamWaitEvent(R.s[0], R.join[b], 0), "cudaStreamWaitEvent");
  if (cu(cudaStreamEndCapture(R.s[0], &g), "cudaStreamEndCapture") || rc) return -1;
  rc = cu(cudaGraphInstantiateWithFlags(&R.graph, g, 0), "cudaGraphInstantiateWithFlags");
  cudaGraphDestroy(g);
  return rc;
}

static int setup(const gpar_raw_branches_case *c) {
  if (R.ready && R.dev == c->dev && R.k == c->k && R.l == c->l && R.n == c->n) return 0;
  if (R.ready) gpar_raw_branches_cuda_done();
  if (c->k < 1 || c->k > RB_MAX || c->l < 1 || c->n < 1) return fprintf(stderr, "raw_branches_cuda: bad case\n"), -1;
  R.dev = c->dev, R.k = c->k, R.l = c->l, R.n = c->n;
  size_t nn = (size_t)c->n * c->n;
  if (cu(cudaSetDevice(c->dev), "cudaSetDevice") || relu_kernel() ||
      cu(cudaMalloc((void **)&R.act, sizeof(float) * nn * c->k * (c->l + 1)), "cudaMalloc") ||
      cu(cudaMalloc((void **)&R.w, sizeof(float) * nn * c->k * c->l), "cudaMalloc") ||
      cu(cudaMemset(R.act, 0, sizeof(float) * nn * c->k * (c->l + 1)), "cudaMemset") ||
      cu(cudaMemset(R.w, 0, sizeof(float) * nn * c->k * c->l), "cudaMemset") ||
      cu(cudaEventCreateWithFlags(&R.fork, cudaEventDisableTiming), "cudaEventCreate"))
    return -1;
  for (int b = 0; b < c->k; b++)
    if (cu(cudaStreamCreateWithFlags(&R.s[b], cudaStreamNonBlocking), "cudaStreamCreate") ||
        cu(cudaEventCreateWithFlags(&R.join[b], cudaEventDisableTiming), "cudaEventCreate") ||
        bl(cublasCreate(&R.h[b]), "cublasCreate") || bl(cublasSetStream(R.h[b], R.s[b]), "cublasSetStream") ||
        cu(cudaMalloc(&R.ws[b], RB_WS), "cudaMalloc") || bl(cublasSetWorkspace(R.h[b], R.ws[b], RB_WS), "cublasSetWorkspace"))
      return -1;
  R.ready = 1;
  if (step() || capture()) return -1; /* warm-up and the graph, untimed */
  return cu(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

int gpar_raw_branches_cuda(const gpar_raw_branches_case *c, double *seconds) {
  if (setup(c)) return -1;
  double t0 = gpar_now();
  for (int i = 0; i < c->steps; i++)
    if (c->what == GPAR_RAW_B_GRAPH ? cu(cudaGraphLaunch(R.graph, R.s[0]), "cudaGraphLaunch") : step()) return -1;
  for (int b = 0; b < R.k; b++)
    if (cu(cudaStreamSynchronize(R.s[b]), "cudaStreamSynchronize")) return -1;
  *seconds = gpar_now() - t0;
  return 0;
}

void gpar_raw_branches_cuda_done(void) {
  if (!R.ready) return;
  cudaSetDevice(R.dev);
  cudaDeviceSynchronize();
  if (R.graph) cudaGraphExecDestroy(R.graph);
  for (int b = 0; b < R.k; b++) {
    cublasDestroy(R.h[b]);
    cudaFree(R.ws[b]);
    cudaStreamDestroy(R.s[b]);
    cudaEventDestroy(R.join[b]);
  }
  cudaEventDestroy(R.fork);
  cudaFree(R.act);
  cudaFree(R.w);
  R.ready = 0;
  R.graph = NULL;
}
