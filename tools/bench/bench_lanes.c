/* bench_lanes.c: gpar-bench lanes: eager independent small ops at several compute-lane counts
 * (gpar_config.lanes) side by side in one process, next to the hand-written eager limit (T
 * threads, T streams or queues, T BLAS handles; tools/raw/raw_lanes*.c) and to the graph floor:
 * SGEMMs N^3 and (N/4)^3 each into its own slot of a 64-buffer ring, tiny kernel launches into
 * the ring, a chain of dependent N^3 GEMMs, and the first and third recorded as a graph. Each
 * round opens one engine per lane count in turn (open and first step timed apart), then runs the
 * hand loops with as many threads; --repeat rounds, medians with min and max. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "raw/raw_lanes.h"

#define LB_RING 64
#define LB_MAXL 8
#define LB_GRAPH_OPS 1000 /* at most this many ops per recorded graph, launched iters / that times */

enum { LB_BIG, LB_SMALL, LB_TINY, LB_CHAIN, LB_GBIG, LB_GTINY, LB_NCASES };
static const char *const lb_key[LB_NCASES] = {"gemm_indep", "gemm_small_indep", "tiny_indep",
                                              "gemm_chain", "gemm_indep_graph", "tiny_indep_graph"};
/* The hand loop of each case (-1: none). */
static const int lb_raw_what[LB_NCASES] = {GPAR_RAW_L_GEMM, GPAR_RAW_L_GEMM, GPAR_RAW_L_TINY, GPAR_RAW_L_CHAIN, -1, -1};

typedef int (*lb_raw_fn)(const gpar_raw_lanes_case *c, double *seconds, const char **what);

/* The run: its lane counts, sizes, and per lane count and case the microseconds per op of each
 * round (libgpar, the hand loop with as many threads), the engine's open and first step (ms). */
typedef struct lb {
  bench_ctx *ctx;
  int nl, lanes[LB_MAXL], got[LB_MAXL], apply;
  int n, small;
  long iters[LB_NCASES], per[LB_NCASES]; /* ops per round; graphs: ops per recorded graph */
  lb_raw_fn raw;
  int raw_ok[LB_NCASES];
  const char *raw_what[LB_NCASES];
  double *t[LB_MAXL][LB_NCASES], *rt[LB_MAXL][LB_NCASES], *open_ms[LB_MAXL], *first_ms[LB_MAXL];
} lb;

/* One engine under test and what the cases use: a = 1 (the tiny kernel's x too), b = 0.5, ainv =
 * 1 / N, the ring of outputs, the tiny kernel, the two graphs. */
typedef struct lb_engine {
  gpar_engine *eng;
  int dev;
  gpar_buffer a, b, ainv, ring[LB_RING];
  gpar_kernel inc;
  gpar_graph *graph[2];
} lb_engine;

int bench_parse_lanes(const char *spec, int *lanes, int max) {
  int n = 0, bad = 0;
  char list[128], *save = NULL;
  snprintf(list, sizeof list, "%s", spec);
  for (char *tok = strtok_r(list, ",", &save); tok && !bad; tok = strtok_r(NULL, ",", &save)) {
    long v = bench_parse_int(tok, 1, LB_MAXL);
    for (int i = 0; i < n; i++) bad |= lanes[i] == v;
    bad |= v < 0 || n >= max;
    if (!bad) lanes[n++] = (int)v;
  }
  if (bad || n == 0 || strlen(spec) >= sizeof list) {
    fprintf(stderr, "gpar-bench: --lanes %s: want up to %d distinct lane counts in 1..%d, comma-separated\n", spec,
            max, LB_MAXL);
    return -1;
  }
  return n;
}

/* ---------------------------------------------------------------- libgpar's loops */

