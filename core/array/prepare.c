/* prepare.c: gpar_array_prepare: the GPAR_FLOAT array kernels, every kind and variant gpu.c may
 * launch, built up front on one device or every device by threads inside the call (the caller
 * and up to MAX_THREADS - 1 more), so that a program's first step finds them built: kernels.c
 * keeps each for the engine's lifetime, per device, whatever the shapes of later calls. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "array/kernels.h"

#define MAX_THREADS 16

/* Every GPAR_FLOAT kernel an array call can launch (gpu.c chooses among them by aliasing, size
 * and outputs). A training step (tools/train/train_mlp.c) needs the bias add in place (bcast 1),
 * ReLU in place (unary 1), softmax with loss and gradient (3), range sums (reduce 0; 1 and 2
 * past 8192 elements) and per-row sums (rowred 0; 1 and 2 past 32 columns); the rest are here so
 * that any GPAR_FLOAT program's step finds its kernels built too. */
static const struct variant {
  int kind, var;
} variants[] = {
    {GPAR__AK_BCAST, 1},   {GPAR__AK_UNARY, 1},   {GPAR__AK_SOFTMAX, 3}, {GPAR__AK_REDUCE, 0},
    {GPAR__AK_REDUCE, 1},  {GPAR__AK_REDUCE, 2},  {GPAR__AK_ROWRED, 0},  {GPAR__AK_ROWRED, 1},
    {GPAR__AK_ROWRED, 2},  {GPAR__AK_BCAST, 0},   {GPAR__AK_UNARY, 0},   {GPAR__AK_BINARY, 0},
    {GPAR__AK_BINARY, 1},  {GPAR__AK_BINARY, 2},  {GPAR__AK_BINARY, 3},  {GPAR__AK_SOFTMAX, 1},
    {GPAR__AK_SOFTMAX, 2}, {GPAR__AK_COLRED, 0},  {GPAR__AK_ARGMAX, 0},
};
#define NVARIANTS ((int)(sizeof variants / sizeof variants[0]))

/* The work of one call: jobs (device, variant), taken in order by the threads. */
typedef struct job {
  gpar_engine *eng;
  gpar__device **dev; /* the devices to prepare (malloc'ed) */
  int n;              /* jobs: devices x NVARIANTS */
  atomic_int next;    /* the next job to take */
  pthread_mutex_t mu; /* guards the first failure; held alone */
  int first, st;      /* the failure of the first job (in order) that failed: first == n when none */
  char msg[1024];
} job;

static void *worker(void *arg) {
  job *j = arg;
  for (int i; (i = atomic_fetch_add(&j->next, 1)) < j->n;) {
    const struct variant *v = &variants[i % NVARIANTS];
    gpar__arr_kinfo ki;
    int st = gpar__arr_kernel(j->eng, j->dev[i / NVARIANTS], v->kind, GPAR_FLOAT, v->var, &ki);
    if (st == GPAR_OK) continue;
    pthread_mutex_lock(&j->mu);
    if (i < j->first) {
      j->first = i, j->st = st;
      snprintf(j->msg, sizeof j->msg, "%s", gpar__error_msg());
    }
    pthread_mutex_unlock(&j->mu);
  }
  return NULL;
}

/* Run j's jobs on the calling thread and as many more as help (fewer when threads cannot start). */
static void run_jobs(job *j) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  int want = (int)(cpus < 1 ? 1 : cpus > MAX_THREADS ? MAX_THREADS : cpus), started = 0;
  if (want > j->n) want = j->n;
  pthread_t t[MAX_THREADS];
  while (started < want - 1 && pthread_create(&t[started], NULL, worker, j) == 0) started++;
  worker(j);
  for (int i = 0; i < started; i++) pthread_join(t[i], NULL);
}

/* The devices dev names (-1: every device) whose array ops are kernels, into j (j->dev: the
 * caller frees it); GPAR_ENODEV, GPAR_ENOMEM. */
static int devices(gpar_engine *eng, int dev, job *j) {
  static const char fn[] = "gpar_array_prepare";
  if (dev != -1 && (dev < 0 || dev >= eng->ndev))
    return gpar__errorf(GPAR_ENODEV, "%s: device %d does not exist (%d devices; -1: every device)", fn, dev, eng->ndev);
  if (!(j->dev = calloc((size_t)eng->ndev + 1, sizeof *j->dev)))
    return gpar__errorf(GPAR_ENOMEM, "%s: out of host memory", fn);
  int nd = 0;
  for (int d = dev == -1 ? 0 : dev; d < (dev == -1 ? eng->ndev : dev + 1); d++)
    if (!eng->devs[d]->ops->array) j->dev[nd++] = eng->devs[d]; /* else plain C: nothing to build */
  j->n = nd * NVARIANTS;
  return GPAR_OK;
}

GPAR_API int gpar_array_prepare(gpar_engine *e, int dev) {
  static const char fn[] = "gpar_array_prepare";
  int st;
  gpar_engine *eng = gpar__engine_enter(e, &st);
  if (!eng) return st;
  job j = {.eng = eng};
  if (gpar__in_op)
    st = gpar__errorf(GPAR_EDEADLK, "%s: called from inside an operation (its builds would hold up the work of "
                      "its device): prepare before issuing work", fn);
  else
    st = devices(eng, dev, &j);
  if (st == GPAR_OK && j.n) {
    pthread_mutex_init(&j.mu, NULL);
    atomic_init(&j.next, 0);
    j.first = j.n;
    run_jobs(&j);
    pthread_mutex_destroy(&j.mu);
    if (j.first < j.n) st = gpar__errorf(j.st, "%s: %s", fn, j.msg);
  }
  free(j.dev);
  gpar__engine_leave(eng);
  return st;
}
