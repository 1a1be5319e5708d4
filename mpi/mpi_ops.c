/* mpi_ops.c: the CPU op of every MPI operation (gpar_submit on GPAR_HOST). It waits at its job's
 * gate, copies its input into the communicator's scratch memory (local members reduced first),
 * starts the nonblocking MPI call on it, waits for it (mpi_wait.c) and copies the result out to
 * every local member's host range. MPI counts are int: larger reductions and broadcasts are cut
 * into calls MPI can take. */
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_internal.h"

/* MAX and MIN follow gpar.h's rule on every path (NCCL's): fmax/fmin, so a NaN loses to a
 * number and the result is NaN only where every member holds NaN. */
#define REDUCE_LOOP(T, MAXF, MINF)                                                         \
  do {                                                                                     \
    T *y = acc;                                                                            \
    const T *x = src;                                                                      \
    for (size_t i = 0; i < n; i++) y[i] = op == GPAR_SUM ? y[i] + x[i] : op == GPAR_MAX ? MAXF(x[i], y[i]) : MINF(x[i], y[i]); \
  } while (0)

static void reduce_into(int dtype, int op, void *acc, const void *src, size_t n) {
  if (dtype == GPAR_FLOAT)
    REDUCE_LOOP(float, fmaxf, fminf);
  else
    REDUCE_LOOP(double, fmax, fmin);
}

/* MPI's own MPI_MAX and MPI_MIN promise nothing about NaN: user ops with fmax/fmin instead. */
static void user_fmax(void *in, void *inout, int *len, MPI_Datatype *type) {
  reduce_into(*type == MPI_FLOAT ? GPAR_FLOAT : GPAR_DOUBLE, GPAR_MAX, inout, in, (size_t)*len);
}
static void user_fmin(void *in, void *inout, int *len, MPI_Datatype *type) {
  reduce_into(*type == MPI_FLOAT ? GPAR_FLOAT : GPAR_DOUBLE, GPAR_MIN, inout, in, (size_t)*len);
}
static MPI_Op op_fmax = MPI_OP_NULL, op_fmin = MPI_OP_NULL;
static pthread_once_t ops_once = PTHREAD_ONCE_INIT;
static void ops_make(void) {
  MPI_Op_create(user_fmax, 1, &op_fmax);
  MPI_Op_create(user_fmin, 1, &op_fmin);
}

void gpar__mpi_ops_init(void) { pthread_once(&ops_once, ops_make); }

static MPI_Datatype mpi_type(int dtype) { return dtype == GPAR_FLOAT ? MPI_FLOAT : MPI_DOUBLE; }
static MPI_Op mpi_op(int op) { return op == GPAR_MAX ? op_fmax : op == GPAR_MIN ? op_fmin : MPI_SUM; }

static int no_memory(gpar__mpi_job *j) {
  return gpar__mpi_fail(GPAR_ENOMEM, "%s #%lu on rank %d: out of host memory", gpar__mpi_kind_name(j->kind), j->seq,
                        j->c->rank);
}

/* Copy the result (bytes of scratch) into every local member's range. */
static void result_out(gpar__mpi_job *j, const void *res, size_t bytes) {
  for (int i = 0; i < j->n; i++) memcpy(j->ptrs[i], res, bytes);
}

/* Start one call and wait for it. */
static int start_wait(gpar__mpi_job *j, const gpar__mpi_start *s, const char *what) {
  MPI_Request req;
  int st = gpar__mpi_check(gpar__mpi_start_call(j->c->mc, s, &req), what, j);
  return st == GPAR_OK ? gpar__mpi_wait(j, &req, what) : st;
}

static int run_allreduce(gpar__mpi_job *j) {
  gpar__mpi_ctx *c = j->c;
  /* reduce-scatter reduces every block (each member keeps its own) */
  size_t count = j->count * (j->kind == GPAR_COLL_REDUCE_SCATTER ? (size_t)c->nmembers : 1);
  char *acc = gpar__mpi_scratch(c, count * j->esize);
  if (!acc) return no_memory(j);
  memcpy(acc, j->ptrs[0], count * j->esize);
  for (int i = 1; i < j->n; i++) reduce_into(j->dtype, j->op, acc, j->ptrs[i], count);
  int st = GPAR_OK;
  for (size_t done = 0; done < count && st == GPAR_OK;) { /* MPI counts are int */
    size_t len = count - done < (size_t)INT_MAX ? count - done : (size_t)INT_MAX;
    gpar__mpi_start s = {.what = GPAR__START_ALLREDUCE, .buf = acc + done * j->esize, .count = (int)len,
                         .type = mpi_type(j->dtype), .op = mpi_op(j->op)};
    st = start_wait(j, &s, "MPI_Iallreduce");
    done += len;
  }
  if (st == GPAR_OK) result_out(j, acc, count * j->esize);
  return st;
}

