/* raw_array.h: the hand kernels `gpar-bench array` times libgpar's array ops against, launched
 * the raw way (no engine, one thread): saxpy y = a x + y, one element per work-item (the
 * bandwidth reference of elementwise ops: 12 bytes per element), and a float sum of a range
 * in two passes (groups over strided shares, then one group over the partial sums: the read
 * bandwidth reference of reductions, 4 bytes per element). CUDA: NVRTC to a cubin for the
 * device, cudaLaunchKernel; OpenCL: clBuildProgram, clEnqueueNDRangeKernel; host: a C loop. */
#ifndef GPAR_TOOLS_RAW_ARRAY_H
#define GPAR_TOOLS_RAW_ARRAY_H

#include <stddef.h>

enum { GPAR_RAW_SAXPY = 0, GPAR_RAW_SUM = 1 };

typedef struct gpar_raw_array_case {
  int dev;     /* backend-local device index (CUDA ordinal; OpenCL: platform order, then device) */
  size_t n;    /* floats */
  int op;      /* GPAR_RAW_SAXPY or GPAR_RAW_SUM */
  int iters;   /* launches timed (after one warm-up) */
} gpar_raw_array_case;

/* Run the case: *seconds is the time of the timed launches (their wait included), *check the
 * result's first element (saxpy) or the sum, for a correctness check. 0, or -1 after printing
 * why on stderr. Weak: NULL when that backend (or NVRTC) was not built. */
int gpar_raw_array_cuda(const gpar_raw_array_case *c, double *seconds, double *check) __attribute__((weak));
int gpar_raw_array_opencl(const gpar_raw_array_case *c, double *seconds, double *check) __attribute__((weak));
int gpar_raw_array_host(const gpar_raw_array_case *c, double *seconds, double *check);

#endif
