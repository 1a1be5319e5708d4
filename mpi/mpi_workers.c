/* mpi_workers.c: communicators per engine. Each communicator holds one CPU worker while one of
 * its operations waits for other ranks (gpar_mpi.h): an engine gets at most
 * gpar_config.host_threads of them. */
#include <pthread.h>
#include <stdlib.h>

#include "mpi_internal.h"

typedef struct eng_count {
  struct eng_count *next;
  gpar_engine *eng; /* engine handles are never reused by the process */
  int n;
} eng_count;

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static eng_count *reg;

/* Add delta to eng's count of communicators unless that makes it exceed limit (limit <= 0: no
 * limit); returns the count before, or -1 when refused (or out of memory). */
static int reg_add(gpar_engine *eng, int delta, int limit) {
  pthread_mutex_lock(&reg_mu);
  eng_count **p = &reg;
  while (*p && (*p)->eng != eng) p = &(*p)->next;
  if (!*p && (*p = calloc(1, sizeof **p))) (*p)->eng = eng;
  int before = *p ? (*p)->n : -1;
  if (before >= 0 && limit > 0 && before + delta > limit) before = -1;
  if (before >= 0) (*p)->n += delta;
  if (*p && (*p)->n == 0) {
    eng_count *e = *p;
    *p = e->next;
    free(e);
  }
  pthread_mutex_unlock(&reg_mu);
  return before;
}

int gpar__mpi_workers_take(gpar_engine *eng, int limit) { return reg_add(eng, 1, limit) >= 0; }

void gpar__mpi_workers_give(gpar_engine *eng) { reg_add(eng, -1, 0); }
