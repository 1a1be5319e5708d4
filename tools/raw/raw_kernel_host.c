/* raw_kernel_host.c: the host's hand-written kernel loops (raw_kernel.h): the tiny kernel as a
 * plain C call in a loop (no graphs: the graph case runs the same loop), saxpy as cblas_saxpy
 * (OpenBLAS with the case's threads, back to one after), a build as the system compiler on a C
 * file (cc -O2 -fPIC -shared) and dlopen. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cblas.h>

#include "gpar.h" /* gpar_now */
#include "raw_kernel.h"

static struct {
  float y1;
  float *x, *y;
  size_t n;
} R;

__attribute__((noinline)) static void tiny_kernel(volatile float *y) { y[0] += 1.0f; }

static int tiny(const gpar_raw_kernel_case *c, double *sec) {
  long n = c->what == GPAR_RAW_K_TINY_GRAPH ? c->iters * c->reps : c->iters;
  R.y1 = 0;
  double t0 = gpar_now();
  for (long i = 0; i < n; i++) tiny_kernel(&R.y1);
  *sec = gpar_now() - t0;
  return R.y1 == (float)n ? 0 : -1;
}

static int saxpy(const gpar_raw_kernel_case *c, double *sec) {
  if (R.n != c->n) {
    free(R.x);
    free(R.y);
    R.x = aligned_alloc(64, (c->n * 4 + 63) / 64 * 64);
    R.y = aligned_alloc(64, (c->n * 4 + 63) / 64 * 64);
    if (!R.x || !R.y) return -1;
    for (size_t i = 0; i < c->n; i++) R.x[i] = 1.0f;
    R.n = c->n;
  }
  memset(R.y, 0, c->n * 4);
  openblas_set_num_threads(c->threads > 0 ? c->threads : 1);
  double t0 = gpar_now();
  for (long i = 0; i < c->iters; i++) cblas_saxpy((int)c->n, 1.0f, R.x, 1, R.y, 1);
  *sec = gpar_now() - t0;
  openblas_set_num_threads(1); /* libgpar's host device runs OpenBLAS single-threaded per op */
  return R.y[c->n - 1] == (float)c->iters ? 0 : -1;
}

static int build(int salt, double *compile_load, double *load) {
  const char *tmp = getenv("TMPDIR");
  char dir[512], cmd[1400];
  snprintf(dir, sizeof dir, "%s/gpar-rawk-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) return -1;
  double t0 = gpar_now();
  snprintf(cmd, sizeof cmd, "%s/k.c", dir);
  FILE *f = fopen(cmd, "w");
  if (!f) return -1;
  fprintf(f, "/* round %d */\nvoid saxpy(unsigned long n, float a, const float *x, float *y) {\n"
             "  for (unsigned long i = 0; i < n; i++) y[i] = a * x[i] + y[i];\n}\n", salt);
  fclose(f);
  snprintf(cmd, sizeof cmd, "cd '%s' && cc -O2 -march=native -fPIC -shared -o k.so k.c && cp k.so k2.so", dir);
  int rc = system(cmd) == 0 ? 0 : -1;
  void *h = NULL;
  snprintf(cmd, sizeof cmd, "%s/k.so", dir);
  if (!rc && !(h = dlopen(cmd, RTLD_NOW | RTLD_LOCAL))) rc = -1;
  *compile_load = gpar_now() - t0;
  snprintf(cmd, sizeof cmd, "%s/k2.so", dir);
  double t1 = gpar_now();
  void *h2 = rc ? NULL : dlopen(cmd, RTLD_NOW | RTLD_LOCAL);
  *load = gpar_now() - t1;
  if (h) dlclose(h);
  if (h2) dlclose(h2);
  const char *files[] = {"k.c", "k.so", "k2.so"};
  for (int i = 0; i < 3; i++) {
    snprintf(cmd, sizeof cmd, "%s/%s", dir, files[i]);
    unlink(cmd);
  }
  rmdir(dir);
  return rc || !h2 ? -1 : 0;
}

int gpar_raw_kernel_host(const gpar_raw_kernel_case *c, double *seconds) {
  if (c->what == GPAR_RAW_K_TINY || c->what == GPAR_RAW_K_TINY_GRAPH) return tiny(c, seconds);
  if (c->what == GPAR_RAW_K_SAXPY) return saxpy(c, seconds);
  if (c->what == GPAR_RAW_K_BINARY) return -1; /* not timed here: the target is absolute (1 ms) */
  return build(c->salt, &seconds[0], &seconds[1]);
}

void gpar_raw_kernel_host_done(void) {
  free(R.x);
  free(R.y);
  memset(&R, 0, sizeof R);
}
