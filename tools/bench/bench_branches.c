/* bench_branches.c: gpar-bench branches: parallelism inside one GPU that the engine finds by
 * itself. A model with independent branches: K branches of L layers, each layer an n^3 SGEMM into
 * the branch's next activation and then ReLU in place (gpar_unary), issued layer by layer across
 * the branches from one thread, as a user writes it. Timed, in rounds that run every case in
 * turn (--repeat, default 5; medians with min and max), per layer (K GEMMs and K ReLUs): eagerly
 * at the backend's default compute lanes and at one lane (an engine each), and as a recorded
 * graph launched (default lanes); next to the hand-written CUDA limit (tools/raw/
 * raw_branches_cuda.c): one thread issuing to K streams, and the same captured once as a CUDA
 * graph on the K streams. Per case, the engine's lane counters per layer: cross-lane waits,
 * events recorded, hand-offs between issuing threads, ops moved off the first lane. */
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "raw/raw_branches.h"

#define BB_MAXK 16
#define BB_MAXL 64
enum { BB_EAGER, BB_EAGER1, BB_GRAPH, BB_HAND, BB_HAND_GRAPH, BB_NCASES };
static const char *const bb_key[BB_NCASES] = {"eager", "eager_1lane", "graph", "hand_streams", "hand_graph"};
static const char *const bb_what[BB_NCASES] = {"libgpar eager, default lanes", "libgpar eager, 1 lane",
                                               "libgpar graph", "hand CUDA, 1 thread, K streams",
                                               "hand CUDA graph, K streams"};

/* One engine and its buffers. */
typedef struct bb_engine {
  gpar_engine *eng;
  int dev, lanes;
  gpar_buffer act[BB_MAXK][BB_MAXL + 1], w[BB_MAXK][BB_MAXL];
  gpar_graph *graph;
} bb_engine;

typedef struct bb {
  bench_ctx *ctx;
  int k, l, n, steps;
  bb_engine e[2];           /* default lanes, one lane */
  double t[BB_NCASES][64];  /* us per layer, per round */
  double cnt[3][4];         /* per layer, eager, eager at one lane, graph: waits, events, hand-offs, moves */
  int hand;                 /* the hand cases run */
} bb;

/* The K x L layers, layer by layer across the branches. */
static int bb_step(bb *b, bb_engine *e) {
  int st = GPAR_OK, n = b->n;
  for (int l = 0; l < b->l && !st; l++)
    for (int k = 0; k < b->k && !st; k++) {
      st = gpar_sgemm(GPAR_NO_TRANS, GPAR_NO_TRANS, n, n, n, 1.0f, e->w[k][l], 0, n, e->act[k][l], 0, n, 0.0f,
                      e->act[k][l + 1], 0, n);
      if (!st) st = gpar_unary(GPAR_UN_RELU, GPAR_FLOAT, (size_t)n * n, e->act[k][l + 1], 0, e->act[k][l + 1], 0);
    }
  return st;
}

static int bb_open(bb *b, bb_engine *e, int lanes) {
  bench_ctx *ctx = b->ctx;
  gpar_config cfg;
  bench_config(ctx, &cfg, NULL);
  cfg.lanes = lanes;
  int st = gpar_init(&e->eng, &cfg);
  if (st) return bench_fail("gpar_init", st);
  int nd = gpar_device_count(e->eng);
  e->dev = GPAR_ENODEV;
  for (int d = 0; d < nd; d++) {
    gpar_device_props p;
    if (!gpar_device_info(e->eng, d, &p) && p.backend_id == ctx->backend_id && p.backend_index == ctx->local[0])
      e->dev = d, e->lanes = p.compute_lanes;
  }
  if (e->dev < 0) return bench_fail("branches: the device in a new engine", GPAR_ENODEV);
  const size_t bytes = (size_t)b->n * b->n * sizeof(float);
  for (int k = 0; k < b->k && !st; k++)
    for (int l = 0; l <= b->l && !st; l++) {
      st = gpar_buffer_create(e->eng, e->dev, bytes, &e->act[k][l]);
      if (!st) st = gpar_fill(e->act[k][l], 0, bytes, 0);
      if (!st && l < b->l) st = gpar_buffer_create(e->eng, e->dev, bytes, &e->w[k][l]);
      if (!st && l < b->l) st = gpar_fill(e->w[k][l], 0, bytes, 0);
    }
  if (!st) st = gpar_array_prepare(e->eng, e->dev); /* the ReLU's kernel built up front */
  if (!st) st = bb_step(b, e); /* warm-up: plans, kernels */
  if (!st && !lanes) {
    st = gpar_graph_begin(e->eng);
    if (!st) st = bb_step(b, e);
    int end = gpar_graph_end(e->eng, &e->graph);
    if (!st) st = end;
    if (!st) st = gpar_graph_launch(e->graph); /* the capture, untimed */
  }
  if (!st) st = gpar_wait_all(e->eng);
  return st ? bench_fail("branches: setup", st) : GPAR_OK;
}

/* Case c once: b->steps steps; us per layer into t, the counters per layer into cnt. */
static int bb_case(bb *b, int c, double *t, double *cnt) {
  bb_engine *e = &b->e[c == BB_EAGER1];
  gpar_stats s0, s1;
  gpar_stats_get(e->eng, &s0);
  double t0 = gpar_now();
  int st = GPAR_OK;
  for (int i = 0; i < b->steps && !st; i++) st = c == BB_GRAPH ? gpar_graph_launch(e->graph) : bb_step(b, e);
  if (!st) st = gpar_wait_all(e->eng);
  double layers = (double)b->steps * b->l;
  *t = (gpar_now() - t0) / layers * 1e6;
  gpar_stats_get(e->eng, &s1);
  if (cnt) {
    cnt[0] = (double)(s1.lane_waits - s0.lane_waits) / layers;
    cnt[1] = (double)(s1.lane_events - s0.lane_events) / layers;
    cnt[2] = (double)(s1.lane_handoffs - s0.lane_handoffs) / layers;
    cnt[3] = (double)(s1.lane_moves - s0.lane_moves) / layers;
  }
  return st ? bench_fail(bb_key[c], st) : GPAR_OK;
}

