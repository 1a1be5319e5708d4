/* bench_exp.c: gpar-bench's two chapter experiments: multi-device (N devices at once vs each
 * alone) and copy-overlap (GEMMs with each result copied to host memory as it is ready). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"

/* A = 1, B = 0.5: every entry of C = A*B is n * 0.5, exact in FP32 and TF32. */
#define VAL_A 1.0f
#define VAL_B 0.5f

static int sgemm(int n, gpar_buffer a, gpar_buffer b, gpar_buffer c) {
  return gpar_sgemm(GPAR_NO_TRANS, GPAR_NO_TRANS, n, n, n, 1.0f, a, 0, n, b, 0, n, 0.0f, c, 0, n);
}

static double tflops(int n, int gemms, double sec) {
  return sec > 0 ? 2.0 * (double)n * n * n * gemms / sec * 1e-12 : 0.0;
}

/* "GPU1 & GPU2 & GPU3" */
static void join_labels(bench_ctx *ctx, char *buf, size_t len) {
  buf[0] = 0;
  for (int d = 0; d < ctx->ndev; d++) {
    size_t l = strlen(buf);
    snprintf(buf + l, len - l, "%s%s", d ? " & " : "", ctx->label[d]);
  }
}

/* Read the first and last columns of C back and check them. */
static int check_c(bench_ctx *ctx, gpar_buffer c, const char *what) {
  int n = ctx->n;
  float *col = malloc((size_t)n * sizeof *col);
  if (!col) return GPAR_ENOMEM;
  int st = gpar_read(c, 0, col, (size_t)n * sizeof *col);
  if (st == GPAR_OK) bench_check(ctx, what, col, (size_t)n, (float)n * VAL_A * VAL_B);
  if (st == GPAR_OK) st = gpar_read(c, ((size_t)n * n - n) * sizeof *col, col, (size_t)n * sizeof *col);
  if (st == GPAR_OK) bench_check(ctx, what, col, (size_t)n, (float)n * VAL_A * VAL_B);
  free(col);
  if (st != GPAR_OK) bench_fail("gpar_read", st);
  return st;
}

/* Create A, B (filled) and `nc` result buffers on device dev. */
static int make_inputs(bench_ctx *ctx, int dev, gpar_buffer *a, gpar_buffer *b) {
  size_t bytes = (size_t)ctx->n * ctx->n * sizeof(float);
  int st = gpar_buffer_create(ctx->eng, dev, bytes, a);
  if (st != GPAR_OK) return bench_fail("gpar_buffer_create(A)", st);
  st = gpar_buffer_create(ctx->eng, dev, bytes, b);
  if (st != GPAR_OK) return bench_fail("gpar_buffer_create(B)", st);
  st = bench_fill_matrix(*a, ctx->n, VAL_A);
  if (st == GPAR_OK) st = bench_fill_matrix(*b, ctx->n, VAL_B);
  if (st != GPAR_OK) return bench_fail("gpar_write", st);
  return GPAR_OK;
}

static void release(gpar_buffer *b) {
  if (b->id) gpar_buffer_release(*b);
  b->id = 0;
}

int bench_time_gemm(bench_ctx *ctx, int k, double *sec) {
  gpar_buffer A = {0}, B = {0}, C = {0};
  int st = make_inputs(ctx, ctx->flat[0], &A, &B);
  if (st == GPAR_OK) st = gpar_buffer_create(ctx->eng, ctx->flat[0], (size_t)ctx->n * ctx->n * sizeof(float), &C);
  if (st == GPAR_OK) st = sgemm(ctx->n, A, B, C); /* warm-up: kernels, handles, clocks */
  if (st == GPAR_OK) st = gpar_wait_all(ctx->eng);
  double t0 = gpar_now();
  for (int i = 0; i < k && st == GPAR_OK; i++) st = sgemm(ctx->n, A, B, C);
  if (st == GPAR_OK) st = gpar_wait_all(ctx->eng);
  *sec = gpar_now() - t0;
  if (st != GPAR_OK) bench_fail("calibration GEMMs", st);
  gpar_wait_all(ctx->eng);
  release(&A);
  release(&B);
  release(&C);
  return st;
}

