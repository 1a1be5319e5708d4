/* mpi_test.h: what the MPI test programs (comm_mpi.c, faults_mpi.c, nccl_mpi.c; one process per
 * rank under tests/mpi/run.sh) share: MPI started with MPI_THREAD_MULTIPLE and one TAP stream
 * (rank 0's), a check that every rank must pass, and buffers filled with and compared against
 * one value. */
#ifndef GPAR_TESTS_MPI_TEST_H
#define GPAR_TESTS_MPI_TEST_H

#include <mpi.h>
#include <unistd.h>

#include "../testutil.h"
#include "gpar_mpi.h"

static int rank, size; /* in MPI_COMM_WORLD (mt_start) */

/* MPI_Init_thread with MPI_THREAD_MULTIPLE; rank and size; the other ranks' stdout goes to
 * stderr, so rank 0 alone speaks TAP. The thread level MPI gives. */
static inline int mt_start(int *argc, char ***argv) {
  int level = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &level);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (rank != 0) dup2(2, 1); /* one TAP stream: rank 0's */
  return level;
}

/* ok() on rank 0 for a condition that must hold on every rank (MPI_Allreduce on MPI_COMM_WORLD,
 * whose blocking call also drives MPI's progress); a rank that fails says so on stderr. */
static inline int mt_all_ok(int cond, const char *what) {
  int all = 0;
  MPI_Allreduce(&cond, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!cond) diag("rank %d: failed: %s (%s)", rank, what, gpar_last_error());
  if (rank == 0) ok(all, "%d rank%s: %s", size, size == 1 ? "" : "s", what);
  return all;
}

/* Write n elements of type dt, each v, at the start of b. */
static inline void mt_fill(gpar_buffer b, gpar_dtype dt, size_t n, double v) {
  size_t es = gpar_dtype_size(dt);
  unsigned char *h = malloc(n * es);
  if (!h) bail_out("out of host memory");
  for (size_t i = 0; i < n; i++) {
    if (dt == GPAR_FLOAT)
      ((float *)h)[i] = (float)v;
    else
      ((double *)h)[i] = v;
  }
  gpar_write(b, 0, h, n * es);
  free(h);
}

/* 1 when the first n elements of type dt of b are each v (and read back); else a diagnostic
 * names the first that is not. */
static inline int mt_all_are(gpar_buffer b, gpar_dtype dt, size_t n, double v) {
  size_t es = gpar_dtype_size(dt);
  unsigned char *h = malloc(n * es);
  if (!h) bail_out("out of host memory");
  int good = gpar_read(b, 0, h, n * es) == GPAR_OK;
  double want = dt == GPAR_FLOAT ? (double)(float)v : v;
  for (size_t i = 0; i < n && good; i++) {
    double x = dt == GPAR_FLOAT ? (double)((float *)h)[i] : ((double *)h)[i];
    if (x != want) {
      diag("rank %d: element %zu is %g, want %g", rank, i, x, want);
      good = 0;
    }
  }
  free(h);
  return good;
}

#endif
