/* cuda_nccl.c: collectives between CUDA devices of one process through NCCL (issue 15).
 * comm_create makes one NCCL clique with ncclCommInitAll; each member's part of a collective is
 * enqueued by that device's own dispatcher thread on the lane the core picked (the peer lane:
 * NCCL's own stream per device, joined to the compute and copy lanes by the core's events).
 * One thread per rank is NCCL's supported "one device per thread" model, so no group call is
 * needed; the core issues every communicator's collectives in the same order on all members.
 * Built only when configure found NCCL (HAVE_NCCL); otherwise these weak entries are NULL and
 * CUDA collectives are staged through host memory. */
#include <stdlib.h>

#include <nccl.h>

#include "cuda_internal.h"

/* A clique: comms[r] is rank r's communicator (rank r = member r). */
struct cuda_nccl {
  int n;
  ncclComm_t comms[];
};

static int nccl_check(ncclResult_t r, const char *what) {
  if (r == ncclSuccess) return GPAR_OK;
  return gpar__errorf(r == ncclSystemError ? GPAR_ENOMEM : r == ncclInvalidArgument || r == ncclInvalidUsage
                                                              ? GPAR_EINVAL
                                                              : GPAR_EBACKEND,
                      "%s: %s (%s)", what, ncclGetErrorString(r), ncclGetLastError(NULL));
}

/* One tiny allreduce on every rank, grouped from this thread, so NCCL makes its connections now
 * (NCCL connects at a communicator's first collective, which then waits for every rank). Later,
 * each device's dispatcher issues its own rank's calls, and the first of them would otherwise
 * hold that dispatcher until the other devices' dispatchers reach the same collective. */
static int warm_up(struct cuda_nccl *c, const int *bidx) {
  float *buf[64] = {0};
  cudaStream_t s[64] = {0};
  int n = c->n < 64 ? c->n : 64, st = GPAR_OK;
  for (int r = 0; r < n && st == GPAR_OK; r++) {
    cudaSetDevice(bidx[r]);
    st = gpar__cuda_check(cudaMalloc((void **)&buf[r], sizeof(float)), "cudaMalloc");
    if (st == GPAR_OK) st = gpar__cuda_check(cudaStreamCreateWithFlags(&s[r], cudaStreamNonBlocking), "cudaStreamCreate");
  }
  if (st == GPAR_OK) {
    ncclResult_t res = ncclGroupStart();
    for (int r = 0; r < n && res == ncclSuccess; r++) res = ncclAllReduce(buf[r], buf[r], 1, ncclFloat, ncclSum, c->comms[r], s[r]);
    ncclResult_t end = ncclGroupEnd();
    st = nccl_check(res != ncclSuccess ? res : end, "ncclAllReduce (warm-up)");
  }
  for (int r = 0; r < n; r++) {
    cudaSetDevice(bidx[r]);
    if (s[r]) {
      if (st == GPAR_OK) st = gpar__cuda_check(cudaStreamSynchronize(s[r]), "cudaStreamSynchronize (warm-up)");
      cudaStreamDestroy(s[r]);
    }
    if (buf[r]) cudaFree(buf[r]);
  }
  return st;
}

int gpar__cuda_comm_create(gpar__backend *be, const int *bidx, int n, void **out) {
  struct cuda_nccl *c = calloc(1, sizeof *c + sizeof c->comms[0] * (size_t)n);
  if (!c) return gpar__errorf(GPAR_ENOMEM, "out of host memory for an NCCL communicator");
  c->n = n;
  int prev = 0;
  cudaGetDevice(&prev); /* ncclCommInitAll switches devices: restore the caller's */
  int st = nccl_check(ncclCommInitAll(c->comms, n, bidx), "ncclCommInitAll");
  if (st == GPAR_OK) st = warm_up(c, bidx);
  cudaSetDevice(prev);
  if (st) {
    for (int r = 0; r < n; r++)
      if (c->comms[r]) ncclCommDestroy(c->comms[r]);
    free(c);
    return st;
  }
  *out = c;
  return GPAR_OK;
}

void gpar__cuda_comm_destroy(void *comm) {
  struct cuda_nccl *c = comm;
  int prev = 0;
  cudaGetDevice(&prev);
  for (int r = 0; r < c->n; r++) {
    ncclResult_t ae = ncclSuccess;
    ncclCommGetAsyncError(c->comms[r], &ae);
    if (ae != ncclSuccess && ae != ncclInProgress)
      ncclCommAbort(c->comms[r]); /* a failed communicator may never finish its work */
    else
      ncclCommDestroy(c->comms[r]);
  }
  cudaSetDevice(prev);
  free(c);
}

/* One member's part, in place (NCCL's in-place layouts for reduce-scatter and all-gather). */
int gpar__cuda_coll(gpar__bdev *dev, int lane, const gpar__coll_args *a) {
  struct cuda_nccl *c = a->comm;
  ncclComm_t comm = c->comms[a->rank];
  cudaStream_t s = dev->d.lane[lane];
  ncclDataType_t dt = a->elem_size == 4 ? ncclFloat : ncclDouble;
  ncclRedOp_t op = a->op == GPAR_MAX ? ncclMax : a->op == GPAR_MIN ? ncclMin : ncclSum;
  char *p = (char *)a->mem + a->off, *mine = p + (size_t)a->rank * a->count * (size_t)a->elem_size;
  ncclResult_t r;
  const char *what;
  switch (a->kind) {
  case GPAR_COLL_ALLREDUCE: r = ncclAllReduce(p, p, a->count, dt, op, comm, s); what = "ncclAllReduce"; break;
  case GPAR_COLL_BROADCAST: r = ncclBroadcast(p, p, a->count, dt, a->root, comm, s); what = "ncclBroadcast"; break;
  case GPAR_COLL_REDUCE_SCATTER: r = ncclReduceScatter(p, mine, a->count, dt, op, comm, s); what = "ncclReduceScatter"; break;
  default: r = ncclAllGather(mine, p, a->count, dt, comm, s); what = "ncclAllGather"; break;
  }
  int st = nccl_check(r, what);
  if (st) return st;
  /* A failure found by NCCL's own threads (a peer lost, a network error) reaches this op. */
  ncclResult_t ae = ncclSuccess;
  if (ncclCommGetAsyncError(comm, &ae) == ncclSuccess && ae != ncclSuccess && ae != ncclInProgress)
    return nccl_check(ae, "ncclCommGetAsyncError");
  return GPAR_OK;
}
