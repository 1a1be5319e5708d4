/* mpi_comm.c: libgpar_mpi's communicators: the transport the core calls (a collective goes
 * through NCCL or, staged, through MPI; destroy), gpar_comm_create_mpi in its steps, and the
 * timeout and info calls. Every MPI operation is one CPU op that writes the communicator's
 * token, so operations run in program order, one at a time (gpar_mpi.h has the rules). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_internal.h"
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h> /* MPIX_Query_cuda_support */
#endif

/* ---------------------------------------------------------------- the transport */

static int mpi_collective(void *ctx, const gpar_coll *a) {
  gpar__mpi_ctx *c = ctx;
  gpar__mpi_lost_sweep();
  size_t esize = gpar_dtype_size(a->dtype);
  if (a->dtype != GPAR_FLOAT && a->dtype != GPAR_DOUBLE) /* the reductions and MPI types know these two */
    return gpar__mpi_fail(GPAR_ENOTSUP, "%s: element type %d across processes: libgpar_mpi takes GPAR_FLOAT and "
                                        "GPAR_DOUBLE only", gpar__mpi_kind_name(a->kind), (int)a->dtype);
  if (!c->nccl && a->kind == GPAR_COLL_ALL_GATHER && a->count * esize * (size_t)c->nmembers > (size_t)INT_MAX)
    return gpar__mpi_fail(GPAR_ENOTSUP,
                          "gpar_all_gather: %zu elements x %d members = %zu bytes in all: over MPI, an all-gather "
                          "moves at most INT_MAX (%d) bytes in all",
                          a->count, c->nmembers, a->count * esize * (size_t)c->nmembers, INT_MAX);
  int st;
  pthread_mutex_lock(&c->submit_mu);
  if (atomic_load(&c->broken))
    st = gpar__mpi_fail(GPAR_ETIMEDOUT, "%s: the communicator is broken by an earlier timeout",
                        gpar__mpi_kind_name(a->kind));
  else if (c->nccl)
    st = gpar__mpi_nccl_collective(c, a);
  else
    st = gpar__mpi_collective_staged(c, a);
  pthread_mutex_unlock(&c->submit_mu);
  return st;
}

static void ctx_free(gpar__mpi_ctx *c) {
  pthread_mutex_destroy(&c->jobs_mu);
  pthread_mutex_destroy(&c->submit_mu);
  free(c->scratch);
  free(c->counts);
  free(c->devs);
  free(c);
}

static void mpi_destroy(void *ctx) {
  gpar__mpi_ctx *c = ctx;
  gpar_wait(c->token); /* the last operation is done: nothing of ours uses the jobs or MPI any more */
  gpar__mpi_nccl_destroy(c);
  gpar__mpi_lost_sweep();
  gpar__mpi_commref_release(c->ref); /* MPI_Comm_free now, or once its abandoned requests are complete */
  gpar_buffer_release(c->token);
  gpar__mpi_jobs_sweep(c, 1);
  gpar__mpi_workers_give(c->eng);
  ctx_free(c);
}

static const gpar_comm_transport mpi_transport = {mpi_collective, mpi_destroy};

/* ---------------------------------------------------------------- gpar_comm_create_mpi
 * Each step below is reached by every rank whatever failed locally: a local argument error is
 * found before any communication, then all ranks agree on it, so they fail together rather than
 * some waiting forever for the others. */

/* What the call has found and made so far. */
typedef struct create {
  gpar_engine *eng;
  const int *devs;
  int ndevs;
  int level;    /* MPI_Query_thread */
  int reserved; /* a CPU worker is counted for this communicator (mpi_workers.c) */
  gpar_config cfg;
  gpar__mpi_ctx *c;
  gpar__mpi_commref *ref;
  char why[512]; /* this rank's failure, kept across the MPI calls that agree on it */
} create;

