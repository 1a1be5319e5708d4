/* bench_kernel.c: gpar-bench kernel: portable kernels (gpar_kernel_*) next to the same kernels
 * written against the vendor API (tools/raw/raw_kernel*.c), side by side in one process, in rounds
 * that run libgpar's loop and the hand loop in turn (--repeat, default 5; medians with min and
 * max): a tiny kernel's launch loop, eager and recorded in a graph (a hand-captured CUDA graph
 * on CUDA); saxpy's bandwidth over sizes; build times (cold, the first in the process apart; a
 * memory hit: gpar_kernel_create and gpar_kernel_build of a text built before; a disk hit in
 * a new engine; a disk hit in a new process, this program run again);
 * and, when a second device can build kernels, two independent launches on two devices with one
 * wait (overlap; --trace shows it). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_common.h"
#include "raw/raw_kernel.h"

typedef int (*rawk_fn)(const gpar_raw_kernel_case *c, double *seconds);

static const char saxpy_params[] = "u64 n, f32 a, in f32 *x, inout f32 *y";
static const char saxpy_body[] = "gpar_u64 i = GPAR_GLOBAL_ID(0); if (i < n) y[i] = a * x[i] + y[i];";
static const char tiny_body[] = "if (GPAR_GLOBAL_ID(0) == 0) y[0] += 1.0f;";

/* One device's run. */
typedef struct kb {
  bench_ctx *ctx;
  int dev, local, gpu, threads, backend_id;
  rawk_fn raw;
  const char *raw_what;
  gpar_kernel tiny, saxpy;
  gpar_buffer y1;
} kb;

static rawk_fn raw_for(int backend_id, const char **what) {
  if (backend_id == GPAR_BACKEND_CUDA && gpar_raw_kernel_cuda)
    return *what = "NVRTC cubin, cudaLaunchKernel (graph: hand-captured)", gpar_raw_kernel_cuda;
  if (backend_id == GPAR_BACKEND_OPENCL && gpar_raw_kernel_opencl)
    return *what = "clBuildProgram, clEnqueueNDRangeKernel (no graphs: the eager loop)", gpar_raw_kernel_opencl;
  if (backend_id == GPAR_BACKEND_HOST)
    return *what = "a C call; cblas_saxpy with the workers' threads; cc + dlopen", gpar_raw_kernel_host;
  return *what = "none built", NULL;
}

static void raw_done(void) {
  if (gpar_raw_kernel_cuda_done) gpar_raw_kernel_cuda_done();
  if (gpar_raw_kernel_opencl_done) gpar_raw_kernel_opencl_done();
  gpar_raw_kernel_host_done();
}

/* One row: libgpar's and the hand loop's medians (min, max) in unit, their ratio, and the JSON. */
static void row(kb *b, const char *key, const char *label, const double *lib, const double *raw, int n, double scale,
                const char *unit) {
  bench_ctx *ctx = b->ctx;
  double l[64], r[64];
  for (int i = 0; i < n; i++) l[i] = lib[i] * scale, r[i] = raw ? raw[i] * scale : 0;
  bench_stat sl = bench_stats(l, n), sr = bench_stats(r, n);
  fprintf(ctx->out, "  %-34s %10.3f %s (%.3f..%.3f)", label, sl.med, unit, sl.min, sl.max);
  if (raw) fprintf(ctx->out, "   hand %10.3f (%.3f..%.3f)   ratio %.3f", sr.med, sr.min, sr.max, sl.med / sr.med);
  fputc('\n', ctx->out);
  bench_json_begin(ctx, key);
  bench_json_str(ctx, "unit", unit);
  bench_json_stat(ctx, "libgpar", sl, l);
  if (raw) {
    bench_json_stat(ctx, "hand", sr, r);
    bench_json_num(ctx, "ratio", sl.med / sr.med);
  }
  bench_json_end(ctx);
}

/* ---------------------------------------------------------------- libgpar's loops */

/* iters tiny launches (eager), or a graph of per launches run iters / per times; the count
 * they leave in y1 is checked. */
