/* kernel_reads.c: a kernel build reads no file outside its cache key (gpar.h, "What a build may
 * read"), so no device ever runs a binary built from an old version of a file.
 * - End to end, on every device that builds kernels: each spelling below tries to make the build
 *   read a file (an #include, an assembler's .incbin, a __has_include test); the test builds and
 *   runs it, changes the file, and in a new engine with the same disk cache builds and runs it
 *   again. Each is refused at gpar_kernel_create (it is, today), fails to build, or gives the new
 *   file's value: never the old one. The spellings are those a plain scan of the text missed:
 *   `#` then a vertical tab or form feed (gcc, clang and PoCL read an #include), __has_include
 *   and __asm__ built by token pasting, and `0'1'` (a digit separator that gnu17 and OpenCL C 1.2
 *   do not have) or a raw string hiding the rest of their line from a scan that has them.
 * - The host compiler's own guard, with the text check out of the way: a compiler command that
 *   makes the build read a file (GPAR_CC="cc -include F", "cc -imacros F") fails with
 *   GPAR_EBUILD naming it (the compiler's -MD list is checked).
 * - A host build in a process whose stdin, stdout and stderr are closed: a compile error is
 *   GPAR_EBUILD with the compiler's log, a good kernel runs, and the target names the compiler's
 *   version (the spawn's pipes got fds 0-2, which its dup2 onto 1 and 3 overwrote).
 * Mutants: sig.c's directive_word skipping only spaces and tabs after '#' (the \v and \f cases
 * are accepted and the host and PoCL ran the old value), find_file_read without the paste check
 * (pasted __has_include ran stale on the host... see the commit), past_number with digit
 * separators in every reading, no raw-string reading; host_cc.c's read_only_source returning
 * GPAR_OK (the -include cases build); above_3 not called (GPAR_EBACKEND, empty log). */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "kernel_util.h"

static char dir[600], fpath[700], gpath[700], bpath[700];

static void put_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f || fputs(text, f) < 0 || fclose(f) != 0) bail_out("cannot write a test file");
}

/* text with @F@ (a header defining READ_VALUE), @G@ (a file whose existence is tested) and @B@
 * (a file whose first byte is a digit) replaced by their paths. */
static char *expand(const char *text) {
  static char out[4096];
  size_t n = 0;
  for (const char *p = text; *p && n < sizeof out - 800;)
    if (p[0] == '@' && strchr("FGB", p[1]) && p[1] && p[2] == '@') {
      n += (size_t)snprintf(out + n, sizeof out - n, "%s", p[1] == 'F' ? fpath : p[1] == 'G' ? gpath : bpath);
      p += 3;
    } else {
      out[n++] = *p++;
    }
  out[n] = 0;
  return out;
}

#define BLOB_ASM "(\".section .rodata\\n.globl blob\\nblob: .incbin \\\"@B@\\\"\\n.text\")"
#define BLOB_VALUE "extern const char blob[];\nGPAR_FN gpar_i32 value(void) { return blob[0] - '0'; }\n"
#define PROBED "GPAR_FN gpar_i32 value(void) { return 2; }\n#else\nGPAR_FN gpar_i32 value(void) { return 1; }\n#endif\n"
static const struct spelling {
  const char *what, *pre;
} spellings[] = {
    {"#, vertical tab, include", "#\vinclude \"@F@\"\nGPAR_FN gpar_i32 value(void) { return READ_VALUE; }\n"},
    {"#, form feed, include", "#\finclude \"@F@\"\nGPAR_FN gpar_i32 value(void) { return READ_VALUE; }\n"},
    {"#, space, vertical tab, space, include",
     "# \v include \"@F@\"\nGPAR_FN gpar_i32 value(void) { return READ_VALUE; }\n"},
    {"%:, vertical tab, include", "%:\vinclude \"@F@\"\nGPAR_FN gpar_i32 value(void) { return READ_VALUE; }\n"},
    {"__has_include by token pasting", "#define CAT(a, b) a##b\n#if CAT(__has_, include)(\"@G@\")\n" PROBED},
    {"__asm__ by token pasting", "#define CAT(a, b) a##b\nCAT(__as, m__)" BLOB_ASM ";\n" BLOB_VALUE},
    {"__asm__ after 0'1'", "#define SECOND(a, b) b\nSECOND(0'1', __asm__" BLOB_ASM "); /* ' */\n" BLOB_VALUE},
    {"__has_include after 0'1'", "#define SECOND(a, b) b\n#if SECOND(0'1', __has_include(\"@G@\")) /* ' */\n" PROBED},
    {"__asm__ after a raw string",
     "GPAR_FN const char *r(void) { return R\"x(\")x\"; } __asm__" BLOB_ASM ";\n" BLOB_VALUE},
    {"__has_include after a raw string",
     "#define SECOND(a, b) b\n#define PROBE(f) SECOND(R\"x(\")x\", __has_include(f))\n#if PROBE(\"@G@\")\n" PROBED},
};

