/* bench_comm.c: gpar-bench's communication benchmarks (collectives, data-parallel steps).
 * allreduce: gpar_allreduce (float sum, in place) over the selected devices from 8 B to the
 *   largest size, time per call, algbw and busbw as nccl-tests defines them (algbw = bytes /
 *   time, busbw = algbw * 2(n-1)/n); --raw runs the same ncclAllReduce loop directly (one thread,
 *   group calls, as nccl-tests does) next to it.
 * data-parallel: a minimal data-parallel training step: on each device L GEMM layers forward,
 *   then backward, each layer's gradient allreduced as soon as it exists while the remaining
 *   backward GEMMs run, then the update. Timed on 1 device, on all selected devices with the
 *   allreduces, and on all without them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "raw/raw_nccl.h"

static int fail_free(const char *what, int st) { return bench_fail(what, st), 1; }

/* ---------------------------------------------------------------- allreduce */

/* Time iters in-place float-sum allreduces of count elements: seconds per call. */
static int time_allreduce(gpar_comm comm, const gpar_buffer *b, int n, size_t count, int iters, double *sec) {
  int st = GPAR_OK;
  for (int i = 0; i < 3 && st == GPAR_OK; i++) st = gpar_allreduce(comm, b, NULL, count, GPAR_FLOAT, GPAR_SUM);
  for (int d = 0; d < n && st == GPAR_OK; d++) st = gpar_wait(b[d]);
  double t0 = gpar_now();
  for (int i = 0; i < iters && st == GPAR_OK; i++) st = gpar_allreduce(comm, b, NULL, count, GPAR_FLOAT, GPAR_SUM);
  for (int d = 0; d < n && st == GPAR_OK; d++) st = gpar_wait(b[d]);
  *sec = (gpar_now() - t0) / iters;
  return st;
}

static void fmt_bytes(char *buf, size_t len, size_t b) {
  if (b >= (1u << 20))
    snprintf(buf, len, "%zu MB", b >> 20);
  else if (b >= 1024)
    snprintf(buf, len, "%zu KB", b >> 10);
  else
    snprintf(buf, len, "%zu B", b);
}

static int bench_allreduce(bench_ctx *ctx) {
  int n = ctx->ndev, st;
  size_t max_bytes = ctx->o.size ? (size_t)ctx->o.size << 20 : ctx->any_gpu ? (size_t)512 << 20 : (size_t)8 << 20;
  gpar_comm comm;
  gpar_buffer b[BENCH_MAX_DEV];
  if ((st = gpar_comm_create(ctx->eng, ctx->flat, n, &comm))) return fail_free("gpar_comm_create", st);
  for (int d = 0; d < n; d++) {
    if ((st = gpar_buffer_create(ctx->eng, ctx->flat[d], max_bytes, &b[d]))) return fail_free("gpar_buffer_create", st);
    gpar_fill(b[d], 0, max_bytes, 0);
  }
  /* Correctness once: ones at both ends of the largest range sum to n. */
  float one = 1.0f, got[2] = {0, 0};
  for (int d = 0; d < n; d++) {
    gpar_write(b[d], 0, &one, 4);
    gpar_write(b[d], max_bytes - 4, &one, 4);
  }
  if ((st = gpar_allreduce(comm, b, NULL, max_bytes / 4, GPAR_FLOAT, GPAR_SUM))) return fail_free("gpar_allreduce", st);
  gpar_read(b[n - 1], 0, &got[0], 4);
  gpar_read(b[n - 1], max_bytes - 4, &got[1], 4);
  bench_check(ctx, "allreduce sum of ones", got, 2, (float)n);
  for (int d = 0; d < n; d++) gpar_fill(b[d], 0, max_bytes, 0);

  const char *raw_why = NULL;
  int raw = ctx->o.raw && ctx->backend_id == GPAR_BACKEND_CUDA && gpar_raw_nccl_allreduce;
  if (ctx->o.raw && !raw)
    raw_why = ctx->backend_id != GPAR_BACKEND_CUDA ? "--raw needs CUDA devices (ncclAllReduce)" : "NCCL not built";
  if (raw_why) printf("raw: %s\n", raw_why);
  double factor = n > 1 ? 2.0 * (n - 1) / n : 0;
  printf("allreduce, float sum in place, %d devices%s; busbw = algbw x 2(n-1)/n = x %.2f\n", n,
         getenv("GPAR_COMM_STAGED") ? " (GPAR_COMM_STAGED)" : "", factor);
  printf("%10s %12s %11s %9s %9s", "size", "count", "time(us)", "algbw", "busbw");
  if (raw) printf(" %11s %9s %9s %7s", "raw(us)", "raw algbw", "raw busbw", "ratio");
  printf("   (GB/s)\n");
  bench_json_begin(ctx, "allreduce");
  int rc = 0;
  for (size_t bytes = 8; bytes <= max_bytes && !rc; bytes *= 2) {
    size_t count = bytes / 4;
    int iters = ctx->o.iters ? ctx->o.iters : bytes <= ((size_t)1 << 20) ? (ctx->any_gpu ? 200 : 20) : (ctx->any_gpu ? 20 : 3);
    double sec = 0, rsec = 0;
    if ((st = time_allreduce(comm, b, n, count, iters, &sec))) {
      rc = fail_free("gpar_allreduce", st);
      break;
    }
    double alg = bytes / sec * 1e-9, bus = alg * factor;
    char sz[32];
    fmt_bytes(sz, sizeof sz, bytes);
    printf("%10s %12zu %11.2f %9.2f %9.2f", sz, count, sec * 1e6, alg, bus);
    char key[32];
    snprintf(key, sizeof key, "%zu", bytes);
    bench_json_begin(ctx, key);
    bench_json_num(ctx, "time_us", sec * 1e6);
    bench_json_num(ctx, "algbw_GBs", alg);
    bench_json_num(ctx, "busbw_GBs", bus);
    if (raw) {
      if (gpar_raw_nccl_allreduce(n, ctx->local, bytes, iters, &rsec) == 0) {
        double ralg = bytes / rsec * 1e-9;
        printf(" %11.2f %9.2f %9.2f %7.3f", rsec * 1e6, ralg, ralg * factor, rsec / sec);
        bench_json_num(ctx, "raw_time_us", rsec * 1e6);
        bench_json_num(ctx, "raw_busbw_GBs", ralg * factor);
      } else {
        printf(" raw failed");
      }
    }
    bench_json_end(ctx);
    printf("\n");
    fflush(stdout);
  }
  bench_json_end(ctx);
  if (raw) printf("ratio = raw time / libgpar time (busbw ratio libgpar / raw)\n");
  for (int d = 0; d < n; d++) gpar_buffer_release(b[d]);
  gpar_comm_destroy(comm);
  return rc;
}

