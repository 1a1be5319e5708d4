/* raw_branches.h: the hand-written CUDA versions of `gpar-bench branches` (raw_branches_cuda.c),
 * timed in the same process as libgpar's: K independent branches of L layers, each layer an
 * n^3 SGEMM into the branch's next activation (cublasSgemm) and then ReLU in place (a kernel
 * NVRTC builds), issued layer by layer across the branches from one thread on K streams, each
 * with its own cuBLAS handle; and the same sequence captured once into a CUDA graph on the K
 * streams (fork and join by events), then launched. Vendor APIs only; weak: NULL without CUDA. */
#ifndef GPAR_TOOLS_RAW_BRANCHES_H
#define GPAR_TOOLS_RAW_BRANCHES_H

enum { GPAR_RAW_B_STREAMS, GPAR_RAW_B_GRAPH };

typedef struct gpar_raw_branches_case {
  int what;  /* GPAR_RAW_B_* */
  int dev;   /* CUDA ordinal */
  int k, l;  /* branches, layers */
  int n;     /* GEMM size */
  int steps; /* times the whole K x L sequence runs (timed) */
} gpar_raw_branches_case;

/* Run a case (setup, capture and a warm-up step untimed); *seconds for `steps` steps, to the
 * last stream's synchronization. 0, or -1 after printing why. */
int gpar_raw_branches_cuda(const gpar_raw_branches_case *c, double *seconds) __attribute__((weak));
/* Free what the runs kept (streams, handles, buffers, the graph). */
void gpar_raw_branches_cuda_done(void) __attribute__((weak));

#endif
