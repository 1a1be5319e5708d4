/* bench_blas.c: gpar-bench batched and gemm-ex: strided-batched SGEMM (one libgpar op for a whole
 * batch) and f16/bf16 GEMM with f32 sums, each next to the raw vendor call on the same shape in
 * the same process (tools/raw/raw_blas_*.c: cublasSgemmStridedBatched / cublasGemmEx, CLBlast's
 * strided-batched or temp-buffer SGEMM, a cblas_sgemm loop), in interleaved rounds (libgpar, then
 * raw, R times), median with min and max. batched also times the same batch as a loop of
 * gpar_sgemm calls, one op each, and counts the ops every form submits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "raw/raw_blas.h"

typedef struct blas_case {
  int m, n, k, batch, iters;
  int ab, c; /* gpar_dtype of A and B, of C */
} blas_case;

static const char *type_name(int t) { return t == GPAR_HALF ? "f16" : t == GPAR_BFLOAT16 ? "bf16" : "f32"; }

/* count elements of type t holding v. */
static int fill(gpar_buffer b, int t, size_t count, float v) {
  const size_t es = gpar_dtype_size((gpar_dtype)t);
  unsigned char *h = malloc(count * es);
  if (!h) return GPAR_ENOMEM;
  gpar_convert(h, (gpar_dtype)t, &v, GPAR_FLOAT, 1);
  for (size_t i = 1; i < count; i++) memcpy(h + i * es, h, es);
  int st = gpar_write(b, 0, h, count * es);
  free(h);
  return st;
}

/* form 0: iters batched calls (one op each); form 1: iters x batch gpar_sgemm calls. *sec: the
 * time per call (per batch), waits included. */
static int run_gpar(bench_ctx *ctx, const blas_case *c, int iters, int form, gpar_buffer a, gpar_buffer b,
                    gpar_buffer cc, double *sec, uint64_t *ops) {
  const long long sa = (long long)c->m * c->k, sb = (long long)c->k * c->n, sc = (long long)c->m * c->n;
  const gpar_trans N = GPAR_NO_TRANS;
  gpar_stats s0, s1;
  int st = GPAR_OK;
  gpar_stats_get(ctx->eng, &s0);
  double t0 = gpar_now();
  for (int i = 0; i < iters && st == GPAR_OK; i++) {
    if (form == 1)
      for (int e = 0; e < c->batch && st == GPAR_OK; e++)
        st = gpar_sgemm(N, N, c->m, c->n, c->k, 1.0f, a, (size_t)(e * sa), c->m, b, (size_t)(e * sb), c->k, 0.0f, cc,
                        (size_t)(e * sc), c->m);
    else if (c->ab == GPAR_FLOAT)
      st = gpar_sgemm_strided_batched(N, N, c->m, c->n, c->k, 1.0f, a, 0, c->m, sa, b, 0, c->k, sb, 0.0f, cc, 0, c->m,
                                      sc, c->batch);
    else
      st = gpar_gemm_ex(N, N, c->m, c->n, c->k, 1.0f, (gpar_dtype)c->ab, a, 0, c->m, sa, b, 0, c->k, sb, 0.0f,
                        (gpar_dtype)c->c, cc, 0, c->m, sc, c->batch);
  }
  int w = gpar_wait_all(ctx->eng);
  *sec = (gpar_now() - t0) / iters;
  gpar_stats_get(ctx->eng, &s1);
  *ops = (s1.ops_submitted - s0.ops_submitted) / (uint64_t)iters;
  if (st != GPAR_OK) return bench_fail(form ? "gpar_sgemm" : c->ab == GPAR_FLOAT ? "gpar_sgemm_strided_batched" : "gpar_gemm_ex", st);
  return w != GPAR_OK ? bench_fail("gpar_wait_all", w) : GPAR_OK;
}

