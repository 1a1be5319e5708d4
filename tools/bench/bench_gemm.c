/* bench_gemm.c: gpar-bench gemm: the SGEMM rate through libgpar next to the vendor call on the
 * same shape (cuBLAS, CLBlast or OpenBLAS; tools/raw/raw*.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"

/* ------------------------------------------------------------------ gemm */

/* The vendor loops timed next to libgpar: the backend's; on CUDA also the hand cublasLt loop. */
typedef struct gemm_raw {
  const char *key, *what;
  bench_raw_fn fn;
  int lt, ok;
  double *t; /* [r] */
} gemm_raw;

/* One device: R rounds, each libgpar's loop of iters GEMMs into one C with one wait, then each
 * vendor loop; then the check of C and the lines. Returns GPAR_OK or the failing status. */
static int gemm_device(bench_ctx *ctx, int d, double *t, gemm_raw *rw, int nraw) {
  int R = ctx->repeat, iters = ctx->iters, n = ctx->n;
  size_t bytes = (size_t)n * n * sizeof(float);
  double flop = 2.0 * n * n * (double)n * iters;
  gpar_buffer a = {0}, b = {0}, c = {0};
  int st = gpar_buffer_create(ctx->eng, ctx->flat[d], bytes, &a);
  if (st == GPAR_OK) st = gpar_buffer_create(ctx->eng, ctx->flat[d], bytes, &b);
  if (st == GPAR_OK) st = gpar_buffer_create(ctx->eng, ctx->flat[d], bytes, &c);
  if (st != GPAR_OK) bench_fail("gpar_buffer_create", st);
  if (st == GPAR_OK) st = bench_fill_matrix(a, n, 1.0f);
  if (st == GPAR_OK) st = bench_fill_matrix(b, n, 0.5f);
  for (int k = 0; k < nraw; k++) rw[k].ok = 1;
  /* Warm-up, then R rounds. */
  for (int r = -1; r < R && st == GPAR_OK; r++) {
    int kk = r < 0 ? (ctx->any_gpu ? iters : 1) : iters;
    if (r >= 0) bench_progress(ctx, "gemm: %s run %d/%d", ctx->label[d], r + 1, R);
    double t0 = gpar_now();
    for (int i = 0; i < kk && st == GPAR_OK; i++)
      st = gpar_sgemm(GPAR_NO_TRANS, GPAR_NO_TRANS, n, n, n, 1.0f, a, 0, n, b, 0, n, 0.0f, c, 0, n);
    if (st != GPAR_OK) bench_fail("gpar_sgemm", st);
    int w = gpar_wait_all(ctx->eng);
    if (r >= 0) t[r] = gpar_now() - t0;
    if (w != GPAR_OK && st == GPAR_OK) st = bench_fail("gpar_wait_all", w);
    for (int k = 0; k < nraw && r >= 0 && st == GPAR_OK; k++) {
      if (!rw[k].ok) continue;
      gpar_raw_case rc = {.n = n, .iters = iters, .mode = GPAR_RAW_GEMM, .tf32 = ctx->o.tf32,
                          .devs = &ctx->local[d], .ndev = 1, .lt = rw[k].lt};
      bench_progress(ctx, "gemm: %s %s run %d/%d", ctx->label[d], rw[k].key, r + 1, R);
      rw[k].ok = rw[k].fn(&rc, &rw[k].t[r]) == 0;
    }
  }
  if (st == GPAR_OK) {
    float v[2];
    st = gpar_read(c, 0, &v[0], sizeof v[0]);
    if (st == GPAR_OK) st = gpar_read(c, bytes - sizeof v[1], &v[1], sizeof v[1]);
    if (st != GPAR_OK)
      bench_fail("gpar_read", st);
    else
      bench_check(ctx, "C", v, 2, 0.5f * n);
  }
  gpar_wait_all(ctx->eng);
  if (a.id) gpar_buffer_release(a);
  if (b.id) gpar_buffer_release(b);
  if (c.id) gpar_buffer_release(c);
  if (st != GPAR_OK) return st;

  char buf[160], rate[32];
  bench_stat s = bench_stats(t, R);
  printf("sgemm %d^3 x %d on %s (%s): libgpar %s = %s\n", n, iters, ctx->label[d], ctx->info[d].name,
         bench_fmt_stat(buf, sizeof buf, s), bench_fmt_rate(rate, sizeof rate, flop, s.med));
  bench_json_begin(ctx, ctx->label[d]);
  bench_json_stat(ctx, "libgpar", s, t);
  bench_json_num(ctx, "libgpar_tflops", flop / s.med * 1e-12);
  for (int k = 0; k < nraw; k++) {
    char key[48];
    if (!rw[k].ok) {
      printf("%s: failed (see stderr)\n", rw[k].what);
      bench_json_str(ctx, rw[k].key, "failed");
      continue;
    }
    bench_stat rs = bench_stats(rw[k].t, R);
    printf("sgemm %d^3 x %d on %s: %s %s = %s\n", n, iters, ctx->label[d], rw[k].what,
           bench_fmt_stat(buf, sizeof buf, rs), bench_fmt_rate(rate, sizeof rate, flop, rs.med));
    printf("libgpar/%s time: %.3f (rate: %.3f of %s)\n", rw[k].key, s.med / rs.med, rs.med / s.med, rw[k].key);
    snprintf(key, sizeof key, "%s_what", rw[k].key);
    bench_json_str(ctx, key, rw[k].what);
    bench_json_stat(ctx, rw[k].key, rs, rw[k].t);
    snprintf(key, sizeof key, "%s_tflops", rw[k].key);
    bench_json_num(ctx, key, flop / rs.med * 1e-12);
    snprintf(key, sizeof key, "libgpar_over_%s", rw[k].key);
    bench_json_num(ctx, key, s.med / rs.med);
  }
  bench_json_end(ctx);
  return GPAR_OK;
}

int bench_gemm(bench_ctx *ctx) {
  int R = ctx->repeat, rc = 0, nraw = 0;
  gemm_raw rw[2];
  const char *what;
  bench_raw_fn raw = bench_raw_lookup(ctx, GPAR_RAW_GEMM, &what);
  if (!raw)
    bench_raw_missing(ctx, GPAR_RAW_GEMM);
  else
    rw[nraw++] = (gemm_raw){.key = "raw", .what = what, .fn = raw};
  if (raw == gpar_raw_cuda)
    rw[nraw++] = (gemm_raw){.key = "raw_lt", .what = "raw CUDA (cublasLt, plan made once per shape)", .fn = raw, .lt = 1};
  double *t = calloc((size_t)R, sizeof *t);
  int have = t != NULL;
  for (int k = 0; k < nraw; k++)
    if (!(rw[k].t = calloc((size_t)R, sizeof *rw[k].t))) have = 0;
  if (!have) rc = 1;
  for (int d = 0; d < ctx->ndev && rc == 0; d++)
    if (gemm_device(ctx, d, t, rw, nraw) != GPAR_OK) rc = 1;
  free(t);
  for (int k = 0; k < nraw; k++) free(rw[k].t);
  return rc ? rc : ctx->check_failed ? 1 : 0;
}
