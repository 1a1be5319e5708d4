/* kernel_cache.c: where builds come from. The engine's memory cache (another kernel object with
 * the same text is a memory hit; another preamble is not), the disk cache across engines (a disk
 * hit), no disk cache (gpar_config.kernel_cache_dir ""), each device's own first build, entries
 * that must not be trusted (a flipped payload byte, a truncated file, a bad header, a stale entry
 * holding another build's key under this key's name, a payload that matches its checksum but does not load): each is
 * rebuilt from source and replaced, so the next engine hits the disk again. Several processes
 * building the same kernel at once (this program run again as children): all succeed, no child
 * ever reads a partial entry, and what is left is one valid entry and no temporary file.
 * The entry format (core/kernel/disk.c) is spelled out here to corrupt it on purpose. */
#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include "kernel_cache_fmt.h"
#include "kernel_util.h"

extern char **environ;

static int host;
static const char params[] = "u64 n, f32 a, in f32 *x, inout f32 *y";
static const char body[] = "gpar_u64 i = GPAR_GLOBAL_ID(0); if (i < n) y[i] = a * x[i] + y[i];";
static const char body2[] = "gpar_u64 i = GPAR_GLOBAL_ID(0); if (i < n) y[i] = a * x[i] - y[i];";

/* Build name's kernel (text body, preamble pre) on dev of e, run it on y = 1, x = 2, a = 3 and
 * return where its build came from (0 on a failure); *y0 gets y[0]. */
static int build_run(gpar_engine *e, int dev, const char *name, const char *b, const char *pre, float *y0) {
  enum { N = 100 };
  gpar_kernel k = ku_kernel(e, name, params, b, pre);
  gpar_kernel_props p;
  int st = gpar_kernel_info(k, dev, &p);
  float x[N], y[N];
  for (int i = 0; i < N; i++) x[i] = 2, y[i] = 1;
  gpar_buffer bx = ku_buffer_with(e, dev, x, sizeof x), by = ku_buffer_with(e, dev, y, sizeof y);
  gpar_arg a[4] = {gpar_arg_u64(N), gpar_arg_f32(3), gpar_arg_buffer(bx, 0), gpar_arg_buffer(by, 0)};
  gpar_grid g = {{2}, {64}};
  if (st == GPAR_OK) st = gpar_kernel_launch(k, dev, &g, a, 4);
  if (st == GPAR_OK) st = gpar_read(by, 0, y, sizeof y);
  if (st != GPAR_OK) diag("  build_run(%s): %s %s", name, gpar_status_name(st), gpar_last_error());
  *y0 = y[N - 1];
  gpar_buffer_release(bx);
  gpar_buffer_release(by);
  gpar_kernel_release(k);
  return st == GPAR_OK ? p.origin : 0;
}

static gpar_engine *engine_with(const char *dir, unsigned backends) {
  gpar_config cfg;
  gpar_engine *e = NULL;
  gpar_config_init(&cfg);
  cfg.quiet = 1;
  cfg.kernel_cache_dir = dir;
  if (backends) cfg.backends = backends;
  if (gpar_init(&e, &cfg) != GPAR_OK) bail_out("gpar_init");
  return e;
}

/* ---------------------------------------------------------------- memory and disk hits */

