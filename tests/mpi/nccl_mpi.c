/* nccl_mpi.c: libgpar_mpi's NCCL path, run by tests/mpi/run.sh; it needs CUDA GPUs and skips
 * without them.
 * 1 rank, 2 GPUs (nccl-np1.tap): two threads issue allreduces of different sizes on one
 * communicator of both GPUs at once; every collective's members must be issued together, so
 * each result is exact (members of two collectives paired by NCCL would hang or mix data).
 * 2 ranks, one GPU each (nccl-np2.tap): rank 0 issues an allreduce rank 1 never issues. After
 * the timeout the watchdog aborts the NCCL communicator: the buffer reports GPAR_ETIMEDOUT, an
 * op reading it is skipped, the communicator refuses later collectives, and gpar_comm_destroy
 * and gpar_shutdown return (also with a collective still stuck at shutdown). */
#include <pthread.h>

#include "mpi_test.h"

/* One thread's series of allreduces on its own pair of buffers: values double every time. */
typedef struct series {
  gpar_comm comm;
  gpar_buffer bufs[2];
  size_t n;
  int iters, st;
} series;

static void *run_series(void *arg) {
  series *s = arg;
  for (int i = 0; i < s->iters && s->st == GPAR_OK; i++)
    s->st = gpar_allreduce(s->comm, s->bufs, NULL, s->n, GPAR_DOUBLE, GPAR_SUM);
  return NULL;
}

/* Two threads, one communicator of two local GPUs. */
static void two_threads(gpar_engine *eng, const int *gpus) {
  gpar_comm comm;
  if (!mt_all_ok(gpar_comm_create_mpi(eng, MPI_COMM_WORLD, gpus, 2, &comm) == GPAR_OK, "gpar_comm_create_mpi, 2 GPUs"))
    return;
  gpar_mpi_info mi;
  mt_all_ok(gpar_mpi_info_get(comm, &mi) == GPAR_OK && mi.nccl == 1, "collectives through NCCL");
  gpar_mpi_set_timeout(comm, 20.0); /* a mispairing hangs: aborted after 20 s, not 300 */
  series s[2];
  int iters = 100;
  for (int t = 0; t < 2; t++) {
    s[t] = (series){comm, {{0}}, t ? 4096 : 1000, iters, GPAR_OK};
    for (int d = 0; d < 2; d++) {
      s[t].bufs[d] = tu_buffer(eng, gpus[d], s[t].n * sizeof(double));
      mt_fill(s[t].bufs[d], GPAR_DOUBLE, s[t].n, d == 0 ? 1.0 : 0.0);
    }
  }
  gpar_wait_all(eng);
  pthread_t th[2];
  for (int t = 0; t < 2; t++) pthread_create(&th[t], NULL, run_series, &s[t]);
  for (int t = 0; t < 2; t++) pthread_join(th[t], NULL);
  int good = s[0].st == GPAR_OK && s[1].st == GPAR_OK && gpar_wait_all(eng) == GPAR_OK;
  double want = 1.0;
  for (int i = 1; i < iters; i++) want *= 2; /* 1, 1, 2, 4, ...: 2^(iters-1) */
  for (int t = 0; t < 2 && good; t++)
    for (int d = 0; d < 2 && good; d++) good = mt_all_are(s[t].bufs[d], GPAR_DOUBLE, s[t].n, want);
  mt_all_ok(good, "two threads issuing allreduces of different sizes on one communicator: every result exact");
  for (int t = 0; t < 2; t++)
    for (int d = 0; d < 2; d++) gpar_buffer_release(s[t].bufs[d]);
  mt_all_ok(gpar_comm_destroy(comm) == GPAR_OK, "gpar_comm_destroy");
}