/* Op i of case which. */
static int lb_op(lb *b, lb_engine *e, int which, long i) {
  const int n = b->n, m = b->small;
  gpar_grid g = {{(uint32_t)((n + 255) / 256), 1, 1}, {256, 1, 1}};
  gpar_arg a[3] = {gpar_arg_u64((uint64_t)n), gpar_arg_buffer(e->a, 0), gpar_arg_buffer(e->ring[i % LB_RING], 0)};
  switch (which) {
  case LB_BIG:
  case LB_GBIG:
    return gpar_sgemm(GPAR_NO_TRANS, GPAR_NO_TRANS, n, n, n, 1.0f, e->a, 0, n, e->b, 0, n, 0.0f, e->ring[i % LB_RING],
                      0, n);
  case LB_SMALL:
    return gpar_sgemm(GPAR_NO_TRANS, GPAR_NO_TRANS, m, m, m, 1.0f, e->a, 0, m, e->b, 0, m, 0.0f, e->ring[i % LB_RING],
                      0, m);
  case LB_CHAIN:
    return gpar_sgemm(GPAR_NO_TRANS, GPAR_NO_TRANS, n, n, n, 1.0f, e->ainv, 0, n, e->ring[i & 1], 0, n, 0.0f,
                      e->ring[(i + 1) & 1], 0, n);
  default: return gpar_kernel_launch(e->inc, e->dev, &g, a, 3);
  }
}

/* The slot op i of case which writes last (graphs: the recorded ops, launched again and again). */
static long lb_last(lb *b, int which, long iters) {
  return which == LB_CHAIN ? iters & 1 : ((which == LB_GBIG || which == LB_GTINY ? b->per[which] : iters) - 1) % LB_RING;
}

/* The result of case which after iters ops, zeroed before it: the first and last element of slot
 * 0 and of the slot written last. */
static int lb_check(lb *b, lb_engine *e, int which, long iters) {
  const int n = b->n, m = b->small;
  size_t count = which == LB_TINY || which == LB_GTINY ? (size_t)n : which == LB_SMALL ? (size_t)m * m : (size_t)n * n;
  float want = which == LB_TINY || which == LB_GTINY ? 2.0f : which == LB_SMALL ? 0.5f * m : which == LB_CHAIN ? 1.0f
                                                                                                             : 0.5f * n;
  for (int k = 0; k < 4; k++) {
    gpar_buffer c = e->ring[k < 2 && which != LB_CHAIN ? 0 : lb_last(b, which, iters)];
    float v = 0;
    int st = gpar_read(c, k & 1 ? (count - 1) * 4 : 0, &v, 4);
    if (st) return bench_fail("gpar_read", st);
    if (!(v >= want * 0.999f && v <= want * 1.001f)) {
      fprintf(stderr, "gpar-bench lanes: %s computed %g, want %g\n", lb_key[which], (double)v, (double)want);
      b->ctx->check_failed = 1;
      break;
    }
  }
  return GPAR_OK;
}

/* Case which, iters ops (graphs: whole launches of LB_GRAPH_OPS ops), one wait: *sec. */
static int lb_case(lb *b, lb_engine *e, int which, long iters, double *sec) {
  const size_t bytes = (size_t)b->n * b->n * 4;
  int st = GPAR_OK;
  for (long k = 0; k < 3 && !st; k++) st = gpar_fill(e->ring[k < 2 ? k : lb_last(b, which, iters)], 0, bytes, 0);
  if (!st && which == LB_CHAIN) st = bench_fill_matrix(e->ring[0], b->n, 1.0f);
  if (!st) st = gpar_wait_all(e->eng);
  gpar_graph *g = which == LB_GBIG ? e->graph[0] : which == LB_GTINY ? e->graph[1] : NULL;
  double t0 = gpar_now();
  if (g)
    for (long r = 0; r < iters / b->per[which] && !st; r++) st = gpar_graph_launch(g);
  else
    for (long i = 0; i < iters && !st; i++) st = lb_op(b, e, which, i);
  int w = gpar_wait_all(e->eng);
  *sec = gpar_now() - t0;
  if (st || w) return bench_fail(lb_key[which], st ? st : w);
  return lb_check(b, e, which, iters);
}

/* ---------------------------------------------------------------- engines */

/* The run's device in a new engine: the same backend and backend-local index. */
static int lb_device(bench_ctx *ctx, gpar_engine *eng) {
  int nd = gpar_device_count(eng);
  for (int d = 0; d < nd; d++) {
    gpar_device_props p;
    if (!gpar_device_info(eng, d, &p) && p.backend_id == ctx->backend_id && p.backend_index == ctx->local[0]) return d;
  }
  return GPAR_ENODEV;
}

