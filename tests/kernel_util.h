/* kernel_util.h: what the kernel tests share (header-only, like testutil.h): a private disk
 * cache folder per test program (removed at exit, so runs never see each other's builds), an
 * engine that uses it, kernel creation that bails out on failure, device names for messages. */
#ifndef GPAR_TESTS_KERNEL_UTIL_H
#define GPAR_TESTS_KERNEL_UTIL_H

#include <ftw.h>
#include <unistd.h>

#include "testutil.h"

static char ku_dir[512];

static int ku_rm(const char *path, const struct stat *sb, int type, struct FTW *f) {
  (void)sb;
  (void)type;
  (void)f;
  return remove(path);
}
static void ku_cleanup(void) {
  if (ku_dir[0]) nftw(ku_dir, ku_rm, 16, FTW_DEPTH | FTW_PHYS);
}

/* A fresh cache folder for this program, set as GPAR_CACHE_DIR (engines made after this use it). */
static inline const char *ku_cache_dir(void) {
  if (!ku_dir[0]) {
    const char *t = getenv("TMPDIR");
    snprintf(ku_dir, sizeof ku_dir, "%s/gpar-ktest-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(ku_dir)) bail_out("mkdtemp failed");
    atexit(ku_cleanup);
    setenv("GPAR_CACHE_DIR", ku_dir, 1);
  }
  return ku_dir;
}

/* An engine with every backend and this program's cache folder. */
static inline gpar_engine *ku_engine(int host_threads) {
  ku_cache_dir();
  return tu_engine(0, host_threads, 0);
}

/* An engine of the host device alone with no disk cache (every build compiles), its compiler
 * command cc (NULL: the default); NULL when it cannot be made. */
static inline gpar_engine *ku_host_engine_nocache(const char *cc) {
  gpar_config cfg;
  gpar_engine *e = NULL;
  gpar_config_init(&cfg);
  cfg.quiet = 1;
  cfg.backends = GPAR_BACKEND_HOST;
  cfg.kernel_cache_dir = "";
  cfg.kernel_cc = cc;
  return gpar_init(&e, &cfg) == GPAR_OK ? e : NULL;
}

/* A kernel; bails out when it cannot be made (the signatures here are right). */
static inline gpar_kernel ku_kernel(gpar_engine *eng, const char *name, const char *params, const char *body,
                                    const char *preamble) {
  gpar_kernel k = {0};
  int st = gpar_kernel_create(eng, name, params, body, preamble, &k);
  if (st != GPAR_OK) {
    printf("Bail out! gpar_kernel_create(%s): %s %s\n", name, gpar_status_name(st), gpar_last_error());
    exit(1);
  }
  return k;
}

/* "2 (opencl: pthread-...)" for messages. */
static inline const char *ku_devname(gpar_engine *eng, int d) {
  static char buf[64][160];
  gpar_device_props p;
  if (gpar_device_info(eng, d, &p) != GPAR_OK) return "?";
  snprintf(buf[d & 63], sizeof buf[0], "%d (%s: %.100s)", d, p.backend, p.name);
  return buf[d & 63];
}

static inline int ku_backend(gpar_engine *eng, int d) {
  gpar_device_props p;
  return gpar_device_info(eng, d, &p) == GPAR_OK ? p.backend_id : 0;
}

/* A buffer on dev holding n bytes of src. */
static inline gpar_buffer ku_buffer_with(gpar_engine *eng, int dev, const void *src, size_t n) {
  gpar_buffer b = tu_buffer(eng, dev, n);
  if (gpar_write(b, 0, src, n) != GPAR_OK) bail_out("gpar_write failed");
  return b;
}

#endif
