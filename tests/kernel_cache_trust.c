/* kernel_cache_trust.c: what the kernels' disk cache refuses to trust, on the host backend (whose
 * payload is a shared object that libgpar loads: native code), then on OpenCL. A planted entry holds the right
 * key of a kernel (y = a * x + y, so y = 7) and, with a checksum that matches, the payload of
 * another build of it (y = 666): placed as this user's own 0600 file in this user's 0700 folder
 * it is a disk hit (y = 666: the plant works). Planted instead (a) owned by another user (root
 * only: chown to 65534), (b) in a folder that group and others can write, (c) as a symbolic link
 * to a good plant elsewhere, (d) as a FIFO (the watchdog turns a hang into a failure), (e) as a
 * file that group and others can write: each is refused with a line on stderr saying why, and
 * the kernel is compiled and runs right (y = 7). Then `#include` and the other directives that
 * read files are refused at gpar_kernel_create (GPAR_EINVAL with the line and column), since
 * the cache key cannot hold what they read; other directives, and the words in comments and
 * strings, are not. Mutants seen failing: in disk.c, `sb.st_uid != geteuid()` as `0`, and
 * O_NOFOLLOW dropped from the entry's open. */
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "kernel_cache_fmt.h"
#include "kernel_util.h"

static const char params[] = "u64 n, f32 a, in f32 *x, inout f32 *y";
static const char good[] = "gpar_u64 i = GPAR_GLOBAL_ID(0); if (i < n) y[i] = a * x[i] + y[i];";
static const char evil[] = "gpar_u64 i = GPAR_GLOBAL_ID(0); if (i < n) y[i] = 666;";
static char root[512], base[600]; /* the program's folder; the backend's under it */
static unsigned backend;

/* Build kernel "trust" (body b) on the host with cache folder dir, run it on y = 1, x = 2,
 * a = 3: its origin (0 on a failure), y[last] in *y, what libgpar said on stderr in log. */