/* Buffers, the tiny kernel and the two graphs of e. */
static int lb_fill(lb *b, lb_engine *e) {
  const size_t bytes = (size_t)b->n * b->n * 4;
  int st = GPAR_OK;
  gpar_buffer *in[3] = {&e->a, &e->b, &e->ainv};
  const float val[3] = {1.0f, 0.5f, 1.0f / (float)b->n};
  for (int k = 0; k < 3 && !st; k++) {
    st = gpar_buffer_create(e->eng, e->dev, bytes, in[k]);
    if (!st) st = bench_fill_matrix(*in[k], b->n, val[k]);
  }
  for (int k = 0; k < LB_RING && !st; k++) st = gpar_buffer_create(e->eng, e->dev, bytes, &e->ring[k]);
  if (!st) st = gpar_kernel_create(e->eng, "inc", "u64 n, in f32 *x, out f32 *y",
                                   "gpar_u64 i = GPAR_GLOBAL_ID(0); if (i < n) y[i] = x[i] + 1.0f;", NULL, &e->inc);
  if (!st) st = gpar_kernel_build(e->inc, e->dev);
  for (int k = 0; k < 2 && !st; k++) {
    st = gpar_graph_begin(e->eng);
    for (long i = 0; i < b->per[k ? LB_GTINY : LB_GBIG] && !st; i++) st = lb_op(b, e, k ? LB_GTINY : LB_GBIG, i);
    int end = gpar_graph_end(e->eng, &e->graph[k]);
    if (!st) st = end;
  }
  if (!st) st = gpar_wait_all(e->eng);
  return st ? bench_fail("lanes: setup", st) : GPAR_OK;
}

static void lb_close(lb_engine *e) {
  if (!e->eng) return;
  gpar_wait_all(e->eng);
  gpar_shutdown(e->eng); /* frees the buffers, the kernel and the graphs */
  memset(e, 0, sizeof *e);
}

/* Round r at lane count j: open (timed), one op of each eager case (the first step, timed), then
 * every case timed. */
static int lb_round(lb *b, int j, int r) {
  bench_ctx *ctx = b->ctx;
  lb_engine e;
  gpar_config cfg, got;
  memset(&e, 0, sizeof e);
  bench_config(ctx, &cfg, NULL);
  cfg.lanes = b->lanes[j];
  double t0 = gpar_now(), sec;
  int st = gpar_init(&e.eng, &cfg);
  if (st) return bench_fail("gpar_init", st);
  if (gpar_config_get(e.eng, &got) == GPAR_OK) b->got[j] = got.lanes;
  if ((e.dev = lb_device(ctx, e.eng)) < 0) st = bench_fail("lanes: the device in a new engine", e.dev);
  if (!st) st = lb_fill(b, &e);
  b->open_ms[j][r] = (gpar_now() - t0) * 1e3;
  t0 = gpar_now();
  for (int c = LB_BIG; c <= LB_CHAIN && !st; c++) st = lb_op(b, &e, c, 0);
  if (!st) st = gpar_wait_all(e.eng);
  b->first_ms[j][r] = (gpar_now() - t0) * 1e3;
  for (int c = 0; c < LB_NCASES && !st; c++) {
    bench_progress(ctx, "lanes: round %d/%d, %d lane%s, %s", r + 1, ctx->repeat, b->lanes[j], b->lanes[j] > 1 ? "s" : "",
                   lb_key[c]);
    st = lb_case(b, &e, c, b->iters[c], &sec);
    b->t[j][c][r] = sec / (double)b->iters[c] * 1e6;
  }
  lb_close(&e);
  return st;
}

/* The hand loops of round r with as many threads as lane count j (the chain: one stream, once). */
static void lb_raw_round(lb *b, int j, int r) {
  for (int c = 0; c < LB_NCASES && b->raw; c++) {
    if (lb_raw_what[c] < 0 || !b->raw_ok[c] || (c == LB_CHAIN && j > 0)) continue;
    gpar_raw_lanes_case rc = {.what = lb_raw_what[c], .dev = b->ctx->local[0], .threads = b->lanes[j],
                              .n = c == LB_SMALL ? b->small : b->n, .iters = b->iters[c], .ring = LB_RING};
    double sec = 0;
    bench_progress(b->ctx, "lanes: round %d/%d, hand loop, %d thread%s, %s", r + 1, b->ctx->repeat, b->lanes[j],
                   b->lanes[j] > 1 ? "s" : "", lb_key[c]);
    b->raw_ok[c] = b->raw(&rc, &sec, &b->raw_what[c]) == 0;
    b->rt[j][c][r] = sec / (double)b->iters[c] * 1e6;
  }
}

