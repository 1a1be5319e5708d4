/* raw_blas_host.c: the host baseline of gpar-bench batched and gemm-ex: a loop of cblas_sgemm over
 * the batch on the calling thread (OpenBLAS 0.3.21 has no batched GEMM), OpenBLAS single-threaded
 * as in libgpar's host backend. f16/bf16 operands are converted to f32 before the timed part, so
 * this times the call libgpar's host path ends in, without libgpar's conversions. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cblas.h>

#include "gpar.h" /* gpar_now */
#include "raw_blas.h"

static void raw_run(const gpar_raw_blas_case *c, const float *a, const float *b, float *cc) {
  const size_t sa = (size_t)c->m * (size_t)c->k, sb = (size_t)c->k * (size_t)c->n, sc = (size_t)c->m * (size_t)c->n;
  for (int e = 0; e < c->batch; e++)
    cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, c->m, c->n, c->k, 1.0f, a + e * sa, c->m, b + e * sb, c->k,
                0.0f, cc + e * sc, c->m);
}

int gpar_raw_blas_host(const gpar_raw_blas_case *c, double *seconds, const char **what) {
  const size_t nb = (size_t)c->batch, na = (size_t)c->m * (size_t)c->k * nb, nbb = (size_t)c->k * (size_t)c->n * nb,
               nc = (size_t)c->m * (size_t)c->n * nb;
  *what = "raw OpenBLAS (a loop of cblas_sgemm, f32 operands)";
  float *a = malloc(na * sizeof *a), *b = malloc(nbb * sizeof *b), *cc = malloc(nc * sizeof *cc);
  if (!a || !b || !cc) {
    free(a), free(b), free(cc);
    fprintf(stderr, "gpar-bench: raw host baseline: out of memory\n");
    return -1;
  }
  for (size_t i = 0; i < na; i++) a[i] = 1.0f;
  for (size_t i = 0; i < nbb; i++) b[i] = 0.5f;
  raw_run(c, a, b, cc);
  double t0 = gpar_now();
  for (int i = 0; i < c->iters; i++) raw_run(c, a, b, cc);
  *seconds = gpar_now() - t0;
  int ok = cc[0] == 0.5f * (float)c->k && cc[nc - 1] == 0.5f * (float)c->k;
  free(a), free(b), free(cc);
  if (!ok) fprintf(stderr, "gpar-bench: raw host baseline computed a wrong result\n");
  return ok ? 0 : -1;
}