/* ------------------------------------------------------------------ multi-device */

/* iters GEMMs into C on each device of devs (i-major), or one launch of their graph g, one wait. */
static int md_run(bench_ctx *ctx, const int *devs, int nd, int iters, gpar_buffer *A,
                  gpar_buffer *B, gpar_buffer *C, gpar_graph *g, double *sec) {
  double t0 = gpar_now();
  int st = GPAR_OK;
  if (g && (st = gpar_graph_launch(g)) != GPAR_OK) bench_fail("gpar_graph_launch", st);
  for (int i = 0; i < iters && st == GPAR_OK && !g; i++)
    for (int j = 0; j < nd && st == GPAR_OK; j++) st = sgemm(ctx->n, A[devs[j]], B[devs[j]], C[devs[j]]);
  if (st != GPAR_OK && !g) bench_fail("gpar_sgemm", st);
  int w = gpar_wait_all(ctx->eng);
  *sec = gpar_now() - t0;
  if (w != GPAR_OK) bench_fail("gpar_wait_all", w);
  return st != GPAR_OK ? st : w;
}

/* --graph: record the loop of md_run once (the GEMMs are recorded, not run). */
static int md_record(bench_ctx *ctx, const int *devs, int nd, int iters, gpar_buffer *A, gpar_buffer *B,
                     gpar_buffer *C, gpar_graph **g) {
  int st = gpar_graph_begin(ctx->eng);
  if (st != GPAR_OK) return bench_fail("gpar_graph_begin", st);
  for (int i = 0; i < iters && st == GPAR_OK; i++)
    for (int j = 0; j < nd && st == GPAR_OK; j++) st = sgemm(ctx->n, A[devs[j]], B[devs[j]], C[devs[j]]);
  int e = gpar_graph_end(ctx->eng, g);
  if (st != GPAR_OK) {
    if (*g) gpar_graph_destroy(*g);
    *g = NULL;
    return bench_fail("gpar_sgemm (recording)", st);
  }
  return e == GPAR_OK ? GPAR_OK : bench_fail("gpar_graph_end", e);
}

/* A raw loop timed next to libgpar in multi-device, round by round. */
typedef struct md_raw {
  const char *key, *what; /* JSON key ("raw", "raw_lt", "raw_graph") and what it is */
  bench_raw_fn fn;
  int lt, graph;          /* gpar_raw_case.lt / .graph */
  double *alone, *all;    /* alone[d * R + r], all[r] */
  double cap;             /* graph: capture + instantiation seconds */
  int ok;
} md_raw;

/* The raw loops of this backend: its vendor loop; on CUDA also the hand cublasLt loop (not in
 * sweeps) and, with --graph, the hand-captured CUDA graph. Returns how many (0: none, said why). */
static int md_raw_setup(bench_ctx *ctx, md_raw *rs) {
  const char *what;
  bench_raw_fn raw = bench_raw_lookup(ctx, GPAR_RAW_GEMM, &what);
  int k = 0;
  if (!ctx->o.raw) return 0;
  if (!raw) {
    bench_raw_missing(ctx, GPAR_RAW_GEMM);
    return 0;
  }
  rs[k++] = (md_raw){.key = "raw", .what = what, .fn = raw};
  if (raw == gpar_raw_cuda && !ctx->pt)
    rs[k++] = (md_raw){.key = "raw_lt", .what = "raw CUDA (cublasLt, plan made once per shape)", .fn = raw, .lt = 1};
  if (ctx->o.graph && raw == gpar_raw_cuda)
    rs[k++] = (md_raw){.key = "raw_graph", .what = "hand-captured CUDA graph of the raw loop", .fn = raw, .graph = 1};
  else if (ctx->o.graph)
    fprintf(ctx->out, "hand-captured graph baseline: CUDA only\n");
  return k;
}