/* Step 1, local: the arguments, MPI's thread level, a CPU worker for the communicator. */
static int check_local(create *k, const gpar_comm *comm) {
  int ndev_eng = gpar_device_count(k->eng), st = GPAR_OK;
  if (ndev_eng < 0)
    st = gpar__mpi_fail(ndev_eng, "gpar_comm_create_mpi: %s", gpar_last_error());
  else if ((st = gpar_config_get(k->eng, &k->cfg)))
    st = gpar__mpi_fail(st, "gpar_comm_create_mpi: %s", gpar_last_error());
  else if (!comm)
    st = gpar__mpi_fail(GPAR_EINVAL, "gpar_comm_create_mpi: comm is NULL");
  else if (!k->devs || k->ndevs < 1)
    st = gpar__mpi_fail(GPAR_EINVAL, "gpar_comm_create_mpi: no devices (%d)", k->ndevs);
  else if (k->level < MPI_THREAD_SERIALIZED)
    st = gpar__mpi_fail(GPAR_ENOTSUP, "gpar_comm_create_mpi: MPI gives thread level %d; libgpar needs "
                                      "MPI_THREAD_MULTIPLE (or MPI_THREAD_SERIALIZED): use MPI_Init_thread", k->level);
  for (int i = 0; st == GPAR_OK && i < k->ndevs; i++)
    if (k->devs[i] < 0 || k->devs[i] >= ndev_eng)
      st = gpar__mpi_fail(GPAR_ENODEV, "gpar_comm_create_mpi: device %d does not exist (%d devices)", k->devs[i],
                          ndev_eng);
  if (st == GPAR_OK && !(k->reserved = gpar__mpi_workers_take(k->eng, k->cfg.host_threads)))
    st = gpar__mpi_fail(GPAR_ENOTSUP,
                        "gpar_comm_create_mpi: the engine has %d CPU worker thread(s) (gpar_config.host_threads) and "
                        "as many libgpar_mpi communicators already. An operation holds a worker while it waits for "
                        "other ranks, so communicators used in different orders on different ranks could wait on "
                        "each other until the timeout: use at least one host thread per communicator",
                        k->cfg.host_threads);
  if (st) snprintf(k->why, sizeof k->why, "%s", gpar_last_error());
  return st;
}

/* Step 2, local: the context's memory (when step 1 passed). */
static int alloc_ctx(create *k, int st) {
  if (st) return st;
  k->c = calloc(1, sizeof *k->c);
  k->ref = calloc(1, sizeof *k->ref);
  if (k->c && k->ref) return GPAR_OK;
  st = gpar__mpi_fail(GPAR_ENOMEM, "out of host memory");
  snprintf(k->why, sizeof k->why, "%s", gpar_last_error());
  return st;
}

/* Undo steps 1 and 2. */
static void unmake(create *k) {
  if (k->reserved) gpar__mpi_workers_give(k->eng);
  free(k->c);
  free(k->ref);
}

/* Step 3, collective: our duplicate of mpi_comm, errors returned, and every rank's word on steps
 * 1 and 2. GPAR_OK with *dup, or the failure (everything undone). */
static int dup_agree(create *k, MPI_Comm mpi_comm, int st, MPI_Comm *dup) {
  *dup = MPI_COMM_NULL;
  int rc = MPI_Comm_dup(mpi_comm, dup);
  if (rc != MPI_SUCCESS) {
    unmake(k);
    return gpar__mpi_check(rc, "gpar_comm_create_mpi: MPI_Comm_dup", NULL);
  }
  MPI_Comm_set_errhandler(*dup, MPI_ERRORS_RETURN);
  if (gpar__mpi_agree(*dup, st == GPAR_OK)) return GPAR_OK;
  MPI_Comm_free(dup);
  unmake(k);
  return st ? gpar__mpi_fail(st, "%s", k->why)
            : gpar__mpi_fail(GPAR_EINVAL, "gpar_comm_create_mpi: the call failed on another rank");
}

/* Step 4, local: the context's fields from what steps 1 to 3 found. */
static void ctx_init(create *k, MPI_Comm dup) {
  gpar__mpi_ctx *c = k->c;
  if (k->level < MPI_THREAD_MULTIPLE) gpar__mpi_calls_serialise();
  gpar__mpi_finalize_hook();
  k->ref->mc = dup;
  c->ref = k->ref;
  c->eng = k->eng;
  c->mc = dup;
  c->thread_level = k->level;
  c->synchronous = k->cfg.synchronous;
  MPI_Comm_rank(dup, &c->rank);
  MPI_Comm_size(dup, &c->size);
  int *ub = NULL, has_ub = 0;
  MPI_Comm_get_attr(dup, MPI_TAG_UB, &ub, &has_ub);
  c->tag_ub = has_ub && ub ? *ub : 32767; /* the least MPI guarantees */
  c->nlocal = k->ndevs;
  c->counts = malloc(sizeof *c->counts * 2 * (size_t)c->size);
  c->devs = malloc(sizeof *c->devs * (size_t)k->ndevs);
  pthread_mutex_init(&c->jobs_mu, NULL);
  pthread_mutex_init(&c->submit_mu, NULL);
  atomic_init(&c->timeout, k->cfg.comm_timeout > 0 ? k->cfg.comm_timeout : 300.0);
  c->host_dev = gpar_device_find(k->eng, GPAR_BACKEND_HOST, -1, 0);
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  c->cuda_aware = MPIX_Query_cuda_support();
#endif
}

/* Step 5, collective: the members of every rank, numbered rank by rank; the token. Every rank
 * first agrees that each has the memory to gather into (a rank without it would otherwise
 * receive size ints into one), so all ranks gather, or none. */
