/* bench_array.c: `gpar-bench array`, the array ops' bandwidth next to hand kernels launched the
 * raw way on the first selected device, in interleaved rounds (--repeat, default 5; medians with
 * min and max): gpar_binary (add, 12 bytes per element) and an elementwise map (saxpy, 12 bytes)
 * against the hand saxpy of raw_kernel.h (gpar-bench kernel's; on the CPU cblas_saxpy on one
 * thread), gpar_reduce_range (sum, 4 bytes) against the hand two-pass sum of raw_array.h, at
 * 2^20, 2^24 and 2^28 floats on GPUs (2^16, 2^20, 2^24 on CPU devices; --sizes takes
 * exponents). Also where `gpar-bench train` plugs in (bench_array_subcommand). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "raw/raw_array.h"
#include "raw/raw_kernel.h"

enum { C_BINARY, C_MAP, C_SUM, C_RAW_SAXPY, C_RAW_SUM, NCASES };
static const char *const case_name[NCASES] = {"gpar_binary add", "map saxpy", "gpar_reduce_range sum", "hand saxpy",
                                              "hand sum"};
static const double case_bytes[NCASES] = {12, 12, 4, 12, 4}; /* per element */

typedef struct arr_bench {
  bench_ctx *ctx;
  int dev;
  size_t n;
  int iters;
  gpar_buffer x, y, z, out;
  gpar_map saxpy, ones;
} arr_bench;

/* Time iters launches of case c (libgpar), one wait at the end: seconds per launch. */
static int time_gpar(arr_bench *b, int c, double *sec) {
  int st = GPAR_OK;
  gpar_arg a[3] = {gpar_arg_f32(0.5f), gpar_arg_buffer(b->x, 0), gpar_arg_buffer(b->y, 0)};
  for (int i = -1; i < b->iters && st == GPAR_OK; i++) { /* i -1: the warm-up, waited for */
    if (i == 0) st = gpar_wait_all(b->ctx->eng), *sec = gpar_now();
    if (st != GPAR_OK) break;
    if (c == C_BINARY) st = gpar_binary(GPAR_BIN_ADD, GPAR_FLOAT, b->n, b->x, 0, b->y, 0, b->z, 0);
    else if (c == C_MAP) st = gpar_map_launch(b->saxpy, b->n, a, 3);
    else st = gpar_reduce_range(GPAR_SUM, GPAR_FLOAT, b->n, b->x, 0, b->out, 0);
  }
  if (st == GPAR_OK) st = gpar_wait_all(b->ctx->eng);
  *sec = (gpar_now() - *sec) / b->iters;
  return st;
}

static int time_raw(arr_bench *b, int c, double *sec) {
  int be = b->ctx->backend_id, rc;
  if (c == C_RAW_SAXPY) {
    gpar_raw_kernel_case k = {.what = GPAR_RAW_K_SAXPY, .dev = b->ctx->local[0], .iters = b->iters, .n = b->n, .threads = 1};
    int (*fn)(const gpar_raw_kernel_case *, double *) = be == GPAR_BACKEND_CUDA     ? gpar_raw_kernel_cuda
                                                        : be == GPAR_BACKEND_OPENCL ? gpar_raw_kernel_opencl
                                                                                    : gpar_raw_kernel_host;
    rc = fn ? fn(&k, sec) : -1;
  } else {
    gpar_raw_sum_case k = {b->ctx->local[0], b->n, b->iters};
    int (*fn)(const gpar_raw_sum_case *, double *, double *) =
        be == GPAR_BACKEND_CUDA ? gpar_raw_sum_cuda : be == GPAR_BACKEND_OPENCL ? gpar_raw_sum_opencl : gpar_raw_sum_host;
    double sum = 0;
    rc = fn ? fn(&k, sec, &sum) : -1;
    if (rc == 0 && sum != (double)b->n) fprintf(stderr, "gpar-bench array: the hand sum of %zu ones is %g\n", b->n, sum), rc = -1;
  }
  if (rc != 0) return -1;
  *sec /= b->iters;
  return 0;
}

/* Free what the hand loops kept between rounds. */
static void raw_done(int be) {
  if (be == GPAR_BACKEND_CUDA && gpar_raw_kernel_cuda_done) gpar_raw_kernel_cuda_done();
  else if (be == GPAR_BACKEND_OPENCL && gpar_raw_kernel_opencl_done) gpar_raw_kernel_opencl_done();
  else if (be == GPAR_BACKEND_HOST) gpar_raw_kernel_host_done();
}

/* The buffers of one size: x all ones (through a map), y and z zero. */
static int setup(arr_bench *b) {
  gpar_engine *e = b->ctx->eng;
  int st = gpar_buffer_create(e, b->dev, b->n * 4, &b->x);
  if (!st) st = gpar_buffer_create(e, b->dev, b->n * 4, &b->y);
  if (!st) st = gpar_buffer_create(e, b->dev, b->n * 4, &b->z);
  if (!st) st = gpar_buffer_create(e, b->dev, 64, &b->out);
  gpar_arg a[1] = {gpar_arg_buffer(b->x, 0)};
  if (!st) st = gpar_map_launch(b->ones, b->n, a, 1);
  if (!st) st = gpar_fill(b->y, 0, b->n * 4, 0);
  if (!st) st = gpar_wait_all(e);
  return st;
}