/* Round r of one raw loop: each device alone, then all at once. */
static void md_raw_round(bench_ctx *ctx, md_raw *x, int r) {
  int N = ctx->ndev, R = ctx->repeat;
  for (int d = 0; d < N && x->ok; d++) {
    gpar_raw_case c = {.n = ctx->n, .iters = ctx->iters, .mode = GPAR_RAW_GEMM, .tf32 = ctx->o.tf32,
                       .devs = &ctx->local[d], .ndev = 1, .graph = x->graph, .lt = x->lt};
    bench_progress(ctx, "multi-device: %s run %d/%d: %s alone", x->key, r + 1, R, ctx->label[d]);
    x->ok = x->fn(&c, &x->alone[d * R + r]) == 0;
  }
  if (!x->ok) return;
  gpar_raw_case c = {.n = ctx->n, .iters = ctx->iters, .mode = GPAR_RAW_GEMM, .tf32 = ctx->o.tf32,
                     .devs = ctx->local, .ndev = N, .graph = x->graph, .capture_seconds = &x->cap, .lt = x->lt};
  bench_progress(ctx, "multi-device: %s run %d/%d: all", x->key, r + 1, R);
  x->ok = x->fn(&c, &x->all[r]) == 0;
}

/* One raw loop's lines and JSON object, each against libgpar's medians. */
static void md_raw_report(bench_ctx *ctx, md_raw *x, const bench_stat *s_alone, bench_stat s_all,
                          const char *names) {
  int N = ctx->ndev, R = ctx->repeat;
  char buf[160];
  if (!x->ok) {
    fprintf(ctx->out, "%s: failed (see stderr)\n", x->what);
    bench_json_str(ctx, x->key, "failed");
    return;
  }
  fprintf(ctx->out, "%s, same loop, one thread, rounds interleaved with libgpar's:\n", x->what);
  if (x->graph) fprintf(ctx->out, "raw capture + instantiation of %d GEMMs: %.2f ms\n", ctx->iters * N, x->cap * 1e3);
  bench_json_begin(ctx, x->key);
  if (x->graph) bench_json_num(ctx, "capture_seconds", x->cap);
  bench_json_str(ctx, "what", x->what);
  double rmx = 0;
  for (int d = 0; d < N; d++) {
    bench_stat s = bench_stats(&x->alone[d * R], R);
    fprintf(ctx->out, "raw %s time: %s   libgpar/raw %.3f\n", ctx->label[d], bench_fmt_stat(buf, sizeof buf, s),
            s_alone[d].med / s.med);
    char key[40];
    snprintf(key, sizeof key, "alone_%s", ctx->label[d]);
    bench_json_stat(ctx, key, s, &x->alone[d * R]);
    snprintf(key, sizeof key, "libgpar_over_raw_%s", ctx->label[d]);
    bench_json_num(ctx, key, s_alone[d].med / s.med);
    if (s.med > rmx) rmx = s.med;
    if (d == 0 && ctx->pt && !x->lt && !x->graph) ctx->pt->op_raw_us = s.med / ctx->iters * 1e6;
  }
  bench_stat s = bench_stats(x->all, R);
  fprintf(ctx->out, "raw %s: %s   libgpar/raw %.3f\n", names, bench_fmt_stat(buf, sizeof buf, s), s_all.med / s.med);
  fprintf(ctx->out, "raw all / max(alone): %.3f\n", s.med / rmx);
  bench_json_stat(ctx, "all", s, x->all);
  bench_json_num(ctx, "libgpar_over_raw_all", s_all.med / s.med);
  bench_json_num(ctx, "all_over_max_alone", s.med / rmx);
  bench_json_end(ctx);
  if (ctx->pt && !x->lt && !x->graph) ctx->pt->md_raw_ratio = s.med / rmx;
}

