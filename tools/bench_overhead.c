/* bench_overhead.c: gpar-bench overhead: the engine's cost per empty host op (no buffers,
 * independent, chain, fan-in) next to a direct call and a thread hand-off. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"

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
