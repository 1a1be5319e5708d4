/* bench_overhead.c: gpar-bench overhead: the engine's cost per empty host op in four cases (no
 * buffers, independent ops over a 64-buffer pool, a chain on one buffer, fan-in 8 -> 1), at one
 * or several CPU worker counts (--workers: an engine per count, opened for each round), next to
 * a direct call and a thread hand-off; every round runs all of them in turn, in one process.
 * With --breakdown, the engine's per-op phases (gpar_breakdown_get) per case and count. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"

/* ---------------------------------------------------------------- the cases */

static int empty_op(const gpar_native *native, void *arg) {
  (void)native;
  (void)arg;
  return GPAR_OK;
}

enum { OV_NONE, OV_INDEP, OV_CHAIN, OV_FANIN, OV_NCASES };
#define OV_POOL 64
#define OV_FAN 8
#define OV_NPHASES 6 /* submit, handoff, dispatch, complete, retire, complete + retire */

static const char *const ov_name[OV_NCASES] = {"no buffers", "independent (64-buffer pool)",
                                               "chain (one RW buffer)", "fan-in (8 -> 1)"};
static const char *const ov_key[OV_NCASES] = {"none", "independent", "chain", "fanin"};
static const char *const ov_phase[OV_NPHASES] = {"submit", "handoff", "dispatch", "complete", "retire",
                                                 "complete_plus_retire"};

/* One engine under test: its host device and the pool the cases use. */
typedef struct ov_engine {
  gpar_engine *eng;
  int dev;
  gpar_buffer pool[OV_POOL];
} ov_engine;

/* Submit `ops` empty ops of one case; *submit_s: until the last submit returned; *total_s:
 * until gpar_wait_all returned. Checks that every op completed. */
static int ov_case(bench_ctx *ctx, ov_engine *e, int which, long ops, double *submit_s, double *total_s) {
  gpar_engine *eng = e->eng;
  gpar_buffer *pool = e->pool;
  int dev = e->dev, st = GPAR_OK;
  gpar_stats before, after;
  gpar_stats_get(eng, &before);
  double t0 = gpar_now();
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
  *submit_s = gpar_now() - t0;
  if (st != GPAR_OK) bench_fail("gpar_submit", st);
  int w = gpar_wait_all(eng);
  *total_s = gpar_now() - t0;
  if (w != GPAR_OK) bench_fail("gpar_wait_all", w);
  if (st == GPAR_OK && w == GPAR_OK && gpar_stats_get(eng, &after) == GPAR_OK) {
    uint64_t done = after.ops_completed - before.ops_completed;
    uint64_t failed = after.ops_failed - before.ops_failed;
    if (done != (uint64_t)ops || failed != 0) {
      fprintf(stderr, "gpar-bench: overhead %s: %llu ops completed (%llu failed), want %ld\n", ov_key[which],
              (unsigned long long)done, (unsigned long long)failed, ops);
      ctx->check_failed = 1;
    }
  }
  return st != GPAR_OK ? st : w;
}

/* ---------------------------------------------------------------- the references */

/* A direct call through a function pointer the compiler cannot see through. */
static double direct_call(long ops) {
  int (*volatile fn)(const gpar_native *, void *) = empty_op;
  double t0 = gpar_now();
  for (long i = 0; i < ops; i++) fn(NULL, NULL);
  return gpar_now() - t0;
}

/* Thread hand-off: a single-producer single-consumer ring; the consumer calls the function it
 * receives. Both sides spin (yielding) on full / empty. */
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

/* Seconds for ops hand-offs, or -1 when the thread could not be made. */
static double handoff(long ops) {
  ring *r = calloc(1, sizeof *r);
  if (!r) return -1;
  r->total = ops;
  pthread_t th;
  if (pthread_create(&th, NULL, ring_consumer, r) != 0) {
    free(r);
    return -1;
  }
  double t0 = gpar_now();
  for (unsigned long h = 0; (long)h < ops; h++) {
    while (h - atomic_load_explicit(&r->tail, memory_order_acquire) >= RING) sched_yield();
    r->slot[h % RING] = empty_op;
    atomic_store_explicit(&r->head, h + 1, memory_order_release);
  }
  pthread_join(th, NULL);
  double s = gpar_now() - t0;
  free(r);
  return s;
}

/* ---------------------------------------------------------------- engines per worker count */