static void test_memory_and_disk(const char *dir) {
  gpar_engine *e = engine_with(dir, 0);
  float y;
  gpar_stats s0, s1;
  gpar_stats_get(e, &s0);
  ok(build_run(e, host, "mem", body, NULL, &y) == GPAR_KERNEL_COMPILED && y == 7, "a first build is compiled (y = 7)");
  ok(build_run(e, host, "mem", body, NULL, &y) == GPAR_KERNEL_MEMORY_HIT && y == 7, "another kernel, same text: a memory hit");
  ok(build_run(e, host, "mem", body, "/* other */", &y) == GPAR_KERNEL_COMPILED, "another preamble: compiled");
  ok(build_run(e, host, "mem", body2, NULL, &y) == GPAR_KERNEL_COMPILED && y == 5, "another body: compiled (y = 5)");
  gpar_stats_get(e, &s1);
  ok(s1.kernel_builds - s0.kernel_builds == 3 && s1.kernel_memory_hits - s0.kernel_memory_hits == 1 &&
         s1.kernel_disk_hits == s0.kernel_disk_hits && s1.kernel_build_us > s0.kernel_build_us,
     "gpar_stats: 3 builds, 1 memory hit, no disk hit, build time counted (%llu us)",
     (unsigned long long)(s1.kernel_build_us - s0.kernel_build_us));
  int ocl = gpar_device_find(e, GPAR_BACKEND_OPENCL, -1, 0);
  if (ocl >= 0)
    ok(build_run(e, ocl, "mem", body, NULL, &y) != GPAR_KERNEL_MEMORY_HIT && y == 7, "an OpenCL device builds its own");
  else
    skip(1, "no OpenCL device");
  gpar_shutdown(e);
  e = engine_with(dir, 0);
  gpar_stats_get(e, &s0);
  ok(build_run(e, host, "mem", body, NULL, &y) == GPAR_KERNEL_DISK_HIT && y == 7, "a new engine: a disk hit");
  gpar_stats_get(e, &s1);
  ok(s1.kernel_disk_hits == 1 && s1.kernel_builds == 0, "gpar_stats: 1 disk hit, no build");
  gpar_shutdown(e);
  gpar_engine *off = engine_with("", 0);
  ok(build_run(off, host, "nodisk", body, "/* no disk */", &y) == GPAR_KERNEL_COMPILED, "no disk cache: compiled");
  gpar_shutdown(off);
  off = engine_with("", 0);
  ok(build_run(off, host, "nodisk", body, "/* no disk */", &y) == GPAR_KERNEL_COMPILED,
     "no disk cache: a new engine compiles again");
  gpar_shutdown(off);
}

/* Every device compiles a kernel that no other device has built, last device first and with no
 * disk cache, so no build comes from another: PoCL 3.1 files the second of two alike devices'
 * build under the first (backends/opencl/opencl_kernel.c builds such a one again alone). */
static void test_each_device(void) {
  gpar_engine *e = engine_with("", 0);
  int n = gpar_device_count(e);
  for (int dev = n - 1; dev >= 0; dev--) {
    char pre[64];
    snprintf(pre, sizeof pre, "/* first built on device %d */", dev);
    float y = 0;
    int origin = build_run(e, dev, "each", body, pre, &y);
    ok(origin == GPAR_KERNEL_COMPILED && y == 7, "device %d of %d, first to build its text: compiled, runs (y = %g)", dev,
       n, y);
  }
  gpar_shutdown(e);
}

/* ---------------------------------------------------------------- entries not to trust */

/* The entry file (in dir) whose key names kernel `name` with body b; "" when none. */
static void entry_of(const char *dir, const char *name, const char *b, char *path, size_t cap) {
  char want[512];
  snprintf(want, sizeof want, "entry: %s\n", name);
  path[0] = 0;
  DIR *dp = opendir(dir);
  struct dirent *de;
  while (dp && (de = readdir(dp))) {
    if (!strstr(de->d_name, ".gkc") || strstr(de->d_name, ".tmp")) continue;
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
    FILE *f = fopen(p, "rb");
    static char buf[1 << 20];
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = 0;
    if (memmem(buf, n, want, strlen(want)) && memmem(buf, n, b, strlen(b))) snprintf(path, cap, "%s", p);
  }
  if (dp) closedir(dp);
}

static unsigned char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  unsigned char *b = malloc(1 << 22);
  *n = f && b ? fread(b, 1, 1 << 22, f) : 0;
  if (f) fclose(f);
  return b;
}
static void spill(const char *path, const void *b, size_t n) {
  FILE *f = fopen(path, "wb");
  if (f) {
    fwrite(b, 1, n, f);
    fclose(f);
  }
}

enum { FLIP, TRUNCATE, MAGIC, STALE, UNLOADABLE, NDAMAGE };
static const char *const damage_name[NDAMAGE] = {"a flipped payload byte", "a truncated file", "a bad header",
                                                 "another build's entry under this name", "a payload that does not load"};