/* C's first and last entries must be k / 2 (A 1, B 0.5: exact in every type). */
static void check_c(bench_ctx *ctx, gpar_buffer cc, const blas_case *c) {
  const size_t cs = gpar_dtype_size((gpar_dtype)c->c), nc = (size_t)c->m * c->n * (size_t)c->batch;
  unsigned char raw[2][4];
  float v[2];
  if (gpar_read(cc, 0, raw[0], cs) || gpar_read(cc, (nc - 1) * cs, raw[1], cs)) {
    bench_fail("gpar_read", GPAR_EBACKEND);
    ctx->check_failed = 1;
    return;
  }
  for (int i = 0; i < 2; i++) gpar_convert(&v[i], GPAR_FLOAT, raw[i], (gpar_dtype)c->c, 1);
  bench_check(ctx, "C", v, 2, 0.5f * (float)c->k);
}

typedef struct blas_times {
  double *lib, *loop, *raw;
  uint64_t ops, loop_ops;
  int raw_ok;
  const char *raw_what;
} blas_times;

/* R interleaved rounds of libgpar (and, for batches, its gpar_sgemm loop) and the raw call. */
static int blas_rounds(bench_ctx *ctx, int d, const blas_case *c, blas_times *t) {
  const size_t es = gpar_dtype_size((gpar_dtype)c->ab), cs = gpar_dtype_size((gpar_dtype)c->c), nb = (size_t)c->batch;
  const size_t na = (size_t)c->m * c->k * nb, nbb = (size_t)c->k * c->n * nb, nc = (size_t)c->m * c->n * nb;
  gpar_buffer a = {0}, b = {0}, cc = {0};
  int st = gpar_buffer_create(ctx->eng, ctx->flat[d], na * es, &a);
  if (st == GPAR_OK) st = gpar_buffer_create(ctx->eng, ctx->flat[d], nbb * es, &b);
  if (st == GPAR_OK) st = gpar_buffer_create(ctx->eng, ctx->flat[d], nc * cs, &cc);
  if (st == GPAR_OK) st = fill(a, c->ab, na, 1.0f);
  if (st == GPAR_OK) st = fill(b, c->ab, nbb, 0.5f);
  if (st != GPAR_OK) bench_fail("buffers", st);
  bench_raw_blas_fn raw = bench_raw_blas_lookup(ctx);
  gpar_raw_blas_case rc = {c->m, c->n, c->k, c->batch, c->iters, c->ab, c->c, ctx->local[d]};
  /* the loop of single GEMMs: at most about 100000 ops per round */
  const int loop_iters = c->iters < 100000 / c->batch ? c->iters : 100000 / c->batch > 0 ? 100000 / c->batch : 1;
  double dummy;
  uint64_t o;
  if (st == GPAR_OK) st = run_gpar(ctx, c, 1, 0, a, b, cc, &dummy, &o); /* plans, kernels, temp buffers */
  if (st == GPAR_OK && t->loop) st = run_gpar(ctx, c, 1, 1, a, b, cc, &dummy, &o);
  t->raw_ok = raw != NULL;
  for (int r = 0; r < ctx->repeat && st == GPAR_OK; r++) {
    bench_progress(ctx, "%s: %s round %d/%d", c->ab == GPAR_FLOAT ? "batched" : "gemm-ex", ctx->label[d], r + 1, ctx->repeat);
    st = run_gpar(ctx, c, c->iters, 0, a, b, cc, &t->lib[r], &t->ops);
    if (st == GPAR_OK && t->loop) st = run_gpar(ctx, c, loop_iters, 1, a, b, cc, &t->loop[r], &t->loop_ops);
    if (st == GPAR_OK && t->raw_ok && (t->raw_ok = raw(&rc, &t->raw[r], &t->raw_what) == 0)) t->raw[r] /= c->iters;
  }
  if (st == GPAR_OK) {
    if (t->loop) { /* the loop wrote C too: check what one batched op writes over zeros */
      st = gpar_fill(cc, 0, nc * cs, 0);
      if (st == GPAR_OK) st = run_gpar(ctx, c, 1, 0, a, b, cc, &dummy, &o);
    }
    check_c(ctx, cc, c);
  }
  gpar_wait_all(ctx->eng);
  if (a.id) gpar_buffer_release(a);
  if (b.id) gpar_buffer_release(b);
  if (cc.id) gpar_buffer_release(cc);
  return st;
}