/* What one worker count measured over the rounds (arrays [r], microseconds per op). */
typedef struct ov_count {
  int asked;   /* the --workers entry (0: one per core); -1: the run's own engine */
  int workers; /* the CPU workers that engine ran with (gpar_config_get) */
  double *sub[OV_NCASES], *tot[OV_NCASES];
  double *bd[OV_NCASES][OV_NPHASES];
} ov_count;

int bench_parse_workers(const char *spec, int *asked, int max) {
  int n = 0;
  char *copy = strdup(spec), *save = NULL;
  if (!copy) return -1;
  for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    long v = bench_parse_int(tok, 0, 4096);
    int dup = 0;
    for (int i = 0; i < n; i++) dup |= asked[i] == v;
    if (v < 0 || dup || n >= max) {
      fprintf(stderr, "gpar-bench: --workers %s: want up to %d distinct CPU worker counts in 0..4096 "
                      "(0: one per core), comma-separated; '%s' %s\n",
              spec, max, tok, dup ? "is listed twice" : n >= max ? "is one too many" : "is not one");
      free(copy);
      return -1;
    }
    asked[n++] = (int)v;
  }
  free(copy);
  if (n == 0) fprintf(stderr, "gpar-bench: --workers '%s' names no worker count\n", spec);
  return n ? n : -1;
}

static void ov_release(ov_engine *e) {
  if (!e->eng) return;
  gpar_wait_all(e->eng);
  for (int i = 0; i < OV_POOL; i++)
    if (e->pool[i].id) gpar_buffer_release(e->pool[i]);
  memset(e->pool, 0, sizeof e->pool);
}

/* The engine for count k: the run's own (asked -1) or a new one with that many CPU workers,
 * the same backends and tracing as the run's; then its pool. */
static int ov_open(bench_ctx *ctx, ov_count *k, ov_engine *e) {
  int st = GPAR_OK;
  memset(e, 0, sizeof *e);
  if (k->asked < 0) {
    e->eng = ctx->eng;
    e->dev = ctx->host_dev;
  } else {
    gpar_config cfg;
    bench_config(ctx, &cfg, ctx->o.breakdown ? "" : NULL); /* "": time the ops, write no file */
    cfg.host_threads = k->asked;
    if ((st = gpar_init(&e->eng, &cfg)) != GPAR_OK) {
      e->eng = NULL;
      return bench_fail("gpar_init", st);
    }
    e->dev = gpar_device_find(e->eng, GPAR_BACKEND_HOST, -1, 0);
    if (e->dev < 0) e->dev = GPAR_HOST;
  }
  gpar_config got;
  if (gpar_config_get(e->eng, &got) == GPAR_OK) k->workers = got.host_threads;
  for (int i = 0; i < OV_POOL && st == GPAR_OK; i++)
    if ((st = gpar_buffer_create(e->eng, e->dev, 64, &e->pool[i])) != GPAR_OK) bench_fail("gpar_buffer_create", st);
  return st;
}

static int ov_close(bench_ctx *ctx, ov_engine *e) {
  ov_release(e);
  int st = GPAR_OK;
  if (e->eng && e->eng != ctx->eng && (st = gpar_shutdown(e->eng)) != GPAR_OK) bench_fail("gpar_shutdown", st);
  e->eng = NULL;
  return st;
}

/* Round r on count k's engine: a short warm-up of every case, then each case timed. */
static int ov_round(bench_ctx *ctx, ov_count *k, int r, long ops) {
  ov_engine e;
  int st = ov_open(ctx, k, &e);
  double s, t;
  long warm = ops / 10 < 1000 ? (ops < 1000 ? ops : 1000) : ops / 10;
  for (int c = 0; c < OV_NCASES && st == GPAR_OK; c++) st = ov_case(ctx, &e, c, warm, &s, &t);
  for (int c = 0; c < OV_NCASES && st == GPAR_OK; c++) {
    gpar_breakdown bd;
    if (ctx->o.breakdown) gpar_breakdown_get(e.eng, &bd, 1); /* start this case's measurement */
    bench_progress(ctx, "overhead: round %d/%d, %d workers, %s", r + 1, ctx->repeat, k->workers, ov_key[c]);
    if ((st = ov_case(ctx, &e, c, ops, &s, &t)) != GPAR_OK) break;
    k->sub[c][r] = s / ops * 1e6;
    k->tot[c][r] = t / ops * 1e6;
    if (ctx->o.breakdown) {
      gpar_breakdown_get(e.eng, &bd, 1);
      const double v[OV_NPHASES] = {bd.submit_us, bd.handoff_us, bd.dispatch_us, bd.complete_us, bd.retire_us,
                                    bd.complete_us + bd.retire_us};
      for (int p = 0; p < OV_NPHASES; p++) k->bd[c][p][r] = v[p];
    }
  }
  int cs = ov_close(ctx, &e);
  return st != GPAR_OK ? st : cs;
}

