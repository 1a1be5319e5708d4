/* mpi_errors.c: libgpar_mpi's failures: this thread's message, MPI's error strings, the names of
 * operations in messages, and every rank agreeing on whether a step failed. */
#include <stdarg.h>
#include <stdio.h>

#include "mpi_internal.h"

int gpar__mpi_fail(int status, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return gpar_error_set(status, msg);
}

int gpar__mpi_check(int rc, const char *what, const gpar__mpi_job *j) {
  if (rc == MPI_SUCCESS) return GPAR_OK;
  char es[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, es, &len);
  return gpar__mpi_fail(GPAR_EBACKEND, "%s (operation #%lu on rank %d): %s", what, j ? j->seq : 0UL,
                        j ? j->c->rank : -1, es);
}

const char *gpar__mpi_kind_name(int kind) {
  static const char *const n[] = {"gpar_allreduce", "gpar_broadcast", "gpar_reduce_scatter", "gpar_all_gather"};
  return kind == GPAR__MPI_SEND ? "gpar_send" : kind == GPAR__MPI_RECV ? "gpar_recv" : n[kind];
}

int gpar__mpi_agree(MPI_Comm mc, int ok) {
  int all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, mc);
  return all;
}