static int lib_tiny(kb *b, long iters, long per, double *sec) {
  gpar_engine *eng = b->ctx->eng;
  gpar_grid g = {{1}, {32}};
  gpar_arg a = gpar_arg_buffer(b->y1, 0);
  gpar_graph *graph = NULL;
  int st = gpar_fill(b->y1, 0, 4, 0), reps = per ? (int)(iters / per) : 1;
  if (!st && per) {
    st = gpar_graph_begin(eng);
    for (long i = 0; i < per && !st; i++) st = gpar_kernel_launch(b->tiny, b->dev, &g, &a, 1);
    int e = gpar_graph_end(eng, &graph);
    if (!st) st = e;
  }
  if (!st) st = gpar_wait(b->y1);
  double t0 = gpar_now();
  for (long i = 0; i < (per ? reps : iters) && !st; i++)
    st = per ? gpar_graph_launch(graph) : gpar_kernel_launch(b->tiny, b->dev, &g, &a, 1);
  if (!st) st = gpar_wait(b->y1);
  *sec = gpar_now() - t0;
  float y = 0;
  if (!st) st = gpar_read(b->y1, 0, &y, 4);
  if (graph) gpar_graph_destroy(graph);
  if (!st && y != (float)(per ? per * reps : iters)) {
    fprintf(stderr, "gpar-bench kernel: the tiny kernel counted %g\n", y);
    b->ctx->check_failed = 1;
  }
  return st;
}

static int lib_saxpy(kb *b, gpar_buffer x, gpar_buffer y, size_t n, long iters, double *sec) {
  gpar_grid g = {{(uint32_t)((n + 255) / 256)}, {256}};
  gpar_arg a[4] = {gpar_arg_u64(n), gpar_arg_f32(1.0f), gpar_arg_buffer(x, 0), gpar_arg_buffer(y, 0)};
  int st = gpar_fill(y, 0, n * 4, 0);
  if (!st) st = gpar_wait(y);
  double t0 = gpar_now();
  for (long i = 0; i < iters && !st; i++) st = gpar_kernel_launch(b->saxpy, b->dev, &g, a, 4);
  if (!st) st = gpar_wait(y);
  *sec = gpar_now() - t0;
  float last = 0;
  if (!st) st = gpar_read(y, (n - 1) * 4, &last, 4);
  if (!st && last != (float)iters) {
    fprintf(stderr, "gpar-bench kernel: saxpy gave %g, want %ld\n", last, iters);
    b->ctx->check_failed = 1;
  }
  return st;
}

/* ---------------------------------------------------------------- the cases */

static int case_tiny(kb *b) {
  bench_ctx *ctx = b->ctx;
  int R = ctx->repeat, st = GPAR_OK, rok = b->raw != NULL;
  long iters = ctx->o.iters ? ctx->o.iters : b->gpu ? 20000 : 2000, per = iters < 1000 ? iters : 1000;
  iters = iters / per * per;
  double le[64], lg[64], re[64], rg[64];
  for (int r = 0; r < R && !st; r++) {
    bench_progress(ctx, "kernel: tiny launches, round %d/%d", r + 1, R);
    st = lib_tiny(b, iters, 0, &le[r]);
    gpar_raw_kernel_case c = {.what = GPAR_RAW_K_TINY, .dev = b->local, .iters = iters};
    if (rok) rok = b->raw(&c, &re[r]) == 0;
    if (!st) st = lib_tiny(b, iters, per, &lg[r]);
    c = (gpar_raw_kernel_case){.what = GPAR_RAW_K_TINY_GRAPH, .dev = b->local, .iters = per, .reps = (int)(iters / per)};
    if (rok) rok = b->raw(&c, &rg[r]) == 0;
  }
  if (st) return bench_fail("tiny kernel", st);
  fprintf(ctx->out, "tiny kernel (1 group of 32), %ld launches per round, us per launch:\n", iters);
  row(b, "tiny_eager", "eager launch loop", le, rok ? re : NULL, R, 1e6 / (double)iters, "us");
  row(b, "tiny_graph", "in a graph (1000 launches each)", lg, rok ? rg : NULL, R, 1e6 / (double)iters, "us");
  return GPAR_OK;
}

