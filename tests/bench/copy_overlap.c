/* copy_overlap.c: D2L "Automatic Parallelism" experiment 2 as a TAP test: SGEMMs whose results are
 * copied to pinned host memory while later GEMMs run; checks the copies, bounds overlap on GPUs. */
#include "../testutil.h"


enum { RUN = 1, COPY = 2 };

/* GEMM i into C[i] and/or copy C[i] to H[i], for every i, one wait; seconds in *t. */
static int phase(gpar_engine *eng, int what, int n, int iters, gpar_buffer a, gpar_buffer b,
                 gpar_buffer *C, gpar_buffer *H, double *t) {
  size_t bytes = (size_t)n * n * sizeof(float);
  int st = GPAR_OK;
  double t0 = gpar_now();
  for (int i = 0; i < iters && st == GPAR_OK; i++) {
    if (what & RUN)
      st = gpar_sgemm(GPAR_NO_TRANS, GPAR_NO_TRANS, n, n, n, 1.0f, a, 0, n, b, 0, n, 0.0f, C[i], 0, n);
    if (st == GPAR_OK && (what & COPY)) st = gpar_copy(H[i], 0, C[i], 0, bytes);
  }
  int w = gpar_wait_all(eng);
  *t = gpar_now() - t0;
  if (st != GPAR_OK) diag("submit: %s (%s)", gpar_status_name(st), gpar_last_error());
  return st != GPAR_OK ? st : w;
}

