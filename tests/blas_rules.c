/* blas_rules.c: the BLAS conventions of gpar_sgemm / gpar_dgemm on every device of every backend:
 * with alpha == 0 or k == 0, A and B are not read (NaN there stays out) and C = beta * C; with
 * beta == 0, C is write-only (NaN in C does not survive, also when alpha != 0); rows of C past m
 * (ldc > m) are never touched. */
#include <math.h>

#include "testutil.h"

#define MAXE 4096

typedef struct gemm_case {
  const char *what;
  int m, n, k, ldc_pad;
  double alpha, beta;
  int nan_ab; /* A and B hold NaN */
  int nan_c;  /* C holds NaN (else small integers) */
} gemm_case;

static const gemm_case cases[] = {
    {"alpha 0, beta 0: C = 0 over NaN in A, B and C", 5, 4, 3, 2, 0.0, 0.0, 1, 1},
    {"alpha 0, beta 2: C = 2C, NaN in A and B stays out", 5, 4, 3, 2, 0.0, 2.0, 1, 0},
    {"alpha 0, beta 1: C unchanged, NaN in A and B stays out", 5, 4, 3, 1, 0.0, 1.0, 1, 0},
    {"alpha 0, beta -0.5, contiguous C: C = -C/2, NaN in A and B stays out", 5, 4, 3, 0, 0.0, -0.5, 1, 0},
    {"k 0, beta 0: C = 0 over NaN in C", 5, 4, 0, 2, 1.0, 0.0, 1, 1},
    {"k 0, beta 3: C = 3C", 5, 4, 0, 0, 1.0, 3.0, 1, 0},
    {"alpha 1, beta 0, ldc > m: C = AB exactly over NaN in C, rows past m untouched", 33, 65, 17, 3, 1.0, 0.0, 0, 1},
};

