/* raw.h: the raw vendor loops gpar-bench times side by side with libgpar (same work, same
 * process, no engine). Each backend's file defines its entry; the declarations are weak, so an
 * entry is NULL when that backend was not built. */
#ifndef GPAR_TOOLS_RAW_H
#define GPAR_TOOLS_RAW_H

/* One raw run. */
typedef struct gpar_raw_case {
  int n;           /* square GEMM size: n x n x n, FP32 */
  int iters;       /* GEMMs per device */
  int mode;        /* GPAR_RAW_* below */
  int tf32;        /* 1: TF32 tensor-op math (CUDA only) */
  const int *devs; /* backend-local device indices (CUDA ordinal; OpenCL: backend order) */
  int ndev;        /* devices used at once, all driven from the calling thread */
  int graph;       /* 1: capture the timed loop once per device into a CUDA graph (untimed),
                      then time one cudaGraphLaunch per device (CUDA only) */
  double *capture_seconds; /* graph: where to put capture + instantiation time (may be NULL) */
  int lt;          /* 1: each GEMM is one cublasLtMatmul with a plan (descriptor, layouts, the
                      heuristic's algorithm) made once per device and shape before the timed
                      loop, instead of cublasSgemm (CUDA only) */
} gpar_raw_case;

enum {
  GPAR_RAW_GEMM = 0,      /* iters GEMMs per device, one wait at the end */
  GPAR_RAW_GEMM_COPY = 1, /* each GEMM's n*n result also copied to pinned host memory on a
                             second stream/queue that waits on the GEMM's event */
  GPAR_RAW_COPY = 2       /* the iters device-to-host copies alone */
};

/* Run the case once after a warm-up; *seconds is the wall time of the timed part.
 * Returns 0, or -1 after printing the reason on stderr. */
int gpar_raw_cuda(const gpar_raw_case *c, double *seconds) __attribute__((weak));
int gpar_raw_opencl(const gpar_raw_case *c, double *seconds) __attribute__((weak));
/* OpenBLAS on the calling thread (raw_host.c, always built): GPAR_RAW_GEMM on one device. */
int gpar_raw_host(const gpar_raw_case *c, double *seconds);

#endif
