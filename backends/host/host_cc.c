/* host_cc.c: the system compiler that builds host kernels (gpar_config.kernel_cc: GPAR_CC, else
 * CC, else cc), run through /bin/sh: its identity and version (the kernel target), and a
 * compile into a shared object.
 *
 * A build reads no file but its own source, so that no cache entry can stand for a file that
 * changed since (gpar.h, "what a build may read"): the source is written alone into a new
 * private folder, where the compiler runs, with -nostdinc (the dialect header declares what it
 * needs itself); the words that read files are poisoned in the source (backend_kernel.h:
 * #pragma GCC poison, an error however they are spelled); and the compiler's own list of the
 * files it read (-MD) is checked: a build that read any other file fails with GPAR_EBUILD
 * naming it (an absolute #include that the text check missed, say).
 *
 * Identity (kernel_ident): the command, PATH, and the programs the command names resolved as the
 * shell finds them, to their real files; the target (`cc --version`'s first line) is read once
 * per identity, and the core keeps it in the disk cache with those files' size, mtime and inode
 * (core/kernel/target.c), so a new process builds from the disk cache without running cc. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend.h"
#include "host_internal.h"

extern char **environ;

/* ---------------------------------------------------------------- the compiler */

/* Everything fd gives until end of file, malloc'ed and NUL-terminated (NULL without memory). */
static char *read_fd(int fd) {
  char *text = NULL, buf[4096];
  size_t n = 0;
  FILE *f = open_memstream(&text, &n);
  ssize_t r;
  while ((r = read(fd, buf, sizeof buf)) > 0 || (r < 0 && errno == EINTR))
    if (f && r > 0) fwrite(buf, 1, (size_t)r, f);
  if (f && fclose(f) == 0) return text;
  return NULL;
}

/* /bin/sh -c script with stdout on out_fd, fd 3 on status_fd and stdin on /dev/null, SIGCHLD at
 * its default: an ignored signal stays ignored across exec, and the shell and the compiler
 * driver wait for their own children. The child's pid, or -1. */
static pid_t spawn_shell(const char *script, int out_fd, int status_fd) {
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  pid_t pid = -1;
  if (posix_spawn_file_actions_init(&fa)) return -1;
  if (posix_spawnattr_init(&at)) {
    posix_spawn_file_actions_destroy(&fa);
    return -1;
  }
  sigset_t def;
  sigemptyset(&def);
  sigaddset(&def, SIGCHLD);
  char *argv[] = {"sh", "-c", (char *)script, NULL};
  /* status_fd and out_fd are above 3 (run_shell), so neither dup2 overwrites the other's source */
  int bad = posix_spawn_file_actions_adddup2(&fa, status_fd, 3) || posix_spawn_file_actions_adddup2(&fa, out_fd, 1) ||
            posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0) ||
            posix_spawnattr_setsigdefault(&at, &def) || posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGDEF);
  if (bad || posix_spawn(&pid, "/bin/sh", &fa, &at, argv, environ)) pid = -1;
  posix_spawnattr_destroy(&at);
  posix_spawn_file_actions_destroy(&fa);
  return pid;
}

/* Move both ends of a pipe above fd 3 (a process whose stdin, stdout or stderr is closed gets
 * pipes on 0-2, which the child's dup2 onto 1 and 3 would overwrite or leave close-on-exec);
 * 0 on failure (both closed then). */
static int above_3(int fd[2]) {
  for (int i = 0; i < 2; i++)
    if (fd[i] >= 0 && fd[i] <= 3) {
      int moved = fcntl(fd[i], F_DUPFD_CLOEXEC, 4);
      close(fd[i]);
      fd[i] = moved;
    }
  if (fd[0] >= 0 && fd[1] >= 0) return 1;
  for (int i = 0; i < 2; i++)
    if (fd[i] >= 0) close(fd[i]), fd[i] = -1;
  return 0;
}

/* Run `cmd` through the shell; its output (stdout and stderr) malloc'ed into *out (may be NULL
 * without memory); the exit status, or -1 when it could not run.
 *
 * The status is not read from waitpid: in a process that ignores SIGCHLD (SIG_IGN or
 * SA_NOCLDWAIT) the kernel reaps children itself, and another thread's waitpid(-1) may reap
 * ours, so waitpid fails with ECHILD however the child ended (pclose did, and host kernels were
 * refused for the whole process). The shell reports it instead: it runs cmd, then writes `$?` to
 * fd 3, a pipe of ours, read after the output. The process's own signal dispositions are never
 * changed (other threads run); the child gets SIGCHLD's default (spawn_shell). waitpid still
 * reaps the child where the kernel does not; where it fails that is harmless. No number on fd
 * 3: the shell was killed before it wrote one (128, failed). */