/* Sizes: --sizes (a value up to 40 is a power of two), else 2^16 .. 2^28 on GPUs, 2^24 elsewhere. */
static int sizes_of(kb *b, size_t *n, int max) {
  int k = 0;
  if (b->ctx->o.sizes) {
    char list[256], *save = NULL;
    snprintf(list, sizeof list, "%s", b->ctx->o.sizes);
    for (char *t = strtok_r(list, ",", &save); t && k < max; t = strtok_r(NULL, ",", &save)) {
      long v = atol(t);
      if (v > 0) n[k++] = v <= 40 ? (size_t)1 << v : (size_t)v;
    }
    return k;
  }
  for (int e = 16; e <= (b->gpu ? 28 : 24) && k < max; e += 4) n[k++] = (size_t)1 << e;
  return k;
}

static int case_saxpy(kb *b) {
  bench_ctx *ctx = b->ctx;
  size_t ns[16];
  int nn = sizes_of(b, ns, 16), R = ctx->repeat, st = GPAR_OK;
  fprintf(ctx->out, "saxpy f32 (12 bytes per element), GB/s and us per call:\n");
  for (int s = 0; s < nn && !st; s++) {
    size_t n = ns[s];
    long iters = (long)((b->gpu ? (size_t)1 << 30 : (size_t)1 << 26) / n);
    iters = iters < 3 ? 3 : iters > 20000 ? 20000 : iters;
    gpar_buffer x = {0}, y = {0};
    st = gpar_buffer_create(ctx->eng, b->dev, n * 4, &x);
    if (!st) st = gpar_buffer_create(ctx->eng, b->dev, n * 4, &y);
    float *ones = malloc(n * 4);
    for (size_t i = 0; ones && i < n; i++) ones[i] = 1.0f;
    if (!st) st = ones ? gpar_write(x, 0, ones, n * 4) : GPAR_ENOMEM;
    free(ones);
    double lt[64], rt[64];
    int rok = b->raw != NULL;
    for (int r = 0; r < R && !st; r++) {
      bench_progress(ctx, "kernel: saxpy n = %zu, round %d/%d", n, r + 1, R);
      st = lib_saxpy(b, x, y, n, iters, &lt[r]);
      gpar_raw_kernel_case c = {.what = GPAR_RAW_K_SAXPY, .dev = b->local, .iters = iters, .n = n, .threads = b->threads};
      if (rok) rok = b->raw(&c, &rt[r]) == 0;
    }
    if (x.id) gpar_buffer_release(x);
    if (y.id) gpar_buffer_release(y);
    if (st) return bench_fail("saxpy", st);
    char key[32], label[64];
    double gbs[64], rgbs[64];
    for (int r = 0; r < R; r++) gbs[r] = 12.0 * n * iters / lt[r] * 1e-9, rgbs[r] = 12.0 * n * iters / rt[r] * 1e-9;
    snprintf(key, sizeof key, "saxpy_%zu_GBs", n);
    snprintf(label, sizeof label, "n = 2^%d: bandwidth", __builtin_ctzll(n));
    row(b, key, label, gbs, rok ? rgbs : NULL, R, 1, "GB/s");
    snprintf(key, sizeof key, "saxpy_%zu_us", n);
    snprintf(label, sizeof label, "n = 2^%d: per call (%ld calls)", __builtin_ctzll(n), iters);
    row(b, key, label, lt, rok ? rt : NULL, R, 1e6 / (double)iters, "us");
  }
  return st;
}

/* ---------------------------------------------------------------- builds */

/* A kernel text never built before (this process, this round), for dev of e. */
static gpar_kernel salted(gpar_engine *e, int round) {
  char pre[96];
  gpar_kernel k = {0};
  snprintf(pre, sizeof pre, "/* gpar-bench kernel build, process %ld, round %d */", (long)getpid(), round);
  gpar_kernel_create(e, "saxpy_build", saxpy_params, saxpy_body, pre, &k);
  return k;
}