/* Damage the entry at path; the stale case puts the entry of the same kernel with body2 there. */
static void damage(const char *dir, const char *path, int how) {
  size_t n;
  unsigned char *b = slurp(path, &n);
  uint64_t klen = 0;
  memcpy(&klen, b + 8, 8);
  if (how == FLIP) b[n - 1] ^= 0x40;
  if (how == TRUNCATE) n /= 2;
  if (how == MAGIC) b[0] = 'X';
  if (how == STALE) {
    char other[1024];
    entry_of(dir, "stale", body2, other, sizeof other);
    free(b);
    b = slurp(other, &n);
  }
  if (how == UNLOADABLE) { /* a right key and checksum over a payload that is no binary at all */
    static const char junk[] = "this is not a shared object, a cubin or a program binary";
    n = 32 + klen + sizeof junk;
    uint64_t plen = sizeof junk, sum = kc_fmt_hash((const unsigned char *)junk, plen, 2);
    memcpy(b + 16, &plen, 8);
    memcpy(b + 24, &sum, 8);
    memcpy(b + 32 + klen, junk, sizeof junk);
  }
  spill(path, b, n);
  free(b);
}

static void test_untrusted(const char *dir) {
  float y;
  for (int how = 0; how < NDAMAGE; how++) {
    char name[32], path[1024];
    snprintf(name, sizeof name, how == STALE ? "stale" : "damaged%d", how);
    gpar_engine *e = engine_with(dir, GPAR_BACKEND_HOST);
    int first = build_run(e, host, name, body, NULL, &y);
    if (how == STALE) build_run(e, host, name, body2, NULL, &y); /* the other build's entry */
    gpar_shutdown(e);
    entry_of(dir, name, body, path, sizeof path);
    ok(first == GPAR_KERNEL_COMPILED && path[0], "%s: an entry was written (%s)", damage_name[how], path);
    damage(dir, path, how);
    e = engine_with(dir, GPAR_BACKEND_HOST);
    int o = build_run(e, host, name, body, NULL, &y);
    ok(o == GPAR_KERNEL_COMPILED && y == 7, "%s: not trusted, rebuilt from source (y = %g)", damage_name[how], y);
    gpar_shutdown(e);
    e = engine_with(dir, GPAR_BACKEND_HOST);
    o = build_run(e, host, name, body, NULL, &y);
    ok(o == GPAR_KERNEL_DISK_HIT && y == 7, "%s: the rebuilt entry replaced it (a disk hit next)", damage_name[how]);
    gpar_shutdown(e);
  }
}

/* ---------------------------------------------------------------- processes at once */

/* A child: ROUNDS times, a new engine builds the kernel on every device (compiling it, or
 * loading what another child wrote) and runs it; 0 when every run was right. Not quiet: the
 * parent reads its stderr for a partial entry it saw. */
enum { CHILDREN = 3, ROUNDS = 2 };
static int child(const char *dir) {
  gpar_config cfg;
  gpar_engine *e = NULL;
  gpar_config_init(&cfg);
  cfg.kernel_cache_dir = dir;
  cfg.quiet = 0;
  if (gpar_init(&e, &cfg) != GPAR_OK) return 2;
  int bad = 0;
  for (int r = 0; r < ROUNDS; r++) {
    for (int d = 0; d < gpar_device_count(e); d++) {
      float y = 0;
      int o = build_run(e, d, "together", body, "/* built by several processes at once */", &y);
      bad |= !o || y != 7;
    }
    gpar_shutdown(e);
    if (r + 1 < ROUNDS && gpar_init(&e, &cfg) != GPAR_OK) return 2;
  }
  return bad;
}

