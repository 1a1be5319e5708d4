/* bench_gemm.c: gpar-bench gemm: the SGEMM rate through libgpar next to the vendor call on the
 * same shape (cuBLAS, CLBlast or OpenBLAS; tools/raw*.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"

/* ------------------------------------------------------------------ gemm */

int bench_gemm(bench_ctx *ctx) {
  int R = ctx->repeat, iters = ctx->iters, n = ctx->n;
  size_t bytes = (size_t)n * n * sizeof(float);
  double flop = 2.0 * n * n * (double)n * iters;
  double *t = calloc((size_t)R, sizeof *t), *rt = calloc((size_t)R, sizeof *rt);
  int rc = 0;
  if (!t || !rt) {
    free(t);
    free(rt);
    return 1;
  }
  for (int d = 0; d < ctx->ndev && rc == 0; d++) {
    gpar_buffer a = {0}, b = {0}, c = {0};
    int st = gpar_buffer_create(ctx->eng, ctx->flat[d], bytes, &a);
    if (st == GPAR_OK) st = gpar_buffer_create(ctx->eng, ctx->flat[d], bytes, &b);
    if (st == GPAR_OK) st = gpar_buffer_create(ctx->eng, ctx->flat[d], bytes, &c);
    if (st != GPAR_OK) bench_fail("gpar_buffer_create", st);
    if (st == GPAR_OK) st = bench_fill_matrix(a, n, 1.0f);
    if (st == GPAR_OK) st = bench_fill_matrix(b, n, 0.5f);
    /* Warm-up, then R timed loops of iters GEMMs into one C with one wait. */
    for (int r = -1; r < R && st == GPAR_OK; r++) {
      int k = r < 0 ? (ctx->any_gpu ? iters : 1) : iters;
      if (r >= 0) bench_progress(ctx, "gemm: %s run %d/%d", ctx->label[d], r + 1, R);
      double t0 = bench_now();
      for (int i = 0; i < k && st == GPAR_OK; i++)
        st = gpar_sgemm(GPAR_NO_TRANS, GPAR_NO_TRANS, n, n, n, 1.0f, a, 0, n, b, 0, n, 0.0f, c, 0, n);
      if (st != GPAR_OK) bench_fail("gpar_sgemm", st);
      int w = gpar_wait_all(ctx->eng);
      if (r >= 0) t[r] = bench_now() - t0;
      if (w != GPAR_OK && st == GPAR_OK) st = bench_fail("gpar_wait_all", w);
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
    if (st != GPAR_OK) {
      rc = 1;
      break;
    }

    char buf[160], key[32];
    bench_stat s = bench_stats(t, R);
    char rate[32];
    printf("sgemm %d^3 x %d on %s (%s): libgpar %s = %s\n", n, iters, ctx->label[d],
           ctx->info[d].name, bench_fmt_stat(buf, sizeof buf, s),
           bench_fmt_rate(rate, sizeof rate, flop, s.med));
    bench_json_begin(ctx, ctx->label[d]);
    bench_json_stat(ctx, "libgpar", s, t);
    bench_json_num(ctx, "libgpar_tflops", flop / s.med * 1e-12);

    const char *what;
    bench_raw_fn raw = bench_raw_lookup(ctx, GPAR_RAW_GEMM, &what);
    if (!raw) {
      bench_raw_missing(ctx, GPAR_RAW_GEMM);
    } else {
      int ok = 1;
      for (int r = 0; r < R && ok; r++) {
        gpar_raw_case rc_case = {n, iters, GPAR_RAW_GEMM, ctx->o.tf32, &ctx->local[d], 1, 0, NULL};
        bench_progress(ctx, "gemm: %s raw run %d/%d", ctx->label[d], r + 1, R);
        ok = raw(&rc_case, &rt[r]) == 0;
      }
      if (!ok) {
        printf("%s: failed (see stderr)\n", what);
        bench_json_str(ctx, "raw", "failed");
      } else {
        bench_stat rs = bench_stats(rt, R);
        printf("sgemm %d^3 x %d on %s: %s %s = %s\n", n, iters, ctx->label[d], what,
               bench_fmt_stat(buf, sizeof buf, rs), bench_fmt_rate(rate, sizeof rate, flop, rs.med));
        printf("libgpar/raw time: %.3f (rate: %.3f of raw)\n", s.med / rs.med, rs.med / s.med);
        bench_json_str(ctx, "raw_what", what);
        bench_json_stat(ctx, "raw", rs, rt);
        bench_json_num(ctx, "raw_tflops", flop / rs.med * 1e-12);
        snprintf(key, sizeof key, "libgpar_over_raw");
        bench_json_num(ctx, key, s.med / rs.med);
      }
    }
    bench_json_end(ctx);
  }
  free(t);
  free(rt);
  return rc ? rc : ctx->check_failed ? 1 : 0;
}