/* The file versions: 1, then 2. */
static void files_at(int v) {
  char text[64];
  snprintf(text, sizeof text, "#define READ_VALUE %d\n", v);
  put_file(fpath, text);
  put_file(bpath, v == 1 ? "1" : "2");
  if (v == 1)
    unlink(gpath);
  else
    put_file(gpath, "\n");
}

/* Build and run spelling s on dev in a new engine (the program's cache folder): the value, 0 when
 * refused at create, -1 when it did not build or run. */
static int run_once(const struct spelling *s, int dev, char *msg, size_t cap) {
  gpar_engine *eng = ku_engine(0);
  gpar_kernel k = {0};
  int v = 0, st = gpar_kernel_create(eng, "reads", "inout i32 *y", "y[0] = value();", expand(s->pre), &k);
  snprintf(msg, cap, "%s", gpar_last_error());
  if (st == GPAR_OK) {
    gpar_buffer b = tu_buffer(eng, dev, 4);
    gpar_grid g = {{1}, {1}};
    gpar_arg a[] = {gpar_arg_buffer(b, 0)};
    st = gpar_kernel_launch(k, dev, &g, a, 1);
    if (st == GPAR_OK) st = gpar_read(b, 0, &v, 4);
    if (st != GPAR_OK) v = -1, snprintf(msg, cap, "%s: %s", gpar_status_name(st), gpar_last_error());
    gpar_buffer_release(b);
    gpar_kernel_release(k);
  }
  gpar_shutdown(eng);
  return v;
}

static void test_no_stale(void) {
  gpar_engine *eng = ku_engine(0);
  int ndev = gpar_device_count(eng);
  char why[256];
  int can[64] = {0};
  for (int d = 0; d < ndev && d < 64; d++) can[d] = gpar_kernel_support(eng, d, why, sizeof why) == GPAR_OK;
  gpar_shutdown(eng);
  for (size_t i = 0; i < sizeof spellings / sizeof spellings[0]; i++)
    for (int d = 0; d < ndev && d < 64; d++) {
      if (!can[d]) continue;
      char m1[512], m2[512];
      files_at(1);
      int v1 = run_once(&spellings[i], d, m1, sizeof m1);
      files_at(2);
      int v2 = run_once(&spellings[i], d, m2, sizeof m2);
      const char *how = v1 == 0 && v2 == 0 ? "refused at create"
                        : v2 < 0           ? "not built"
                        : v2 == 2          ? "new value"
                                           : "OLD VALUE";
      ok(v2 != 1 && !(v1 == 0 && v2 != 0), "%s, device %d: %s", spellings[i].what, d, how);
      if (v1 == 0 && d == 0) diag("  %s", m1);
      if (v2 == 1 || v2 < 0) diag("  first %d (%s), then %d (%s)", v1, m1, v2, m2);
    }
}

/* ---------------------------------------------------------------- the host's own guard */

static void test_cc_reads(void) {
  static const char *const opt[] = {"-include", "-imacros"};
  files_at(1);
  for (int i = 0; i < 2; i++) {
    char cc[900];
    snprintf(cc, sizeof cc, "cc %s %s", opt[i], fpath);
    gpar_engine *e = ku_host_engine_nocache(cc);
    if (!e) bail_out("gpar_init");
    gpar_kernel k = ku_kernel(e, "cc_reads", "inout i32 *y", "y[0] = 3;", NULL);
    int st = gpar_kernel_build(k, gpar_device_find(e, GPAR_BACKEND_HOST, -1, 0));
    ok(st == GPAR_EBUILD && strstr(gpar_last_error(), fpath), "GPAR_CC=\"cc %s F\": GPAR_EBUILD naming F (%s %s)",
       opt[i], gpar_status_name(st), gpar_last_error());
    gpar_shutdown(e);
  }
}

