/* raw_array_cuda.c: the hand CUDA kernels of `gpar-bench array` (raw_array.h): saxpy with one
 * element per thread, and a two-pass float sum (grid-stride loads, warp shuffles, a shared
 * array per block, then one block over the partials), built by NVRTC for the device's sm_XY
 * (clamped to what NVRTC knows) and launched with cudaLaunchKernel on one stream. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cuda_runtime.h>
#include <nvrtc.h>

#include "raw_array.h"

static const char source[] =
    "extern \"C\" __global__ void saxpy(unsigned long long n, float a, const float *x, float *y) {\n"
    "  unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n"
    "extern \"C\" __global__ void sum(unsigned long long n, const float *x, float *out) {\n"
    "  __shared__ float sh[32];\n"
    "  float s = 0.0f;\n"
    "  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;\n"
    "  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)\n"
    "    s += x[i];\n"
    "  for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);\n"
    "  if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = s;\n"
    "  __syncthreads();\n"
    "  if (threadIdx.x < 32) {\n"
    "    s = threadIdx.x < blockDim.x / 32 ? sh[threadIdx.x] : 0.0f;\n"
    "    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);\n"
    "    if (threadIdx.x == 0) out[blockIdx.x] = s;\n"
    "  }\n"
    "}\n";

static double raw_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int fail(const char *what, const char *why) {
  fprintf(stderr, "raw_array_cuda: %s: %s\n", what, why);
  return -1;
}
#define CU(call)                                                         \
  do {                                                                   \
    cudaError_t e_ = (call);                                             \
    if (e_ != cudaSuccess) return fail(#call, cudaGetErrorString(e_)); \
  } while (0)

/* The two kernels for device dev, built once per process per architecture. */
static int build(int dev, cudaKernel_t *saxpy, cudaKernel_t *sum) {
  static int built_arch = -1;
  static cudaKernel_t ks, kr;
  int major, minor, narch, arch[64], best = 0;
  CU(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  CU(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
  if (nvrtcGetNumSupportedArchs(&narch) != NVRTC_SUCCESS || narch > 64 || nvrtcGetSupportedArchs(arch) != NVRTC_SUCCESS)
    return fail("nvrtcGetSupportedArchs", "failed");
  for (int i = 0; i < narch; i++)
    if (arch[i] <= major * 10 + minor && arch[i] / 10 == major && arch[i] > best) best = arch[i];
  if (!best) return fail("NVRTC", "does not know this architecture");
  if (built_arch != best) {
    char opt[48];
    snprintf(opt, sizeof opt, "--gpu-architecture=sm_%d", best);
    const char *opts[] = {opt};
    nvrtcProgram p;
    size_t len = 0;
    if (nvrtcCreateProgram(&p, source, "raw_array.cu", 0, NULL, NULL) != NVRTC_SUCCESS) return fail("nvrtcCreateProgram", "failed");
    nvrtcResult r = nvrtcCompileProgram(p, 1, opts);
    char *bin = r == NVRTC_SUCCESS && nvrtcGetCUBINSize(p, &len) == NVRTC_SUCCESS ? malloc(len) : NULL;
    if (bin && nvrtcGetCUBIN(p, bin) != NVRTC_SUCCESS) free(bin), bin = NULL;
    nvrtcDestroyProgram(&p);
    if (!bin) return fail("nvrtcCompileProgram", nvrtcGetErrorString(r));
    cudaLibrary_t lib;
    cudaError_t e = cudaLibraryLoadData(&lib, bin, NULL, NULL, 0, NULL, NULL, 0);
    free(bin);
    if (e != cudaSuccess) return fail("cudaLibraryLoadData", cudaGetErrorString(e));
    CU(cudaLibraryGetKernel(&ks, lib, "saxpy"));
    CU(cudaLibraryGetKernel(&kr, lib, "sum"));
    built_arch = best;
  }
  *saxpy = ks, *sum = kr;
  return 0;
}

/* One launch of the case's work on stream s (sum: two kernels through part). */
static int launch(const gpar_raw_array_case *c, cudaKernel_t ks, cudaKernel_t kr, float *x, float *y, float *part,
                  cudaStream_t s) {
  unsigned long long n = c->n, np = 1024, one = 1;
  if (c->op == GPAR_RAW_SAXPY) {
    float a = 0.5f;
    void *args[] = {&n, &a, &x, &y};
    dim3 g = {(unsigned)((n + 255) / 256), 1, 1}, b = {256, 1, 1};
    CU(cudaLaunchKernel((const void *)ks, g, b, args, 0, s));
    return 0;
  }
  float *out = y;
  void *a1[] = {&n, &x, &part}, *a2[] = {&np, &part, &out};
  dim3 g1 = {(unsigned)np, 1, 1}, g2 = {(unsigned)one, 1, 1}, b = {256, 1, 1};
  CU(cudaLaunchKernel((const void *)kr, g1, b, a1, 0, s));
  CU(cudaLaunchKernel((const void *)kr, g2, b, a2, 0, s));
  return 0;
}

int gpar_raw_array_cuda(const gpar_raw_array_case *c, double *seconds, double *check) {
  cudaKernel_t ks, kr;
  CU(cudaSetDevice(c->dev));
  if (build(c->dev, &ks, &kr)) return -1;
  float *x = NULL, *y = NULL, *part = NULL, h = 0;
  cudaStream_t s;
  CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  int rc = cudaMalloc((void **)&x, c->n * 4) || cudaMalloc((void **)&y, c->n * 4) || cudaMalloc((void **)&part, 1024 * 4)
               ? fail("cudaMalloc", "out of device memory") : 0;
  if (!rc) rc = cudaMemsetAsync(x, 0, c->n * 4, s) || cudaMemsetAsync(y, 0, c->n * 4, s) ? fail("cudaMemset", "failed") : 0;
  if (!rc) rc = launch(c, ks, kr, x, y, part, s); /* warm-up */
  if (!rc) rc = cudaStreamSynchronize(s) ? fail("cudaStreamSynchronize", "failed") : 0;
  double t0 = raw_now();
  for (int i = 0; i < c->iters && !rc; i++) rc = launch(c, ks, kr, x, y, part, s);
  if (!rc) rc = cudaStreamSynchronize(s) ? fail("cudaStreamSynchronize", "failed") : 0;
  *seconds = raw_now() - t0;
  if (!rc) rc = cudaMemcpy(&h, y, 4, cudaMemcpyDeviceToHost) ? fail("cudaMemcpy", "failed") : 0;
  *check = h;
  cudaFree(x), cudaFree(y), cudaFree(part);
  cudaStreamDestroy(s);
  return rc;
}
