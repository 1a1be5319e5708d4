/* target.c: each device's kernel target, the words that identify what builds its kernels
 * ("NVRTC 13.0, sm_90", "cc: gcc (Debian 12.2.0-14) 12.2.0 (command: cc)"), which every
 * build's key holds. Known once per engine and device. Where finding them is slow (dlopen of a
 * 100 MB NVRTC: 7 ms; `cc --version`: 3 ms) and the backend can say cheaply what decides them
 * (kernel_ident: the compiler's command and search path, the device), a record in the disk
 * cache keeps them across processes, as ccache identifies a compiler by its file: the record's
 * key is libgpar's version, the backend and those words, and it lists the files the target was
 * read from (the compiler, the NVRTC library, ld.so.cache) with their size, mtime and inode; a
 * record whose files changed is read again from the compiler and replaced. So a disk hit in a
 * new process loads no compiler. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel/kernel.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

/* "path\tsize\tmtime\tinode\n" for each path of the newline-separated list paths (a file that
 * is missing: "path\t-\n"), appended to f. */
static void stat_lines(FILE *f, const char *paths) {
  for (const char *p = paths; p && *p;) {
    size_t n = strcspn(p, "\n");
    char path[1024];
    snprintf(path, sizeof path, "%.*s", (int)(n < sizeof path ? n : sizeof path - 1), p);
    struct stat sb;
    if (*path && stat(path, &sb) == 0)
      fprintf(f, "%s\t%lld\t%lld.%09ld\t%llu\n", path, (long long)sb.st_size, (long long)sb.st_mtim.tv_sec,
              sb.st_mtim.tv_nsec, (unsigned long long)sb.st_ino);
    else if (*path)
      fprintf(f, "%s\t-\n", path);
    p += n + (p[n] == '\n');
  }
}

/* The record's key for dev's ident words (malloc'ed). */
static char *record_key(const gpar__device *dev, const char *ident, size_t *len) {
  char *key = NULL;
  FILE *f = open_memstream(&key, len);
  if (!f) return NULL;
  fprintf(f, "libgpar %s kernel target record\nbackend: %s\nident: %s\n", PACKAGE_VERSION, dev->ops->name, ident);
  return fclose(f) == 0 ? key : (free(key), NULL);
}

/* The words of a record (payload: the words, a newline, then stat_lines of its files) when its
 * files are as they were; 0 otherwise. */
static int record_valid(const char *payload, size_t len, char *words, size_t cap) {
  const char *nl = memchr(payload, '\n', len);
  if (!nl) return 0;
  size_t wl = (size_t)(nl - payload), fl = len - wl - 1;
  char *recorded = malloc(fl + 1), *paths = malloc(fl + 1), *now = NULL;
  size_t nowlen = 0, pl = 0;
  FILE *f = recorded && paths ? open_memstream(&now, &nowlen) : NULL;
  int ok = f != NULL && wl < cap;
  if (ok) {
    memcpy(recorded, nl + 1, fl);
    recorded[fl] = 0;
    for (const char *p = recorded; *p;) { /* the paths again, then their stat lines now */
      size_t n = strcspn(p, "\t\n"), line = strcspn(p, "\n");
      memcpy(paths + pl, p, n);
      pl += n;
      paths[pl++] = '\n';
      p += line + (p[line] == '\n');
    }
    paths[pl] = 0;
    stat_lines(f, paths);
  }
  ok = f && fclose(f) == 0 && ok && nowlen == fl && !memcmp(now, recorded, fl);
  if (ok) snprintf(words, cap, "%.*s", (int)wl, payload);
  free(recorded), free(paths), free(now);
  return ok;
}

/* dev's target words from the record for ident in the cache folder dir, else from the backend
 * (kept in a new record). */
static int target_recorded(gpar__device *dev, const char *dir, const char *ident, char *words, size_t cap) {
  size_t keylen = 0, len = 0;
  char *key = record_key(dev, ident, &keylen), files[2048] = "";
  void *payload = NULL;
  int dfd = key ? gpar__kdisk_open(dir) : -1, st;
  if (dfd >= 0 && gpar__kdisk_load(dir, dfd, key, keylen, &payload, &len) == GPAR_OK &&
      record_valid(payload, len, words, cap)) {
    free(payload);
    free(key);
    close(dfd);
    return GPAR_OK;
  }
  free(payload);
  gpar__clear_error(); /* a miss said why */
  st = dev->ops->kernel_target(dev->bdev, words, cap, files, sizeof files);
  char *rec = NULL;
  size_t rl = 0;
  FILE *f = st == GPAR_OK && dfd >= 0 ? open_memstream(&rec, &rl) : NULL;
  if (f) {
    fprintf(f, "%s\n", words);
    stat_lines(f, files);
  }
  if (f && fclose(f) == 0) gpar__kdisk_store(dir, dfd, key, keylen, rec, rl);
  free(rec);
  free(key);
  if (dfd >= 0) close(dfd);
  return st;
}

/* dev's target words: through a record where the backend identifies its compiler cheaply and
 * a cache folder is set, else from the backend. */
static int target_of(gpar__device *dev, const char *dir, char *words, size_t cap) {
  char ident[2048], files[2048];
  if (!dev->ops->kernel_target)
    return gpar__errorf(
        GPAR_ENOTSUP, "%s: this backend builds no kernels%s", dev->ops->name,
        dev->ops->id == GPAR_BACKEND_CUDA ? " (libgpar was built without NVRTC's header, nvrtc.h)" : "");
  if (dir && *dir && dev->ops->kernel_ident && dev->ops->kernel_ident(dev->bdev, ident, sizeof ident) == GPAR_OK)
    return target_recorded(dev, dir, ident, words, cap);
  gpar__clear_error();
  return dev->ops->kernel_target(dev->bdev, words, cap, files, sizeof files);
}

int gpar__kernel_target(gpar__kstate *ks, gpar__device *dev, const char *dir, char *buf, size_t cap) {
  int i = dev->index, st;
  pthread_mutex_lock(&ks->mu); /* target_st: 0 unknown, 1 known, else the failure */
  if ((st = ks->target_st[i]) != 0) snprintf(buf, cap, "%s", st == 1 ? ks->target[i] : ks->target_why[i]);
  pthread_mutex_unlock(&ks->mu);
  if (st == 1) return GPAR_OK;
  if (st) return gpar__errorf(st, "%s", buf);
  char words[512] = "";
  st = target_of(dev, dir, words, sizeof words);
  char *text = strdup(st == GPAR_OK ? words : gpar__error_msg());
  if (!text) return gpar__errorf(GPAR_ENOMEM, "out of host memory");
  pthread_mutex_lock(&ks->mu);
  if (ks->target_st[i] == 0) { /* the first to know keeps it */
    ks->target_st[i] = st == GPAR_OK ? 1 : st;
    *(st == GPAR_OK ? &ks->target[i] : &ks->target_why[i]) = text;
    text = NULL;
  }
  pthread_mutex_unlock(&ks->mu);
  free(text);
  snprintf(buf, cap, "%s", st == GPAR_OK ? words : gpar__error_msg());
  return st == GPAR_OK ? GPAR_OK : gpar__errorf(st, "%s", buf);
}