/* ---------------------------------------------------------------- data-parallel */

typedef struct dp_dev {
  gpar_buffer *w, *g, *act, *dact, one;
} dp_dev;

/* One training step on devices 0..n-1: forward, backward with each gradient allreduced as soon
 * as it exists (when comm is valid), update W -= lr * G (a k = 1 GEMM: an axpy in GEMM form). */
static int dp_step(dp_dev *dd, int n, int L, int N, gpar_comm comm, int allreduce) {
  int st = GPAR_OK;
  for (int l = 0; l < L && st == GPAR_OK; l++)
    for (int d = 0; d < n && st == GPAR_OK; d++)
      st = gpar_sgemm(GPAR_NO_TRANS, GPAR_NO_TRANS, N, N, N, 1.0f / N, dd[d].w[l], 0, N, dd[d].act[l], 0, N, 0.0f,
                      dd[d].act[l + 1], 0, N);
  for (int l = L - 1; l >= 0 && st == GPAR_OK; l--) {
    gpar_buffer g[BENCH_MAX_DEV];
    for (int d = 0; d < n && st == GPAR_OK; d++) {
      /* G[l] = dAct[l+1] * Act[l]^T ; dAct[l] = W[l]^T * dAct[l+1] */
      st = gpar_sgemm(GPAR_NO_TRANS, GPAR_TRANS, N, N, N, 1.0f / N, dd[d].dact[l + 1], 0, N, dd[d].act[l], 0, N, 0.0f,
                      dd[d].g[l], 0, N);
      if (st == GPAR_OK && l > 0)
        st = gpar_sgemm(GPAR_TRANS, GPAR_NO_TRANS, N, N, N, 1.0f / N, dd[d].w[l], 0, N, dd[d].dact[l + 1], 0, N, 0.0f,
                        dd[d].dact[l], 0, N);
      g[d] = dd[d].g[l];
    }
    if (st == GPAR_OK && allreduce) st = gpar_allreduce(comm, g, NULL, (size_t)N * N, GPAR_FLOAT, GPAR_SUM);
  }
  for (int l = 0; l < L && st == GPAR_OK; l++)
    for (int d = 0; d < n && st == GPAR_OK; d++)
      st = gpar_sgemm(GPAR_NO_TRANS, GPAR_NO_TRANS, N * N, 1, 1, -1e-3f / n, dd[d].g[l], 0, N * N, dd[d].one, 0, 1, 1.0f,
                      dd[d].w[l], 0, N * N);
  return st;
}

/* Seconds per step (median over --repeat runs of `steps` steps). */
static int dp_time(bench_ctx *ctx, dp_dev *dd, int n, int L, int N, int steps, gpar_comm comm, int allreduce,
                   double *sec) {
  double runs[64];
  int reps = ctx->repeat < 64 ? ctx->repeat : 64, st = dp_step(dd, n, L, N, comm, allreduce);
  if (st == GPAR_OK) st = gpar_wait_all(ctx->eng);
  for (int r = 0; r < reps && st == GPAR_OK; r++) {
    double t0 = gpar_now();
    for (int s = 0; s < steps && st == GPAR_OK; s++) st = dp_step(dd, n, L, N, comm, allreduce);
    if (st == GPAR_OK) st = gpar_wait_all(ctx->eng);
    runs[r] = (gpar_now() - t0) / steps;
  }
  *sec = bench_stats(runs, reps).med;
  return st;
}

