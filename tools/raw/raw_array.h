/* raw_array.h: the hand two-pass float sum `gpar-bench array` times gpar_reduce_range against,
 * launched the raw way (no engine, one thread): groups over strided shares into partial sums,
 * then one group over the partials (the read-bandwidth reference of reductions, 4 bytes per
 * element). CUDA: NVRTC to a cubin for the device, cudaLaunchKernel; OpenCL: clBuildProgram,
 * clEnqueueNDRangeKernel; host: a C loop. (The saxpy reference of the elementwise ops is
 * raw_kernel.h's, the one `gpar-bench kernel` uses.) */
#ifndef GPAR_TOOLS_RAW_ARRAY_H
#define GPAR_TOOLS_RAW_ARRAY_H

#include <stddef.h>

typedef struct gpar_raw_sum_case {
  int dev;     /* backend-local device index (CUDA ordinal; OpenCL: platform order, then device) */
  size_t n;    /* floats */
  int iters;   /* sums timed (after one warm-up) */
} gpar_raw_sum_case;

/* Run the case: *seconds is the time of the timed sums (their wait included), *sum the result.
 * 0, or -1 after printing why on stderr. Weak: NULL when that backend (or NVRTC) was not built. */
int gpar_raw_sum_cuda(const gpar_raw_sum_case *c, double *seconds, double *sum) __attribute__((weak));
int gpar_raw_sum_opencl(const gpar_raw_sum_case *c, double *seconds, double *sum) __attribute__((weak));
int gpar_raw_sum_host(const gpar_raw_sum_case *c, double *seconds, double *sum);

#endif
