/* disk.c: the kernels' disk cache (gpar_config.kernel_cache_dir). One file per build, named by a
 * hash of its key: a header (magic, the key's and the payload's lengths, the payload's checksum),
 * the whole key, then the payload (a cubin, an OpenCL program binary, a shared object). A load
 * trusts nothing it has not compared: the key byte for byte (a hash collision or a stale entry
 * is then a miss), the lengths against the file's size (a truncated file), the checksum (a
 * corrupt payload). A store writes a temporary file of its own and renames it over the entry,
 * so that a reader, in this process or another, sees the old entry or the whole new one, and
 * processes building the same kernel at once all succeed (the last rename wins). Also the
 * layer's hash.
 *
 * Who may write it: an entry's payload is native code (the host's is a shared object that gets
 * loaded), and its checks catch accidents, not someone who writes a whole entry. So, like ssh
 * and other per-user caches, the folder itself (made 0700 when missing) and each entry must be
 * owned by the effective user and not writable by group or others, or they are not used (a line
 * says why); an entry is opened through the folder's descriptor, without following a symbolic
 * link and without blocking (a FIFO is refused, never waited on), and must be a regular file.
 * The folders above the cache folder are not checked. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel/kernel.h"

#define KDISK_MAGIC "GPARKC01"
#define KDISK_HEADER (8 + 3 * 8)
#define KDISK_MAX ((uint64_t)1 << 31) /* no key or payload is larger: a bigger length is corrupt */

static uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t gpar__khash(const void *p, size_t n, uint64_t seed) {
  const unsigned char *b = p;
  uint64_t h = mix(seed ^ (uint64_t)n), w;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    memcpy(&w, b + i, 8);
    h = (h ^ (w * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;
    h ^= h >> 29;
  }
  w = 0;
  memcpy(&w, b + i, n - i);
  return mix(h ^ w);
}

static void entry_name(char *out, size_t cap, const char *key, size_t keylen) {
  snprintf(out, cap, "%016llx.gkc", (unsigned long long)gpar__khash(key, keylen, 0));
}

static void put64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint64_t get64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

/* Read exactly n bytes; 0 on a short read. */
static int read_all(int fd, void *buf, size_t n) {
  for (size_t got = 0; got < n;) {
    ssize_t r = read(fd, (char *)buf + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return 0;
    got += (size_t)r;
  }
  return 1;
}

static int write_all(int fd, const void *buf, size_t n) {
  for (size_t done = 0; done < n;) {
    ssize_t w = write(fd, (const char *)buf + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return 0;
    done += (size_t)w;
  }
  return 1;
}

/* GPAR_OK when what sb describes (the cache folder or an entry, at path) is of type (S_IFDIR,
 * S_IFREG), owned by the effective user and not writable by group or others. */
static int trusted(const struct stat *sb, mode_t type, const char *path) {
  if ((sb->st_mode & S_IFMT) != type)
    return gpar__errorf(GPAR_EBACKEND, "kernel cache: %s: not a %s: not trusted", path,
                        type == S_IFDIR ? "folder" : "regular file");
  if (sb->st_uid != geteuid())
    return gpar__errorf(GPAR_EBACKEND, "kernel cache: %s: owned by uid %u, not by this user (uid %u): not trusted",
                        path, (unsigned)sb->st_uid, (unsigned)geteuid());
  if (sb->st_mode & (S_IWGRP | S_IWOTH))
    return gpar__errorf(GPAR_EBACKEND, "kernel cache: %s: writable by group or others (mode %03o): not trusted", path,
                        (unsigned)(sb->st_mode & 0777));
  return GPAR_OK;
}

/* Check the header and the key of an open entry (sb: its fstat); GPAR_OK with the payload's length. */
static int check_entry(int fd, const struct stat *sb, const char *path, const char *key, size_t keylen, uint64_t *plen,
                       uint64_t *sum) {
  unsigned char h[KDISK_HEADER];
  if (!read_all(fd, h, sizeof h) || memcmp(h, KDISK_MAGIC, 8) != 0)
    return gpar__errorf(GPAR_EBACKEND, "kernel cache: %s: not a cache entry (bad header)", path);
  uint64_t klen = get64(h + 8);
  *plen = get64(h + 16);
  *sum = get64(h + 24);
  if (klen > KDISK_MAX || *plen > KDISK_MAX || (uint64_t)sb->st_size != KDISK_HEADER + klen + *plen)
    return gpar__errorf(GPAR_EBACKEND, "kernel cache: %s: truncated or corrupt (sizes do not match)", path);
  char *k = klen == keylen ? malloc(keylen ? keylen : 1) : NULL;
  int same = k && read_all(fd, k, keylen) && memcmp(k, key, keylen) == 0;
  free(k);
  if (!same) return gpar__errorf(GPAR_EBACKEND, "kernel cache: %s: holds another key (stale or a collision)", path);
  return GPAR_OK;
}

/* Open the entry name of the folder dfd (dir) for reading, checked (trusted); its fstat in sb. */
static int open_entry(int dfd, const char *name, const char *path, struct stat *sb, int *fd) {
  /* O_NONBLOCK: a FIFO opens at once (and is refused below); it changes nothing on a regular file. */
  *fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (*fd < 0 && (errno == ELOOP || errno == EMLINK))
    return gpar__errorf(GPAR_EBACKEND, "kernel cache: %s: a symbolic link: not trusted", path);
  if (*fd < 0) return gpar__errorf(GPAR_ENODEV, "kernel cache: no entry %s (%s)", path, strerror(errno));
  int st = fstat(*fd, sb) != 0 ? gpar__errorf(GPAR_EBACKEND, "kernel cache: %s: %s", path, strerror(errno))
                               : trusted(sb, S_IFREG, path);
  if (st != GPAR_OK) close(*fd);
  return st;
}

int gpar__kdisk_load(const char *dir, int dfd, const char *key, size_t keylen, void **payload, size_t *len) {
  char name[64], path[1200];
  entry_name(name, sizeof name, key, keylen);
  snprintf(path, sizeof path, "%s/%s", dir, name);
  struct stat sb;
  int fd, st = open_entry(dfd, name, path, &sb, &fd);
  if (st != GPAR_OK) return st;
  uint64_t plen = 0, sum = 0;
  st = check_entry(fd, &sb, path, key, keylen, &plen, &sum);
  void *p = st == GPAR_OK ? malloc(plen ? plen : 1) : NULL;
  if (st == GPAR_OK && !p) st = gpar__errorf(GPAR_ENOMEM, "kernel cache: out of host memory");
  if (p && !read_all(fd, p, plen)) st = gpar__errorf(GPAR_EBACKEND, "kernel cache: %s: short read", path);
  if (st == GPAR_OK && gpar__khash(p, plen, 2) != sum)
    st = gpar__errorf(GPAR_EBACKEND, "kernel cache: %s: corrupt (checksum)", path);
  close(fd);
  if (st != GPAR_OK) {
    free(p);
    return st;
  }
  *payload = p;
  *len = plen;
  return GPAR_OK;
}

/* mkdir -p dir (0700 for what it creates); 1 when dir exists afterwards. */
static int make_dirs(const char *dir) {
  char buf[1024];
  if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf) return 0;
  for (char *p = buf + 1; *p; p++)
    if (*p == '/') {
      *p = 0;
      mkdir(buf, 0700);
      *p = '/';
    }
  struct stat sb;
  return (mkdir(buf, 0700) == 0 || errno == EEXIST) && stat(buf, &sb) == 0 && S_ISDIR(sb.st_mode);
}

int gpar__kdisk_open(const char *dir) {
  if (!make_dirs(dir)) {
    gpar__log("kernel cache: cannot create %s (%s): builds are not kept on disk", dir, strerror(errno));
    return -1;
  }
  struct stat sb;
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int st = fd < 0 || fstat(fd, &sb) != 0 ? gpar__errorf(GPAR_EBACKEND, "kernel cache: %s: %s", dir, strerror(errno))
                                         : trusted(&sb, S_IFDIR, dir);
  if (st == GPAR_OK) return fd;
  gpar__log("%s: builds are not kept on disk (make it the user's own, mode 0700, or set GPAR_CACHE_DIR)",
            gpar__error_msg());
  if (fd >= 0) close(fd);
  return -1;
}

void gpar__kdisk_store(const char *dir, int dfd, const char *key, size_t keylen, const void *payload, size_t len) {
  static atomic_uint counter;
  char name[64], tmp[128], path[1200];
  entry_name(name, sizeof name, key, keylen);
  snprintf(path, sizeof path, "%s/%s", dir, name);
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u", name, (long)getpid(), atomic_fetch_add(&counter, 1));
  int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    gpar__log("kernel cache: cannot write %s/%s: %s", dir, tmp, strerror(errno));
    return;
  }
  unsigned char h[KDISK_HEADER];
  memcpy(h, KDISK_MAGIC, 8);
  put64(h + 8, keylen);
  put64(h + 16, len);
  put64(h + 24, gpar__khash(payload, len, 2));
  int okw = write_all(fd, h, sizeof h) && write_all(fd, key, keylen) && write_all(fd, payload, len);
  okw = close(fd) == 0 && okw;
  if (!okw || renameat(dfd, tmp, dfd, name) != 0) {
    gpar__log("kernel cache: cannot write %s: %s", path, strerror(errno));
    unlinkat(dfd, tmp, 0);
  }
}
