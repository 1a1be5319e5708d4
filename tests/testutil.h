/* testutil.h: small helpers shared by the test programs (sleeps, spin-waits, a seeded
 * RNG, engine set-up with the GPAR_TEST_EXPECT device check and a reference GEMM). Header-only, like tap.h. */
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

/* Whether a test named name runs: every test without arguments, else those named on the command
 * line (argv[1..]). */
static inline int tu_want(int argc, char **argv, const char *name) {
  if (argc < 2) return 1;
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], name)) return 1;
  return 0;
}

static inline void tu_sleep_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* Spin (yielding) until *flag is nonzero or `secs` pass; 1 when it became nonzero. */
static inline int tu_wait_flag(atomic_int *flag, double secs) {
  double end = gpar_now() + secs;
  while (!atomic_load(flag)) {
    if (gpar_now() > end) return 0;
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

/* GPAR_TEST_EXPECT="host opencl:2" (space- or comma-separated backend[:count], count 1 when
 * left out): the devices this run must find. A test whose engine lacks one bails out naming
 * it, so a broken discovery cannot shrink coverage to skips in silence. Backends outside
 * `backends` (the mask the engine was created with; 0 = all) are not this engine's to check. */
static inline void tu_expect_devices(gpar_engine *eng, unsigned backends) {
  static const char *const names[3] = {"host", "cuda", "opencl"};
  static const int ids[3] = {GPAR_BACKEND_HOST, GPAR_BACKEND_CUDA, GPAR_BACKEND_OPENCL};
  const char *e = getenv("GPAR_TEST_EXPECT");
  char list[256], *save = NULL;
  if (!e || !*e) return;
  snprintf(list, sizeof list, "%s", e);
  for (char *tok = strtok_r(list, " ,", &save); tok; tok = strtok_r(NULL, " ,", &save)) {
    char *colon = strchr(tok, ':');
    int want = colon ? atoi(colon + 1) : 1, b = 0, found = 0, ndev = gpar_device_count(eng);
    if (colon) *colon = 0;
    while (b < 3 && strcmp(tok, names[b]) != 0) b++;
    if (b == 3 || want < 1) {
      printf("Bail out! GPAR_TEST_EXPECT=\"%s\": cannot parse '%s'\n", e, tok);
      exit(1);
    }
    if (backends && !(backends & (unsigned)ids[b])) continue;
    for (int d = 0; d < ndev; d++) {
      gpar_device_props p;
      if (gpar_device_info(eng, d, &p) == GPAR_OK && p.backend_id == ids[b]) found++;
    }
    if (found < want) {
      printf("Bail out! GPAR_TEST_EXPECT=\"%s\": %s device %d is missing (found %d %s device%s, want %d)\n", e,
             names[b], found, found, names[b], found == 1 ? "" : "s", want);
      exit(1);
    }
  }
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
  tu_expect_devices(eng, backends); /* GPAR_BACKENDS in the environment does not excuse a device */
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

/* 1 when all n bytes at p equal v. */
static inline int tu_all_bytes(const unsigned char *p, size_t n, unsigned char v) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != v) return 0;
  return 1;
}

/* A seeded, non-uniform pattern: count floats in [-1, 1), multiples of 1/512, so that index,
 * leading-dimension or tiling mistakes change a GEMM's result (constant data hides them). */
static inline void tu_pattern(float *h, size_t count, uint64_t seed) {
  uint64_t s = seed * 0x2545f4914f6cdd1dull + 1;
  for (size_t i = 0; i < count; i++) h[i] = (float)((int)(tu_rand(&s) % 1024) - 512) / 512.0f;
}

/* Write tu_pattern(count, seed) into buf. */
static inline int tu_write_pattern(gpar_buffer buf, size_t count, uint64_t seed) {
  float *h = malloc(count * sizeof *h);
  if (!h) return GPAR_ENOMEM;
  tu_pattern(h, count, seed);
  int st = gpar_write(buf, 0, h, count * sizeof *h);
  free(h);
  return st;
}

/* Check c = a * b (n x n, column-major, no transposes, alpha 1, beta 0) against a double
 * reference: every entry when n <= 512, else the four corners and `samples` seeded entries.
 * Tolerance relative to sum |a_ip * b_pj|: 8 sqrt(n) float epsilons (rounding errors of n terms
 * grow like sqrt(n)), or 2e-3 with GPAR_TF32 set (TF32 rounds inputs to 10 mantissa bits). Returns the number of wrong entries (the first is printed); 0 when right. */
static inline size_t tu_check_gemm(const float *a, const float *b, const float *c, int n, int samples, uint64_t seed,
                                   const char *what) {
  size_t count = (size_t)n * n, bad = 0;
  const char *tf = getenv("GPAR_TF32");
  double rt = n; /* sqrt(n) by Newton steps: no libm for the tests that include this header */
  for (int it = 0; it < 40; it++) rt = 0.5 * (rt + n / rt);
  double tol = tf && *tf && strcmp(tf, "0") != 0 ? 2e-3 : 8.0 * rt / 16777216.0;
  int all = n <= 512;
  long total = all ? (long)count : 4 + samples;
  for (long t = 0; t < total; t++) {
    int i, j;
    if (all) i = (int)(t % n), j = (int)(t / n);
    else if (t < 4) i = (t & 1) ? n - 1 : 0, j = (t & 2) ? n - 1 : 0;
    else i = (int)(tu_rand(&seed) % (uint64_t)n), j = (int)(tu_rand(&seed) % (uint64_t)n);
    double want = 0, absum = 0;
    for (int p = 0; p < n; p++) {
      double x = (double)a[i + (size_t)p * n] * (double)b[p + (size_t)j * n];
      want += x;
      absum += x < 0 ? -x : x;
    }
    double got = c[i + (size_t)j * n], err = got - want, lim = tol * absum + 1e-6;
    if (!(err <= lim && -err <= lim)) {
      if (!bad) diag("  %s: C(%d,%d) = %.9g, want %.9g (tolerance %.3g)", what, i, j, got, want, lim);
      bad++;
    }
  }
  return bad;
}

/* Write count floats of value v at the start of buf; a status. */
static inline int tu_fill_value(gpar_buffer buf, size_t count, float v) {
  float *h = malloc(count * sizeof *h);
  if (!h) return GPAR_ENOMEM;
  for (size_t i = 0; i < count; i++) h[i] = v;
  int st = gpar_write(buf, 0, h, count * sizeof *h);
  free(h);
  return st;
}

#endif