/* One case on device dev in precision elem (4 or 8); 1 pass, 0 fail, -1 not supported. */
static int run_case(gpar_engine *eng, int dev, int elem, const gemm_case *c, char *why, size_t whylen) {
  const int m = c->m, n = c->n, k = c->k, lda = m, ldb = k > 0 ? k : 1, ldc = m + c->ldc_pad;
  const size_t na = (size_t)lda * (size_t)(k > 0 ? k : 1), nb = (size_t)ldb * (size_t)n, nc = (size_t)ldc * (size_t)n;
  static double A[MAXE], B[MAXE], C0[MAXE], C[MAXE], want[MAXE];
  static unsigned char raw[MAXE * 8];
  gpar_buffer ba = {0}, bb = {0}, bc = {0};
  int res = 0, st;
  for (size_t i = 0; i < na; i++)
    A[i] = c->nan_ab ? NAN : (double)((int)(i % 7) - 3);
  for (size_t i = 0; i < nb; i++)
    B[i] = c->nan_ab ? NAN : (double)((int)(i % 5) - 2);
  for (size_t i = 0; i < nc; i++)
    C0[i] = (size_t)(i % (size_t)ldc) >= (size_t)m ? 7.0 : c->nan_c ? NAN : (double)((int)(i % 9) - 4);
  for (int j = 0; j < n; j++)
    for (int i = 0; i < ldc; i++) {
      size_t x = (size_t)i + (size_t)j * (size_t)ldc;
      if (i >= m) {
        want[x] = C0[x]; /* padding: untouched */
        continue;
      }
      double s = c->alpha == 0.0 || k == 0 ? 0.0 : c->alpha * tu_ref_elem(0, 0, i, j, k, A, lda, B, ldb, NULL);
      want[x] = s + (c->beta == 0.0 ? 0.0 : c->beta * C0[x]);
    }
  if ((st = gpar_buffer_create(eng, dev, na * (size_t)elem, &ba)) ||
      (st = gpar_buffer_create(eng, dev, nb * (size_t)elem, &bb)) ||
      (st = gpar_buffer_create(eng, dev, nc * (size_t)elem, &bc))) {
    snprintf(why, whylen, "buffer_create: %s (%s)", gpar_status_name(st), gpar_last_error());
    goto out;
  }
  {
    const double *src[3] = {A, B, C0};
    const size_t cnt[3] = {na, nb, nc};
    const gpar_buffer dst[3] = {ba, bb, bc};
    for (int t = 0; t < 3; t++) {
      for (size_t i = 0; i < cnt[t]; i++) {
        if (elem == 4) {
          float f = (float)src[t][i];
          memcpy(raw + i * 4, &f, 4);
        } else {
          memcpy(raw + i * 8, &src[t][i], 8);
        }
      }
      if ((st = gpar_write(dst[t], 0, raw, cnt[t] * (size_t)elem))) {
        snprintf(why, whylen, "write: %s (%s)", gpar_status_name(st), gpar_last_error());
        goto out;
      }
    }
  }
  st = elem == 4
           ? gpar_sgemm(GPAR_NO_TRANS, GPAR_NO_TRANS, m, n, k, (float)c->alpha, ba, 0, lda, bb, 0, ldb, (float)c->beta,
                        bc, 0, ldc)
           : gpar_dgemm(GPAR_NO_TRANS, GPAR_NO_TRANS, m, n, k, c->alpha, ba, 0, lda, bb, 0, ldb, c->beta, bc, 0, ldc);
  if (st == GPAR_OK) st = gpar_wait(bc);
  if (st == GPAR_ENOTSUP) {
    res = -1;
    snprintf(why, whylen, "%s", gpar_last_error());
    (void)gpar_wait_all(eng); /* claim the failure */
    goto out;
  }
  if (st) {
    snprintf(why, whylen, "gemm: %s (%s)", gpar_status_name(st), gpar_last_error());
    goto out;
  }
  if ((st = gpar_read(bc, 0, raw, nc * (size_t)elem))) {
    snprintf(why, whylen, "read: %s (%s)", gpar_status_name(st), gpar_last_error());
    goto out;
  }
  for (size_t i = 0; i < nc; i++) {
    if (elem == 4) {
      float f;
      memcpy(&f, raw + i * 4, 4);
      C[i] = f;
    } else {
      memcpy(&C[i], raw + i * 8, 8);
    }
  }
  res = 1;
  for (size_t i = 0; i < nc && res; i++)
    if (!(C[i] == (elem == 4 ? (double)(float)want[i] : want[i]))) {
      snprintf(why, whylen, "C[%zu] (row %zu, col %zu) = %g, want %g", i, i % (size_t)ldc, i / (size_t)ldc, C[i],
               want[i]);
      res = 0;
    }
out:
  if (ba.id) gpar_buffer_release(ba);
  if (bb.id) gpar_buffer_release(bb);
  if (bc.id) gpar_buffer_release(bc);
  return res;
}

int main(void) {
  gpar_engine *eng = tu_engine(0, 0, 0);
  int ndev = gpar_device_count(eng);
  const int ncase = (int)(sizeof cases / sizeof cases[0]);
  plan(ndev * ncase * 2 + 1);
  for (int dev = 0; dev < ndev; dev++) {
    tu_devinfo info;
    if (tu_device_info(eng, dev, &info)) snprintf(info.backend, sizeof info.backend, "?");
    for (int elem = 4; elem <= 8; elem += 4)
      for (int i = 0; i < ncase; i++) {
        char why[256] = "";
        int r = run_case(eng, dev, elem, &cases[i], why, sizeof why);
        if (r < 0)
          printf("ok %d # SKIP dev %d (%s): %s: %s\n", ++tap_count, dev, info.backend, elem == 4 ? "sgemm" : "dgemm",
                 why);
        else if (!ok(r, "dev %d (%s): %s: %s", dev, info.backend, elem == 4 ? "sgemm" : "dgemm", cases[i].what))
          diag("%s", why);
      }
  }
  ok(gpar_shutdown(eng) == GPAR_OK, "shutdown");
  return done_testing();
}