static void test_target(gpar_engine *eng, const tu_group *tg, int full) {
  int gpu = tg->type == GPAR_DEVICE_GPU;
  int n = gpu ? (full ? 4000 : 2048) : 256, iters = gpu ? (full ? 50 : 20) : 8, reps = gpu ? 3 : 1;
  const char *kind = gpu ? "GPU1" : "CPU1";
  size_t count = (size_t)n * n, bytes = count * sizeof(float);
  gpar_buffer a = {0}, b = {0}, *C = calloc((size_t)iters, sizeof *C), *H = calloc((size_t)iters, sizeof *H);
  float *pageable = malloc(bytes);
  int st = C && H && pageable ? GPAR_OK : GPAR_ENOMEM;

  diag("%s: %s = device %d (%s), %d x SGEMM %d^3, each result (%.2f MB) to pinned host memory%s",
       tg->backend, kind, tg->dev[0], tg->name[0], iters, n, (double)bytes / 1e6, full ? " (GPAR_BENCH_FULL)" : "");
  if (st == GPAR_OK) st = gpar_buffer_create(eng, tg->dev[0], bytes, &a);
  if (st == GPAR_OK) st = gpar_buffer_create(eng, tg->dev[0], bytes, &b);
  for (int i = 0; i < iters && st == GPAR_OK; i++) {
    st = gpar_buffer_create(eng, tg->dev[0], bytes, &C[i]);
    if (st == GPAR_OK) st = gpar_buffer_create(eng, GPAR_HOST, bytes, &H[i]);
  }
  if (st == GPAR_OK) st = tu_write_pattern(a, count, 31); /* non-uniform: tu_check_gemm below */
  if (st == GPAR_OK) st = tu_write_pattern(b, count, 32);
  if (st == GPAR_OK) st = gpar_wait_all(eng);
  if (!is_status(st, GPAR_OK, "buffers created and filled")) goto out;

  double t, run = 1e30, copy = 1e30, both = 1e30;
  st = phase(eng, RUN | COPY, n, gpu ? iters : 1, a, b, C, H, &t); /* warm-up */
  if (!is_status(st, GPAR_OK, "warm-up")) goto out;
  int st_run = GPAR_OK, st_copy = GPAR_OK, st_both = GPAR_OK, s;
  for (int r = 0; r < reps; r++) {
    s = phase(eng, RUN, n, iters, a, b, C, H, &t);
    if (s != GPAR_OK && st_run == GPAR_OK) st_run = s;
    if (t < run) run = t;
    s = phase(eng, COPY, n, iters, a, b, C, H, &t);
    if (s != GPAR_OK && st_copy == GPAR_OK) st_copy = s;
    if (t < copy) copy = t;
    if (r == reps - 1) { /* poison C and clear H: the check below sees this run's results */
      for (int i = 0; i < iters; i++) {
        gpar_fill(C[i], 0, bytes, 0xff);
        float *h = gpar_buffer_host_ptr(H[i]);
        if (h) memset(h, 0, bytes);
      }
      gpar_wait_all(eng);
    }
    s = phase(eng, RUN | COPY, n, iters, a, b, C, H, &t);
    if (s != GPAR_OK && st_both == GPAR_OK) st_both = s;
    if (t < both) both = t;
  }
  is_status(st_run, GPAR_OK, "run: all GEMMs succeeded");
  is_status(st_copy, GPAR_OK, "copy: all copies to GPAR_HOST succeeded");
  is_status(st_both, GPAR_OK, "run and copy: all GEMMs and copies succeeded");

  size_t bad = 0;
  float *ha = malloc(bytes), *hb = malloc(bytes);
  if (ha && hb) {
    tu_pattern(ha, count, 31);
    tu_pattern(hb, count, 32);
  }
  for (int i = 0; i < iters; i++) {
    const float *h = gpar_buffer_host_ptr(H[i]);
    char what[16];
    snprintf(what, sizeof what, "H_%d", i);
    bad += !h || !ha || !hb ? 1 : tu_check_gemm(ha, hb, h, n, gpu ? 64 : 0, 11 + (uint64_t)i, what);
  }
  free(ha), free(hb);
  ok(bad == 0, "every host copy H_i holds A * B (seeded non-uniform A, B; %s against a double reference; %d results)",
     n <= 512 ? "every entry" : "corners and 64 sampled entries", iters);
  /* The device results themselves, read back through gpar_read into pageable memory. */
  bad = 0;
  int check_idx[2] = {0, iters - 1};
  for (int k = 0; k < 2; k++) {
    const float *h = gpar_buffer_host_ptr(H[check_idx[k]]);
    if (gpar_read(C[check_idx[k]], 0, pageable, bytes) != GPAR_OK || !h || memcmp(pageable, h, bytes) != 0)
      bad++;
  }
  ok(bad == 0, "host copies equal the device results (first and last, via gpar_read)");

  double chunk = copy / iters, ideal = (run > copy ? run : copy) + chunk;
  diag("Run on %s: %.4f sec", kind, run);
  diag("Copy to CPU: %.4f sec (%.2f GB/s)", copy, (double)bytes * iters / copy * 1e-9);
  diag("Run on %s and copy to CPU: %.4f sec", kind, both);
  diag("ideal max(run, copy) + one chunk: %.4f sec; ratio %.3f; serial run + copy: %.4f sec",
       ideal, both / ideal, run + copy);
  if (gpu)
    ok(both <= 1.10 * ideal, "%s: run and copy within 1.10 x ideal (%.4f <= %.4f sec)",
       tg->backend, both, 1.10 * ideal);
  else
    diag("timing not asserted on CPU devices (shared cores)");

out:
  gpar_wait_all(eng);
  if (a.id) gpar_buffer_release(a);
  if (b.id) gpar_buffer_release(b);
  for (int i = 0; C && H && i < iters; i++) {
    if (C[i].id) gpar_buffer_release(C[i]);
    if (H[i].id) gpar_buffer_release(H[i]);
  }
  free(C);
  free(H);
  free(pageable);
}

int main(void) {
  int full = tu_bench_full();
  gpar_engine *eng = tu_engine(0, 0, 0); /* the environment (GPAR_BACKENDS, GPAR_TF32, ...) applies */
  tu_group t[9]; /* each test runs on the first device of each backend and type */
  int nt = tu_find_groups(eng, t, 9);
  if (nt == 0) {
    gpar_shutdown(eng);
    skip_all("no device of any backend");
  }
  tap_start();
  for (int i = 0; i < nt; i++) test_target(eng, &t[i], full);
  is_status(gpar_shutdown(eng), GPAR_OK, "gpar_shutdown");
  return done_testing();
}