static void test_processes(const char *self, const char *dir) {
  pid_t pid[CHILDREN];
  char errs[CHILDREN][600];
  for (int i = 0; i < CHILDREN; i++) {
    snprintf(errs[i], sizeof errs[i], "%s/child%d.err", dir, i);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 2, errs[i], O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    char *argv[] = {(char *)self, "--child", (char *)dir, NULL};
    if (posix_spawn(&pid[i], self, &fa, NULL, argv, environ) != 0) pid[i] = -1;
    posix_spawn_file_actions_destroy(&fa);
  }
  int all = 1, partial = 0;
  for (int i = 0; i < CHILDREN; i++) {
    int ws = 0;
    all &= pid[i] > 0 && waitpid(pid[i], &ws, 0) == pid[i] && WIFEXITED(ws) && WEXITSTATUS(ws) == 0;
    size_t n;
    unsigned char *b = slurp(errs[i], &n);
    if (b && memmem(b, n, "truncated or corrupt", 20)) partial = 1;
    if (b && n) diag("  child %d said: %.300s", i, b);
    free(b);
    unlink(errs[i]);
  }
  ok(all, "%d processes building one kernel on every device at once, %d engines each: all right", CHILDREN, ROUNDS);
  ok(!partial, "  none of them ever read a partial entry (each entry appears whole, by rename)");
  int tmp = 0;
  DIR *dp = opendir(dir);
  struct dirent *de;
  while (dp && (de = readdir(dp)))
    if (strstr(de->d_name, ".tmp")) tmp++;
  if (dp) closedir(dp);
  gpar_engine *e = engine_with(dir, 0);
  float y;
  ok(tmp == 0 && build_run(e, host, "together", body, "/* built by several processes at once */", &y) == GPAR_KERNEL_DISK_HIT,
     "  left: no temporary file (%d), an entry the next engine loads", tmp);
  gpar_shutdown(e);
}

/* GPAR_CACHE=0 turns the disk cache off; without GPAR_CACHE_DIR an engine's cache is under
 * XDG_CACHE_HOME (gpar_config_get shows the defaults filled in). */
static void test_environment(void) {
  gpar_config cfg, got;
  char *dir = strdup(getenv("GPAR_CACHE_DIR") ? getenv("GPAR_CACHE_DIR") : "");
  setenv("GPAR_CACHE", "0", 1);
  gpar_config_init(&cfg);
  ok(cfg.kernel_cache_dir && !*cfg.kernel_cache_dir, "GPAR_CACHE=0: kernel_cache_dir is \"\" (no disk cache)");
  unsetenv("GPAR_CACHE");
  unsetenv("GPAR_CACHE_DIR");
  gpar_config_init(&cfg);
  cfg.quiet = 1;
  cfg.backends = GPAR_BACKEND_HOST;
  gpar_engine *e = NULL;
  int st = gpar_init(&e, &cfg);
  if (!st) st = gpar_config_get(e, &got);
  const char *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
  char want[600] = "";
  if (x && *x) snprintf(want, sizeof want, "%s/gpar", x);
  else if (h && *h) snprintf(want, sizeof want, "%s/.cache/gpar", h);
  ok(!st && got.kernel_cache_dir && !strcmp(got.kernel_cache_dir, want) && got.kernel_cc && *got.kernel_cc,
     "no GPAR_CACHE_DIR: the engine's cache is %s, its compiler '%s'", got.kernel_cache_dir ? got.kernel_cache_dir : "(null)",
     got.kernel_cc ? got.kernel_cc : "(null)");
  if (e) gpar_shutdown(e);
  setenv("GPAR_CACHE_DIR", dir, 1);
  free(dir);
}

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "--child")) return child(argv[2]);
  tap_start();
  const char *dir = ku_cache_dir();
  gpar_engine *e = engine_with(dir, GPAR_BACKEND_HOST);
  host = gpar_device_find(e, GPAR_BACKEND_HOST, -1, 0);
  gpar_shutdown(e);
  if (tu_want(argc, argv, "hits")) test_memory_and_disk(dir);
  if (tu_want(argc, argv, "each")) test_each_device();
  if (tu_want(argc, argv, "untrusted")) test_untrusted(dir);
  if (tu_want(argc, argv, "processes")) test_processes(argv[0], dir);
  if (tu_want(argc, argv, "environment")) test_environment();
  return done_testing();
}