/* A collective rank 1 never issues. */
static void stuck(gpar_engine *eng, int gpu) {
  gpar_comm comm;
  if (!mt_all_ok(gpar_comm_create_mpi(eng, MPI_COMM_WORLD, &gpu, 1, &comm) == GPAR_OK,
                 "gpar_comm_create_mpi, 1 GPU each"))
    return;
  gpar_mpi_info mi;
  mt_all_ok(gpar_mpi_info_get(comm, &mi) == GPAR_OK && mi.nccl == 1, "collectives through NCCL");
  size_t n = 1 << 16;
  gpar_buffer a = tu_buffer(eng, gpu, n * sizeof(double)), b = tu_buffer(eng, gpu, n * sizeof(double));
  mt_fill(a, GPAR_DOUBLE, n, 1.0);
  int good = gpar_allreduce(comm, &a, NULL, n, GPAR_DOUBLE, GPAR_SUM) == GPAR_OK && gpar_wait(a) == GPAR_OK &&
             mt_all_are(a, GPAR_DOUBLE, n, 2.0);
  mt_all_ok(good, "a matched allreduce");
  gpar_mpi_set_timeout(comm, 3.0);
  good = 1;
  if (rank == 0) {
    double t0 = gpar_now();
    good = gpar_allreduce(comm, &a, NULL, n, GPAR_DOUBLE, GPAR_SUM) == GPAR_OK;
    good = good && gpar_copy(b, 0, a, 0, n * sizeof(double)) == GPAR_OK;
    int wa = gpar_wait(a);
    diag("rank 0: gpar_wait after %.1f s: %s: %s", gpar_now() - t0, gpar_status_name(wa), gpar_last_error());
    good = good && wa == GPAR_ETIMEDOUT && strstr(gpar_last_error(), "aborted");
    good = good && gpar_wait(b) == GPAR_EDEPFAILED;
    gpar_wait_all(eng);
  }
  mt_all_ok(good,
            "an allreduce rank 1 never issues: aborted after the timeout, GPAR_ETIMEDOUT on its buffer, the copy "
            "reading it skipped");
  good = 1;
  if (rank == 0) good = gpar_allreduce(comm, &a, NULL, n, GPAR_DOUBLE, GPAR_SUM) == GPAR_ETIMEDOUT;
  mt_all_ok(good, "the aborted communicator refuses the next collective (GPAR_ETIMEDOUT)");
  mt_all_ok(gpar_comm_destroy(comm) == GPAR_OK, "gpar_comm_destroy returns after the abort");
  gpar_buffer_release(a);
  gpar_buffer_release(b);

  /* Shutdown with a collective still stuck: the watchdog aborts it, shutdown returns. */
  if (!mt_all_ok(gpar_comm_create_mpi(eng, MPI_COMM_WORLD, &gpu, 1, &comm) == GPAR_OK, "a second communicator")) return;
  gpar_mpi_set_timeout(comm, 3.0);
  a = tu_buffer(eng, gpu, n * sizeof(double));
  mt_fill(a, GPAR_DOUBLE, n, 1.0);
  if (rank == 0) gpar_allreduce(comm, &a, NULL, n, GPAR_DOUBLE, GPAR_SUM);
  int st = gpar_shutdown(eng);
  mt_all_ok(rank != 0 || st == GPAR_ETIMEDOUT,
            "gpar_shutdown with a stuck collective returns (GPAR_ETIMEDOUT on rank 0)");
  gpar_comm_destroy(comm); /* after shutdown: frees what is left */
  mt_all_ok(1, "gpar_comm_destroy after shutdown returns");
}

int main(int argc, char **argv) {
  mt_start(&argc, &argv);
  gpar_config cfg;
  gpar_engine *eng = NULL;
  gpar_config_init(&cfg);
  cfg.backends = GPAR_BACKEND_HOST | GPAR_BACKEND_CUDA;
  cfg.host_threads = 4;
  cfg.quiet = 1;
  int ngpu = 0, lrank = 0, lsize = 1;
  if (gpar_init(&eng, &cfg) == GPAR_OK)
    while (gpar_device_find(eng, GPAR_BACKEND_CUDA, GPAR_DEVICE_GPU, ngpu) >= 0) ngpu++;
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &lrank);
  MPI_Comm_size(node, &lsize);
  MPI_Comm_free(&node);
  int need = size == 1 ? 2 : lsize, mine = eng && ngpu >= need && size <= 2, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all) {
    if (rank == 0)
      printf("1..0 # SKIP needs %s (found %d CUDA GPU%s)\n",
             size == 1 ? "2 CUDA GPUs" : size == 2 ? "one CUDA GPU per rank" : "1 or 2 ranks", ngpu, ngpu == 1 ? "" : "s");
    if (eng) gpar_shutdown(eng);
    MPI_Finalize();
    return 0;
  }
  tap_start();
  if (size == 1) {
    int gpus[2] = {gpar_device_find(eng, GPAR_BACKEND_CUDA, GPAR_DEVICE_GPU, 0),
                   gpar_device_find(eng, GPAR_BACKEND_CUDA, GPAR_DEVICE_GPU, 1)};
    two_threads(eng, gpus);
    mt_all_ok(gpar_shutdown(eng) == GPAR_OK, "shutdown");
  } else {
    stuck(eng, gpar_device_find(eng, GPAR_BACKEND_CUDA, GPAR_DEVICE_GPU, lrank));
  }
  int rc = rank == 0 ? done_testing() : 0;
  MPI_Finalize();
  return rc;
}