static int run_shell(const char *cmd, char **out) {
  int po[2] = {-1, -1}, ps[2] = {-1, -1};
  char *script = malloc(strlen(cmd) + 48), *status = NULL;
  *out = NULL;
  if (script) sprintf(script, "{ %s\n} 3>&- 2>&1; echo $? >&3", cmd);
  pid_t pid = -1;
  if (script && !pipe2(po, O_CLOEXEC) && !pipe2(ps, O_CLOEXEC) && above_3(po) && above_3(ps))
    pid = spawn_shell(script, po[1], ps[1]);
  free(script);
  if (po[1] >= 0) close(po[1]); /* the child's now: end of file once it exits */
  if (ps[1] >= 0) close(ps[1]);
  if (pid >= 0) {
    *out = read_fd(po[0]);
    status = read_fd(ps[0]);
  }
  if (po[0] >= 0) close(po[0]);
  if (ps[0] >= 0) close(ps[0]);
  if (pid < 0) return -1;
  int ws = 0;
  pid_t w;
  while ((w = waitpid(pid, &ws, 0)) < 0 && errno == EINTR) {
  }
  char *end = NULL;
  long code = status ? strtol(status, &end, 10) : -1;
  int reported = status && end != status && code >= 0 && code <= 255;
  free(status);
  if (reported) return (int)code;
  return w == pid && WIFEXITED(ws) ? WEXITSTATUS(ws) : 128;
}

/* `$cc --version`'s first line, run once per compiler command in the process. */
static pthread_mutex_t version_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
  char cc[512], line[256];
  int status;
} versions[8];
static int nversions;

static int cc_version(const char *cc, char *line, size_t cap) {
  int st = -2;
  pthread_mutex_lock(&version_mu);
  for (int i = 0; i < nversions && st == -2; i++)
    if (!strcmp(versions[i].cc, cc)) st = versions[i].status, snprintf(line, cap, "%s", versions[i].line);
  pthread_mutex_unlock(&version_mu);
  if (st != -2) return st;
  char *cmd = malloc(strlen(cc) + 16), *out = NULL;
  if (!cmd) return -1;
  sprintf(cmd, "%s --version", cc);
  st = run_shell(cmd, &out);
  free(cmd);
  snprintf(line, cap, "%.*s", out ? (int)strcspn(out, "\n") : 0, out ? out : "");
  free(out);
  pthread_mutex_lock(&version_mu);
  if (nversions < 8) {
    snprintf(versions[nversions].cc, sizeof versions[0].cc, "%s", cc);
    snprintf(versions[nversions].line, sizeof versions[0].line, "%s", line);
    versions[nversions++].status = st;
  }
  pthread_mutex_unlock(&version_mu);
  return st;
}

/* The programs cmd names (its words that are not options), found as the shell finds them (a
 * word with a slash as it is, else the first executable in PATH) and resolved to their real
 * files, one per line into files; 0 when cmd holds more than plain words (quotes, $, ;, ...),
 * which only the shell can resolve, or its first word is not found. */
static int cc_files(const char *cmd, char *files, size_t cap) {
  if (strpbrk(cmd, "'\"\\$`;|&<>(){}*?[]~#=\n")) return 0;
  const char *path = getenv("PATH");
  size_t n = 0;
  files[0] = 0;
  for (const char *w = cmd; *w;) {
    w += strspn(w, " \t");
    size_t wl = strcspn(w, " \t");
    char word[PATH_MAX], found[PATH_MAX] = "", real[PATH_MAX];
    if (!wl || *w == '-' || wl >= sizeof word) {
      w += wl;
      continue;
    }
    snprintf(word, sizeof word, "%.*s", (int)wl, w);
    if (strchr(word, '/')) snprintf(found, sizeof found, "%s", word);
    for (const char *d = path ? path : ""; !*found && *d;) { /* PATH, in order */
      size_t dl = strcspn(d, ":");
      char cand[PATH_MAX];
      if ((size_t)snprintf(cand, sizeof cand, "%.*s/%s", (int)dl, dl ? d : ".", word) < sizeof cand &&
          access(cand, X_OK) == 0)
        snprintf(found, sizeof found, "%s", cand);
      d += dl + (d[dl] == ':');
    }
    if (!*found || !realpath(found, real)) {
      if (w == cmd + strspn(cmd, " \t")) return 0; /* the compiler itself */
    } else if (n + strlen(real) + 2 < cap) {
      n += (size_t)snprintf(files + n, cap - n, "%s\n", real);
    }
    w += wl;
  }
  return n > 0;
}

int gpar__host_kernel_ident(gpar__bdev *dev, char *buf, size_t cap) {
  const gpar__backend *be = (const gpar__backend *)dev;
  char files[2048];
  if (!cc_files(be->cc, files, sizeof files))
    return gpar__errorf(GPAR_ENOTSUP, "host kernels: `%s` is resolved by the shell only", be->cc);
  const char *path = getenv("PATH");
  snprintf(buf, cap, "command: %s\nPATH: %s\nprograms:\n%s", be->cc, path ? path : "", files);
  return GPAR_OK;
}

int gpar__host_kernel_target(gpar__bdev *dev, char *buf, size_t cap, char *files, size_t fcap) {
  const gpar__backend *be = (const gpar__backend *)dev;
  char line[256];
  int st = cc_version(be->cc, line, sizeof line);
  if (st != 0)
    return gpar__errorf(GPAR_ENOTSUP, "host kernels need a C compiler: `%s --version` %s (%s); set GPAR_CC or CC",
                        be->cc, st < 0 ? "did not run" : "failed", *line ? line : "no output");
  snprintf(buf, cap, "cc: %s (command: %s)", line, be->cc);
  if (!cc_files(be->cc, files, fcap)) files[0] = 0;
  return GPAR_OK;
}

