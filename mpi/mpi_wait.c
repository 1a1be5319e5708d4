/* mpi_wait.c: waiting for MPI from an op. The op polls its request (MPI_Test) until it is done
 * or the job's timeout passes, so MPI progresses exactly while one of our operations is
 * outstanding; a request that times out is cancelled or left to MPI with the scratch memory it
 * works on (mpi_abandoned.c). The scratch memory is the communicator's own, never an engine
 * buffer: one op uses it at a time (the communicator's token orders them). */
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "mpi_internal.h"

/* Poll req until done or the job's timeout passes: yield between tests for 1 ms (latency), then
 * sleep 20 us between tests. 1 when done, 0 on timeout, -1 when MPI_Test fails (*rc says how). */
static int poll_until(gpar__mpi_job *j, MPI_Request *req, int *rc) {
  double start = gpar_now();
  for (;;) {
    int flag = 0;
    *rc = gpar__mpi_test(req, &flag, MPI_STATUS_IGNORE);
    if (*rc != MPI_SUCCESS) return -1;
    if (flag) return 1;
    double t = gpar_now();
    if (t - start > j->timeout) return 0;
    if (t - start > 1e-3) { /* first 1 ms: yield only (latency); then sleep between tests */
      struct timespec ts = {0, 20000};
      nanosleep(&ts, NULL);
    } else {
      sched_yield();
    }
  }
}

/* On timeout a send or receive is cancelled; a request MPI does not cancel (every collective; a
 * send in Open MPI; a receive already matched) goes to the abandoned list with the scratch
 * memory it uses, and the communicator is broken. */
int gpar__mpi_wait(gpar__mpi_job *j, MPI_Request *req, const char *what) {
  gpar__mpi_ctx *c = j->c;
  int rc = MPI_SUCCESS, done = poll_until(j, req, &rc);
  if (done < 0) return gpar__mpi_check(rc, what, j);
  if (done) return GPAR_OK;
  const char *name = gpar__mpi_kind_name(j->kind);
  if (j->kind == GPAR__MPI_SEND || j->kind == GPAR__MPI_RECV) {
    MPI_Status status;
    int flag = 0, cancelled = 0;
    if (gpar__mpi_cancel_test(req, &flag, &status) == MPI_SUCCESS && flag) {
      MPI_Test_cancelled(&status, &cancelled);
      if (!cancelled) return GPAR_OK; /* it completed at the deadline */
      return gpar__mpi_fail(GPAR_ETIMEDOUT,
                            "%s #%lu on rank %d of %d: %s with rank %d, tag %d, not complete after %g s: cancelled. "
                            "Every rank must issue the same operations on a communicator in the same order",
                            name, j->seq, c->rank, c->size, what, j->peer, j->tag, j->timeout);
    }
  }
  /* MPI keeps the request: its memory is MPI's until MPI completes it. */
  gpar__mpi_lost_add(c->ref, *req, c->scratch);
  c->scratch = NULL;
  c->scratch_bytes = 0;
  atomic_store(&c->broken, 1);
  return gpar__mpi_fail(
      GPAR_ETIMEDOUT,
      "%s #%lu on rank %d of %d: %s not complete after %g s%s. Every rank must issue the same operations on a "
      "communicator in the same order (a rank whose input failed skips its part); the communicator is broken from "
      "now on",
      name, j->seq, c->rank, c->size, what, j->timeout,
      j->kind == GPAR__MPI_SEND   ? " and MPI did not cancel it (Open MPI never cancels a send): the message stays "
                                    "posted with the data it had when the send started"
      : j->kind == GPAR__MPI_RECV ? " and MPI could not cancel it (already matched)"
                                  : "");
}

void *gpar__mpi_scratch(gpar__mpi_ctx *c, size_t bytes) {
  if (c->scratch_bytes < bytes) {
    free(c->scratch);
    c->scratch = malloc(bytes ? bytes : 1);
    c->scratch_bytes = c->scratch ? bytes : 0;
  }
  return c->scratch;
}