/* Build k on dev: seconds, and whether it came from where it should. */
static double timed_build(gpar_kernel k, int dev, int want, int *right) {
  gpar_kernel_props p;
  double t0 = gpar_now();
  int st = gpar_kernel_build(k, dev);
  double t = gpar_now() - t0;
  if (st || gpar_kernel_info(k, dev, &p) || p.origin != want) {
    fprintf(stderr, "gpar-bench kernel: build %s (origin %d, want %d): %s\n", gpar_status_name(st), p.origin, want,
            gpar_last_error());
    *right = 0;
  }
  gpar_kernel_release(k);
  return t;
}

static gpar_engine *build_engine(bench_ctx *ctx, const char *dir) {
  gpar_config cfg;
  gpar_engine *e = NULL;
  bench_config(ctx, &cfg, NULL);
  cfg.kernel_cache_dir = dir;
  cfg.quiet = 1;
  return gpar_init(&e, &cfg) == GPAR_OK ? e : NULL;
}

/* The build of round in a new process (this program, --kernel-child): create + build of a text
 * built before, as a user calls them, the first kernel calls of the process (its compiler's
 * identification included). Its seconds. */
static double child_build(bench_ctx *ctx, kb *b, const char *dir, int round, int *right) {
  gpar_config cfg;
  bench_config(ctx, &cfg, NULL);
  char cmd[1400], out[128] = "";
  snprintf(cmd, sizeof cmd, "/proc/%ld/exe --kernel-child '%s' %u %d %d %ld", (long)getpid(), dir, cfg.backends, b->dev,
           round, (long)getpid());
  FILE *p = popen(cmd, "r");
  double t = 0;
  int origin = 0;
  if (!p || !fgets(out, sizeof out, p) || sscanf(out, "%lf %d", &t, &origin) != 2 || origin != GPAR_KERNEL_DISK_HIT) {
    fprintf(stderr, "gpar-bench kernel: the new process's build: '%s'\n", out);
    *right = 0;
  }
  if (p) pclose(p);
  return t;
}

/* The payload (the binary) of one of libgpar's cache entries in dir, written to path: what the
 * hand loop loads, so that both load the same binary. An entry (core/kernel/disk.c): "GPARKC01",
 * the key's and the payload's lengths and a checksum (8 bytes each, little-endian), the key, the
 * payload. 0 when none could be written. */
static int entry_binary(const char *dir, const char *path) {
  DIR *d = opendir(dir);
  struct dirent *de;
  int ok = 0;
  while (d && !ok && (de = readdir(d))) {
    size_t nl = strlen(de->d_name);
    char in[600];
    if (nl < 4 || strcmp(de->d_name + nl - 4, ".gkc")) continue;
    snprintf(in, sizeof in, "%s/%s", dir, de->d_name);
    FILE *f = fopen(in, "rb"), *o = NULL;
    unsigned char h[32];
    uint64_t klen = 0, plen = 0;
    char key[64] = "";
    if (f && fread(h, 1, 32, f) == 32 && !memcmp(h, "GPARKC01", 8) && fread(key, 1, sizeof key - 1, f) &&
        strstr(key, "kernel dialect")) { /* a build's entry, not a target record (target.c) */
      for (int i = 7; i >= 0; i--) klen = klen << 8 | h[8 + i], plen = plen << 8 | h[16 + i];
      char *bin = plen < (1u << 30) ? malloc(plen) : NULL;
      ok = bin && fseek(f, (long)(32 + klen), SEEK_SET) == 0 && fread(bin, 1, plen, f) == plen &&
           (o = fopen(path, "wb")) && fwrite(bin, 1, plen, o) == plen;
      if (o && fclose(o) != 0) ok = 0;
      free(bin);
    }
    if (f) fclose(f);
  }
  if (d) closedir(d);
  return ok;
}

/* The hand loop's load of the binary in path in a new process (--kernel-child-raw; OpenCL:
 * clCreateProgramWithBinary + clBuildProgram after its context is made): seconds, or -1 where the
 * backend has no such case or the file is missing. */
static double child_raw(kb *b, const char *path) {
  char cmd[1400], out[64] = "";
  snprintf(cmd, sizeof cmd, "/proc/%ld/exe --kernel-child-raw '%s' %d %d", (long)getpid(), path, b->local,
           b->backend_id);
  FILE *p = popen(cmd, "r");
  double t = -1;
  if (!p || !fgets(out, sizeof out, p) || sscanf(out, "%lf", &t) != 1) t = -1;
  if (p) pclose(p);
  return t;
}

