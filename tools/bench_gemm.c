/* bench_gemm.c: gpar-bench gemm (SGEMM rate through libgpar next to the vendor call on the same
 * shape) and overhead (engine cost per empty host op next to a direct call and a thread hand-off). */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "bench_common.h"

/* ------------------------------------------------------------------ raw host (OpenBLAS) */

int bench_raw_host(const gpar_raw_case *c, double *seconds) {
  if (c->mode != GPAR_RAW_GEMM || c->ndev != 1) {
    fprintf(stderr, "gpar-bench: raw host baseline: GEMM on one device only\n");
    return -1;
  }
  size_t count = (size_t)c->n * c->n;
  float *a = malloc(count * sizeof *a), *b = malloc(count * sizeof *b), *cc = malloc(count * sizeof *cc);
  if (!a || !b || !cc) {
    free(a);
    free(b);
    free(cc);
    fprintf(stderr, "gpar-bench: raw host baseline: out of memory\n");
    return -1;
  }
  for (size_t i = 0; i < count; i++) {
    a[i] = 1.0f;
    b[i] = 0.5f;
  }
  int n = c->n;
  cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, cc, n);
  double t0 = bench_now();
  for (int i = 0; i < c->iters; i++)
    cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, cc, n);
  *seconds = bench_now() - t0;
  int ok = cc[0] == 0.5f * n && cc[count - 1] == 0.5f * n;
  free(a);
  free(b);
  free(cc);
  if (!ok) {
    fprintf(stderr, "gpar-bench: raw host baseline computed a wrong result\n");
    return -1;
  }
  return 0;
}

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

/* ------------------------------------------------------------------ overhead */

static int empty_op(const gpar_native *native, void *arg) {
  (void)native;
  (void)arg;
  return GPAR_OK;
}

enum { OV_NONE, OV_INDEP, OV_CHAIN, OV_FANIN, OV_NCASES };
#define OV_POOL 64
#define OV_FAN 8

static const char *const ov_name[OV_NCASES] = {"no buffers", "independent (64-buffer pool)",
                                               "chain (one RW buffer)", "fan-in (8 -> 1)"};
static const char *const ov_key[OV_NCASES] = {"none", "independent", "chain", "fanin"};

/* Submit `ops` empty ops of one case; *submit_s: until the last submit returned; *total_s:
 * until gpar_wait_all returned. */
static int ov_case(bench_ctx *ctx, int which, long ops, gpar_buffer *pool, double *submit_s,
                   double *total_s) {
  gpar_engine *eng = ctx->eng;
  int dev = ctx->host_dev, st = GPAR_OK;
  gpar_stats before, after;
  gpar_stats_get(eng, &before);
  double t0 = bench_now();
  switch (which) {
  case OV_NONE:
    for (long i = 0; i < ops && st == GPAR_OK; i++) st = gpar_submit(eng, dev, empty_op, NULL, NULL, 0, NULL, 0);
    break;
  case OV_INDEP:
    for (long i = 0; i < ops && st == GPAR_OK; i++)
      st = gpar_submit(eng, dev, empty_op, NULL, NULL, 0, &pool[i & (OV_POOL - 1)], 1);
    break;
  case OV_CHAIN:
    for (long i = 0; i < ops && st == GPAR_OK; i++) st = gpar_submit(eng, dev, empty_op, NULL, &pool[0], 1, &pool[0], 1);
    break;
  case OV_FANIN:
    /* pool[0..7] written by 8 ops, then one op reads all 8 and writes pool[8]. */
    for (long i = 0; i < ops && st == GPAR_OK; i++) {
      long j = i % (OV_FAN + 1);
      if (j < OV_FAN)
        st = gpar_submit(eng, dev, empty_op, NULL, NULL, 0, &pool[j], 1);
      else
        st = gpar_submit(eng, dev, empty_op, NULL, pool, OV_FAN, &pool[OV_FAN], 1);
    }
    break;
  }
  *submit_s = bench_now() - t0;
  if (st != GPAR_OK) bench_fail("gpar_submit", st);
  int w = gpar_wait_all(eng);
  *total_s = bench_now() - t0;
  if (w != GPAR_OK) bench_fail("gpar_wait_all", w);
  if (st == GPAR_OK && w == GPAR_OK && gpar_stats_get(eng, &after) == GPAR_OK) {
    uint64_t done = after.ops_completed - before.ops_completed;
    uint64_t failed = after.ops_failed - before.ops_failed;
    if (done != (uint64_t)ops || failed != 0) {
      fprintf(stderr, "gpar-bench: overhead %s: %llu ops completed (%llu failed), want %ld\n",
              ov_key[which], (unsigned long long)done, (unsigned long long)failed, ops);
      ctx->check_failed = 1;
    }
  }
  return st != GPAR_OK ? st : w;
}

/* Thread hand-off baseline: a single-producer single-consumer ring; the consumer calls the
 * function it receives. Both sides spin (yielding) on full / empty. */
#define RING 1024
typedef struct ring {
  _Atomic unsigned long head; /* written by the producer */
  char pad1[64];
  _Atomic unsigned long tail; /* written by the consumer */
  char pad2[64];
  long total;
  gpar_user_fn slot[RING];
} ring;