/* Times are per call: one batched call, its loop of gpar_sgemm, one raw call. */
static void blas_report(bench_ctx *ctx, int d, const blas_case *c, const blas_times *t) {
  const double flop = 2.0 * c->m * c->n * (double)c->k * c->batch;
  const int R = ctx->repeat;
  char name[96], buf[160], rate[32], key[64];
  if (c->ab == GPAR_FLOAT)
    snprintf(name, sizeof name, "sgemm_strided_batched %d x %dx%dx%d (%d calls a run)", c->batch, c->m, c->n, c->k,
             c->iters);
  else
    snprintf(name, sizeof name, "gemm_ex %s/%s %dx%dx%d (%d calls a run)", type_name(c->ab), type_name(c->c), c->m, c->n,
             c->k, c->iters);
  bench_stat s = bench_stats(t->lib, R);
  fprintf(ctx->out, "%s on %s (%s): libgpar %s per call = %s, %llu op(s) per call\n", name, ctx->label[d], ctx->info[d].name,
          bench_fmt_stat(buf, sizeof buf, s), bench_fmt_rate(rate, sizeof rate, flop, s.med), (unsigned long long)t->ops);
  snprintf(key, sizeof key, "%s_%s_%d", c->ab == GPAR_FLOAT ? "batched" : type_name(c->ab), ctx->label[d], c->batch);
  bench_json_begin(ctx, key);
  bench_json_stat(ctx, "libgpar", s, t->lib);
  bench_json_num(ctx, "libgpar_tflops", flop / s.med * 1e-12);
  bench_json_num(ctx, "libgpar_ops_per_call", (double)t->ops);
  if (t->loop) {
    bench_stat l = bench_stats(t->loop, R);
    fprintf(ctx->out, "%s on %s: libgpar loop of %d gpar_sgemm per call (%llu ops) %s per batch = %s; batched/loop time %.3f\n",
            name, ctx->label[d], c->batch, (unsigned long long)t->loop_ops, bench_fmt_stat(buf, sizeof buf, l),
            bench_fmt_rate(rate, sizeof rate, flop, l.med), s.med / l.med);
    bench_json_stat(ctx, "libgpar_loop", l, t->loop);
    bench_json_num(ctx, "libgpar_loop_ops_per_call", (double)t->loop_ops);
    bench_json_num(ctx, "libgpar_over_loop", s.med / l.med);
  }
  if (!t->raw_ok) {
    fprintf(ctx->out, "%s on %s: raw baseline %s\n", name, ctx->label[d], bench_raw_blas_lookup(ctx) ? "failed (see stderr)" : "not built");
    bench_json_str(ctx, "raw", "failed or not built");
  } else {
    bench_stat rs = bench_stats(t->raw, R);
    fprintf(ctx->out, "%s on %s: %s %s per call = %s\n", name, ctx->label[d], t->raw_what, bench_fmt_stat(buf, sizeof buf, rs),
            bench_fmt_rate(rate, sizeof rate, flop, rs.med));
    fprintf(ctx->out, "libgpar/raw time: %.3f (min %.3f, max %.3f; rate: %.3f of raw)\n", s.med / rs.med,
            s.min / rs.min, s.max / rs.max, rs.med / s.med);
    bench_json_str(ctx, "raw_what", t->raw_what);
    bench_json_stat(ctx, "raw", rs, t->raw);
    bench_json_num(ctx, "raw_tflops", flop / rs.med * 1e-12);
    bench_json_num(ctx, "libgpar_over_raw", s.med / rs.med);
  }
  bench_json_end(ctx);
}