int bench_multi_device(bench_ctx *ctx) {
  int N = ctx->ndev, R = ctx->repeat, iters = ctx->iters, n = ctx->n;
  gpar_buffer A[BENCH_MAX_DEV], B[BENCH_MAX_DEV], C[BENCH_MAX_DEV];
  int idx[BENCH_MAX_DEV];
  gpar_graph *galone[BENCH_MAX_DEV] = {0}, *gall = NULL; /* --graph */
  double *alone = calloc((size_t)N * R, sizeof *alone), *all = calloc((size_t)R, sizeof *all);
  md_raw rs[3];
  int nraw = md_raw_setup(ctx, rs);
  int rc = 1, st = GPAR_OK;
  for (int k = 0; k < nraw; k++) {
    rs[k].alone = calloc((size_t)N * R, sizeof *rs[k].alone);
    rs[k].all = calloc((size_t)R, sizeof *rs[k].all);
    rs[k].ok = rs[k].alone && rs[k].all;
  }
  memset(A, 0, sizeof A);
  memset(B, 0, sizeof B);
  memset(C, 0, sizeof C);
  if (!alone || !all) goto out;
  for (int d = 0; d < N; d++) {
    idx[d] = d;
    if ((st = make_inputs(ctx, ctx->flat[d], &A[d], &B[d])) != GPAR_OK) goto out;
    st = gpar_buffer_create(ctx->eng, ctx->flat[d], (size_t)n * n * sizeof(float), &C[d]);
    if (st != GPAR_OK) {
      bench_fail("gpar_buffer_create(C)", st);
      goto out;
    }
  }

  /* Warm-up: the whole loop on GPUs (cheap; clocks, handles, kernels), one GEMM on CPUs. */
  double t;
  bench_progress(ctx, "multi-device: warm-up");
  if ((st = md_run(ctx, idx, N, ctx->any_gpu ? iters : 1, A, B, C, NULL, &t)) != GPAR_OK) goto out;
  if (ctx->o.graph) { /* record every loop once; the first launches capture (CUDA) */
    double t0 = gpar_now(), first;
    if ((st = md_record(ctx, idx, N, iters, A, B, C, &gall)) != GPAR_OK) goto out;
    double rec = gpar_now() - t0;
    if ((st = md_run(ctx, idx, N, iters, A, B, C, gall, &first)) != GPAR_OK) goto out;
    for (int d = 0; d < N; d++) {
      if ((st = md_record(ctx, &idx[d], 1, iters, A, B, C, &galone[d])) != GPAR_OK) goto out;
      if ((st = md_run(ctx, &idx[d], 1, iters, A, B, C, galone[d], &t)) != GPAR_OK) goto out;
    }
    gpar_stats gs;
    gpar_stats_get(ctx->eng, &gs);
    fprintf(ctx->out, "graph of %d GEMMs: recording + gpar_graph_end %.2f ms; first launch (capture, instantiation, "
           "run) %.2f ms; %llu part launches as backend graphs so far\n", iters * N, rec * 1e3, first * 1e3,
           (unsigned long long)gs.graph_native_launches);
    bench_json_num(ctx, "graph_record_seconds", rec);
    bench_json_num(ctx, "graph_first_launch_seconds", first);
  }

  /* Rounds: libgpar (each device alone, then all), then each raw loop the same way, so that
   * every round of each sees the same machine state. */
  for (int r = 0; r < R; r++) {
    for (int d = 0; d < N; d++) {
      bench_progress(ctx, "multi-device: run %d/%d: %s alone", r + 1, R, ctx->label[d]);
      if ((st = md_run(ctx, &idx[d], 1, iters, A, B, C, galone[d], &alone[d * R + r])) != GPAR_OK) goto out;
    }
    bench_progress(ctx, "multi-device: run %d/%d: all %d device%s", r + 1, R, N, N == 1 ? "" : "s");
    if ((st = md_run(ctx, idx, N, iters, A, B, C, gall, &all[r])) != GPAR_OK) goto out;
    for (int k = 0; k < nraw; k++) md_raw_round(ctx, &rs[k], r);
  }
  for (int d = 0; d < N; d++) {
    char what[32];
    snprintf(what, sizeof what, "C on %s", ctx->label[d]);
    if ((st = check_c(ctx, C[d], what)) != GPAR_OK) goto out;
  }

  char buf[160], names[BENCH_MAX_DEV * 8];
  bench_stat s_all = bench_stats(all, R), s_alone[BENCH_MAX_DEV];
  double sum = 0, mx = 0;
  bench_json_begin(ctx, "alone");
  for (int d = 0; d < N; d++) {
    s_alone[d] = bench_stats(&alone[d * R], R);
    fprintf(ctx->out, "%s time: %s\n", ctx->label[d], bench_fmt_stat(buf, sizeof buf, s_alone[d]));
    bench_json_stat(ctx, ctx->label[d], s_alone[d], &alone[d * R]);
    sum += s_alone[d].med;
    if (s_alone[d].med > mx) mx = s_alone[d].med;
  }
  bench_json_end(ctx);
  join_labels(ctx, names, sizeof names);
  fprintf(ctx->out, "%s%s: %s\n", names, N == 1 ? " (all devices, single wait)" : "",
         bench_fmt_stat(buf, sizeof buf, s_all));
  bench_json_stat(ctx, "all", s_all, all);
  double speedup = sum / s_all.med, ratio = s_all.med / mx, frac = sum / (N * s_all.med);
  fprintf(ctx->out, "speedup: %.3fx = sum(alone) / all (ideal %d)\n", speedup, N);
  fprintf(ctx->out, "fraction of %d-fold: %.3f = sum(alone) / (%d x all) (ideal 1.000)\n", N, frac, N);
  fprintf(ctx->out, "all / max(alone): %.3f (ideal 1.000)\n", ratio);
  char rate[32];
  fprintf(ctx->out, "per GEMM: %.1f us alone on %s; %s per device all at once\n",
         s_alone[0].med / iters * 1e6, ctx->label[0],
         bench_fmt_rate(rate, sizeof rate, 2.0 * n * n * (double)n * iters, s_all.med));
  bench_json_num(ctx, "speedup", speedup);
  bench_json_num(ctx, "fraction_of_nfold", frac);
  bench_json_num(ctx, "all_over_max_alone", ratio);
  bench_json_num(ctx, "tflops_per_device_all", tflops(n, iters, s_all.med));
  if (ctx->pt) {
    ctx->pt->ndev = N;
    ctx->pt->op_us = s_alone[0].med / iters * 1e6;
    ctx->pt->md_ratio = ratio;
    ctx->pt->md_speedup = speedup;
  }
  for (int k = 0; k < nraw; k++) md_raw_report(ctx, &rs[k], s_alone, s_all, names);
  rc = ctx->check_failed ? 1 : 0;

out:
  if (st != GPAR_OK) rc = 1;
  gpar_wait_all(ctx->eng);
  if (gall) gpar_graph_destroy(gall);
  for (int d = 0; d < N; d++) {
    if (galone[d]) gpar_graph_destroy(galone[d]);
    release(&A[d]);
    release(&B[d]);
    release(&C[d]);
  }
  for (int k = 0; k < nraw; k++) {
    free(rs[k].alone);
    free(rs[k].all);
  }
  free(alone);
  free(all);
  return rc;
}

