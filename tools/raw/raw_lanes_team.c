/* raw_lanes_team.c: the thread team of the hand-written lanes loops (raw_lanes.h), shared by the
 * CUDA and OpenCL files: n threads started together behind a barrier, timed until the last one
 * has synchronized its stream or queue. Vendor-neutral, always built. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpar.h" /* gpar_now */
#include "raw_lanes.h"

int gpar_raw_lanes_threads(const gpar_raw_lanes_case *c) {
  int n = c->what == GPAR_RAW_L_CHAIN ? 1 : c->threads;
  if (c->what >= 0 && c->what < GPAR_RAW_L_NCASES && n >= 1 && n <= GPAR_RAW_L_MAX_THREADS && c->ring >= n && c->n >= 1 &&
      c->iters >= 1)
    return n;
  fprintf(stderr, "raw_lanes: bad case (what %d, %d threads, ring %d, n %d, iters %ld)\n", c->what, c->threads, c->ring,
          c->n, c->iters);
  return -1;
}

void gpar_raw_lanes_team_run(gpar_raw_lanes_team *t, int n, void *(*fn)(void *), void *args, size_t stride,
                             double *seconds) {
  pthread_t tid[GPAR_RAW_L_MAX_THREADS];
  pthread_barrier_init(&t->go, NULL, (unsigned)n + 1);
  pthread_barrier_init(&t->done, NULL, (unsigned)n + 1);
  for (int k = 0; k < n; k++)
    if (pthread_create(&tid[k], NULL, fn, (char *)args + (size_t)k * stride)) {
      fprintf(stderr, "raw_lanes: pthread_create failed\n");
      abort();
    }
  pthread_barrier_wait(&t->go);
  double t0 = gpar_now();
  pthread_barrier_wait(&t->done);
  *seconds = gpar_now() - t0;
  for (int k = 0; k < n; k++) pthread_join(tid[k], NULL);
  pthread_barrier_destroy(&t->go);
  pthread_barrier_destroy(&t->done);
}