static int members(create *k) {
  gpar__mpi_ctx *c = k->c;
  int have = c->counts && c->devs;
  if (!gpar__mpi_agree(c->mc, have))
    return gpar__mpi_fail(GPAR_ENOMEM, have ? "out of host memory on another rank" : "out of host memory");
  MPI_Allgather(&k->ndevs, 1, MPI_INT, c->counts, 1, MPI_INT, c->mc);
  c->firsts = c->counts + c->size;
  for (int r = 0; r < c->size; r++) {
    c->firsts[r] = c->nmembers;
    c->nmembers += c->counts[r];
  }
  c->first = c->firsts[c->rank];
  memcpy(c->devs, k->devs, sizeof *k->devs * (size_t)k->ndevs);
  return gpar_buffer_create(k->eng, GPAR_HOST, 64, &c->token);
}

/* Step 7, collective: every rank's word on steps 5 and 6 (st); undo everything on failure. */
static int finish(create *k, int st, gpar_comm *comm) {
  gpar__mpi_ctx *c = k->c;
  if (gpar__mpi_agree(c->mc, st == GPAR_OK)) return GPAR_OK;
  if (st == GPAR_OK) {
    gpar_comm_destroy(*comm); /* frees c through mpi_destroy */
    comm->id = 0;
    return gpar__mpi_fail(GPAR_EINVAL, "gpar_comm_create_mpi: the call failed on another rank");
  }
  snprintf(k->why, sizeof k->why, "%s", gpar_last_error());
  gpar__mpi_nccl_destroy(c);
  if (c->token.id) gpar_buffer_release(c->token);
  gpar__mpi_commref_release(k->ref);
  gpar__mpi_workers_give(k->eng);
  ctx_free(c);
  return gpar__mpi_fail(st, "%s", k->why);
}

GPAR_API int gpar_comm_create_mpi(gpar_engine *eng, MPI_Comm mpi_comm, const int *devs, int ndevs, gpar_comm *comm) {
  if (comm) comm->id = 0;
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (!init || fin) return gpar__mpi_fail(GPAR_EINVAL, "gpar_comm_create_mpi: MPI is not initialised (or finalised)");
  gpar__mpi_ops_init(); /* MAX and MIN with gpar.h's NaN rule */
  gpar__mpi_lost_sweep();
  create k = {.eng = eng, .devs = devs, .ndevs = ndevs, .level = MPI_THREAD_SINGLE};
  MPI_Query_thread(&k.level);
  int st = alloc_ctx(&k, check_local(&k, comm));
  MPI_Comm dup;
  if ((st = dup_agree(&k, mpi_comm, st, &dup))) return st;
  ctx_init(&k, dup);
  st = members(&k);
  /* Step 6, collective: NCCL across the ranks when every member is a CUDA device; the core's
   * communicator over this transport. */
  int nccl_st = gpar__mpi_nccl_setup(k.c, st == GPAR_OK);
  if (st == GPAR_OK) st = nccl_st;
  if (st == GPAR_OK)
    st = gpar_comm_create_transport(eng, devs, ndevs, k.c->nmembers, k.c->first, &mpi_transport, k.c, comm);
  return finish(&k, st, comm);
}

/* ---------------------------------------------------------------- timeout, info */

/* Both hold the context for the call (gpar_comm_transport_ctx_get): a concurrent destroy waits. */
GPAR_API int gpar_mpi_set_timeout(gpar_comm comm, double seconds) {
  gpar__mpi_lost_sweep();
  void *ctx = NULL;
  if (gpar_comm_transport_ctx_get(comm, &ctx)) return GPAR_EINVAL;
  gpar__mpi_ctx *c = ctx;
  int st = GPAR_OK;
  if (!(seconds > 0))
    st = gpar__mpi_fail(GPAR_EINVAL, "gpar_mpi_set_timeout: %g s is not positive", seconds);
  else
    atomic_store(&c->timeout, seconds);
  gpar_comm_transport_ctx_put(comm);
  return st;
}

GPAR_API int gpar_mpi_info_get(gpar_comm comm, gpar_mpi_info *info) {
  void *ctx = NULL;
  if (gpar_comm_transport_ctx_get(comm, &ctx)) return GPAR_EINVAL;
  gpar__mpi_ctx *c = ctx;
  int st = GPAR_OK;
  if (!info)
    st = gpar__mpi_fail(GPAR_EINVAL, "gpar_mpi_info_get: info is NULL");
  else
    *info = (gpar_mpi_info){c->rank, c->size, c->nccl, c->cuda_aware, c->thread_level};
  gpar_comm_transport_ctx_put(comm);
  return st;
}