/* ------------------------------------------------------------------ copy-overlap */

typedef struct co_state {
  bench_ctx *ctx;
  gpar_buffer A[BENCH_MAX_DEV], B[BENCH_MAX_DEV];
  gpar_buffer *C; /* [d * iters + i] on the device */
  gpar_buffer *H; /* [d * iters + i] GPAR_HOST (pinned) */
  float **P;      /* [d] pageable: iters * n * n floats */
  gpar_graph *g[4]; /* --graph: each phase's ops recorded once, by phase */
} co_state;

enum { CO_RUN = 1, CO_COPY = 2, CO_BOTH = 3 };

/* Submit one phase's GEMMs and pinned copies, on every device, i-major. */
static int co_submit(co_state *s, int what, int iters) {
  bench_ctx *ctx = s->ctx;
  int N = ctx->ndev, n = ctx->n, st = GPAR_OK;
  size_t bytes = (size_t)n * n * sizeof(float);
  for (int i = 0; i < iters && st == GPAR_OK; i++)
    for (int d = 0; d < N && st == GPAR_OK; d++) {
      int k = d * ctx->iters + i;
      if (what & CO_RUN) {
        st = sgemm(n, s->A[d], s->B[d], s->C[k]);
        if (st != GPAR_OK) bench_fail("gpar_sgemm", st);
      }
      if (st == GPAR_OK && (what & CO_COPY) && !ctx->o.pageable) {
        st = gpar_copy(s->H[k], 0, s->C[k], 0, bytes);
        if (st != GPAR_OK) bench_fail("gpar_copy", st);
      }
    }
  return st;
}