static int run_broadcast(gpar__mpi_job *j) {
  gpar__mpi_ctx *c = j->c;
  int owner = 0;
  while (owner + 1 < c->size && c->firsts[owner + 1] <= j->root) owner++;
  size_t bytes = j->count * j->esize;
  char *buf = gpar__mpi_scratch(c, bytes);
  if (!buf) return no_memory(j);
  if (owner == c->rank) memcpy(buf, j->ptrs[j->root - c->first], bytes);
  int st = GPAR_OK;
  for (size_t done = 0; done < bytes && st == GPAR_OK;) {
    size_t len = bytes - done < (size_t)INT_MAX ? bytes - done : (size_t)INT_MAX;
    gpar__mpi_start s = {.what = GPAR__START_BCAST, .buf = buf + done, .count = (int)len, .type = MPI_BYTE,
                         .root = owner};
    st = start_wait(j, &s, "MPI_Ibcast");
    done += len;
  }
  if (st == GPAR_OK) result_out(j, buf, bytes);
  return st;
}

/* Sizes are checked at the call (gpar_all_gather over 2 GiB is refused there). */
static int run_all_gather(gpar__mpi_job *j) {
  gpar__mpi_ctx *c = j->c;
  size_t blk = j->count * j->esize, bytes = blk * (size_t)c->nmembers;
  char *acc = gpar__mpi_scratch(c, bytes);
  int *counts = malloc(sizeof *counts * 2 * (size_t)c->size), *displs = counts ? counts + c->size : NULL;
  if (!acc || !counts) {
    free(counts);
    return no_memory(j);
  }
  for (int i = 0; i < j->n; i++)
    memcpy(acc + (size_t)(c->first + i) * blk, (char *)j->ptrs[i] + (size_t)(c->first + i) * blk, blk);
  for (int r = 0; r < c->size; r++) {
    counts[r] = (int)((size_t)c->counts[r] * blk);
    displs[r] = (int)((size_t)c->firsts[r] * blk);
  }
  gpar__mpi_start s = {.what = GPAR__START_ALLGATHERV, .buf = acc, .type = MPI_BYTE, .counts = counts,
                       .displs = displs};
  int st = start_wait(j, &s, "MPI_Iallgatherv");
  free(counts);
  if (st == GPAR_OK) result_out(j, acc, bytes);
  return st;
}

/* Sizes and tags are checked at the call. */
static int run_p2p(gpar__mpi_job *j) {
  gpar__mpi_ctx *c = j->c;
  char *buf = gpar__mpi_scratch(c, j->bytes);
  if (!buf) return no_memory(j);
  int send = j->kind == GPAR__MPI_SEND;
  if (send) memcpy(buf, j->ptrs[0], j->bytes);
  gpar__mpi_start s = {.what = send ? GPAR__START_ISEND : GPAR__START_IRECV, .buf = buf, .count = (int)j->bytes,
                       .type = MPI_BYTE, .peer = j->peer, .tag = j->tag};
  int st = start_wait(j, &s, send ? "MPI_Isend" : "MPI_Irecv");
  if (st == GPAR_OK && !send) memcpy(j->ptrs[0], buf, j->bytes);
  return st;
}

int gpar__mpi_job_run(const gpar_native *nat, void *arg) {
  (void)nat;
  gpar__mpi_job *j = arg;
  gpar__mpi_ctx *c = j->c;
  const char *name = gpar__mpi_kind_name(j->kind);
  int st;
  gpar__mpi_lost_sweep();
  if (!gpar__mpi_gate_wait(j))
    st = gpar__mpi_fail(GPAR_EBACKEND, "%s #%lu on rank %d: not run: the call could not submit all of its work", name,
                        j->seq, c->rank);
  else if (atomic_load(&c->broken))
    st = gpar__mpi_fail(GPAR_ETIMEDOUT, "%s #%lu on rank %d: the communicator is broken by an earlier timeout", name,
                        j->seq, c->rank);
  else if (j->kind == GPAR__MPI_SEND || j->kind == GPAR__MPI_RECV)
    st = run_p2p(j);
  else if (j->kind == GPAR_COLL_BROADCAST)
    st = run_broadcast(j);
  else if (j->kind == GPAR_COLL_ALL_GATHER)
    st = run_all_gather(j);
  else
    st = run_allreduce(j);
  atomic_store(&j->done, 1);
  return st;
}
