/* mpi_jobs.c: jobs, the arguments of one operation that its ops read when they run: made under
 * the communicator's submit_mu (numbered in program order), listed on the communicator under
 * jobs_mu, freed once their ops are done with them. A job's gate holds its ops until every one
 * of them is submitted. */
#include <sched.h>
#include <stdlib.h>

#include "mpi_internal.h"

/* Jobs whose op was skipped stay until the communicator is destroyed. */
void gpar__mpi_jobs_sweep(gpar__mpi_ctx *c, int all) {
  pthread_mutex_lock(&c->jobs_mu);
  gpar__mpi_job **p = &c->jobs;
  while (*p) {
    gpar__mpi_job *j = *p;
    if (all || (atomic_load(&j->done) && atomic_load(&j->watched) == 0)) {
      *p = j->next;
      free(j);
    } else {
      p = &j->next;
    }
  }
  pthread_mutex_unlock(&c->jobs_mu);
}

gpar__mpi_job *gpar__mpi_job_new(gpar__mpi_ctx *c, int kind, int n) {
  gpar__mpi_jobs_sweep(c, 0);
  if (n < 1) n = 1;
  gpar__mpi_job *j = calloc(1, sizeof *j + (sizeof j->ptrs[0] + sizeof j->members[0]) * (size_t)n);
  if (!j) {
    gpar__mpi_fail(GPAR_ENOMEM, "out of host memory");
    return NULL;
  }
  j->c = c;
  j->kind = kind;
  j->n = n;
  j->members = (gpar__mpi_member *)(j->ptrs + n);
  j->seq = ++c->seq;
  j->timeout = atomic_load(&c->timeout);
  atomic_init(&j->done, 0);
  atomic_init(&j->watched, 0);
  atomic_init(&j->gate, c->synchronous ? GPAR__GATE_SEALED : GPAR__GATE_OPEN);
  atomic_init(&j->aborted, 0);
  atomic_init(&j->issued, 0);
  atomic_init(&j->status, 0);
  pthread_mutex_lock(&c->jobs_mu);
  j->next = c->jobs;
  c->jobs = j;
  pthread_mutex_unlock(&c->jobs_mu);
  return j;
}

gpar__mpi_job *gpar__mpi_coll_job_new(gpar__mpi_ctx *c, const gpar_coll *a) {
  gpar__mpi_job *j = gpar__mpi_job_new(c, a->kind, c->nlocal);
  if (!j) return NULL;
  j->count = a->count;
  j->dtype = a->dtype;
  j->esize = gpar_dtype_size(a->dtype);
  j->op = a->op;
  j->root = a->root;
  return j;
}

int gpar__mpi_gate_wait(gpar__mpi_job *j) {
  int g;
  while ((g = atomic_load(&j->gate)) == GPAR__GATE_OPEN) sched_yield();
  return g == GPAR__GATE_SEALED;
}