/* --graph: record each phase once (pinned host memory only: gpar_read cannot be recorded). */
static int co_record(co_state *s) {
  if (s->ctx->o.pageable) {
    fprintf(stderr, "gpar-bench: --graph needs pinned host memory (no --pageable): gpar_read is not recorded\n");
    return GPAR_EINVAL;
  }
  for (int what = CO_RUN; what <= CO_BOTH; what++) {
    int st = gpar_graph_begin(s->ctx->eng);
    if (st != GPAR_OK) return bench_fail("gpar_graph_begin", st);
    st = co_submit(s, what, s->ctx->iters);
    int e = gpar_graph_end(s->ctx->eng, &s->g[what]);
    if (st != GPAR_OK) return st;
    if (e != GPAR_OK) return bench_fail("gpar_graph_end", e);
  }
  return GPAR_OK;
}

/* One phase: its ops (or one launch of its graph), then one wait. */
static int co_phase(co_state *s, int what, int iters, double *sec) {
  bench_ctx *ctx = s->ctx;
  int N = ctx->ndev, n = ctx->n, st = GPAR_OK;
  size_t bytes = (size_t)n * n * sizeof(float);
  double t0 = gpar_now();
  if (s->g[what] && iters == ctx->iters) {
    if ((st = gpar_graph_launch(s->g[what])) != GPAR_OK) bench_fail("gpar_graph_launch", st);
  } else {
    st = co_submit(s, what, iters);
  }
  /* Pageable: gpar_read blocks its caller until C_i is written and copied, so submit every
   * GEMM first, then read the results in order; GEMMs still queued keep running meanwhile. */
  if (ctx->o.pageable && (what & CO_COPY))
    for (int i = 0; i < iters && st == GPAR_OK; i++)
      for (int d = 0; d < N && st == GPAR_OK; d++) {
        st = gpar_read(s->C[d * ctx->iters + i], 0, s->P[d] + (size_t)i * n * n, bytes);
        if (st != GPAR_OK) bench_fail("gpar_read", st);
      }
  int w = gpar_wait_all(ctx->eng);
  *sec = gpar_now() - t0;
  if (w != GPAR_OK) bench_fail("gpar_wait_all", w);
  return st != GPAR_OK ? st : w;
}

static float *co_host(co_state *s, int d, int i) {
  bench_ctx *ctx = s->ctx;
  if (ctx->o.pageable) return s->P[d] + (size_t)i * ctx->n * ctx->n;
  return gpar_buffer_host_ptr(s->H[d * ctx->iters + i]);
}

