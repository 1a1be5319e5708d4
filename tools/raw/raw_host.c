/* raw_host.c: the host baseline gpar-bench compares libgpar's CPU device against: the same
 * SGEMM loop through cblas_sgemm (OpenBLAS) on the calling thread, no engine. */
#include <stdio.h>
#include <stdlib.h>

#include <cblas.h>

#include "gpar.h" /* gpar_now */
#include "raw.h"

int gpar_raw_host(const gpar_raw_case *c, double *seconds) {
  if (c->mode != GPAR_RAW_GEMM || c->ndev != 1 || c->lt || c->graph) {
    fprintf(stderr, "gpar-bench: raw host baseline: GEMM on one device only (no cublasLt, no graph)\n");
    return -1;
  }
  size_t count = (size_t)c->n * c->n;
  float *a = malloc(count * sizeof *a), *b = malloc(count * sizeof *b), *cc = malloc(count * sizeof *cc);
  if (!a || !b || !cc) {
    free(a);
    free(b);
    free(cc);
    fprintf(stderr, "gpar-bench: raw host baseline: out of memory\n");
    return -1;
  }
  for (size_t i = 0; i < count; i++) {
    a[i] = 1.0f;
    b[i] = 0.5f;
  }
  int n = c->n;
  cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, cc, n);
  double t0 = gpar_now();
  for (int i = 0; i < c->iters; i++)
    cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, cc, n);
  *seconds = gpar_now() - t0;
  int ok = cc[0] == 0.5f * n && cc[count - 1] == 0.5f * n;
  free(a);
  free(b);
  free(cc);
  if (!ok) {
    fprintf(stderr, "gpar-bench: raw host baseline computed a wrong result\n");
    return -1;
  }
  return 0;
}
