/* raw_lanes.h: the hand-written eager limit `gpar-bench lanes` times next to libgpar's compute
 * lanes, in the same process: T threads, each with its own non-blocking stream (CUDA) or in-order
 * queue (OpenCL) and its own BLAS handle (cuBLAS; CLBlast with its own temp buffer), each issuing
 * its share of independent GEMMs or tiny kernel launches (every op writes its own output slot of
 * a ring; the inputs are shared), then all synchronized; and one dependent GEMM chain on one
 * stream. Vendor APIs only. The declarations are weak: NULL when that backend was not built. */
#ifndef GPAR_TOOLS_RAW_LANES_H
#define GPAR_TOOLS_RAW_LANES_H

#include <pthread.h>
#include <stddef.h>

enum {
  GPAR_RAW_L_GEMM,  /* iters SGEMMs n^3, C_i = A B into ring slot i, over `threads` threads */
  GPAR_RAW_L_TINY,  /* iters launches of y_i[j] = x[j] + 1 over n elements, ring slot i, threads */
  GPAR_RAW_L_CHAIN, /* iters dependent SGEMMs n^3 on one stream: C1 = A' C0, C0 = A' C1, ... */
  GPAR_RAW_L_NCASES
};

#define GPAR_RAW_L_MAX_THREADS 8

typedef struct gpar_raw_lanes_case {
  int what;    /* GPAR_RAW_L_* */
  int dev;     /* backend-local device index (CUDA ordinal; OpenCL: platforms' devices in order) */
  int threads; /* T: threads, streams or queues, and BLAS handles (1..8; CHAIN: 1) */
  int n;       /* GEMM size, or the tiny kernel's elements */
  long iters;  /* ops in all, shared out round robin over the threads */
  int ring;    /* output slots (each thread owns ring / T of them, so no two streams write one) */
} gpar_raw_lanes_case;

/* Run a case once (setup and a warm-up op per thread untimed); *seconds: from the threads' start
 * to the last stream's synchronization. *what names the calls. 0, or -1 after printing why. The
 * results are checked (C = n / 2; y = 2; the chain keeps 1). */
int gpar_raw_lanes_cuda(const gpar_raw_lanes_case *c, double *seconds, const char **what) __attribute__((weak));
int gpar_raw_lanes_opencl(const gpar_raw_lanes_case *c, double *seconds, const char **what) __attribute__((weak));

/* The thread team both files run (raw_lanes_team.c, vendor-neutral): its threads do their setup,
 * wait at go, issue and synchronize, then wait at done. */
typedef struct gpar_raw_lanes_team {
  pthread_barrier_t go, done;
} gpar_raw_lanes_team;
/* The threads case c runs on (CHAIN: 1), or -1 after printing why the case is bad. */
int gpar_raw_lanes_threads(const gpar_raw_lanes_case *c);
/* Run fn(args + k * stride) on n threads; *seconds: from all passing go to all passing done;
 * returns once they are joined. A thread that cannot be made aborts the process (the others
 * wait at barriers sized for n). */
void gpar_raw_lanes_team_run(gpar_raw_lanes_team *t, int n, void *(*fn)(void *), void *args, size_t stride,
                             double *seconds);

#endif