static int bench_data_parallel(bench_ctx *ctx) {
  int n = ctx->ndev, N = ctx->o.size ? ctx->o.size : ctx->any_gpu ? 4096 : 256, L = 8, st = GPAR_OK;
  int steps = ctx->o.iters ? ctx->o.iters : ctx->any_gpu ? 10 : 2;
  const char *e = getenv("GPAR_BENCH_LAYERS");
  if (e && atoi(e) > 0) L = atoi(e);
  size_t mat = (size_t)N * N * sizeof(float);
  dp_dev dd[BENCH_MAX_DEV];
  memset(dd, 0, sizeof dd);
  gpar_comm comm = {0};
  if (n > 1 && (st = gpar_comm_create(ctx->eng, ctx->flat, n, &comm))) return fail_free("gpar_comm_create", st);
  for (int d = 0; d < n && st == GPAR_OK; d++) {
    dd[d].w = calloc((size_t)(4 * L + 2), sizeof(gpar_buffer));
    if (!dd[d].w) return fail_free("calloc", GPAR_ENOMEM);
    dd[d].g = dd[d].w + L;
    dd[d].act = dd[d].g + L;
    dd[d].dact = dd[d].act + L + 1;
    for (int i = 0; i < 4 * L + 2 && st == GPAR_OK; i++)
      if ((st = gpar_buffer_create(ctx->eng, ctx->flat[d], mat, &dd[d].w[i])) == GPAR_OK)
        st = bench_fill_matrix(dd[d].w[i], N, 0.01f * (float)(i % 7 + 1));
    if (st == GPAR_OK && (st = gpar_buffer_create(ctx->eng, ctx->flat[d], sizeof(float), &dd[d].one)) == GPAR_OK) {
      float one = 1.0f;
      st = gpar_write(dd[d].one, 0, &one, sizeof one);
    }
  }
  if (st != GPAR_OK) return fail_free("buffers", st);
  printf("data-parallel: %d layers of %dx%d SGEMMs (forward, backward x2, update), %d steps per run\n", L, N, N, steps);
  double t1 = 0, tn = 0, tn0 = 0;
  int rc = 0;
  if ((st = dp_time(ctx, dd, 1, L, N, steps, comm, 0, &t1))) rc = fail_free("1 device", st);
  if (!rc && n > 1 && (st = dp_time(ctx, dd, n, L, N, steps, comm, 1, &tn))) rc = fail_free("with allreduce", st);
  if (!rc && n > 1 && (st = dp_time(ctx, dd, n, L, N, steps, comm, 0, &tn0))) rc = fail_free("without allreduce", st);
  if (!rc) {
    double flop = 3.0 * L * 2.0 * N * (double)N * N;
    char r1[64], rn[64];
    printf("1 device:                     %.2f ms per step, %s\n", t1 * 1e3, bench_fmt_rate(r1, sizeof r1, flop, t1));
    bench_json_num(ctx, "step_1dev_ms", t1 * 1e3);
    if (n > 1) {
      printf("%d devices with allreduce:     %.2f ms per step, %s per device\n", n, tn * 1e3,
             bench_fmt_rate(rn, sizeof rn, flop, tn));
      printf("%d devices without allreduce:  %.2f ms per step\n", n, tn0 * 1e3);
      printf("throughput %d devices vs 1:    %.3f x (target >= %.1f)\n", n, n * t1 / tn, 0.95 * n);
      printf("step with / without allreduce: %.3f (target <= 1.05: communication hidden)\n", tn / tn0);
      bench_json_num(ctx, "step_ndev_allreduce_ms", tn * 1e3);
      bench_json_num(ctx, "step_ndev_no_allreduce_ms", tn0 * 1e3);
      bench_json_num(ctx, "throughput_ratio", n * t1 / tn);
      bench_json_num(ctx, "allreduce_overhead_ratio", tn / tn0);
    }
  }
  for (int d = 0; d < n; d++) {
    for (int i = 0; dd[d].w && i < 4 * L + 2; i++)
      if (dd[d].w[i].id) gpar_buffer_release(dd[d].w[i]);
    if (dd[d].one.id) gpar_buffer_release(dd[d].one);
    free(dd[d].w);
  }
  if (n > 1) gpar_comm_destroy(comm);
  return rc;
}

int bench_comm_subcommand(const char *name, int (**run)(bench_ctx *)) {
  if (!strcmp(name, "allreduce"))
    *run = bench_allreduce;
  else if (!strcmp(name, "data-parallel"))
    *run = bench_data_parallel;
  else
    return 0;
  return 1;
}