/* ---------------------------------------------------------------- the report */

static const char *lb_label(lb *b, int c, char *buf, size_t len) {
  int s = c == LB_SMALL ? b->small : b->n;
  if (c == LB_TINY || c == LB_GTINY)
    snprintf(buf, len, "tiny y = x + 1 (%d) x %ld%s", s, b->iters[c], c == LB_GTINY ? ", graph" : "");
  else
    snprintf(buf, len, "sgemm %d^3 x %ld%s", s, b->iters[c],
             c == LB_CHAIN ? ", chain" : c == LB_GBIG ? ", graph" : "");
  return buf;
}

static void lb_report_case(lb *b, int c) {
  bench_ctx *ctx = b->ctx;
  const int R = ctx->repeat;
  char label[64];
  double base = bench_stats(b->t[0][c], R).med;
  bench_json_elem_begin(ctx);
  bench_json_str(ctx, "case", lb_key[c]);
  bench_json_str(ctx, "what", lb_label(b, c, label, sizeof label));
  bench_json_num(ctx, "ops", (double)b->iters[c]);
  bench_json_array_begin(ctx, "by_lanes");
  for (int j = 0; j < b->nl; j++) {
    bench_stat s = bench_stats(b->t[j][c], R);
    int rj = c == LB_CHAIN ? 0 : j, has_raw = b->raw && lb_raw_what[c] >= 0 && b->raw_ok[c];
    bench_stat rs = bench_stats(b->rt[rj][c], R);
    fprintf(ctx->out, "  %-34s lanes %d  %9.3f us (%.3f..%.3f)  x%.3f of lanes=1", label, b->lanes[j], s.med, s.min,
            s.max, s.med / base);
    bench_json_elem_begin(ctx);
    bench_json_num(ctx, "lanes", b->lanes[j]);
    bench_json_stat(ctx, "libgpar_us", s, b->t[j][c]);
    bench_json_num(ctx, "over_lanes1", s.med / base);
    if (has_raw) {
      fprintf(ctx->out, "   hand T=%d %9.3f us (%.3f..%.3f)  ratio %.3f", c == LB_CHAIN ? 1 : b->lanes[j], rs.med,
              rs.min, rs.max, s.med / rs.med);
      bench_json_num(ctx, "raw_threads", c == LB_CHAIN ? 1 : b->lanes[j]);
      bench_json_stat(ctx, "raw_us", rs, b->rt[rj][c]);
      bench_json_num(ctx, "over_raw", s.med / rs.med);
    }
    fputc('\n', ctx->out);
    bench_json_end(ctx);
  }
  bench_json_array_end(ctx);
  bench_json_end(ctx);
}

static void lb_report(lb *b) {
  bench_ctx *ctx = b->ctx;
  const int R = ctx->repeat;
  fprintf(ctx->out, "us per op to completion (medians of %d rounds, min..max), x of lanes=1, and the hand loop with "
                    "T = lanes threads, streams and handles (ratio: libgpar / hand):\n", R);
  bench_json_array_begin(ctx, "cases");
  for (int c = 0; c < LB_NCASES; c++) lb_report_case(b, c);
  bench_json_array_end(ctx);
  for (int c = 0; c < LB_NCASES; c++)
    if (lb_raw_what[c] >= 0)
      fprintf(ctx->out, "hand %s: %s\n", lb_key[c],
              !b->raw ? b->ctx->backend_id == GPAR_BACKEND_HOST ? "none on the host backend" : "none built for this backend" : b->raw_ok[c] ? b->raw_what[c] : "failed (see stderr)");
  fprintf(ctx->out, "engines (apart from the timings above), ms:\n");
  bench_json_array_begin(ctx, "engines");
  for (int j = 0; j < b->nl; j++) {
    bench_stat o = bench_stats(b->open_ms[j], R), f = bench_stats(b->first_ms[j], R);
    fprintf(ctx->out, "  lanes %d (engine: %d)  open + setup %.1f (%.1f..%.1f)  first step %.3f (%.3f..%.3f)\n",
            b->lanes[j], b->got[j], o.med, o.min, o.max, f.med, f.min, f.max);
    bench_json_elem_begin(ctx);
    bench_json_num(ctx, "lanes", b->lanes[j]);
    bench_json_num(ctx, "engine_lanes", b->got[j]);
    bench_json_stat(ctx, "open_ms", o, b->open_ms[j]);
    bench_json_stat(ctx, "first_step_ms", f, b->first_ms[j]);
    bench_json_end(ctx);
  }
  bench_json_array_end(ctx);
}