static void bb_hand(bb *b, int c, double *t) {
  gpar_raw_branches_case rc = {.what = c == BB_HAND ? GPAR_RAW_B_STREAMS : GPAR_RAW_B_GRAPH, .dev = b->ctx->local[0],
                               .k = b->k, .l = b->l, .n = b->n, .steps = b->steps};
  double sec = 0;
  if (!b->hand) return;
  if (gpar_raw_branches_cuda(&rc, &sec)) {
    b->hand = 0;
    return;
  }
  *t = sec / ((double)b->steps * b->l) * 1e6;
}

static void bb_report(bb *b) {
  bench_ctx *ctx = b->ctx;
  const int R = ctx->repeat;
  static const char *const ckey[4] = {"waits", "events", "handoffs", "moves"};
  bench_json_array_begin(ctx, "cases");
  for (int c = 0; c < BB_NCASES; c++) {
    if (c >= BB_HAND && !b->hand) continue;
    bench_stat s = bench_stats(b->t[c], R), g = bench_stats(b->t[BB_HAND_GRAPH], R), h = bench_stats(b->t[BB_HAND], R);
    fprintf(ctx->out, "  %-32s %9.3f us per layer (%.3f..%.3f)", bb_what[c], s.med, s.min, s.max);
    bench_json_elem_begin(ctx);
    bench_json_str(ctx, "case", bb_key[c]);
    bench_json_stat(ctx, "us_per_layer", s, b->t[c]);
    if (b->hand && c < BB_HAND) {
      fprintf(ctx->out, "   x%.3f of hand streams, x%.3f of hand graph", s.med / h.med, s.med / g.med);
      bench_json_num(ctx, "over_hand_streams", s.med / h.med);
      bench_json_num(ctx, "over_hand_graph", s.med / g.med);
    }
    fprintf(ctx->out, "\n");
    if (c < BB_HAND) {
      fprintf(ctx->out, "  %-32s per layer: %.2f cross-lane waits, %.2f events, %.2f hand-offs, %.2f ops off lane 0\n",
              "", b->cnt[c][0], b->cnt[c][1], b->cnt[c][2], b->cnt[c][3]);
      for (int i = 0; i < 4; i++) bench_json_num(ctx, ckey[i], b->cnt[c][i]);
    }
    bench_json_end(ctx);
  }
  bench_json_array_end(ctx);
}

int bench_branches(bench_ctx *ctx) {
  bb *b = calloc(1, sizeof *b);
  if (!b) return bench_fail("branches: out of memory", GPAR_ENOMEM), 1;
  b->ctx = ctx;
  b->k = ctx->o.branches ? ctx->o.branches : 4;
  b->l = ctx->o.layers ? ctx->o.layers : 8;
  b->n = ctx->n;
  b->steps = ctx->iters;
  b->hand = ctx->backend_id == GPAR_BACKEND_CUDA && gpar_raw_branches_cuda != NULL;
  int rc = 0;
  if (b->k < 1 || b->k > BB_MAXK || b->l < 1 || b->l > BB_MAXL || ctx->repeat > 64) {
    fprintf(stderr, "gpar-bench branches: --branches 1..%d, --layers 1..%d, --repeat <= 64\n", BB_MAXK, BB_MAXL);
    free(b);
    return 2;
  }
  if (bb_open(b, &b->e[0], 0) || bb_open(b, &b->e[1], 1)) rc = 1;
  fprintf(ctx->out, "branches on %s (%s): K = %d branches x L = %d layers of SGEMM %d^3 + ReLU, %d steps per round; "
          "compute lanes: default %d\n", ctx->label[0], ctx->info[0].name, b->k, b->l, b->n, b->steps, b->e[0].lanes);
  bench_json_num(ctx, "branches", b->k);
  bench_json_num(ctx, "layers", b->l);
  bench_json_num(ctx, "lanes_default", b->e[0].lanes);
  for (int r = 0; r < ctx->repeat && !rc; r++)
    for (int c = 0; c < BB_NCASES && !rc; c++) {
      bench_progress(ctx, "branches: round %d/%d, %s", r + 1, ctx->repeat, bb_key[c]);
      if (c >= BB_HAND)
        bb_hand(b, c, &b->t[c][r]);
      else if (bb_case(b, c, &b->t[c][r], r == 0 ? b->cnt[c] : NULL))
        rc = 1;
    }
  if (!rc) bb_report(b);
  for (int i = 0; i < 2; i++)
    if (b->e[i].eng) gpar_shutdown(b->e[i].eng); /* frees the buffers and the graph */
  if (gpar_raw_branches_cuda_done) gpar_raw_branches_cuda_done();
  free(b);
  return rc;
}

void bench_branches_defaults(bench_ctx *ctx) {
  ctx->n = ctx->o.size ? ctx->o.size : ctx->any_gpu ? 256 : 64;
  ctx->iters = ctx->o.iters ? ctx->o.iters : ctx->any_gpu ? 200 : 10;
  ctx->repeat = ctx->o.repeat ? ctx->o.repeat : 5;
}
