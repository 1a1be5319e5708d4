/* raw_kernel_cuda.c: the hand-written CUDA kernel loops (raw_kernel.h): NVRTC builds the kernels
 * below into a cubin for the device's sm_XY, cudaLibraryLoadData loads it, cudaLaunchKernel
 * launches them on one non-blocking stream; the graph case captures the launch loop once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>
#include <nvrtc.h>

#include "gpar.h" /* gpar_now */
#include "raw_kernel.h"

static const char src[] =
    "extern \"C\" __global__ void tiny(float *y) { if (blockIdx.x * blockDim.x + threadIdx.x == 0) y[0] += 1.0f; }\n"
    "extern \"C\" __global__ void saxpy(unsigned long long n, float a, const float *x, float *y) {\n"
    "  unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n";

static struct {
  int dev, ready;
  cudaStream_t s;
  cudaLibrary_t lib;
  cudaKernel_t tiny, saxpy;
  float *y1, *x, *y;
  size_t n;
  cudaGraphExec_t graph;
  long graph_iters;
} R = {.dev = -1};

static int cu(cudaError_t e, const char *what) {
  if (e == cudaSuccess) return 0;
  fprintf(stderr, "raw_kernel_cuda: %s: %s\n", what, cudaGetErrorString(e));
  return -1;
}

/* Compile text for dev's arch and load it: the cubin in *lib. */
static int build(int dev, const char *text, cudaLibrary_t *lib, double *compile_load, double *load) {
  int major = 0, minor = 0;
  if (cu(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev), "cudaDeviceGetAttribute") ||
      cu(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev), "cudaDeviceGetAttribute"))
    return -1;
  char arch[64];
  snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d%d", major, minor);
  const char *opts[] = {arch};
  double t0 = gpar_now();
  nvrtcProgram p;
  size_t n = 0;
  char *cubin = NULL;
  nvrtcResult r = nvrtcCreateProgram(&p, text, "raw.cu", 0, NULL, NULL);
  if (r == NVRTC_SUCCESS && (r = nvrtcCompileProgram(p, 1, opts)) == NVRTC_SUCCESS && (r = nvrtcGetCUBINSize(p, &n)) == NVRTC_SUCCESS &&
      (cubin = malloc(n)))
    r = nvrtcGetCUBIN(p, cubin);
  if (r != NVRTC_SUCCESS || !cubin) {
    fprintf(stderr, "raw_kernel_cuda: NVRTC: %s\n", nvrtcGetErrorString(r));
    free(cubin);
    return -1;
  }
  nvrtcDestroyProgram(&p);
  int rc = cu(cudaLibraryLoadData(lib, cubin, NULL, NULL, 0, NULL, NULL, 0), "cudaLibraryLoadData");
  if (compile_load) *compile_load = gpar_now() - t0;
  if (!rc && load) { /* the cubin again, as a cache hit would load it */
    cudaLibrary_t again;
    double t1 = gpar_now();
    rc = cu(cudaLibraryLoadData(&again, cubin, NULL, NULL, 0, NULL, NULL, 0), "cudaLibraryLoadData");
    *load = gpar_now() - t1;
    if (!rc) cudaLibraryUnload(again);
  }
  free(cubin);
  return rc;
}

static int setup(int dev) {
  if (R.ready && R.dev == dev) return 0;
  if (R.ready) gpar_raw_kernel_cuda_done();
  R.dev = dev;
  if (cu(cudaSetDevice(dev), "cudaSetDevice") || cu(cudaStreamCreateWithFlags(&R.s, cudaStreamNonBlocking), "stream") ||
      build(dev, src, &R.lib, NULL, NULL) || cu(cudaLibraryGetKernel(&R.tiny, R.lib, "tiny"), "cudaLibraryGetKernel") ||
      cu(cudaLibraryGetKernel(&R.saxpy, R.lib, "saxpy"), "cudaLibraryGetKernel") || cu(cudaMalloc((void **)&R.y1, 4), "cudaMalloc"))
    return -1;
  R.ready = 1;
  return 0;
}

/* iters tiny launches on the stream (a capture too). */
static int tiny_loop(long iters) {
  void *args[] = {&R.y1};
  dim3 g = {1, 1, 1}, b = {32, 1, 1};
  for (long i = 0; i < iters; i++)
    if (cu(cudaLaunchKernel((const void *)R.tiny, g, b, args, 0, R.s), "cudaLaunchKernel")) return -1;
  return 0;
}

static int check_tiny(float want) {
  float y = 0;
  if (cu(cudaMemcpy(&y, R.y1, 4, cudaMemcpyDeviceToHost), "cudaMemcpy")) return -1;
  if (y == want) return 0;
  fprintf(stderr, "raw_kernel_cuda: tiny counted %g, want %g\n", y, want);
  return -1;
}