int bench_copy_overlap(bench_ctx *ctx) {
  int N = ctx->ndev, R = ctx->repeat, iters = ctx->iters, n = ctx->n;
  size_t bytes = (size_t)n * n * sizeof(float), nb = (size_t)N * iters;
  co_state s;
  memset(&s, 0, sizeof s);
  s.ctx = ctx;
  s.C = calloc(nb, sizeof *s.C);
  s.H = calloc(nb, sizeof *s.H);
  s.P = calloc((size_t)N, sizeof *s.P);
  double *t = calloc((size_t)3 * R, sizeof *t), *rt = NULL; /* run, copy, both; the raw loop's */
  int rc = 1, st = GPAR_OK;
  if (!s.C || !s.H || !s.P || !t) goto out;

  for (int d = 0; d < N; d++) {
    if ((st = make_inputs(ctx, ctx->flat[d], &s.A[d], &s.B[d])) != GPAR_OK) goto out;
    for (int i = 0; i < iters; i++) {
      st = gpar_buffer_create(ctx->eng, ctx->flat[d], bytes, &s.C[d * iters + i]);
      if (st != GPAR_OK) {
        bench_fail("gpar_buffer_create(C)", st);
        goto out;
      }
      if (!ctx->o.pageable) {
        st = gpar_buffer_create(ctx->eng, GPAR_HOST, bytes, &s.H[d * iters + i]);
        if (st != GPAR_OK) {
          bench_fail("gpar_buffer_create(GPAR_HOST)", st);
          goto out;
        }
      }
    }
    if (ctx->o.pageable) {
      s.P[d] = malloc(bytes * iters);
      if (!s.P[d]) {
        fprintf(stderr, "gpar-bench: out of host memory (%zu bytes pageable)\n", bytes * iters);
        goto out;
      }
      memset(s.P[d], 0, bytes * iters); /* touch the pages before timing */
    }
  }
  double w;
  bench_progress(ctx, "copy-overlap: warm-up");
  if ((st = co_phase(&s, CO_BOTH, ctx->any_gpu ? iters : 1, &w)) != GPAR_OK) goto out;
  if (ctx->o.graph) { /* record the phases, then launch each once (CUDA: the capture) */
    if ((st = co_record(&s)) != GPAR_OK) goto out;
    for (int what = CO_RUN; what <= CO_BOTH; what++)
      if ((st = co_phase(&s, what, iters, &w)) != GPAR_OK) goto out;
  }

  /* The raw loop, its rounds interleaved with libgpar's (rt[p * R + r]). */
  static const char *const phase_name[3] = {"run", "copy", "run + copy"};
  static const int raw_modes[3] = {GPAR_RAW_GEMM, GPAR_RAW_COPY, GPAR_RAW_GEMM_COPY};
  const char *raw_what = NULL;
  bench_raw_fn raw = ctx->o.raw ? bench_raw_lookup(ctx, GPAR_RAW_GEMM_COPY, &raw_what) : NULL;
  int raw_ok = raw != NULL;
  if (ctx->o.raw && !raw) bench_raw_missing(ctx, GPAR_RAW_GEMM_COPY);
  if (raw && !(rt = calloc((size_t)3 * R, sizeof *rt))) goto out;
  for (int r = 0; r < R; r++) {
    for (int p = 0; p < 3; p++) {
      if (p == 2 && r == R - 1) /* clear the host copies so the check below sees this run's */
        for (int d = 0; d < N; d++)
          for (int i = 0; i < iters; i++) memset(co_host(&s, d, i), 0, bytes);
      bench_progress(ctx, "copy-overlap: run %d/%d: %s", r + 1, R, phase_name[p]);
      int what = p == 0 ? CO_RUN : p == 1 ? CO_COPY : CO_BOTH;
      double from = gpar_now() - ctx->t_init;
      if ((st = co_phase(&s, what, iters, &t[p * R + r])) != GPAR_OK) goto out;
      if (p == 2 && r == R - 1) { /* the SVG shows the last overlapped run */
        ctx->svg_from = from;
        ctx->svg_to = gpar_now() - ctx->t_init;
      }
    }
    for (int p = 0; p < 3 && raw_ok; p++) {
      gpar_raw_case c = {.n = n, .iters = iters, .mode = raw_modes[p], .tf32 = ctx->o.tf32, .devs = ctx->local,
                         .ndev = N, .graph = ctx->o.graph && raw == gpar_raw_cuda};
      bench_progress(ctx, "copy-overlap: raw run %d/%d: %s", r + 1, R, phase_name[p]);
      raw_ok = raw(&c, &rt[p * R + r]) == 0;
    }
  }
  for (int d = 0; d < N; d++)
    for (int i = 0; i < iters; i++) {
      char what[48];
      snprintf(what, sizeof what, "host copy of C_%d on %s", i, ctx->label[d]);
      if (bench_check(ctx, what, co_host(&s, d, i), (size_t)n * n, (float)n * VAL_A * VAL_B)) break;
    }

  char buf[160], names[BENCH_MAX_DEV * 8];
  join_labels(ctx, names, sizeof names);
  bench_stat run = bench_stats(&t[0], R), copy = bench_stats(&t[R], R), both = bench_stats(&t[2 * R], R);
  double chunk = copy.med / iters, ideal = (run.med > copy.med ? run.med : copy.med) + chunk;
  fprintf(ctx->out, "Run on %s: %s\n", names, bench_fmt_stat(buf, sizeof buf, run));
  fprintf(ctx->out, "Copy to CPU%s: %s\n", ctx->o.pageable ? " (pageable, gpar_read)" : "",
         bench_fmt_stat(buf, sizeof buf, copy));
  fprintf(ctx->out, "Run on %s and copy to CPU: %s\n", names, bench_fmt_stat(buf, sizeof buf, both));
  fprintf(ctx->out, "ideal = max(run, copy) + one chunk (copy / %d): %.4f sec; serial run + copy: %.4f sec\n",
         iters, ideal, run.med + copy.med);
  fprintf(ctx->out, "ratio to ideal: %.3f (1.000 = full overlap)\n", both.med / ideal);
  fprintf(ctx->out, "copy bandwidth: %.2f GB/s%s\n", (double)bytes * iters * N / copy.med * 1e-9,
         N > 1 ? " (all devices)" : "");
  bench_json_str(ctx, "host_memory", ctx->o.pageable ? "pageable" : "pinned");
  bench_json_stat(ctx, "run", run, &t[0]);
  bench_json_stat(ctx, "copy", copy, &t[R]);
  bench_json_stat(ctx, "run_and_copy", both, &t[2 * R]);
  bench_json_num(ctx, "ideal", ideal);
  bench_json_num(ctx, "ratio_to_ideal", both.med / ideal);
  bench_json_num(ctx, "copy_gbps", (double)bytes * iters * N / copy.med * 1e-9);
  if (ctx->pt) ctx->pt->co_ratio = both.med / ideal;

  if (raw) {
    const char *what = raw_what;
    static const char *const keys[3] = {"run", "copy", "run_and_copy"};
    if (!raw_ok) {
      fprintf(ctx->out, "%s: failed (see stderr)\n", what);
      bench_json_str(ctx, "raw", "failed");
    } else {
      bench_stat rs[3];
      const bench_stat *ls[3] = {&run, &copy, &both};
      fprintf(ctx->out, "%s, same loop, one thread, pinned host memory%s, rounds interleaved with libgpar's:\n", what,
              ctx->o.graph && raw == gpar_raw_cuda ? ", hand-captured into CUDA graphs" : "");
      bench_json_begin(ctx, "raw");
      bench_json_str(ctx, "what", what);
      for (int p = 0; p < 3; p++) {
        rs[p] = bench_stats(&rt[p * R], R);
        fprintf(ctx->out, "raw %s: %s   libgpar/raw %.3f\n", phase_name[p],
               bench_fmt_stat(buf, sizeof buf, rs[p]), ls[p]->med / rs[p].med);
        bench_json_stat(ctx, keys[p], rs[p], &rt[p * R]);
        char key[48];
        snprintf(key, sizeof key, "libgpar_over_raw_%s", keys[p]);
        bench_json_num(ctx, key, ls[p]->med / rs[p].med);
      }
      double rideal = (rs[0].med > rs[1].med ? rs[0].med : rs[1].med) + rs[1].med / iters;
      fprintf(ctx->out, "raw ratio to ideal: %.3f\n", rs[2].med / rideal);
      bench_json_num(ctx, "ratio_to_ideal", rs[2].med / rideal);
      bench_json_end(ctx);
      if (ctx->pt) ctx->pt->co_raw_ratio = rs[2].med / rideal;
    }
  }
  rc = ctx->check_failed ? 1 : 0;

out:
  if (st != GPAR_OK) rc = 1;
  gpar_wait_all(ctx->eng);
  for (int d = 0; d < N; d++) {
    release(&s.A[d]);
    release(&s.B[d]);
  }
  for (size_t k = 0; s.C && k < nb; k++) release(&s.C[k]);
  for (size_t k = 0; s.H && k < nb; k++) release(&s.H[k]);
  for (int k = 0; k < 4; k++)
    if (s.g[k]) gpar_graph_destroy(s.g[k]);
  for (int d = 0; s.P && d < N; d++) free(s.P[d]);
  free(s.C);
  free(s.H);
  free(s.P);
  free(t);
  free(rt);
  return rc;
}
