/* raw_array_cuda.c: the hand CUDA sum of `gpar-bench array` (raw_array.h): two passes (grid-
 * stride loads, warp shuffles, a shared array per block, then one block over the partials),
 * built by NVRTC for the device's sm_XY (clamped to what NVRTC knows) and launched with
 * cudaLaunchKernel on one stream. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cuda_runtime.h>
#include <nvrtc.h>

#include "gpar.h" /* gpar_now */
#include "raw_array.h"

static const char source[] =
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

static int fail(const char *what, const char *why) {
  fprintf(stderr, "raw_array_cuda: %s: %s\n", what, why);
  return -1;
}
#define CU(call)                                                         \
  do {                                                                   \
    cudaError_t e_ = (call);                                             \
    if (e_ != cudaSuccess) return fail(#call, cudaGetErrorString(e_)); \
  } while (0)

/* The sum kernel for device dev, built once per process per architecture. */
static int build(int dev, cudaKernel_t *sum) {
  static int built_arch = -1;
  static cudaKernel_t kr;
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
    CU(cudaLibraryGetKernel(&kr, lib, "sum"));
    built_arch = best;
  }
  *sum = kr;
  return 0;
}

/* One sum: pass 1 into part, pass 2 into out. */
static int launch(const gpar_raw_sum_case *c, cudaKernel_t kr, float *x, float *part, float *out, cudaStream_t s) {
  unsigned long long n = c->n, np = 1024;
  void *a1[] = {&n, &x, &part}, *a2[] = {&np, &part, &out};
  dim3 g1 = {(unsigned)np, 1, 1}, g2 = {1, 1, 1}, b = {256, 1, 1};
  CU(cudaLaunchKernel((const void *)kr, g1, b, a1, 0, s));
  CU(cudaLaunchKernel((const void *)kr, g2, b, a2, 0, s));
  return 0;
}

/* x = 1.0f everywhere (so the sum is checked): a byte pattern cudaMemset cannot give, copied in. */
static int ones(float *x, size_t n, cudaStream_t s) {
  size_t chunk = (size_t)1 << 20, done = 0;
  float *h = malloc(chunk * sizeof *h);
  if (!h) return fail("malloc", "out of memory");
  for (size_t i = 0; i < chunk; i++) h[i] = 1.0f;
  int rc = 0;
  for (; done < n && !rc; done += chunk)
    rc = cudaMemcpyAsync(x + done, h, (n - done < chunk ? n - done : chunk) * 4, cudaMemcpyHostToDevice, s) ||
                 cudaStreamSynchronize(s) ? fail("cudaMemcpy", "failed") : 0;
  free(h);
  return rc;
}

int gpar_raw_sum_cuda(const gpar_raw_sum_case *c, double *seconds, double *sum) {
  cudaKernel_t kr;
  CU(cudaSetDevice(c->dev));
  if (build(c->dev, &kr)) return -1;
  float *x = NULL, *part = NULL, *out = NULL, h = 0;
  cudaStream_t s;
  CU(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  int rc = cudaMalloc((void **)&x, c->n * 4) || cudaMalloc((void **)&part, 1024 * 4) || cudaMalloc((void **)&out, 4)
               ? fail("cudaMalloc", "out of device memory") : 0;
  if (!rc) rc = ones(x, c->n, s);
  if (!rc) rc = launch(c, kr, x, part, out, s); /* warm-up */
  if (!rc) rc = cudaStreamSynchronize(s) ? fail("cudaStreamSynchronize", "failed") : 0;
  double t0 = gpar_now();
  for (int i = 0; i < c->iters && !rc; i++) rc = launch(c, kr, x, part, out, s);
  if (!rc) rc = cudaStreamSynchronize(s) ? fail("cudaStreamSynchronize", "failed") : 0;
  *seconds = gpar_now() - t0;
  if (!rc) rc = cudaMemcpy(&h, out, 4, cudaMemcpyDeviceToHost) ? fail("cudaMemcpy", "failed") : 0;
  *sum = h;
  cudaFree(x), cudaFree(part), cudaFree(out);
  cudaStreamDestroy(s);
  return rc;
}