int bench_kernel_child(int argc, char **argv) {
  if (argc == 5 && !strcmp(argv[1], "--kernel-child-raw")) {
    rawk_fn raw = raw_for(atoi(argv[4]), &(const char *){NULL});
    gpar_raw_kernel_case c = {.what = GPAR_RAW_K_BINARY, .dev = atoi(argv[3]), .path = argv[2]};
    double sec[2] = {0, 0};
    if (!raw || raw(&c, sec)) return 1;
    printf("%.9f\n", sec[0]);
    return 0;
  }
  if (argc != 7) return 2;
  gpar_config cfg;
  gpar_engine *e = NULL;
  gpar_config_init(&cfg);
  cfg.quiet = 1;
  cfg.kernel_cache_dir = argv[2];
  cfg.backends = (unsigned)atoi(argv[3]);
  if (gpar_init(&e, &cfg) != GPAR_OK) return 1;
  char pre[96];
  gpar_kernel k;
  int right = 1, dev = atoi(argv[4]);
  snprintf(pre, sizeof pre, "/* gpar-bench kernel build, process %s, round %s */", argv[6], argv[5]);
  double t0 = gpar_now();
  gpar_kernel_create(e, "saxpy_build", saxpy_params, saxpy_body, pre, &k);
  double t = gpar_now() - t0 + timed_build(k, dev, GPAR_KERNEL_DISK_HIT, &right);
  printf("%.9f %d\n", t, right ? GPAR_KERNEL_DISK_HIT : 0);
  gpar_shutdown(e);
  return 0;
}

/* One round: cold, memory hit, disk hit (new engine), new process, and the hand loop's load in
 * a new process; t[0..4]. */
static int build_round(kb *b, const char *dir, const char *rawbin, int round, double *t) {
  gpar_engine *e = build_engine(b->ctx, dir);
  int right = 1;
  if (!e) return bench_fail("gpar_init (builds)", GPAR_EBACKEND);
  t[0] = timed_build(salted(e, round), b->dev, GPAR_KERNEL_COMPILED, &right);
  double t0 = gpar_now(); /* a memory hit is the create and the build: the create checks the text */
  gpar_kernel hit = salted(e, round);
  t[1] = gpar_now() - t0;
  t[1] += timed_build(hit, b->dev, GPAR_KERNEL_MEMORY_HIT, &right);
  gpar_shutdown(e);
  if (!(e = build_engine(b->ctx, dir))) return bench_fail("gpar_init (builds)", GPAR_EBACKEND);
  t[2] = timed_build(salted(e, round), b->dev, GPAR_KERNEL_DISK_HIT, &right);
  gpar_shutdown(e);
  t[3] = child_build(b->ctx, b, dir, round, &right);
  t[4] = child_raw(b, rawbin);
  if (!right) b->ctx->check_failed = 1;
  return GPAR_OK;
}