/* ---------------------------------------------------------------- the subcommand */

void bench_lanes_defaults(bench_ctx *ctx) {
  ctx->n = ctx->o.size ? ctx->o.size : ctx->any_gpu ? 256 : 128;
  ctx->iters = ctx->o.iters ? ctx->o.iters : ctx->any_gpu ? 2000 : 100;
  ctx->repeat = ctx->o.repeat ? ctx->o.repeat : 5;
}

static int lb_alloc(lb *b) {
  int R = b->ctx->repeat, ok = 1;
  for (int j = 0; j < b->nl; j++) {
    for (int c = 0; c < LB_NCASES; c++) {
      ok &= (b->t[j][c] = calloc((size_t)R, sizeof(double))) != NULL;
      ok &= (b->rt[j][c] = calloc((size_t)R, sizeof(double))) != NULL;
    }
    ok &= (b->open_ms[j] = calloc((size_t)R, sizeof(double))) != NULL;
    ok &= (b->first_ms[j] = calloc((size_t)R, sizeof(double))) != NULL;
  }
  return ok;
}

static void lb_free(lb *b) {
  for (int j = 0; j < b->nl; j++) {
    for (int c = 0; c < LB_NCASES; c++) free(b->t[j][c]), free(b->rt[j][c]);
    free(b->open_ms[j]), free(b->first_ms[j]);
  }
}

int bench_lanes(bench_ctx *ctx) {
  lb b = {.ctx = ctx, .n = ctx->n, .small = ctx->n / 4 > 0 ? ctx->n / 4 : 1};
  b.nl = bench_parse_lanes(ctx->o.lanes ? ctx->o.lanes : "1,2,4", b.lanes, LB_MAXL);
  if (b.nl < 0) return 2;
  const long k = ctx->iters;
  const long iters[LB_NCASES] = {k, 5 * k, 5 * k, k, k, 5 * k};
  for (int c = 0; c < LB_NCASES; c++) { /* a graph's launches cover whole graphs */
    b.per[c] = iters[c] < LB_GRAPH_OPS ? iters[c] : LB_GRAPH_OPS;
    b.iters[c] = c == LB_GBIG || c == LB_GTINY ? iters[c] / b.per[c] * b.per[c] : iters[c];
  }
  b.raw = ctx->backend_id == GPAR_BACKEND_CUDA ? gpar_raw_lanes_cuda
          : ctx->backend_id == GPAR_BACKEND_OPENCL ? gpar_raw_lanes_opencl : NULL;
  for (int c = 0; c < LB_NCASES; c++) b.raw_ok[c] = 1;
  b.apply = ctx->backend_id != GPAR_BACKEND_HOST;
  fprintf(ctx->out, "lanes on %s (%s): N = %d (small GEMM %d), a ring of %d outputs, lane counts", ctx->label[0],
          ctx->info[0].name, b.n, b.small, LB_RING);
  for (int j = 0; j < b.nl; j++) fprintf(ctx->out, "%s%d", j ? "," : " ", b.lanes[j]);
  fprintf(ctx->out, "; one engine per lane count per round\n");
  if (!b.apply)
    fprintf(ctx->out, "note: backend host: gpar_config.lanes applies to GPU backends only; every lane count runs the "
                      "same CPU path here\n");
  bench_json_num(ctx, "small", b.small);
  bench_json_num(ctx, "ring", LB_RING);
  bench_json_str(ctx, "lanes_apply", b.apply ? "yes" : "no (host backend: lanes affect GPU backends only)");
  int rc = lb_alloc(&b) ? 0 : 1;
  if (rc) fprintf(stderr, "gpar-bench: lanes: out of memory\n");
  for (int r = 0; r < ctx->repeat && !rc; r++) {
    for (int j = 0; j < b.nl && !rc; j++)
      if (lb_round(&b, j, r) != GPAR_OK) rc = 1;
    for (int j = 0; j < b.nl && !rc; j++) lb_raw_round(&b, j, r);
  }
  if (!rc) lb_report(&b);
  lb_free(&b);
  return rc ? rc : ctx->check_failed ? 1 : 0;
}