/* ---------------------------------------------------------------- the report */

/* The workers column: the count, starred when it is the default (one per core, --workers 0). */
static const char *workers_label(char *buf, size_t len, const ov_count *k) {
  snprintf(buf, len, "%d%s", k->workers, k->asked == 0 ? "*" : "");
  return buf;
}

static void print_stat_row(const char *label, bench_stat s) {
  printf("  %-30s %10.4f us/op (min %.4f, max %.4f)\n", label, s.med, s.min, s.max);
}

static void report(bench_ctx *ctx, ov_count *k, int nk, const double *dc, const double *ho, int have_ho) {
  int R = ctx->repeat, star = 0;
  char wl[32];
  for (int j = 0; j < nk; j++) star |= k[j].asked == 0;
  printf("%7s  %-30s %12s %12s %9s %9s\n", "workers", "case", "submit us/op", "total us/op", "min", "max");
  bench_json_array_begin(ctx, "workers");
  for (int j = 0; j < nk; j++) {
    bench_json_elem_begin(ctx);
    bench_json_num(ctx, "asked", k[j].asked);
    bench_json_num(ctx, "workers", k[j].workers);
    for (int c = 0; c < OV_NCASES; c++) {
      bench_stat ss = bench_stats(k[j].sub[c], R), ts = bench_stats(k[j].tot[c], R);
      printf("%7s  %-30s %12.3f %12.3f %9.3f %9.3f\n", workers_label(wl, sizeof wl, &k[j]), ov_name[c], ss.med, ts.med,
             ts.min, ts.max);
      bench_json_begin(ctx, ov_key[c]);
      bench_json_stat(ctx, "submit_us_per_op", ss, k[j].sub[c]);
      bench_json_stat(ctx, "total_us_per_op", ts, k[j].tot[c]);
      if (ctx->o.breakdown) {
        bench_json_begin(ctx, "breakdown_us");
        for (int p = 0; p < OV_NPHASES; p++) bench_json_stat(ctx, ov_phase[p], bench_stats(k[j].bd[c][p], R), k[j].bd[c][p]);
        bench_json_end(ctx);
      }
      bench_json_end(ctx);
    }
    bench_json_end(ctx);
  }
  bench_json_array_end(ctx);
  printf("(medians of %d rounds; min and max of the total; total = first submit to gpar_wait_all's return, "
         "per op)\n", R);
  if (star) printf("* --workers 0: one worker per core, the engine's default\n");

  if (nk > 1) { /* flatness: the most workers against the fewest */
    int lo = 0, hi = 0;
    for (int j = 1; j < nk; j++) {
      if (k[j].workers < k[lo].workers) lo = j;
      if (k[j].workers > k[hi].workers) hi = j;
    }
    printf("total us/op, %d workers / %d workers (ratio of medians):", k[hi].workers, k[lo].workers);
    bench_json_begin(ctx, "ratio_most_over_fewest_workers");
    bench_json_num(ctx, "most", k[hi].workers);
    bench_json_num(ctx, "fewest", k[lo].workers);
    for (int c = 0; c < OV_NCASES; c++) {
      double x = bench_stats(k[hi].tot[c], R).med / bench_stats(k[lo].tot[c], R).med;
      printf("%s %s %.3f", c ? "," : "", ov_key[c], x);
      bench_json_num(ctx, ov_key[c], x);
    }
    bench_json_end(ctx);
    printf("\n");
  }

  printf("references, interleaved with the rounds above:\n");
  bench_stat ds = bench_stats(dc, R);
  print_stat_row("direct call", ds);
  bench_json_stat(ctx, "direct_call", ds, dc);
  bench_json_num(ctx, "direct_call_us_per_op", ds.med);
  if (have_ho) {
    bench_stat hs = bench_stats(ho, R);
    print_stat_row("thread hand-off (SPSC ring)", hs);
    bench_json_stat(ctx, "handoff", hs, ho);
    bench_json_num(ctx, "handoff_us_per_op", hs.med);
  }

  if (ctx->o.breakdown) {
    printf("\nhost time per op by phase (us, medians of %d rounds; tracing is on, its timestamps add to the totals "
           "above)\n", R);
    printf("%7s  %-30s %8s %8s %8s %8s %8s %15s\n", "workers", "case", "submit", "handoff", "dispatch", "complete",
           "retire", "complete+retire");
    for (int j = 0; j < nk; j++)
      for (int c = 0; c < OV_NCASES; c++) {
        double m[OV_NPHASES];
        for (int p = 0; p < OV_NPHASES; p++) m[p] = bench_stats(k[j].bd[c][p], R).med;
        printf("%7s  %-30s %8.3f %8.3f %8.3f %8.3f %8.3f %15.3f\n", workers_label(wl, sizeof wl, &k[j]), ov_name[c],
               m[0], m[1], m[2], m[3], m[4], m[5]);
      }
    printf("(handoff includes the time an op waits in the queue while the submitter runs ahead)\n");
  }
}