static void *ring_consumer(void *p) {
  ring *r = p;
  unsigned long t = 0;
  while ((long)t < r->total) {
    unsigned long h = atomic_load_explicit(&r->head, memory_order_acquire);
    if (h == t) {
      sched_yield();
      continue;
    }
    for (; t < h; t++) r->slot[t % RING](NULL, NULL);
    atomic_store_explicit(&r->tail, t, memory_order_release);
  }
  return NULL;
}

static double handoff_baseline(long ops) {
  ring *r = calloc(1, sizeof *r);
  if (!r) return -1;
  r->total = ops;
  pthread_t th;
  if (pthread_create(&th, NULL, ring_consumer, r) != 0) {
    free(r);
    return -1;
  }
  double t0 = bench_now();
  for (unsigned long h = 0; (long)h < ops; h++) {
    while (h - atomic_load_explicit(&r->tail, memory_order_acquire) >= RING) sched_yield();
    r->slot[h % RING] = empty_op;
    atomic_store_explicit(&r->head, h + 1, memory_order_release);
  }
  pthread_join(th, NULL);
  double s = bench_now() - t0;
  free(r);
  return s;
}

int bench_overhead(bench_ctx *ctx) {
  long ops = ctx->iters;
  int R = ctx->repeat, rc = 0;
  double sub[R], tot[R];
  gpar_buffer pool[OV_POOL];
  memset(pool, 0, sizeof pool);
  for (int i = 0; i < OV_POOL; i++) {
    int st = gpar_buffer_create(ctx->eng, ctx->host_dev, 64, &pool[i]);
    if (st != GPAR_OK) {
      bench_fail("gpar_buffer_create", st);
      rc = 1;
      goto out;
    }
  }
  printf("overhead: %ld empty host ops per case through gpar_submit on device %d (CPU), repeat %d\n",
         ops, ctx->host_dev, R);
  printf("%-30s %14s %14s\n", "case", "submit us/op", "total us/op");
  gpar_breakdown bd[OV_NCASES];
  for (int c = 0; c < OV_NCASES; c++) {
    if (ctx->o.breakdown) gpar_breakdown_get(ctx->eng, &bd[c], 1);
    for (int r = 0; r < R; r++) {
      bench_progress(ctx, "overhead: %s, run %d/%d", ov_key[c], r + 1, R);
      if (ov_case(ctx, c, ops, pool, &sub[r], &tot[r]) != GPAR_OK) {
        rc = 1;
        goto out;
      }
      sub[r] = sub[r] / ops * 1e6;
      tot[r] = tot[r] / ops * 1e6;
    }
    if (ctx->o.breakdown) gpar_breakdown_get(ctx->eng, &bd[c], 1);
    bench_stat ss = bench_stats(sub, R), ts = bench_stats(tot, R);
    if (R > 1)
      printf("%-30s %14.3f %14.3f   (total min %.3f, max %.3f)\n", ov_name[c], ss.med, ts.med,
             ts.min, ts.max);
    else
      printf("%-30s %14.3f %14.3f\n", ov_name[c], ss.med, ts.med);
    fflush(stdout);
    bench_json_begin(ctx, ov_key[c]);
    bench_json_stat(ctx, "submit_us_per_op", ss, sub);
    bench_json_stat(ctx, "total_us_per_op", ts, tot);
    bench_json_end(ctx);
  }

  /* Baselines. */
  int (*volatile fn)(const gpar_native *, void *) = empty_op;
  double t0 = bench_now();
  for (long i = 0; i < ops; i++) fn(NULL, NULL);
  double direct = (bench_now() - t0) / ops * 1e6;
  double ho = handoff_baseline(ops);
  printf("%-30s %14s %14.4f\n", "direct call (baseline)", "", direct);
  bench_json_num(ctx, "direct_call_us_per_op", direct);
  if (ho >= 0) {
    printf("%-30s %14s %14.4f\n", "thread hand-off (SPSC ring)", "", ho / ops * 1e6);
    bench_json_num(ctx, "handoff_us_per_op", ho / ops * 1e6);
  }
  printf("total = wall time from the first submit to gpar_wait_all's return, divided by ops\n");
  if (ctx->o.breakdown) { /* engine-timed phases, means over every run of a case */
    printf("\nhost time per op by phase (us; the timestamps themselves add to the totals above)\n");
    printf("%-30s %8s %8s %8s %8s %8s\n", "case", "submit", "handoff", "dispatch", "complete", "retire");
    for (int c = 0; c < OV_NCASES; c++) {
      printf("%-30s %8.3f %8.3f %8.3f %8.3f %8.3f\n", ov_name[c], bd[c].submit_us, bd[c].handoff_us,
             bd[c].dispatch_us, bd[c].complete_us, bd[c].retire_us);
      bench_json_begin(ctx, ov_key[c]);
      bench_json_num(ctx, "bd_submit_us", bd[c].submit_us);
      bench_json_num(ctx, "bd_handoff_us", bd[c].handoff_us);
      bench_json_num(ctx, "bd_dispatch_us", bd[c].dispatch_us);
      bench_json_num(ctx, "bd_complete_us", bd[c].complete_us);
      bench_json_num(ctx, "bd_retire_us", bd[c].retire_us);
      bench_json_end(ctx);
    }
  }

out:
  gpar_wait_all(ctx->eng);
  for (int i = 0; i < OV_POOL; i++)
    if (pool[i].id) gpar_buffer_release(pool[i]);
  return rc ? rc : ctx->check_failed ? 1 : 0;
}
