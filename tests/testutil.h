/* testutil.h: small helpers shared by the test programs (clock, sleeps, spin-waits, a seeded
 * RNG, engine set-up and a reference GEMM). Header-only, like tap.h. */
#ifndef GPAR_TESTS_TESTUTIL_H
#define GPAR_TESTS_TESTUTIL_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "gpar.h"
#include "tap.h"

static inline double tu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline void tu_sleep_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* Spin (yielding) until *flag is nonzero or `secs` pass; 1 when it became nonzero. */
static inline int tu_wait_flag(atomic_int *flag, double secs) {
  double end = tu_now() + secs;
  while (!atomic_load(flag)) {
    if (tu_now() > end) return 0;
    tu_sleep_us(50);
  }
  return 1;
}

/* splitmix64: a seeded, portable RNG. */
static inline uint64_t tu_mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
static inline uint64_t tu_rand(uint64_t *s) {
  *s += 0x9e3779b97f4a7c15ull;
  return tu_mix(*s);
}
/* Uniform in [lo, hi]. */
static inline int tu_range(uint64_t *s, int lo, int hi) {
  return lo + (int)(tu_rand(s) % (uint64_t)(hi - lo + 1));
}

/* Device description (one wrapper, so a rename in gpar.h touches one place). */
typedef gpar_device_props tu_devinfo;
static inline int tu_device_info(gpar_engine *eng, int dev, tu_devinfo *info) {
  return gpar_device_info(eng, dev, info);
}

/* The seed: env GPAR_TEST_SEED or def; printed as a diagnostic. */
static inline uint64_t tu_seed(uint64_t def) {
  const char *e = getenv("GPAR_TEST_SEED");
  uint64_t s = e && *e ? strtoull(e, NULL, 0) : def;
  diag("seed %llu (set GPAR_TEST_SEED to repeat)", (unsigned long long)s);
  return s;
}

/* An engine with the given backends and host threads (0: the environment's or the default)
 * and sync flag; quiet. Bails out on failure (nothing else can be tested). */
static inline gpar_engine *tu_engine(unsigned backends, int host_threads, int synchronous) {
  gpar_config cfg;
  gpar_engine *eng = NULL;
  gpar_config_init(&cfg); /* defaults + GPAR_* environment */
  if (backends) cfg.backends = backends;
  if (host_threads) cfg.host_threads = host_threads;
  cfg.synchronous = synchronous;
  cfg.quiet = 1;
  int st = gpar_init(&eng, &cfg);
  if (st != GPAR_OK || !eng) {
    printf("Bail out! gpar_init: %s (%s)\n", gpar_status_name(st), gpar_last_error());
    exit(1);
  }
  return eng;
}

/* A buffer of `bytes` on dev (or GPAR_HOST); bails out when it cannot be made. */
static inline gpar_buffer tu_buffer(gpar_engine *eng, int dev, size_t bytes) {
  gpar_buffer b = {0};
  int st = gpar_buffer_create(eng, dev, bytes, &b);
  if (st != GPAR_OK) {
    printf("Bail out! gpar_buffer_create(dev %d, %zu): %s %s\n", dev, bytes, gpar_status_name(st), gpar_last_error());
    exit(1);
  }
  return b;
}

/* Read b whole into malloc memory and compare it with its shadow; 1 when equal, else a
 * diagnostic names the failure or the first differing byte. */
static inline int tu_same(gpar_buffer b, const unsigned char *shadow, size_t n, const char *what) {
  unsigned char *got = malloc(n);
  if (!got) return 0;
  int st = gpar_read(b, 0, got, n);
  int r = st == GPAR_OK && !memcmp(got, shadow, n);
  if (st != GPAR_OK) diag("  %s: gpar_read %s (%s)", what, gpar_status_name(st), gpar_last_error());
  else if (!r)
    for (size_t i = 0; i < n; i++)
      if (got[i] != shadow[i]) {
        diag("  %s: first difference at byte %zu: %02x, want %02x", what, i, got[i], shadow[i]);
        break;
      }
  free(got);
  return r;
}

/* GPAR_BENCH_FULL set and not "0": the benchmark tests run at full size (make bench). */
static inline int tu_bench_full(void) {
  const char *e = getenv("GPAR_BENCH_FULL");
  return e && *e && strcmp(e, "0") != 0;
}

/* Reference GEMM in double, column-major, offsets already applied. */
static inline double tu_ref_elem(int ta, int tb, int i, int j, int k, const double *a, int lda,
                                 const double *b, int ldb, double *absum) {
  double s = 0, as = 0;
  for (int p = 0; p < k; p++) {
    double x = ta ? a[p + (size_t)i * lda] : a[i + (size_t)p * lda];
    double y = tb ? b[j + (size_t)p * ldb] : b[p + (size_t)j * ldb];
    s += x * y;
    as += x * y < 0 ? -x * y : x * y;
  }
  if (absum) *absum = as;
  return s;
}

/* Devices of one backend and one type (GPU or CPU), in backend-local order. */
typedef struct tu_group {
  const char *backend;
  int type;
  int ndev;
  int dev[64];
  char name[64][128];
} tu_group;

/* Group the flat device list by backend and type: up to max groups, each non-empty. */
static inline int tu_find_groups(gpar_engine *eng, tu_group *g, int max) {
  static const int ids[3] = {GPAR_BACKEND_HOST, GPAR_BACKEND_CUDA, GPAR_BACKEND_OPENCL};
  static const char *const names[3] = {"host", "cuda", "opencl"};
  int count = gpar_device_count(eng), ng = 0;
  for (int b = 0; b < 3; b++)
    for (int type = GPAR_DEVICE_CPU; type <= GPAR_DEVICE_OTHER && ng < max; type++) {
      tu_group *cur = &g[ng];
      cur->backend = names[b];
      cur->type = type;
      cur->ndev = 0;
      for (int local = 0; local < count; local++) /* backend-local order */
        for (int d = 0; d < count; d++) {
          gpar_device_props p;
          if (gpar_device_info(eng, d, &p) != GPAR_OK) continue;
          if (p.backend_id != ids[b] || (int)p.type != type || p.backend_index != local) continue;
          if (cur->ndev < 64) {
            snprintf(cur->name[cur->ndev], sizeof cur->name[0], "%s", p.name);
            cur->dev[cur->ndev++] = d;
          }
        }
      if (cur->ndev > 0) ng++;
    }
  return ng;
}

/* Write count floats of value v into buf. */
static inline int tu_fill_value(gpar_buffer buf, size_t count, float v) {
  float *h = malloc(count * sizeof *h);
  if (!h) return GPAR_ENOMEM;
  for (size_t i = 0; i < count; i++) h[i] = v;
  int st = gpar_write(buf, 0, h, count * sizeof *h);
  free(h);
  return st;
}

#endif
