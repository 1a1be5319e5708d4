/* raw_lanes_cuda.c: the hand-written eager limit of gpar-bench lanes on CUDA (raw_lanes.h): T
 * threads, each with its own non-blocking stream and cuBLAS handle (a 32 MiB workspace, as
 * libgpar's backend sets one), issuing its share of independent cublasSgemm calls or tiny
 * cudaLaunchKernel launches (NVRTC, kept per device for the process), then synchronizing its
 * stream; the chain case runs on one stream. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nvrtc.h>

#include "gpar.h" /* gpar_now */
#include "raw_lanes.h"

#define RL_WS ((size_t)32 << 20)

typedef struct rl_run rl_run;
typedef struct rl_thread {
  rl_run *run;
  int id, ok;
  cudaStream_t s;
  cublasHandle_t h;
  void *ws;
} rl_thread;

struct rl_run {
  const gpar_raw_lanes_case *c;
  float *a, *b, *out; /* inputs; ring slots, then one more for the warm-ups */
  size_t slot;        /* floats per slot */
  int per;            /* slots per thread */
  cudaKernel_t inc;
  gpar_raw_lanes_team team;
  rl_thread th[GPAR_RAW_L_MAX_THREADS];
};

static const char inc_src[] = "extern \"C\" __global__ void inc(const float *x, float *y, int n) {\n"
                              "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                              "  if (i < n) y[i] = x[i] + 1.0f;\n"
                              "}\n";

static int cu(cudaError_t e, const char *what) {
  if (e == cudaSuccess) return 0;
  fprintf(stderr, "raw_lanes_cuda: %s: %s\n", what, cudaGetErrorString(e));
  return -1;
}

static int bl(cublasStatus_t s, const char *what) {
  if (s == CUBLAS_STATUS_SUCCESS) return 0;
  fprintf(stderr, "raw_lanes_cuda: %s: %s\n", what, cublasGetStatusName(s));
  return -1;
}

/* The tiny kernel for dev, compiled by NVRTC for its sm_XY once per process. */
static cudaKernel_t inc_kernel(int dev) {
  static cudaKernel_t k[64];
  if (dev < 0 || dev >= 64) return NULL;
  if (k[dev]) return k[dev];
  int major = 0, minor = 0;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
  char arch[64], *cubin = NULL;
  snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d%d", major, minor);
  const char *opts[] = {arch};
  nvrtcProgram p = NULL;
  size_t size = 0;
  nvrtcResult r = nvrtcCreateProgram(&p, inc_src, "raw_lanes.cu", 0, NULL, NULL);
  if (r == NVRTC_SUCCESS) r = nvrtcCompileProgram(p, 1, opts);
  if (r == NVRTC_SUCCESS) r = nvrtcGetCUBINSize(p, &size);
  if (r == NVRTC_SUCCESS && (cubin = malloc(size))) r = nvrtcGetCUBIN(p, cubin);
  if (p) nvrtcDestroyProgram(&p);
  cudaLibrary_t lib;
  if (r != NVRTC_SUCCESS || !cubin)
    fprintf(stderr, "raw_lanes_cuda: NVRTC: %s\n", nvrtcGetErrorString(r));
  else if (!cu(cudaLibraryLoadData(&lib, cubin, NULL, NULL, 0, NULL, NULL, 0), "cudaLibraryLoadData"))
    cu(cudaLibraryGetKernel(&k[dev], lib, "inc"), "cudaLibraryGetKernel");
  free(cubin);
  return k[dev];
}

/* One op of t into y: the tiny kernel (y = a + 1), an independent GEMM (y = a b) or a chain step
 * (y = b x, b holding 1 / n). */
static int issue(rl_run *r, rl_thread *t, const float *x, float *y) {
  const gpar_raw_lanes_case *c = r->c;
  int n = c->n;
  if (c->what == GPAR_RAW_L_TINY) {
    void *args[] = {&r->a, &y, &n};
    dim3 g = {(unsigned)((n + 255) / 256), 1, 1}, b = {256, 1, 1};
    return cu(cudaLaunchKernel((const void *)r->inc, g, b, args, 0, t->s), "cudaLaunchKernel");
  }
  const float one = 1.0f, zero = 0.0f;
  const float *left = c->what == GPAR_RAW_L_CHAIN ? r->b : r->a, *right = c->what == GPAR_RAW_L_CHAIN ? x : r->b;
  return bl(cublasSgemm(t->h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, left, n, right, n, &zero, y, n), "cublasSgemm");
}

/* A thread: its stream and handle, a warm-up op into the spare slot, then (between the two
 * barriers) its share of the ops and its stream's synchronization. */