static int case_builds(kb *b) {
  bench_ctx *ctx = b->ctx;
  int R = ctx->repeat + 1, st = GPAR_OK, rok = b->raw != NULL; /* round 0: the first in the process */
  char dir[256], rawbin[300];
  snprintf(dir, sizeof dir, "/tmp/gpar-bench-kcache-XXXXXX");
  if (!mkdtemp(dir)) return bench_fail("mkdtemp", GPAR_EBACKEND);
  snprintf(rawbin, sizeof rawbin, "%s/hand.bin", dir);
  int rawproc = 1;
  double t[65][5], raw[65][2], col[6][64];
  for (int r = 0; r < R && !st; r++) {
    bench_progress(ctx, "kernel: builds, round %d/%d", r + 1, R);
    st = build_round(b, dir, rawbin, r, t[r]);
    if (r == 0 && !entry_binary(dir, rawbin)) rawproc = 0; /* from round 1 on, the hand loop loads it too */
    gpar_raw_kernel_case c = {.what = GPAR_RAW_K_BUILD, .dev = b->local, .salt = r};
    if (rok) rok = b->raw(&c, raw[r]) == 0;
  }
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "gpar-bench kernel: could not remove %s\n", dir);
  if (st) return st;
  fprintf(ctx->out, "builds (hand: the vendor compiler and loader on the same text), ms:\n");
  for (int k = 0; k < 5; k++)
    for (int r = 1; r < R; r++) col[k == 4 ? 5 : k][r - 1] = t[r][k];
  for (int r = 1; r < R; r++) col[4][r - 1] = raw[r][0];
  row(b, "build_first", "first build in the process", &t[0][0], rok ? &raw[0][0] : NULL, 1, 1e3, "ms");
  row(b, "build_cold", "later cold builds", col[0], rok ? col[4] : NULL, R - 1, 1e3, "ms");
  for (int r = 1; r < R; r++) col[4][r - 1] = raw[r][1];
  row(b, "build_memory", "memory hit (create + build)", col[1], NULL, R - 1, 1e6, "us");
  row(b, "build_disk", "disk hit in a new engine", col[2], rok ? col[4] : NULL, R - 1, 1e3, "ms");
  for (int r = 1; r < R; r++) rawproc &= col[5][r - 1] >= 0;
  /* the hand figure in a new process too (OpenCL), else the hand loop's load in this one */
  row(b, "build_process", "disk hit in a new process (create + build)", col[3],
      rawproc ? col[5]
      : rok   ? col[4]
              : NULL,
      R - 1, 1e3, "ms");
  return GPAR_OK;
}

/* ---------------------------------------------------------------- two devices at once */

/* Another device that builds kernels: a GPU of another backend first, else another device. */
static int second_device(kb *b) {
  gpar_engine *eng = b->ctx->eng;
  int best = -1, n = gpar_device_count(eng);
  for (int d = 0; d < n; d++) {
    gpar_device_props p;
    char why[256];
    if (d == b->dev || gpar_device_info(eng, d, &p) || gpar_kernel_support(eng, d, why, sizeof why)) continue;
    if (p.backend_id == GPAR_BACKEND_HOST && b->backend_id != GPAR_BACKEND_HOST) continue;
    int score = (p.type == GPAR_DEVICE_GPU) * 2 + (p.backend_id != b->backend_id);
    static int best_score;
    if (best < 0 || score > best_score) best = d, best_score = score;
  }
  return best;
}

/* iters saxpy launches on each of the devices in dv (alone: one device), interleaved, one wait. */
static int overlap_run(kb *b, const int *dv, int nd, gpar_buffer *x, gpar_buffer *y, size_t n, long iters, double *sec) {
  gpar_grid g = {{(uint32_t)((n + 255) / 256)}, {256}};
  int st = gpar_wait_all(b->ctx->eng);
  double t0 = gpar_now();
  for (long i = 0; i < iters && !st; i++)
    for (int k = 0; k < nd && !st; k++) {
      gpar_arg a[4] = {gpar_arg_u64(n), gpar_arg_f32(1.0f), gpar_arg_buffer(x[k], 0), gpar_arg_buffer(y[k], 0)};
      st = gpar_kernel_launch(b->saxpy, dv[k], &g, a, 4);
    }
  if (!st) st = gpar_wait_all(b->ctx->eng);
  *sec = gpar_now() - t0;
  return st;
}