/* ---------------------------------------------------------------- fds 0-2 closed */

/* In a child whose fds in mask (bit i: fd i) are closed: a compile error, a good kernel, the
 * target. The results go back as one line on fd out. */
static void closed_fds_child(int out, int mask) {
  for (int fd = 0; fd < 3; fd++)
    if (mask & (1 << fd)) close(fd);
  gpar_engine *e = ku_host_engine_nocache(NULL);
  char line[1024], log[2048] = "", target[256] = "";
  int bad = -1, good = -1, y = 0, dev = -1;
  if (e) {
    dev = gpar_device_find(e, GPAR_BACKEND_HOST, -1, 0);
    gpar_kernel kb = {0}, kg = {0};
    gpar_kernel_create(e, "bad_one", "inout i32 *y", "y[0] = undefined_thing;", NULL, &kb);
    bad = gpar_kernel_build(kb, dev);
    gpar_kernel_log(kb, dev, log, sizeof log, NULL);
    gpar_kernel_support(e, dev, target, sizeof target);
    gpar_kernel_create(e, "good_one", "inout i32 *y", "y[0] = 5;", NULL, &kg);
    gpar_buffer b = tu_buffer(e, dev, 4);
    gpar_grid g = {{1}, {1}};
    gpar_arg a[] = {gpar_arg_buffer(b, 0)};
    good = gpar_kernel_launch(kg, dev, &g, a, 1);
    if (good == GPAR_OK) good = gpar_read(b, 0, &y, 4);
    gpar_shutdown(e);
  }
  int n = snprintf(line, sizeof line, "%d %d %d %d|%s|%.200s\n", bad, good, y, strstr(log, "undefined_thing") != NULL,
                   target, log);
  if (write(out, line, (size_t)n) != n) _exit(3);
  _exit(0);
}

static void closed_fds(int mask, const char *what) {
  int p[2];
  if (pipe(p)) bail_out("pipe");
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    if (p[1] < 3) bail_out("pipe on a low fd"); /* 0-2 open here: the child closes them */
    closed_fds_child(p[1], mask);
  }
  close(p[1]);
  char buf[1200] = "";
  ssize_t n = read(p[0], buf, sizeof buf - 1);
  close(p[0]);
  int ws = 0;
  waitpid(pid, &ws, 0);
  int bad = 0, good = 0, y = 0, named = 0;
  buf[n > 0 ? n : 0] = 0;
  sscanf(buf, "%d %d %d %d", &bad, &good, &y, &named);
  char *target = strchr(buf, '|');
  ok(bad == GPAR_EBUILD && named, "%s closed: a compile error is GPAR_EBUILD with the compiler's log (%d, %s)", what,
     bad, named ? "log names undefined_thing" : "no log");
  ok(good == GPAR_OK && y == 5, "  a good kernel builds and runs (%d, y = %d)", good, y);
  ok(target && !strncmp(target + 1, "cc: ", 4) && target[5] && target[5] != ' ' && target[5] != '(',
     "  the target names the compiler's version: %.60s", target ? target + 1 : "(none)");
}

static void test_closed_fds(void) {
  closed_fds(1, "stdin");
  closed_fds(2, "stdout");
  closed_fds(4, "stderr");
  closed_fds(7, "stdin, stdout and stderr");
}

int main(int argc, char **argv) {
  tap_start();
  const char *t = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/gpar-reads-XXXXXX", t && *t ? t : "/tmp");
  if (!mkdtemp(dir)) bail_out("mkdtemp");
  snprintf(fpath, sizeof fpath, "%s/f.h", dir);
  snprintf(gpath, sizeof gpath, "%s/probed.h", dir);
  snprintf(bpath, sizeof bpath, "%s/blob", dir);
  if (tu_want(argc, argv, "stale")) test_no_stale();
  if (tu_want(argc, argv, "cc")) test_cc_reads();
  if (tu_want(argc, argv, "fds")) test_closed_fds();
  unlink(fpath), unlink(gpath), unlink(bpath), rmdir(dir);
  return done_testing();
}