/* ---------------------------------------------------------------- compile */

/* s single-quoted for the shell, into out. */
static void shell_quote(const char *s, char *out, size_t cap) {
  size_t n = 0;
  out[n++] = '\'';
  for (; *s && n + 5 < cap; s++) {
    if (*s == '\'') {
      memcpy(out + n, "'\\''", 4);
      n += 4;
    } else {
      out[n++] = *s;
    }
  }
  out[n++] = '\'';
  out[n] = 0;
}

static int write_file(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f) return 0;
  int ok = fwrite(data, 1, len, f) == len;
  return fclose(f) == 0 && ok;
}

static void *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  char *data = NULL;
  size_t n = 0;
  FILE *m = f ? open_memstream(&data, &n) : NULL;
  char buf[65536];
  size_t r;
  while (m && (r = fread(buf, 1, sizeof buf, f)) > 0) fwrite(buf, 1, r, m);
  int ok = m && !ferror(f) && fclose(m) == 0;
  if (f) fclose(f);
  if (!ok) {
    free(data);
    return NULL;
  }
  *len = n;
  return data;
}

/* GPAR_OK when the compiler's list of what it read (dir/kernel.d, -MD's make rule) names no
 * file but kernel.c; GPAR_EBUILD naming the first other file. */
static int read_only_source(const char *dir) {
  char path[600];
  size_t len = 0;
  snprintf(path, sizeof path, "%s/kernel.d", dir);
  char *deps = read_file(path, &len), *p = deps ? memchr(deps, ':', len) : NULL;
  if (!p) {
    free(deps);
    return gpar__errorf(GPAR_EBUILD,
                        "host kernels: the compiler wrote no list of the files it read (-MD -MF): "
                        "builds need one (GPAR_CC names a compiler that has -MD, as gcc and clang)");
  }
  int st = GPAR_OK;
  for (p++; st == GPAR_OK && p < deps + len;) {
    p += strspn(p, " \t\n\\");
    size_t n = 0;
    while (p + n < deps + len && !strchr(" \t\n", p[n])) n += p[n] == '\\' && p[n + 1] == ' ' ? 2 : 1;
    if (n && !(n == 8 && !strncmp(p, "kernel.c", 8)))
      st = gpar__errorf(GPAR_EBUILD,
                        "host kernels: the build read %.*s, which the kernel caches' keys cannot hold "
                        "(a kernel reads no file: put its text in the preamble)",
                        (int)(n < 300 ? n : 300), p);
    p += n;
  }
  free(deps);
  return st;
}

int gpar__host_kernel_compile(gpar__bdev *dev, const char *src, const char *opts, void **bin, size_t *len, char **log) {
  const gpar__backend *be = (const gpar__backend *)dev;
  const char *tmp = getenv("TMPDIR");
  char dir[512], q[1100], path[600], *cmd = NULL;
  snprintf(dir, sizeof dir, "%s/gpar-cc-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) return gpar__errorf(GPAR_EBACKEND, "host kernels: mkdtemp(%s): %s", dir, strerror(errno));
  snprintf(path, sizeof path, "%s/kernel.c", dir);
  int st = GPAR_OK;
  if (!write_file(path, src, strlen(src)))
    st = gpar__errorf(GPAR_EBACKEND, "host kernels: cannot write %s: %s", path, strerror(errno));
  shell_quote(dir, q, sizeof q);
  if (st == GPAR_OK && (cmd = malloc(strlen(be->cc) + strlen(opts) + strlen(q) + 80))) {
    sprintf(cmd, "cd %s && %s %s -MD -MF kernel.d -o kernel.so kernel.c -lm", q, be->cc, opts);
    int rc = run_shell(cmd, log);
    if (*log && !**log) {
      free(*log);
      *log = NULL;
    }
    if (rc != 0) {
      char first[400];
      gpar__log_errors(*log, first, sizeof first);
      st = rc < 0 ? gpar__errorf(GPAR_ENOTSUP, "host kernels: cannot run %s", be->cc)
                  : gpar__errorf(GPAR_EBUILD, "%s (exit %d): %s", be->cc, rc, first);
    }
  } else if (st == GPAR_OK) {
    st = gpar__errorf(GPAR_ENOMEM, "host: out of host memory");
  }
  free(cmd);
  if (st == GPAR_OK) st = read_only_source(dir);
  snprintf(path, sizeof path, "%s/kernel.so", dir);
  if (st == GPAR_OK && !(*bin = read_file(path, len)))
    st = gpar__errorf(GPAR_EBACKEND, "host kernels: cannot read %s", path);
  unlink(path);
  snprintf(path, sizeof path, "%s/kernel.d", dir);
  unlink(path);
  snprintf(path, sizeof path, "%s/kernel.c", dir);
  unlink(path);
  rmdir(dir);
  return st;
}
