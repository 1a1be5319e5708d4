/* raw_kernel.h: the hand-written kernel loops `gpar-bench kernel` times next to libgpar, in the
 * same process: the same kernels (a one-element "tiny" kernel, saxpy) built and launched through
 * the vendor API directly. CUDA: NVRTC to a cubin, cudaLibraryLoadData, cudaLaunchKernel on one
 * stream, and a hand-captured CUDA graph; OpenCL: clBuildProgram, clEnqueueNDRangeKernel on one
 * queue; host: a plain C call, cblas_saxpy with OpenBLAS's threads, the system compiler and
 * dlopen. Each keeps what it built and allocated between calls (rounds) until its _done. The
 * declarations of GPU files are weak: NULL when that backend was not built. */
#ifndef GPAR_TOOLS_RAW_KERNEL_H
#define GPAR_TOOLS_RAW_KERNEL_H

#include <stddef.h>

enum {
  GPAR_RAW_K_TINY,       /* iters launches of the tiny kernel (1 group of 32), one sync */
  GPAR_RAW_K_TINY_GRAPH, /* the same iters launches captured once into a graph, run reps times */
  GPAR_RAW_K_SAXPY,      /* iters saxpy calls over n floats, one sync */
  GPAR_RAW_K_BUILD,      /* a new source (salt) compiled and loaded: seconds[0]; its binary loaded again: seconds[1] */
  GPAR_RAW_K_BINARY      /* the binary in file path loaded (OpenCL: clCreateProgramWithBinary + clBuildProgram):
                            seconds[0] */
};

typedef struct gpar_raw_kernel_case {
  int what;    /* GPAR_RAW_K_* */
  int dev;     /* backend-local device index (CUDA ordinal; OpenCL: platforms' devices in order) */
  long iters;
  int reps;    /* TINY_GRAPH */
  size_t n;    /* SAXPY */
  int threads; /* host SAXPY: OpenBLAS threads (restored to 1 after) */
  int salt;    /* BUILD: makes the source one never built before */
  const char *path; /* BINARY */
} gpar_raw_kernel_case;

/* Run a case; seconds (two for BUILD) of its timed part. 0, or -1 after printing why. The
 * tiny kernel adds 1 to y[0] per launch and saxpy computes y = x + y from x = 1: a wrong count
 * is an error. */
int gpar_raw_kernel_cuda(const gpar_raw_kernel_case *c, double *seconds) __attribute__((weak));
int gpar_raw_kernel_opencl(const gpar_raw_kernel_case *c, double *seconds) __attribute__((weak));
int gpar_raw_kernel_host(const gpar_raw_kernel_case *c, double *seconds);
/* Free what the loops kept. */
void gpar_raw_kernel_cuda_done(void) __attribute__((weak));
void gpar_raw_kernel_opencl_done(void) __attribute__((weak));
void gpar_raw_kernel_host_done(void);

#endif
