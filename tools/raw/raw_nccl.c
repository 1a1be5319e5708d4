/* raw_nccl.c: the raw NCCL allreduce loop gpar-bench compares libgpar with: one communicator
 * clique (ncclCommInitAll, kept between calls for the same devices), one stream and one buffer
 * per device, group calls from one thread, timed with the host clock after a stream sync. */
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "gpar.h" /* gpar_now */
#include "raw_nccl.h"

#define MAXD 16

static struct {
  int n, ord[MAXD];
  ncclComm_t comm[MAXD];
  cudaStream_t stream[MAXD];
  void *buf[MAXD];
  size_t cap;
} R;

static int setup(int n, const int *ord, size_t bytes) {
  int same = R.n == n;
  for (int i = 0; i < n && same; i++) same = R.ord[i] == ord[i];
  if (!same) {
    if (n > MAXD) return -1;
    R.n = n;
    for (int i = 0; i < n; i++) R.ord[i] = ord[i];
    if (ncclCommInitAll(R.comm, n, R.ord) != ncclSuccess) return -1;
    for (int i = 0; i < n; i++) {
      cudaSetDevice(ord[i]);
      if (cudaStreamCreateWithFlags(&R.stream[i], cudaStreamNonBlocking) != cudaSuccess) return -1;
    }
    R.cap = 0;
  }
  if (bytes > R.cap) {
    for (int i = 0; i < n; i++) {
      cudaSetDevice(ord[i]);
      if (R.cap) cudaFree(R.buf[i]);
      if (cudaMalloc(&R.buf[i], bytes) != cudaSuccess) return -1;
      cudaMemset(R.buf[i], 0, bytes);
    }
    R.cap = bytes;
    for (int i = 0; i < n; i++) {
      cudaSetDevice(ord[i]);
      cudaDeviceSynchronize();
    }
  }
  return 0;
}

static int run(size_t count, int iters) {
  for (int it = 0; it < iters; it++) {
    if (ncclGroupStart() != ncclSuccess) return -1;
    for (int i = 0; i < R.n; i++)
      if (ncclAllReduce(R.buf[i], R.buf[i], count, ncclFloat, ncclSum, R.comm[i], R.stream[i]) != ncclSuccess) return -1;
    if (ncclGroupEnd() != ncclSuccess) return -1;
  }
  for (int i = 0; i < R.n; i++) {
    cudaSetDevice(R.ord[i]);
    if (cudaStreamSynchronize(R.stream[i]) != cudaSuccess) return -1;
  }
  return 0;
}

int gpar_raw_nccl_allreduce(int n, const int *ordinals, size_t bytes, int iters, double *seconds) {
  if (setup(n, ordinals, bytes) || run(bytes / 4, 3)) {
    fprintf(stderr, "raw nccl: setup failed for %zu bytes on %d devices\n", bytes, n);
    return -1;
  }
  double t0 = gpar_now();
  if (run(bytes / 4, iters)) {
    fprintf(stderr, "raw nccl: ncclAllReduce failed\n");
    return -1;
  }
  *seconds = (gpar_now() - t0) / iters;
  return 0;
}