static int case_overlap(kb *b) {
  bench_ctx *ctx = b->ctx;
  int other = second_device(b), R = ctx->repeat, st = GPAR_OK;
  if (other < 0) {
    fprintf(ctx->out, "two devices at once: no second device builds kernels here (GPU machine: --all-backends)\n");
    return GPAR_OK;
  }
  size_t n = b->gpu ? (size_t)1 << 26 : (size_t)1 << 20;
  long iters = b->gpu ? 50 : 10;
  int dv[2] = {b->dev, other};
  gpar_buffer x[2] = {{0}}, y[2] = {{0}};
  for (int k = 0; k < 2 && !st; k++) {
    st = gpar_buffer_create(ctx->eng, dv[k], n * 4, &x[k]);
    if (!st) st = gpar_buffer_create(ctx->eng, dv[k], n * 4, &y[k]);
    if (!st) st = gpar_fill(x[k], 0, n * 4, 0);
    if (!st) st = gpar_fill(y[k], 0, n * 4, 0);
  }
  double ta[64], tb[64], both[64], ratio[64];
  for (int r = 0; r < R && !st; r++) {
    bench_progress(ctx, "kernel: two devices, round %d/%d", r + 1, R);
    st = overlap_run(b, &dv[0], 1, &x[0], &y[0], n, iters, &ta[r]);
    if (!st) st = overlap_run(b, &dv[1], 1, &x[1], &y[1], n, iters, &tb[r]);
    if (!st) st = overlap_run(b, dv, 2, x, y, n, iters, &both[r]);
    ratio[r] = both[r] / (ta[r] > tb[r] ? ta[r] : tb[r]);
  }
  for (int k = 0; k < 2; k++) {
    if (x[k].id) gpar_buffer_release(x[k]);
    if (y[k].id) gpar_buffer_release(y[k]);
  }
  if (st) return bench_fail("two devices", st);
  gpar_device_props p;
  gpar_device_info(ctx->eng, other, &p);
  fprintf(ctx->out, "two devices at once: saxpy n = 2^%d x %ld on device %d and device %d (%s: %s), ms:\n",
          __builtin_ctzll(n), iters, b->dev, other, p.backend, p.name);
  row(b, "overlap_first", "first device alone", ta, NULL, R, 1e3, "ms");
  row(b, "overlap_second", "second device alone", tb, NULL, R, 1e3, "ms");
  row(b, "overlap_both", "both, one wait", both, NULL, R, 1e3, "ms");
  row(b, "overlap_ratio", "both / the longer alone (1: overlap)", ratio, NULL, R, 1, "x");
  return GPAR_OK;
}

/* ---------------------------------------------------------------- the subcommand */

int bench_kernel(bench_ctx *ctx) {
  kb b = {.ctx = ctx, .dev = ctx->flat[0], .local = ctx->local[0], .gpu = ctx->info[0].type == GPAR_DEVICE_GPU,
          .backend_id = ctx->backend_id};
  gpar_config cfg;
  gpar_config_get(ctx->eng, &cfg);
  b.threads = cfg.host_threads;
  b.raw = raw_for(ctx->backend_id, &b.raw_what);
  char what[256];
  int st = gpar_kernel_support(ctx->eng, b.dev, what, sizeof what);
  fprintf(ctx->out, "kernels on device %d: %s\nhand loops: %s\n", b.dev, what, b.raw_what);
  if (st) return bench_fail("gpar_kernel_support", st);
  if (!st) st = gpar_kernel_create(ctx->eng, "tiny", "inout f32 *y", tiny_body, NULL, &b.tiny);
  if (!st) st = gpar_kernel_create(ctx->eng, "saxpy", saxpy_params, saxpy_body, NULL, &b.saxpy);
  if (!st) st = gpar_kernel_build(b.tiny, b.dev);
  if (!st) st = gpar_kernel_build(b.saxpy, b.dev);
  if (!st) st = gpar_buffer_create(ctx->eng, b.dev, 4, &b.y1);
  if (st) return bench_fail("kernels", st);
  bench_json_str(ctx, "kernel_target", what);
  bench_json_str(ctx, "hand", b.raw_what);
  if (!st) st = case_tiny(&b);
  if (!st) st = case_saxpy(&b);
  if (!st) st = case_builds(&b);
  if (!st) st = case_overlap(&b);
  raw_done();
  gpar_buffer_release(b.y1);
  gpar_kernel_release(b.tiny);
  gpar_kernel_release(b.saxpy);
  gpar_stats s;
  if (gpar_stats_get(ctx->eng, &s) == GPAR_OK)
    fprintf(ctx->out, "kernel counters: %llu launches, %llu builds, %llu memory hits, %llu disk hits, %.1f ms building\n",
            (unsigned long long)s.kernel_launches, (unsigned long long)s.kernel_builds,
            (unsigned long long)s.kernel_memory_hits, (unsigned long long)s.kernel_disk_hits, s.kernel_build_us * 1e-3);
  return st ? 1 : 0;
}
