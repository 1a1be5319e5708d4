/* disk.c: the kernels' disk cache (gpar_config.kernel_cache_dir). One file per build, named by a
 * hash of its key: a header (magic, the key's and the payload's lengths, the payload's checksum),
 * the whole key, then the payload (a cubin, an OpenCL program binary, a shared object). A load
 * trusts nothing it has not compared: the key byte for byte (a hash collision or a stale entry
 * is then a miss), the lengths against the file's size (a truncated file), the checksum (a
 * corrupt payload). A store writes a temporary file of its own and renames it over the entry,
 * so that a reader, in this process or another, sees the old entry or the whole new one, and
 * processes building the same kernel at once all succeed (the last rename wins). Also the
 * layer's hash. */
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

static void entry_path(char *out, size_t cap, const char *dir, const char *key, size_t keylen) {
  snprintf(out, cap, "%s/%016llx.gkc", dir, (unsigned long long)gpar__khash(key, keylen, 0));
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

/* Check the header and the key of an open entry; GPAR_OK with the payload's length. */
static int check_entry(int fd, const char *path, const char *key, size_t keylen, uint64_t *plen, uint64_t *sum) {
  unsigned char h[KDISK_HEADER];
  struct stat sb;
  if (fstat(fd, &sb) != 0 || !read_all(fd, h, sizeof h) || memcmp(h, KDISK_MAGIC, 8) != 0)
    return gpar__errorf(GPAR_EBACKEND, "kernel cache: %s: not a cache entry (bad header)", path);
  uint64_t klen = get64(h + 8);
  *plen = get64(h + 16);
  *sum = get64(h + 24);
  if (klen > KDISK_MAX || *plen > KDISK_MAX || (uint64_t)sb.st_size != KDISK_HEADER + klen + *plen)
    return gpar__errorf(GPAR_EBACKEND, "kernel cache: %s: truncated or corrupt (sizes do not match)", path);
  char *k = klen == keylen ? malloc(keylen ? keylen : 1) : NULL;
  int same = k && read_all(fd, k, keylen) && memcmp(k, key, keylen) == 0;
  free(k);
  if (!same) return gpar__errorf(GPAR_EBACKEND, "kernel cache: %s: holds another key (stale or a collision)", path);
  return GPAR_OK;
}

int gpar__kdisk_load(const char *dir, const char *key, size_t keylen, void **payload, size_t *len) {
  char path[1200];
  entry_path(path, sizeof path, dir, key, keylen);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return gpar__errorf(GPAR_ENODEV, "kernel cache: no entry %s", path);
  uint64_t plen = 0, sum = 0;
  int st = check_entry(fd, path, key, keylen, &plen, &sum);
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

void gpar__kdisk_store(const char *dir, const char *key, size_t keylen, const void *payload, size_t len) {
  static atomic_uint counter;
  char path[1200], tmp[1300];
  if (!make_dirs(dir)) {
    gpar__log("kernel cache: cannot create %s (%s): builds are not kept on disk", dir, strerror(errno));
    return;
  }
  entry_path(path, sizeof path, dir, key, keylen);
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u", path, (long)getpid(), atomic_fetch_add(&counter, 1));
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    gpar__log("kernel cache: cannot write %s: %s", tmp, strerror(errno));
    return;
  }
  unsigned char h[KDISK_HEADER];
  memcpy(h, KDISK_MAGIC, 8);
  put64(h + 8, keylen);
  put64(h + 16, len);
  put64(h + 24, gpar__khash(payload, len, 2));
  int okw = write_all(fd, h, sizeof h) && write_all(fd, key, keylen) && write_all(fd, payload, len);
  okw = close(fd) == 0 && okw;
  if (!okw || rename(tmp, path) != 0) {
    gpar__log("kernel cache: cannot write %s: %s", path, strerror(errno));
    unlink(tmp);
  }
}
