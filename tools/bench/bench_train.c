/* bench_train.c: `gpar-bench train`, the d2l data-parallel training step of
 * tools/train/train_mlp.c (MLP 784-HIDDEN-HIDDEN-10, batch 256, SGD lr 0.1) on the selected
 * devices: gpar_array_prepare's time (the array ops' kernels up front, its own line); the loss
 * after --iters steps (default 100) from the initial weights, eagerly and through graphs, of
 * which the first step is timed apart (waited for: what remains of the warm-up, the maps'
 * kernels, BLAS plans, pools growing); then the steady state: the time per step of both in
 * interleaved rounds (--repeat, default 5; medians with min and max); with several devices the
 * same on the first device alone, and the speedup. --size sets HIDDEN (default 1024).
 * bench/train_torch.py is the PyTorch peer (same weights and data), bench/train-gpu.sh runs both
 * and prints the ratios. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench_common.h"
#include "train/train_mlp.h"

/* steps steps of m, eagerly or through its graphs, one wait at the end: microseconds per step. */
static int time_steps(bench_ctx *ctx, mlp *m, int graph, int first, int steps, double *us) {
  int st = GPAR_OK;
  double t0 = gpar_now();
  for (int t = first; t < first + steps && st == GPAR_OK; t++) st = graph ? mlp_step_graph(m, t) : mlp_step(m, t);
  if (st == GPAR_OK) st = gpar_wait_all(ctx->eng);
  *us = (gpar_now() - t0) / steps * 1e6;
  return st;
}

/* The loss after `steps` steps from the initial weights (eager or graphs; the first step's
 * microseconds in first[]), then the rounds. */
static int one_set(bench_ctx *ctx, const mlp_shape *s, int ndev, int steps, bench_stat *res, double *loss,
                   double *first) {
  mlp *m[2] = {NULL, NULL};
  double runs[2][64], us;
  int rounds = ctx->repeat > 64 ? 64 : ctx->repeat, st = GPAR_OK;
  for (int g = 0; g < 2 && st == GPAR_OK; g++) {
    st = mlp_create(ctx->eng, s, ctx->flat, ndev, &m[g]);
    if (st == GPAR_OK && g) st = mlp_record(m[g]);
    if (st == GPAR_OK) st = time_steps(ctx, m[g], g, 0, 1, &first[g]);
    if (st == GPAR_OK && steps > 1) st = time_steps(ctx, m[g], g, 1, steps - 1, &us);
    if (st == GPAR_OK) st = mlp_loss(m[g], &loss[g]);
  }
  for (int r = 0; r < rounds && st == GPAR_OK; r++)
    for (int g = 0; g < 2 && st == GPAR_OK; g++) st = time_steps(ctx, m[g], g, steps * (r + 1), steps, &runs[g][r]);
  for (int g = 0; g < 2; g++) {
    res[g] = bench_stats(runs[g], st == GPAR_OK ? rounds : 0);
    mlp_destroy(m[g]);
  }
  if (st == GPAR_OK) {
    bench_json_begin(ctx, ndev == 1 ? "one_device" : "all_devices");
    bench_json_num(ctx, "devices", ndev);
    bench_json_num(ctx, "first_step_eager_ms", first[0] * 1e-3);
    bench_json_num(ctx, "first_step_graph_ms", first[1] * 1e-3);
    bench_json_stat(ctx, "eager_us", res[0], runs[0]);
    bench_json_stat(ctx, "graph_us", res[1], runs[1]);
    bench_json_num(ctx, "loss_eager", loss[0]);
    bench_json_num(ctx, "loss_graph", loss[1]);
    bench_json_end(ctx);
  }
  return st;
}

static void print_set(bench_ctx *ctx, int ndev, int steps, const bench_stat *res, const double *loss,
                      const double *first) {
  static const char *const mode[2] = {"eager", "graph"};
  for (int g = 0; g < 2; g++)
    fprintf(ctx->out, "%d device%s, %s: first step %.1f ms; steady state %.1f us per step (median of %d rounds of %d, "
                      "min %.1f, max %.1f); loss after %d steps %.7f\n", ndev, ndev == 1 ? "" : "s", mode[g],
            first[g] * 1e-3, res[g].med, res[g].count, steps, res[g].min, res[g].max, steps, loss[g]);
}

/* gpar_array_prepare on every device of the run, timed: its own line and JSON entry. */
static int prepare(bench_ctx *ctx) {
  double t0 = gpar_now();
  int st = GPAR_OK;
  for (int i = 0; i < ctx->ndev && st == GPAR_OK; i++) st = gpar_array_prepare(ctx->eng, ctx->flat[i]);
  double ms = (gpar_now() - t0) * 1e3;
  if (st == GPAR_OK) fprintf(ctx->out, "prepare: %.1f ms (gpar_array_prepare on %d device%s)\n", ms, ctx->ndev,
                             ctx->ndev == 1 ? "" : "s");
  bench_json_num(ctx, "prepare_ms", ms);
  return st;
}

int bench_train(bench_ctx *ctx) {
  mlp_shape s = {784, ctx->o.size ? ctx->o.size : 1024, 10, 256, 0.1f, 1, 0};
  int steps = ctx->o.iters ? ctx->o.iters : 100;
  s.batches = steps < 100 ? steps : 100;
  if (!ctx->o.repeat) ctx->repeat = 5;
  if (s.batch < ctx->ndev) return fprintf(stderr, "gpar-bench train: more devices than samples\n"), 1;
  fprintf(ctx->out, "MLP %d-%d-%d-%d, batch %d split across %d device%s, SGD lr %g, %d minibatches\n", s.in, s.hidden,
          s.hidden, s.out, s.batch, ctx->ndev, ctx->ndev == 1 ? "" : "s", (double)s.lr, s.batches);
  bench_stat all[2], one[2];
  double loss[2], loss1[2], first[2], first1[2];
  int st = prepare(ctx);
  if (st == GPAR_OK) st = one_set(ctx, &s, ctx->ndev, steps, all, loss, first);
  if (st == GPAR_OK) print_set(ctx, ctx->ndev, steps, all, loss, first);
  if (st == GPAR_OK && ctx->ndev > 1 && (st = one_set(ctx, &s, 1, steps, one, loss1, first1)) == GPAR_OK) {
    print_set(ctx, 1, steps, one, loss1, first1);
    fprintf(ctx->out, "%d devices vs 1: eager %.3f x, graph %.3f x\n", ctx->ndev, one[0].med / all[0].med,
            one[1].med / all[1].med);
    bench_json_num(ctx, "speedup_eager", one[0].med / all[0].med);
    bench_json_num(ctx, "speedup_graph", one[1].med / all[1].med);
  }
  if (st != GPAR_OK) return bench_fail("train", st), 1;
  if (!(fabs(loss[0] - loss[1]) <= 1e-3 * fabs(loss[0]))) {
    fprintf(stderr, "gpar-bench train: eager and graph losses differ: %.7f, %.7f\n", loss[0], loss[1]);
    ctx->check_failed = 1;
  }
  return 0;
}