static void teardown(arr_bench *b) {
  gpar_buffer *all[] = {&b->x, &b->y, &b->z, &b->out};
  for (int i = 0; i < 4; i++)
    if (all[i]->id) gpar_buffer_release(*all[i]), all[i]->id = 0;
}

/* One size: the rounds, the table, the records; 0 or 1 (failed). */
static int one_size(arr_bench *b, int exp2) {
  bench_ctx *ctx = b->ctx;
  double runs[NCASES][64];
  int r, rounds = ctx->repeat > 64 ? 64 : ctx->repeat, st = setup(b);
  for (r = 0; r < rounds && st == GPAR_OK; r++)
    for (int c = 0; c < NCASES && st == GPAR_OK; c++)
      if (c < C_RAW_SAXPY) st = time_gpar(b, c, &runs[c][r]);
      else if (time_raw(b, c, &runs[c][r]) != 0) runs[c][r] = NAN;
  float sum = 0;
  if (st == GPAR_OK) st = gpar_read(b->out, 0, &sum, 4);
  teardown(b);
  if (st != GPAR_OK) return bench_fail("array op", st), 1;
  if (sum != (float)b->n) {
    fprintf(stderr, "gpar-bench array: sum of %zu ones is %g\n", b->n, sum);
    ctx->check_failed = 1;
  }
  bench_stat s[NCASES];
  for (int c = 0; c < NCASES; c++) s[c] = bench_stats(runs[c], rounds);
  fprintf(ctx->out, "2^%d floats (%d launches per round, %d rounds):\n", exp2, b->iters, rounds);
  bench_json_elem_begin(ctx);
  bench_json_num(ctx, "log2_n", exp2);
  for (int c = 0; c < NCASES; c++) {
    double gbs = case_bytes[c] * (double)b->n / s[c].med / 1e9;
    int ref = c == C_SUM ? C_RAW_SUM : C_RAW_SAXPY;
    double ratio = c < C_RAW_SAXPY ? s[ref].med / s[c].med * case_bytes[c] / case_bytes[ref] : NAN;
    fprintf(ctx->out, "  %-22s %10.2f us (min %.2f, max %.2f)  %8.1f GB/s", case_name[c], s[c].med * 1e6,
            s[c].min * 1e6, s[c].max * 1e6, gbs);
    if (c < C_RAW_SAXPY) fprintf(ctx->out, "  %.3f x %s", ratio, case_name[ref]);
    fputc('\n', ctx->out);
    bench_json_begin(ctx, case_name[c]);
    bench_json_stat(ctx, "seconds", s[c], runs[c]);
    bench_json_num(ctx, "gbs", gbs);
    if (c < C_RAW_SAXPY) bench_json_num(ctx, "bandwidth_ratio", ratio);
    bench_json_end(ctx);
  }
  bench_json_end(ctx);
  return 0;
}

int bench_array(bench_ctx *ctx) {
  int exps[8] = {20, 24, 28}, ne = 3;
  if (!ctx->any_gpu) exps[0] = 16, exps[1] = 20, exps[2] = 24;
  if (ctx->o.sizes) {
    ne = 0;
    for (const char *p = ctx->o.sizes; p && *p && ne < 8; p = strchr(p, ','), p = p ? p + 1 : NULL)
      exps[ne++] = atoi(p);
  }
  arr_bench b = {.ctx = ctx, .dev = ctx->flat[0]};
  int st = gpar_map_create(ctx->eng, "saxpy", "f32 a, in f32 x, inout f32 y", "y = a * x + y", &b.saxpy);
  if (!st) st = gpar_map_create(ctx->eng, "ones", "out f32 x", "x = 1", &b.ones);
  if (st) return bench_fail("gpar_map_create", st), 1;
  if (ctx->repeat < 2 && !ctx->o.repeat) ctx->repeat = 5;
  bench_json_array_begin(ctx, "sizes");
  int rc = 0;
  for (int e = 0; e < ne && !rc; e++) {
    if (exps[e] < 4 || exps[e] > 31) continue;
    b.n = (size_t)1 << exps[e];
    b.iters = ctx->o.iters ? ctx->o.iters : (int)fmax(5, fmin(2000, (ctx->any_gpu ? 4e9 : 4e8) / (double)b.n));
    rc = one_size(&b, exps[e]);
  }
  bench_json_array_end(ctx);
  raw_done(ctx->backend_id);
  gpar_map_release(b.saxpy);
  gpar_map_release(b.ones);
  return rc;
}

int bench_array_subcommand(const char *name, int (**run)(bench_ctx *), int *all_devices) {
  if (!strcmp(name, "array")) *run = bench_array, *all_devices = 0;
  else if (!strcmp(name, "train")) *run = bench_train, *all_devices = 1;
  else return 0;
  return 1;
}
