/* bench_mpi.c: gpar-bench-mpi, allreduce across MPI ranks, run under mpirun:
 *   mpirun -np 2 gpar-bench-mpi [--backend host|cuda|opencl] [--max-mb N] [--iters N]
 * One member per rank: the host CPU (default), or the (local rank)-th device of the backend.
 * Sweeps 8 B .. --max-mb MiB of floats (sum, in place) through gpar_allreduce on a
 * gpar_comm_create_mpi communicator, next to the baseline: a plain MPI_Allreduce loop on host
 * memory (host backend) or a raw ncclAllReduce loop across the ranks (cuda, NCCL built).
 * Rank 0 prints time per call (slowest rank), algbw and busbw = algbw x 2(n-1)/n. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpar_mpi.h"
#include "raw/raw_nccl.h"

/* Slowest rank's seconds per call. */
static double slowest(double sec) {
  double m = 0;
  MPI_Allreduce(&sec, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return m;
}

static int die(int rank, const char *what, int st) {
  fprintf(stderr, "gpar-bench-mpi: rank %d: %s: %s (%s)\n", rank, what, gpar_status_name(st), gpar_last_error());
  MPI_Abort(MPI_COMM_WORLD, 1);
  return 1;
}

int main(int argc, char **argv) {
  int level, rank, size;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &level);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char *backend = "host";
  long max_mb = 0, iters_opt = 0;
  static const struct option lo[] = {{"backend", required_argument, 0, 'b'}, {"max-mb", required_argument, 0, 'm'},
                                     {"iters", required_argument, 0, 'i'},   {"help", no_argument, 0, 'h'},
                                     {0, 0, 0, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
    if (c == 'b') backend = optarg;
    else if (c == 'm') max_mb = atol(optarg);
    else if (c == 'i') iters_opt = atol(optarg);
    else {
      if (rank == 0) printf("usage: mpirun -np N gpar-bench-mpi [--backend host|cuda|opencl] [--max-mb N] [--iters N]\n");
      MPI_Finalize();
      return c == 'h' ? 0 : 2;
    }
  }
  int be = !strcmp(backend, "cuda") ? GPAR_BACKEND_CUDA : !strcmp(backend, "opencl") ? GPAR_BACKEND_OPENCL : GPAR_BACKEND_HOST;
  gpar_config cfg;
  gpar_config_init(&cfg);
  cfg.backends = GPAR_BACKEND_HOST | be;
  cfg.quiet = 1;
  gpar_engine *eng;
  int st = gpar_init(&eng, &cfg);
  if (st) return die(rank, "gpar_init", st);
  /* The local rank picks the device (ranks on one host share its devices). */
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  int lrank = 0;
  MPI_Comm_rank(node, &lrank);
  int ndev = 0;
  while (gpar_device_find(eng, be, be == GPAR_BACKEND_HOST ? -1 : (be == GPAR_BACKEND_CUDA ? GPAR_DEVICE_GPU : -1), ndev) >= 0)
    ndev++;
  if (!ndev) return die(rank, "no device of that backend", GPAR_ENODEV);
  int dev = gpar_device_find(eng, be, be == GPAR_BACKEND_CUDA ? GPAR_DEVICE_GPU : -1, lrank % ndev);
  gpar_device_props info;
  gpar_device_info(eng, dev, &info);
  size_t max_bytes = (size_t)(max_mb > 0 ? max_mb : be == GPAR_BACKEND_CUDA ? 512 : 64) << 20;
  gpar_comm comm;
  if ((st = gpar_comm_create_mpi(eng, MPI_COMM_WORLD, &dev, 1, &comm))) return die(rank, "gpar_comm_create_mpi", st);
  gpar_mpi_info mi;
  gpar_mpi_info_get(comm, &mi);
  gpar_buffer b;
  if ((st = gpar_buffer_create(eng, dev, max_bytes, &b))) return die(rank, "gpar_buffer_create", st);
  gpar_fill(b, 0, max_bytes, 0);
  /* correctness once: ones sum to the number of ranks */
  float one = 1.0f, got = 0;
  gpar_write(b, max_bytes - 4, &one, 4);
  if ((st = gpar_allreduce(comm, &b, NULL, max_bytes / 4, GPAR_FLOAT, GPAR_SUM))) return die(rank, "gpar_allreduce", st);
  gpar_read(b, max_bytes - 4, &got, 4);
  int good = got == (float)size, allgood = 0;
  MPI_Allreduce(&good, &allgood, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  gpar_fill(b, 0, max_bytes, 0);
  float *hbuf = be == GPAR_BACKEND_HOST ? calloc(max_bytes, 1) : NULL;
  int raw_nccl = be == GPAR_BACKEND_CUDA && gpar_raw_nccl_mpi_allreduce;
  const char *base = be == GPAR_BACKEND_HOST ? "MPI_Allreduce" : raw_nccl ? "ncclAllReduce" : NULL;
  double factor = size > 1 ? 2.0 * (size - 1) / size : 0;
  if (rank == 0) {
    printf("gpar-bench-mpi: %d ranks, one %s member each (rank 0: %s), path %s, MPI thread level %d, "
           "CUDA-aware MPI %d; check %s\n", size, backend, info.name, mi.nccl ? "NCCL" : "MPI (staged)", level,
           mi.cuda_aware_mpi, allgood ? "ok" : "WRONG");
    printf("%10s %11s %9s %9s", "bytes", "time(us)", "algbw", "busbw");
    if (base) printf(" %11s %9s %7s   (baseline: %s loop)", "base(us)", "base bus", "ratio", base);
    printf("\n");
  }
  for (size_t bytes = 8; bytes <= max_bytes; bytes *= 2) {
    size_t count = bytes / 4;
    int iters = iters_opt > 0 ? (int)iters_opt : bytes <= ((size_t)1 << 20) ? 200 : 20;
    for (int i = 0; i < 3; i++) gpar_allreduce(comm, &b, NULL, count, GPAR_FLOAT, GPAR_SUM);
    gpar_wait(b);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = gpar_now();
    for (int i = 0; i < iters; i++) gpar_allreduce(comm, &b, NULL, count, GPAR_FLOAT, GPAR_SUM);
    if ((st = gpar_wait(b))) return die(rank, "gpar_allreduce", st);
    double sec = slowest((gpar_now() - t0) / iters), bsec = 0;
    if (hbuf) {
      MPI_Allreduce(MPI_IN_PLACE, hbuf, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      MPI_Barrier(MPI_COMM_WORLD);
      t0 = gpar_now();
      for (int i = 0; i < iters; i++) MPI_Allreduce(MPI_IN_PLACE, hbuf, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      bsec = slowest((gpar_now() - t0) / iters);
    } else if (raw_nccl) {
      if (gpar_raw_nccl_mpi_allreduce(MPI_COMM_WORLD, info.backend_index, bytes, iters, &bsec)) bsec = 0;
      bsec = slowest(bsec);
    }
    if (rank == 0) {
      double alg = bytes / sec * 1e-9;
      printf("%10zu %11.2f %9.2f %9.2f", bytes, sec * 1e6, alg, alg * factor);
      if (base && bsec > 0) printf(" %11.2f %9.2f %7.3f", bsec * 1e6, bytes / bsec * 1e-9 * factor, bsec / sec);
      printf("\n");
      fflush(stdout);
    }
  }
  if (rank == 0 && base) printf("ratio = baseline time / libgpar time (busbw ratio libgpar / baseline)\n");
  free(hbuf);
  gpar_buffer_release(b);
  gpar_comm_destroy(comm);
  gpar_shutdown(eng);
  MPI_Comm_free(&node);
  MPI_Finalize();
  return allgood ? 0 : 1;
}