/* ---------------------------------------------------------------- the subcommand */

int bench_overhead(bench_ctx *ctx) {
  long ops = ctx->iters;
  int R = ctx->repeat, rc = 0, nk = 1, have_ho = 1;
  int asked[BENCH_MAX_WORKER_COUNTS] = {-1};
  if (ctx->o.workers && (nk = bench_parse_workers(ctx->o.workers, asked, BENCH_MAX_WORKER_COUNTS)) < 0) return 2;
  ov_count *k = calloc((size_t)nk, sizeof *k);
  double *dc = calloc((size_t)R, sizeof *dc), *ho = calloc((size_t)R, sizeof *ho);
  int have = k && dc && ho;
  for (int j = 0; j < nk && have; j++) {
    k[j].asked = asked[j];
    for (int c = 0; c < OV_NCASES; c++) {
      have &= (k[j].sub[c] = calloc((size_t)R, sizeof(double))) != NULL;
      have &= (k[j].tot[c] = calloc((size_t)R, sizeof(double))) != NULL;
      for (int p = 0; p < OV_NPHASES; p++) have &= (k[j].bd[c][p] = calloc((size_t)R, sizeof(double))) != NULL;
    }
  }
  if (!have) {
    fprintf(stderr, "gpar-bench: overhead: out of memory\n");
    rc = 1;
    goto out;
  }

  char machine[320], counts[160] = "";
  gpar_config cfg;
  unsigned be = gpar_config_get(ctx->eng, &cfg) == GPAR_OK ? cfg.backends : 0; /* as this run's engine */
  for (int j = 0; j < nk && ctx->o.workers; j++) {
    size_t l = strlen(counts);
    snprintf(counts + l, sizeof counts - l, "%s%d", j ? "," : "", asked[j]);
  }
  printf("overhead: %ld empty host ops per case and round, %d round%s; each round runs every case on %s, then "
         "the references\n",
         ops, R, R == 1 ? "" : "s",
         ctx->o.workers ? "a new engine per CPU worker count (--workers)" : "this run's engine");
  printf("machine: %s; backends open: %s%s%s; tracing: %s\n", bench_machine(machine, sizeof machine),
         "host", be & GPAR_BACKEND_CUDA ? ", cuda" : "", be & GPAR_BACKEND_OPENCL ? ", opencl" : "",
         ctx->o.breakdown ? "on (--breakdown)" : "off");
  fflush(stdout);
  bench_json_num(ctx, "ops_per_case", (double)ops);
  bench_json_num(ctx, "rounds", R);
  bench_json_str(ctx, "machine", machine);
  bench_json_str(ctx, "workers_asked", ctx->o.workers ? counts : "");
  bench_json_str(ctx, "tracing", ctx->o.breakdown ? "on" : "off");

  for (int r = 0; r < R && rc == 0; r++) {
    for (int j = 0; j < nk && rc == 0; j++)
      if (ov_round(ctx, &k[j], r, ops) != GPAR_OK) rc = 1;
    dc[r] = direct_call(ops) / ops * 1e6;
    double h = handoff(ops);
    if (h < 0) have_ho = 0;
    ho[r] = h / ops * 1e6;
  }
  if (rc == 0) report(ctx, k, nk, dc, ho, have_ho);

out:
  for (int j = 0; k && j < nk; j++)
    for (int c = 0; c < OV_NCASES; c++) {
      free(k[j].sub[c]);
      free(k[j].tot[c]);
      for (int p = 0; p < OV_NPHASES; p++) free(k[j].bd[c][p]);
    }
  free(k);
  free(dc);
  free(ho);
  return rc ? rc : ctx->check_failed ? 1 : 0;
}
