/* mpi_calls.c: the MPI calls that libgpar_mpi's ops make, serialised by mpi_mu when MPI gives
 * less than MPI_THREAD_MULTIPLE (the level is process-wide: set by the first
 * gpar_comm_create_mpi). mpi_mu is the innermost lock: nothing else is taken under it. */
#include <pthread.h>
#include <stdatomic.h>

#include "mpi_internal.h"

static pthread_mutex_t mpi_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_int mpi_serialised;

void gpar__mpi_calls_serialise(void) { atomic_store(&mpi_serialised, 1); }

int gpar__mpi_test(MPI_Request *req, int *flag, MPI_Status *status) {
  int ser = atomic_load(&mpi_serialised);
  if (ser) pthread_mutex_lock(&mpi_mu);
  int rc = MPI_Test(req, flag, status);
  if (ser) pthread_mutex_unlock(&mpi_mu);
  return rc;
}

int gpar__mpi_cancel_test(MPI_Request *req, int *flag, MPI_Status *status) {
  int ser = atomic_load(&mpi_serialised);
  if (ser) pthread_mutex_lock(&mpi_mu);
  int rc = MPI_Cancel(req);
  if (rc == MPI_SUCCESS) rc = MPI_Test(req, flag, status);
  if (ser) pthread_mutex_unlock(&mpi_mu);
  return rc;
}

void gpar__mpi_comm_free(MPI_Comm *mc) {
  int ser = atomic_load(&mpi_serialised);
  if (ser) pthread_mutex_lock(&mpi_mu);
  MPI_Comm_free(mc);
  if (ser) pthread_mutex_unlock(&mpi_mu);
}

int gpar__mpi_start_call(MPI_Comm mc, const gpar__mpi_start *s, MPI_Request *req) {
  int ser = atomic_load(&mpi_serialised), rc;
  if (ser) pthread_mutex_lock(&mpi_mu);
  switch (s->what) {
  case GPAR__START_ALLREDUCE: rc = MPI_Iallreduce(MPI_IN_PLACE, s->buf, s->count, s->type, s->op, mc, req); break;
  case GPAR__START_BCAST: rc = MPI_Ibcast(s->buf, s->count, s->type, s->root, mc, req); break;
  case GPAR__START_ALLGATHERV:
    rc = MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, s->buf, s->counts, s->displs, s->type, mc, req);
    break;
  case GPAR__START_ISEND: rc = MPI_Isend(s->buf, s->count, s->type, s->peer, s->tag, mc, req); break;
  default: rc = MPI_Irecv(s->buf, s->count, s->type, s->peer, s->tag, mc, req); break;
  }
  if (ser) pthread_mutex_unlock(&mpi_mu);
  return rc;
}