static int tiny(const gpar_raw_kernel_case *c, double *sec, int graph) {
  if (cu(cudaMemsetAsync(R.y1, 0, 4, R.s), "cudaMemsetAsync") || cu(cudaStreamSynchronize(R.s), "sync")) return -1;
  if (graph && R.graph_iters != c->iters) { /* capture once per loop length, untimed */
    cudaGraph_t gr;
    if (R.graph) cudaGraphExecDestroy(R.graph);
    R.graph = NULL;
    if (cu(cudaStreamBeginCapture(R.s, cudaStreamCaptureModeThreadLocal), "capture") || tiny_loop(c->iters) ||
        cu(cudaStreamEndCapture(R.s, &gr), "end capture") || cu(cudaGraphInstantiate(&R.graph, gr, 0), "instantiate"))
      return -1;
    cudaGraphDestroy(gr);
    R.graph_iters = c->iters;
  }
  int reps = graph ? c->reps : 1;
  double t0 = gpar_now();
  for (int r = 0; r < reps; r++)
    if (graph ? cu(cudaGraphLaunch(R.graph, R.s), "cudaGraphLaunch") : tiny_loop(c->iters)) return -1;
  if (cu(cudaStreamSynchronize(R.s), "sync")) return -1;
  *sec = gpar_now() - t0;
  return check_tiny((float)(c->iters * reps));
}

static int saxpy(const gpar_raw_kernel_case *c, double *sec) {
  if (R.n != c->n) {
    cudaFree(R.x);
    cudaFree(R.y);
    R.x = R.y = NULL;
    float *ones = malloc(c->n * 4);
    for (size_t i = 0; ones && i < c->n; i++) ones[i] = 1.0f;
    int rc = !ones || cu(cudaMalloc((void **)&R.x, c->n * 4), "cudaMalloc") || cu(cudaMalloc((void **)&R.y, c->n * 4), "cudaMalloc") ||
             cu(cudaMemcpy(R.x, ones, c->n * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
    free(ones);
    if (rc) return -1;
    R.n = c->n;
  }
  float a = 1.0f;
  unsigned long long n = c->n;
  if (cu(cudaMemsetAsync(R.y, 0, n * 4, R.s), "memset")) return -1;
  void *args[] = {&n, &a, &R.x, &R.y};
  dim3 g = {(unsigned)((n + 255) / 256), 1, 1}, b = {256, 1, 1};
  if (cu(cudaStreamSynchronize(R.s), "sync")) return -1;
  double t0 = gpar_now();
  for (long i = 0; i < c->iters; i++)
    if (cu(cudaLaunchKernel((const void *)R.saxpy, g, b, args, 0, R.s), "cudaLaunchKernel")) return -1;
  if (cu(cudaStreamSynchronize(R.s), "sync")) return -1;
  *sec = gpar_now() - t0;
  float y0 = 0;
  if (cu(cudaMemcpy(&y0, R.y, 4, cudaMemcpyDeviceToHost), "cudaMemcpy")) return -1;
  return y0 == (float)c->iters ? 0 : (fprintf(stderr, "raw_kernel_cuda: saxpy gave %g\n", y0), -1);
}

int gpar_raw_kernel_cuda(const gpar_raw_kernel_case *c, double *seconds) {
  if (setup(c->dev)) return -1;
  switch (c->what) {
  case GPAR_RAW_K_TINY: return tiny(c, seconds, 0);
  case GPAR_RAW_K_TINY_GRAPH: return tiny(c, seconds, 1);
  case GPAR_RAW_K_SAXPY: return saxpy(c, seconds);
  case GPAR_RAW_K_BINARY: return -1; /* not timed here: the target is absolute (1 ms) */
  default: {
    char text[sizeof src + 64];
    cudaLibrary_t lib;
    snprintf(text, sizeof text, "/* round %d */\n%s", c->salt, src);
    int rc = build(c->dev, text, &lib, &seconds[0], &seconds[1]);
    if (!rc) cudaLibraryUnload(lib);
    return rc;
  }
  }
}

void gpar_raw_kernel_cuda_done(void) {
  if (!R.ready) return;
  cudaSetDevice(R.dev);
  if (R.graph) cudaGraphExecDestroy(R.graph);
  cudaFree(R.x);
  cudaFree(R.y);
  cudaFree(R.y1);
  cudaLibraryUnload(R.lib);
  cudaStreamDestroy(R.s);
  memset(&R, 0, sizeof R);
  R.dev = -1;
}