static void *rl_main(void *p) {
  rl_thread *t = p;
  rl_run *r = t->run;
  const gpar_raw_lanes_case *c = r->c;
  float *spare = r->out + (size_t)c->ring * r->slot;
  t->ok = !cu(cudaSetDevice(c->dev), "cudaSetDevice") &&
          !cu(cudaStreamCreateWithFlags(&t->s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  if (t->ok && c->what != GPAR_RAW_L_TINY)
    t->ok = !bl(cublasCreate(&t->h), "cublasCreate") && !bl(cublasSetStream(t->h, t->s), "cublasSetStream") &&
            !cu(cudaMalloc(&t->ws, RL_WS), "cudaMalloc") && !bl(cublasSetWorkspace(t->h, t->ws, RL_WS), "cublasSetWorkspace");
  if (t->ok && t->id == 0 && c->what == GPAR_RAW_L_CHAIN) /* C0 = 1 */
    t->ok = !cu(cudaMemcpyAsync(r->out, r->a, r->slot * 4, cudaMemcpyDeviceToDevice, t->s), "cudaMemcpyAsync");
  if (t->ok) t->ok = !issue(r, t, r->a, spare) && !cu(cudaStreamSynchronize(t->s), "cudaStreamSynchronize");
  pthread_barrier_wait(&r->team.go);
  for (long i = t->id, j = 0; t->ok && i < c->iters; i += c->threads, j++) {
    if (c->what == GPAR_RAW_L_CHAIN)
      t->ok = !issue(r, t, r->out + (size_t)(i & 1) * r->slot, r->out + (size_t)((i + 1) & 1) * r->slot);
    else
      t->ok = !issue(r, t, NULL, r->out + (size_t)(t->id * r->per + j % r->per) * r->slot);
  }
  if (t->ok) t->ok = !cu(cudaStreamSynchronize(t->s), "cudaStreamSynchronize");
  pthread_barrier_wait(&r->team.done);
  return NULL;
}

/* Inputs and ring: a = 1, b = 0.5 (chain: 1 / n). */
static int rl_alloc(rl_run *r) {
  const gpar_raw_lanes_case *c = r->c;
  size_t in = r->slot;
  float *h = malloc(in * sizeof *h);
  int rc = !h || cu(cudaSetDevice(c->dev), "cudaSetDevice") || cu(cudaMalloc((void **)&r->a, in * 4), "cudaMalloc") ||
           cu(cudaMalloc((void **)&r->b, in * 4), "cudaMalloc") ||
           cu(cudaMalloc((void **)&r->out, (size_t)(c->ring + 1) * r->slot * 4), "cudaMalloc") ||
           cu(cudaMemset(r->out, 0, (size_t)(c->ring + 1) * r->slot * 4), "cudaMemset");
  for (size_t i = 0; !rc && i < in; i++) h[i] = 1.0f;
  if (!rc) rc = cu(cudaMemcpy(r->a, h, in * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
  for (size_t i = 0; !rc && i < in; i++) h[i] = c->what == GPAR_RAW_L_CHAIN ? 1.0f / (float)c->n : 0.5f;
  if (!rc) rc = cu(cudaMemcpy(r->b, h, in * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
  free(h);
  return rc ? -1 : 0;
}

/* The first and last element of slot 0 (the chain: the slot it ended in) and of thread 0's last
 * slot (the ring was zeroed), against the case's value. */
static int rl_check(rl_run *r) {
  const gpar_raw_lanes_case *c = r->c;
  const long t = c->what == GPAR_RAW_L_CHAIN ? 1 : c->threads, last = ((c->iters + t - 1) / t - 1) % r->per;
  const float want = c->what == GPAR_RAW_L_TINY ? 2.0f : c->what == GPAR_RAW_L_GEMM ? 0.5f * c->n : 1.0f;
  for (int k = 0; k < 4; k++) {
    size_t slot = c->what == GPAR_RAW_L_CHAIN ? (size_t)(c->iters & 1) : k < 2 ? 0 : (size_t)last;
    float v = 0;
    if (cu(cudaMemcpy(&v, r->out + slot * r->slot + (k & 1 ? r->slot - 1 : 0), 4, cudaMemcpyDeviceToHost), "cudaMemcpy"))
      return -1;
    if (!(v >= want * 0.999f && v <= want * 1.001f)) {
      fprintf(stderr, "raw_lanes_cuda: computed %g, want %g\n", (double)v, (double)want);
      return -1;
    }
  }
  return 0;
}

int gpar_raw_lanes_cuda(const gpar_raw_lanes_case *c, double *seconds, const char **what) {
  static const char *const names[] = {"T threads, T streams, T cuBLAS handles, cublasSgemm",
                                      "T threads, T streams, NVRTC cubin, cudaLaunchKernel",
                                      "one stream, one cuBLAS handle, cublasSgemm"};
  int T = gpar_raw_lanes_threads(c);
  if (T < 0) return -1;
  *what = names[c->what];
  rl_run r = {.c = c, .slot = c->what == GPAR_RAW_L_TINY ? (size_t)c->n : (size_t)c->n * c->n, .per = c->ring / T};
  int ok = (c->what != GPAR_RAW_L_TINY || (r.inc = inc_kernel(c->dev))) && !rl_alloc(&r);
  for (int k = 0; k < T; k++) r.th[k] = (rl_thread){.run = &r, .id = k};
  if (ok) gpar_raw_lanes_team_run(&r.team, T, rl_main, r.th, sizeof r.th[0], seconds);
  for (int k = 0; k < T; k++) {
    ok &= r.th[k].ok;
    if (r.th[k].h) cublasDestroy(r.th[k].h);
    if (r.th[k].s) cudaStreamDestroy(r.th[k].s);
    cudaFree(r.th[k].ws);
  }
  if (ok) ok = !rl_check(&r);
  cudaFree(r.a), cudaFree(r.b), cudaFree(r.out);
  (void)cudaGetLastError();
  return ok ? 0 : -1;
}