static int blas_case_run(bench_ctx *ctx, const blas_case *c, int loop) {
  const int R = ctx->repeat;
  blas_times t = {calloc((size_t)R, sizeof(double)), loop ? calloc((size_t)R, sizeof(double)) : NULL,
                  calloc((size_t)R, sizeof(double)), 0, 0, 0, NULL};
  int rc = !t.lib || !t.raw || (loop && !t.loop);
  for (int d = 0; d < ctx->ndev && !rc; d++) {
    if (blas_rounds(ctx, d, c, &t) != GPAR_OK) rc = 1;
    else blas_report(ctx, d, c, &t);
  }
  free(t.lib), free(t.loop), free(t.raw);
  return rc;
}

/* gpar-bench batched: 64 x 256^3 and 1000 x 64^3 (--size S --batch B: that one shape). */
static int bench_batched(bench_ctx *ctx) {
  blas_case cs[2] = {{256, 256, 256, 64, 0, GPAR_FLOAT, GPAR_FLOAT}, {64, 64, 64, 1000, 0, GPAR_FLOAT, GPAR_FLOAT}};
  int n = 2, rc = 0;
  if (ctx->o.size || ctx->o.batch) {
    int s = ctx->o.size ? ctx->o.size : 256;
    cs[0] = (blas_case){s, s, s, ctx->o.batch ? ctx->o.batch : 64, 0, GPAR_FLOAT, GPAR_FLOAT};
    n = 1;
  }
  for (int i = 0; i < n && !rc; i++) {
    /* about 0.2 s of work per timed run on a GPU, 0.1 s on a CPU at ~100 GFLOP/s */
    double gflop = 2e-9 * cs[i].m * cs[i].n * (double)cs[i].k * cs[i].batch;
    cs[i].iters = ctx->o.iters ? ctx->o.iters : (int)(ctx->any_gpu ? 1 + 8000.0 / gflop : 1 + 10.0 / gflop);
    rc = blas_case_run(ctx, &cs[i], 1);
  }
  return rc ? rc : ctx->check_failed;
}

/* gpar-bench gemm-ex: f16 and bf16 (--dtype f16|bf16: one), C in f32, at 8192^3 on GPUs, 512^3
 * on CPU devices (--size). */
static int bench_gemm_ex(bench_ctx *ctx) {
  int rc = 0;
  const int s = ctx->o.size ? ctx->o.size : ctx->any_gpu ? 8192 : 512;
  for (int t = GPAR_HALF; t <= GPAR_BFLOAT16 && !rc; t++) {
    if (ctx->o.dtype && strcmp(ctx->o.dtype, type_name(t)) != 0) continue;
    double gflop = 2e-9 * s * s * (double)s;
    blas_case c = {s, s, s, 1, ctx->o.iters ? ctx->o.iters : (int)(ctx->any_gpu ? 1 + 20000.0 / gflop : 1 + 5.0 / gflop),
                   t, GPAR_FLOAT};
    rc = blas_case_run(ctx, &c, 0);
  }
  return rc ? rc : ctx->check_failed;
}

int bench_blas_subcommand(const char *name, int (**run)(bench_ctx *)) {
  if (!strcmp(name, "batched")) *run = bench_batched;
  else if (!strcmp(name, "gemm-ex")) *run = bench_gemm_ex;
  else return 0;
  return 1;
}

bench_raw_blas_fn bench_raw_blas_lookup(bench_ctx *ctx) {
  switch (ctx->backend_id) {
  case GPAR_BACKEND_CUDA: return gpar_raw_blas_cuda; /* weak: NULL when not built */
  case GPAR_BACKEND_OPENCL: return gpar_raw_blas_opencl;
  case GPAR_BACKEND_HOST: return gpar_raw_blas_host;
  default: return NULL;
  }
}
