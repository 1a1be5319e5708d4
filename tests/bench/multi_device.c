/* multi_device.c: D2L "Automatic Parallelism" experiment 1 as a TAP test: SGEMM loops on every
 * device of one backend and type, alone and all at once; checks results, bounds timing on GPUs. */
#include "../testutil.h"

static int sgemm(int n, gpar_buffer a, gpar_buffer b, gpar_buffer c) {
  return gpar_sgemm(GPAR_NO_TRANS, GPAR_NO_TRANS, n, n, n, 1.0f, a, 0, n, b, 0, n, 0.0f, c, 0, n);
}

/* iters GEMMs on the listed devices (i-major), one wait; seconds in *t; first error. */
static int run(gpar_engine *eng, int n, int iters, const int *which, int nw, gpar_buffer *A,
               gpar_buffer *B, gpar_buffer *C, double *t) {
  double t0 = gpar_now();
  int st = GPAR_OK;
  for (int i = 0; i < iters && st == GPAR_OK; i++)
    for (int j = 0; j < nw && st == GPAR_OK; j++) st = sgemm(n, A[which[j]], B[which[j]], C[which[j]]);
  int w = gpar_wait_all(eng);
  *t = gpar_now() - t0;
  if (st != GPAR_OK) diag("gpar_sgemm: %s (%s)", gpar_status_name(st), gpar_last_error());
  return st != GPAR_OK ? st : w;
}

static void test_group(gpar_engine *eng, const tu_group *g, int full) {
  int gpu = g->type == GPAR_DEVICE_GPU, N = g->ndev;
  int n = gpu ? (full ? 4000 : 2048) : 256, iters = gpu ? (full ? 50 : 20) : 8, reps = gpu ? 3 : 1;
  const char *kind = gpu ? "GPU" : "CPU";
  size_t count = (size_t)n * n, bytes = count * sizeof(float);
  gpar_buffer A[64], B[64], C[64];
  int idx[64], st = GPAR_OK;
  memset(A, 0, sizeof A);
  memset(B, 0, sizeof B);
  memset(C, 0, sizeof C);

  diag("%s: %d %s devices, %d x SGEMM %d^3 per device%s", g->backend, N, kind, iters, n,
       full ? " (GPAR_BENCH_FULL)" : "");
  for (int d = 0; d < N && st == GPAR_OK; d++) {
    idx[d] = d;
    diag("  %s%d = device %d: %s", kind, d + 1, g->dev[d], g->name[d]);
    st = gpar_buffer_create(eng, g->dev[d], bytes, &A[d]);
    if (st == GPAR_OK) st = gpar_buffer_create(eng, g->dev[d], bytes, &B[d]);
    if (st == GPAR_OK) st = gpar_buffer_create(eng, g->dev[d], bytes, &C[d]);
    if (st == GPAR_OK) st = tu_write_pattern(A[d], count, 100 + 2 * (uint64_t)d); /* non-uniform, per device */
    if (st == GPAR_OK) st = tu_write_pattern(B[d], count, 101 + 2 * (uint64_t)d);
  }
  if (st == GPAR_OK) st = gpar_wait_all(eng);
  if (!is_status(st, GPAR_OK, "buffers created and filled")) goto out;

  double t, alone[64], all = 1e30;
  for (int d = 0; d < N; d++) alone[d] = 1e30;
  st = run(eng, n, iters, idx, N, A, B, C, &t); /* warm-up */
  if (!is_status(st, GPAR_OK, "warm-up on all devices")) goto out;

  int st_alone = GPAR_OK, st_all = GPAR_OK;
  for (int r = 0; r < reps; r++) {
    for (int d = 0; d < N; d++) {
      int s = run(eng, n, iters, &idx[d], 1, A, B, C, &t);
      if (s != GPAR_OK && st_alone == GPAR_OK) st_alone = s;
      if (t < alone[d]) alone[d] = t;
    }
    /* Poison C before the last all-devices run, so the check below sees that run's results. */
    if (r == reps - 1) {
      for (int d = 0; d < N; d++) gpar_fill(C[d], 0, bytes, 0xff);
      gpar_wait_all(eng);
    }
    int s = run(eng, n, iters, idx, N, A, B, C, &t);
    if (s != GPAR_OK && st_all == GPAR_OK) st_all = s;
    if (t < all) all = t;
  }
  is_status(st_alone, GPAR_OK, "each device alone: all GEMMs succeeded");
  is_status(st_all, GPAR_OK, "all devices at once, one wait: all GEMMs succeeded");

  float *h = malloc(bytes), *ha = malloc(bytes), *hb = malloc(bytes);
  for (int d = 0; d < N; d++) {
    char what[32];
    size_t bad = 1;
    snprintf(what, sizeof what, "%s%d", kind, d + 1);
    if (h && ha && hb && gpar_read(C[d], 0, h, bytes) == GPAR_OK) {
      tu_pattern(ha, count, 100 + 2 * (uint64_t)d);
      tu_pattern(hb, count, 101 + 2 * (uint64_t)d);
      bad = tu_check_gemm(ha, hb, h, n, 256, 7 + (uint64_t)d, what);
    }
    ok(bad == 0, "%s: C = A * B (seeded non-uniform A, B) after the all-devices run, %s against a double reference",
       what, n <= 512 ? "every entry" : "corners and 256 sampled entries");
  }
  free(h), free(ha), free(hb);

  double sum = 0, mx = 0;
  for (int d = 0; d < N; d++) {
    diag("%s%d time: %.4f sec", kind, d + 1, alone[d]);
    sum += alone[d];
    if (alone[d] > mx) mx = alone[d];
  }
  char names[64 * 8] = "";
  for (int d = 0; d < N; d++)
    snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s%d", d ? " & " : "", kind, d + 1);
  diag("%s: %.4f sec", names, all);
  diag("speedup sum(alone)/all: %.3fx (ideal %d); fraction of %d-fold: %.3f; all/max(alone): %.3f",
       sum / all, N, N, sum / (N * all), all / mx);
  if (gpu)
    ok(all <= mx / 0.95, "%s: all devices at once within 1/0.95 of the slowest alone "
                         "(%.4f <= %.4f sec)", g->backend, all, mx / 0.95);
  else
    diag("timing not asserted on CPU devices (shared cores)");

out:
  gpar_wait_all(eng);
  for (int d = 0; d < N; d++) {
    if (A[d].id) gpar_buffer_release(A[d]);
    if (B[d].id) gpar_buffer_release(B[d]);
    if (C[d].id) gpar_buffer_release(C[d]);
  }
}

int main(void) {
  int full = tu_bench_full();
  gpar_engine *eng = tu_engine(0, 0, 0); /* the environment (GPAR_BACKENDS, GPAR_TF32, ...) applies */
  tu_group g[9];
  int ng = tu_find_groups(eng, g, 9), any = 0;
  for (int i = 0; i < ng; i++) any |= g[i].ndev >= 2;
  if (!any) {
    gpar_shutdown(eng);
    skip_all("fewer than two devices of any backend");
  }
  tap_start();
  for (int i = 0; i < ng; i++)
    if (g[i].ndev >= 2) test_group(eng, &g[i], full);
  is_status(gpar_shutdown(eng), GPAR_OK, "gpar_shutdown");
  return done_testing();
}