static int build_run(const char *dir, const char *b, float *y0, char *log, size_t cap) {
  enum { N = 64 };
  char errs[700];
  snprintf(errs, sizeof errs, "%s/stderr", root);
  fflush(stderr);
  int saved = dup(2), fd = open(errs, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  dup2(fd, 2);
  close(fd);
  gpar_config cfg;
  gpar_engine *e = NULL;
  gpar_config_init(&cfg);
  cfg.quiet = 0;
  cfg.backends = backend;
  cfg.kernel_cache_dir = dir;
  if (gpar_init(&e, &cfg) != GPAR_OK) bail_out("gpar_init");
  int dev = gpar_device_find(e, backend, -1, 0);
  gpar_kernel k = ku_kernel(e, "trust", params, b, NULL);
  gpar_kernel_props p;
  int st = gpar_kernel_info(k, dev, &p);
  float x[N], y[N];
  for (int i = 0; i < N; i++) x[i] = 2, y[i] = 1;
  gpar_buffer bx = ku_buffer_with(e, dev, x, sizeof x), by = ku_buffer_with(e, dev, y, sizeof y);
  gpar_arg a[4] = {gpar_arg_u64(N), gpar_arg_f32(3), gpar_arg_buffer(bx, 0), gpar_arg_buffer(by, 0)};
  gpar_grid g = {{1}, {N}};
  if (st == GPAR_OK) st = gpar_kernel_launch(k, dev, &g, a, 4);
  if (st == GPAR_OK) st = gpar_read(by, 0, y, sizeof y);
  *y0 = y[N - 1];
  gpar_buffer_release(bx);
  gpar_buffer_release(by);
  gpar_kernel_release(k);
  gpar_shutdown(e);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  FILE *f = fopen(errs, "r");
  size_t n = f ? fread(log, 1, cap - 1, f) : 0;
  if (f) fclose(f);
  log[n] = 0;
  if (n) diag("  libgpar said: %.400s", log);
  if (st != GPAR_OK) diag("  build_run: %s %s", gpar_status_name(st), gpar_last_error());
  return st == GPAR_OK ? p.origin : 0;
}

/* The one kernel entry a build left in dir (its name in name): the .gkc file whose key is a
 * kernel's, not the record of the device's target (target.c) beside it, whatever order readdir
 * gives (tmpfs lists the newest first); its bytes, *n long (malloc'ed). */
static unsigned char *only_entry(const char *dir, char *name, size_t cap, size_t *n) {
  DIR *dp = opendir(dir);
  struct dirent *de;
  unsigned char *b = malloc(1 << 22), *kept = NULL;
  int kernels = 0;
  name[0] = 0;
  *n = 0;
  while (b && dp && (de = readdir(dp))) {
    if (!strstr(de->d_name, ".gkc") || strstr(de->d_name, ".tmp")) continue;
    char path[1400];
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    FILE *f = fopen(path, "rb");
    size_t len = f ? fread(b, 1, 1 << 22, f) : 0;
    if (f) fclose(f);
    uint64_t klen = 0;
    if (len >= 32) memcpy(&klen, b + 8, 8);
    if (len < 32 || klen > len - 32 || !memmem(b + 32, klen, "kernel dialect", 14)) continue; /* a record */
    kernels++;
    snprintf(name, cap, "%s", de->d_name);
    *n = len;
    kept = b;
    b = malloc(1 << 22);
  }
  if (dp) closedir(dp);
  free(b);
  if (kernels != 1) {
    static char why[200];
    snprintf(why, sizeof why, "a build left %d kernel entries in %s, not 1", kernels, dir);
    bail_out(why);
  }
  return kept;
}

static unsigned char *plant; /* good's header and key, evil's payload */
static size_t plant_len;
static char entry[256]; /* its file name */

/* The plant, from a build of each body in a folder of its own. */
static void make_plant(void) {
  char dg[700], de[700], name[256], log[4096];
  float y;
  snprintf(dg, sizeof dg, "%s/good", base);
  snprintf(de, sizeof de, "%s/evil", base);
  mkdir(dg, 0700);
  mkdir(de, 0700);
  if (build_run(dg, good, &y, log, sizeof log) != GPAR_KERNEL_COMPILED || y != 7) bail_out("the good build");
  if (build_run(de, evil, &y, log, sizeof log) != GPAR_KERNEL_COMPILED || y != 666) bail_out("the evil build");
  size_t gn, en;
  unsigned char *g = only_entry(dg, entry, sizeof entry, &gn), *v = only_entry(de, name, sizeof name, &en);
  uint64_t gk, ek, plen;
  memcpy(&gk, g + 8, 8);
  memcpy(&ek, v + 8, 8);
  plen = en - 32 - ek;
  uint64_t sum = kc_fmt_hash(v + 32 + ek, plen, 2);
  plant_len = 32 + gk + plen;
  plant = malloc(plant_len);
  memcpy(plant, g, 32 + gk);
  memcpy(plant + 16, &plen, 8);
  memcpy(plant + 24, &sum, 8);
  memcpy(plant + 32 + gk, v + 32 + ek, plen);
  free(g);
  free(v);
}

/* A fresh folder of mode 0700 for case c; the plant's path in it in path (not written). */
static void case_dir(const char *c, char *dir, size_t dcap, char *path, size_t pcap) {
  snprintf(dir, dcap, "%s/%s", base, c);
  if (mkdir(dir, 0700) != 0) bail_out("mkdir");
  snprintf(path, pcap, "%s/%s", dir, entry);
}

static int write_plant(const char *path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  int w = fd >= 0 && write(fd, plant, plant_len) == (ssize_t)plant_len;
  if (fd >= 0) close(fd);
  return w;
}

/* Build from dir: refused with a line naming why (a word of it), compiled, y = 7. */
static void expect_refused(const char *dir, const char *what, const char *why) {
  char log[8192];
  float y = 0;
  int o = build_run(dir, good, &y, log, sizeof log);
  ok(strstr(log, why) && strstr(log, "not trusted"), "%s: refused, saying '%s'", what, why);
  ok(o == GPAR_KERNEL_COMPILED && y == 7, "%s: the plant is not loaded: compiled, y = %g (666: the plant ran)", what,
     y);
}

static void test_plants(void) {
  char dir[700], path[1000], log[8192];
  float y = 0;
  case_dir("trusted", dir, sizeof dir, path, sizeof path);
  int w = write_plant(path), o = build_run(dir, good, &y, log, sizeof log);
  ok(w && o == GPAR_KERNEL_DISK_HIT && y == 666,
     "the plant as this user's own 0600 entry is a disk hit: y = %g (it is a fair plant)", y);

  case_dir("owner", dir, sizeof dir, path, sizeof path);
  if (geteuid() != 0) {
    skip(2, "another user's entry: not root, cannot chown");
  } else if (!write_plant(path) || chown(path, 65534, 65534) != 0) {
    skip(2, "another user's entry: chown to 65534 failed");
  } else {
    expect_refused(dir, "an entry owned by another user", "owned by");
  }

  case_dir("groupdir", dir, sizeof dir, path, sizeof path);
  write_plant(path);
  chmod(dir, 0777);
  expect_refused(dir, "a folder that group and others can write", "writable by group or others");

  char elsewhere[1000];
  case_dir("link", dir, sizeof dir, path, sizeof path);
  snprintf(elsewhere, sizeof elsewhere, "%s/trusted/%s", base, entry);
  ok(symlink(elsewhere, path) == 0, "a symbolic link to the trusted plant at the entry's name");
  expect_refused(dir, "a symbolic link", "symbolic link");

  case_dir("fifo", dir, sizeof dir, path, sizeof path);
  ok(mkfifo(path, 0600) == 0, "a FIFO at the entry's name (a hang here ends in 'Bail out! timeout')");
  alarm(30);
  expect_refused(dir, "a FIFO", "not a regular file");
  alarm(120);

  case_dir("groupfile", dir, sizeof dir, path, sizeof path);
  write_plant(path);
  chmod(path, 0666);
  expect_refused(dir, "an entry that group and others can write", "writable by group or others");

  case_dir("fresh", dir, sizeof dir, path, sizeof path);
  rmdir(dir);
  struct stat sb;
  build_run(dir, good, &y, log, sizeof log);
  unsigned mode = stat(dir, &sb) == 0 ? (unsigned)(sb.st_mode & 0777) : 0;
  ok(mode == 0700, "a folder libgpar creates is 0700 (%03o)", mode);
}

/* ---------------------------------------------------------------- directives that read files */

static void test_directives(void) {
  gpar_engine *e = ku_host_engine_nocache(NULL);
  if (!e) bail_out("gpar_init");
  static const struct {
    const char *pre, *body, *where;
  } bad[] = {
      {"#include <math.h>\n", NULL, "line 1, column 1"},
      {"/* helpers */\nGPAR_FN int f(void) { return 1; }\n  #  include \"x.h\"\n", NULL, "line 3, column 3"},
      {"%:include <math.h>\n", NULL, "line 1, column 1"},
      {"#inc\\\nlude <math.h>\n", NULL, "line 1, column 1"},
      {"/* c */ #include_next <math.h>\n", NULL, "line 1, column 9"},
      {"#embed \"data.bin\"\n", NULL, "line 1, column 1"},
      {"#import <x.h>\n", NULL, "line 1, column 1"},
      {"#if __has_include(<x.h>)\n#endif\n", NULL, "line 1, column 5"},
      {NULL, "y[0] = 1;\n#include \"body.h\"\n", "line 2, column 1"},
      /* what compilers read otherwise than a plain scan: a comment opened or closed across a line
         splice (spaced too: gcc and clang take backslash, blanks, newline as one), ??/ (a newline
         without trigraphs, a splice with them: PoCL's), a trigraph in a literal, a lone quote in
         a skipped group, a digit separator (C23, C++14), a lone carriage return, a directive's
         name spliced with blanks, ??= */
      {"/\\\n* \" */\n#include \"x.h\"\n/\\\n* \" */\n", NULL, "line 3, column 1"},
      {"/* *\\\n/\n#include \"x.h\"\n/* */\n", NULL, "line 3, column 1"},
      {"/\\ \t\n* \" */\n#include \"x.h\"\n/\\ \n* \" */\n", NULL, "line 3, column 1"},
      {"#define Q ?\?/\n#include \"x.h\"\n", NULL, "line 2, column 1"},
      {"GPAR_FN int q(void) { return '?\?/''; }\n#include \"x.h\"\n/* ' */\n", NULL, "line 2, column 1"},
      {"#if 0\n'\n#endif\n#include \"x.h\"\n#if 0\n'\n#endif\n", NULL, "line 4, column 1"},
      {"#if 1'0 && __has_include(\"x.h\")\n#endif\n", NULL, "line 1, column 12"},
      {"GPAR_FN int c(void) { return 1; }\r#include \"x.h\"\r", NULL, "line 2, column 1"},
      {"#inc\\ \nlude \"x.h\"\n", NULL, "line 1, column 1"},
      {"?\?=include \"x.h\"\n", NULL, "line 1, column 1"},
      /* inline assembly: gas's .incbin reads a file (a host kernel's y came from it) */
      {"__asm__(\".section .rodata\\n.incbin \\\"/etc/hostname\\\"\\n.text\");\n", NULL, "line 1, column 1"},
      {NULL, "  asm volatile(\"\");\n  y[0] = 1;\n", "line 1, column 3"},
      {"GPAR_FN void f(void) { __asm(\"nop\"); }\n", NULL, "line 1, column 24"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    gpar_kernel k = {0};
    int st = gpar_kernel_create(e, "inc", params, bad[i].body ? bad[i].body : good, bad[i].pre, &k);
    const char *msg = gpar_last_error();
    ok(st == GPAR_EINVAL && k.id == 0 && strstr(msg, bad[i].where), "%s %d refused: %s %s",
       bad[i].body ? "body" : "preamble", (int)i, gpar_status_name(st), msg);
    if (k.id) gpar_kernel_release(k);
  }
  static const char *const fine[] = {
      "#define TWICE(v) (2 * (v))\n#if 1\n#endif\n#pragma GCC diagnostic ignored \"-Wunused\"\n",
      "/* #include <math.h> */\n// #include <x.h>\n", "GPAR_FN const char *s(void) { return \"#include <x>\"; }\n",
      "GPAR_FN float f(void) { return 1.5e-3f + 0x1p+2f + '\\''; } /* it's */\n#define J(a, b) a ## b\n"};
  for (int i = 0; i < 4; i++) {
    gpar_kernel k = {0};
    int st = gpar_kernel_create(e, "fine", params, good, fine[i], &k);
    if (st == GPAR_OK) st = gpar_kernel_build(k, gpar_device_find(e, GPAR_BACKEND_HOST, -1, 0));
    ok(st == GPAR_OK, "preamble %d (other directives, the words in a comment or string): built (%s %s)", i,
       gpar_status_name(st), gpar_last_error());
    if (k.id) gpar_kernel_release(k);
  }
  gpar_shutdown(e);
}

int main(int argc, char **argv) {
  tap_start();
  snprintf(root, sizeof root, "%s", ku_cache_dir());
  for (int b = 0; b < 2 && tu_want(argc, argv, "plants"); b++) { /* the host, then OpenCL (PoCL) */
    backend = b ? GPAR_BACKEND_OPENCL : GPAR_BACKEND_HOST;
    gpar_engine *e = NULL;
    gpar_config cfg;
    gpar_config_init(&cfg);
    cfg.quiet = 1;
    cfg.backends = backend;
    int have = gpar_init(&e, &cfg) == GPAR_OK && gpar_device_find(e, backend, -1, 0) >= 0;
    if (e) gpar_shutdown(e);
    if (!have) {
      skip(14, "no OpenCL device");
      continue;
    }
    diag("%s", b ? "OpenCL: its payload is a program binary" : "host: its payload is a shared object");
    snprintf(base, sizeof base, "%s/%s", root, b ? "opencl" : "host");
    if (mkdir(base, 0700) != 0) bail_out("mkdir");
    make_plant();
    test_plants();
    free(plant);
  }
  if (tu_want(argc, argv, "directives")) test_directives();
  return done_testing();
}
