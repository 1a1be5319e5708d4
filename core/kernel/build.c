/* build.c: building kernels, always in the calling thread: the engine's memory cache of builds,
 * then the disk cache (disk.c), then the backend's compiler. A build is one kernel text on one
 * device target: the memory key is the device's kernel_target words (and its index where the
 * backend's modules serve one device only) followed by the kernel's texts, so another kernel
 * object with the same text is a memory hit. The disk key holds everything that changes the
 * binary: libgpar's version and the dialect's, the backend, its target words, the compile
 * options and the whole generated source. Threads wanting the same build at once wait for the
 * first one (ks->cv). A compile error or a device that cannot run the kernel is kept (later
 * builds fail the same way at once); any other failure (out of memory, an injected fault, a
 * vendor error) is tried again by the next build. Device targets: target.c. Each text gpar_kernel_create accepted is kept
 * too (gpar__ktext: calls.c checks a text once), with its build per device: a kernel of a text
 * already built on its device finds it there, without the target, the key or the lock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel/kernel.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

/* ---------------------------------------------------------------- the engine's kernel state */

static void ktext_free(gpar__ktext *t) {
  if (!t) return;
  free(t->text);
  free(t->sig);
  free(t->params);
  free(t);
}

/* Free a state's own memory (its builds and kinds are gone, or were never there). */
static void kstate_delete(gpar__kstate *ks) {
  if (ks->bucket) { /* made whole: its lock and condition exist */
    pthread_mutex_destroy(&ks->mu);
    pthread_cond_destroy(&ks->cv);
  }
  for (int b = 0; ks->tbucket && b < GPAR__KTEXT_BUCKETS; b++)
    for (gpar__ktext *t = ks->tbucket[b], *next; t; t = next) {
      next = t->next;
      ktext_free(t);
    }
  free(ks->tbucket);
  free(ks->bucket);
  free(ks->target);
  free(ks->target_why);
  free(ks->target_st);
  free(ks);
}

static gpar__kstate *kstate_new(int ndev) {
  gpar__kstate *ks = calloc(1, sizeof *ks);
  if (!ks) return NULL;
  ks->nbuckets = 256;
  ks->ndev = ndev;
  ks->target = calloc((size_t)ndev + 1, sizeof *ks->target);
  ks->target_why = calloc((size_t)ndev + 1, sizeof *ks->target_why);
  ks->target_st = calloc((size_t)ndev + 1, sizeof *ks->target_st);
  ks->tbucket = calloc(GPAR__KTEXT_BUCKETS, sizeof *ks->tbucket);
  if (!ks->target || !ks->target_why || !ks->target_st || !ks->tbucket ||
      !(ks->bucket = calloc((size_t)ks->nbuckets, sizeof *ks->bucket))) {
    kstate_delete(ks);
    return NULL;
  }
  pthread_mutex_init(&ks->mu, NULL);
  pthread_cond_init(&ks->cv, NULL);
  return ks;
}

gpar__kstate *gpar__kstate_get(gpar_engine *eng) {
  gpar__kstate *ks = atomic_load_explicit(&eng->kernels, memory_order_acquire), *mine;
  if (ks) return ks;
  if (!(mine = kstate_new(eng->ndev))) return NULL;
  void *expected = NULL;
  if (atomic_compare_exchange_strong(&eng->kernels, &expected, mine)) return mine;
  kstate_delete(mine); /* another thread's state won */
  return expected;
}

void gpar__kstate_free(gpar_engine *eng) {
  gpar__kstate *ks = atomic_exchange(&eng->kernels, NULL);
  if (!ks) return;
  for (int b = 0; b < ks->nbuckets; b++)
    for (gpar__kentry *e = ks->bucket[b], *next; e; e = next) {
      next = e->next;
      if (e->state == GPAR__KE_READY && e->module) e->dev->ops->kernel_unload(e->dev->bdev, e->module);
      free(e->mkey);
      free(e->msg);
      free(e->log);
      free(e);
    }
  for (int d = 0; d < eng->ndev; d++) {
    free(ks->target[d]);
    free(ks->target_why[d]);
  }
  gpar__klaunch_kinds_free(ks);
  kstate_delete(ks);
}

/* ---------------------------------------------------------------- texts accepted */

uint64_t gpar__ktext_hash(const char *const txt[4], const size_t len[4]) {
  uint64_t h = 2;
  for (int i = 0; i < 4; i++) h = gpar__khash(txt[i], len[i] + 1, h); /* each with its NUL: pieces apart */
  return h;
}

static gpar__ktext *ktext_find_locked(gpar__kstate *ks, const char *const txt[4], const size_t len[4], size_t total,
                                      uint64_t h) {
  for (gpar__ktext *t = ks->tbucket[h % GPAR__KTEXT_BUCKETS]; t; t = t->next) {
    if (t->hash != h || t->len != total) continue;
    size_t at = 0;
    int i = 0;
    for (; i < 4 && !memcmp(t->text + at, txt[i], len[i] + 1); i++) at += len[i] + 1;
    if (i == 4) return t;
  }
  return NULL;
}

gpar__ktext *gpar__ktext_find(gpar__kstate *ks, const char *const txt[4], const size_t len[4], uint64_t h) {
  size_t total = len[0] + len[1] + len[2] + len[3] + 4;
  pthread_mutex_lock(&ks->mu);
  gpar__ktext *t = ktext_find_locked(ks, txt, len, total, h);
  pthread_mutex_unlock(&ks->mu);
  return t;
}

void gpar__ktext_use(gpar__kernel *k, gpar__ktext *te) {
  const char *p = te->text;
  k->text = te->text, k->text_len = te->len, k->sig = te->sig, k->params = te->params;
  k->def.name = p;
  p += strlen(p) + 1; /* the signature */
  k->def.body = p += strlen(p) + 1;
  k->def.preamble = p + strlen(p) + 1;
  k->def.params = te->params, k->def.nparams = te->nparams, k->def.uses_group_memory = te->uses_group_memory;
  k->kind = te->kind;
  k->te = te;
}

void gpar__ktext_keep(gpar__kstate *ks, gpar__kernel *k, uint64_t h) {
  gpar__ktext *t = calloc(1, sizeof *t + sizeof t->built[0] * (size_t)ks->ndev), *found;
  if (!t) return;
  *t = (gpar__ktext){.hash = h, .len = k->text_len, .text = k->text, .sig = k->sig, .params = k->params,
                     .nparams = k->def.nparams, .uses_group_memory = k->def.uses_group_memory, .kind = k->kind};
  const char *txt[4] = {k->text, NULL, k->def.body, k->def.preamble};
  size_t len[4] = {strlen(k->text), 0, strlen(k->def.body), strlen(k->def.preamble)};
  txt[1] = k->text + len[0] + 1, len[1] = strlen(txt[1]); /* the signature, uncut in text */
  pthread_mutex_lock(&ks->mu);
  if (!(found = ktext_find_locked(ks, txt, len, k->text_len, h)) && ks->ntexts < GPAR__KTEXT_MAX) {
    t->next = ks->tbucket[h % GPAR__KTEXT_BUCKETS];
    ks->tbucket[h % GPAR__KTEXT_BUCKETS] = found = t; /* it takes k's texts */
    ks->ntexts++;
  }
  pthread_mutex_unlock(&ks->mu);
  if (found == t) {
    k->te = t;
    return;
  }
  free(t);
  if (!found) return; /* no room: k keeps its own */
  free(k->text); /* another thread kept the same text first */
  free(k->sig);
  free(k->params);
  gpar__ktext_use(k, found);
}

/* ---------------------------------------------------------------- one build */

/* "kernel 'saxpy' on device 2 (opencl: pthread-...)", for messages. */
static void who(const gpar__kernel *k, const gpar__device *dev, char *buf, size_t cap) {
  snprintf(buf, cap, "kernel '%s' on device %d (%s: %s)", k->def.name, dev->index, dev->ops->name, dev->info.name);
}

/* The disk key: everything that changes the binary (file header above). */
static char *disk_key(const gpar__kernel *k, const gpar__device *dev, const char *target, const char *opts,
                      const char *src, size_t *len) {
  char *key = NULL;
  FILE *f = open_memstream(&key, len);
  if (!f) return NULL;
  fprintf(f, "libgpar %s kernel dialect %d\nbackend: %s\ntarget: %s\noptions: %s\nentry: %s\nsource:\n%s",
          PACKAGE_VERSION, GPAR_KERNEL_DIALECT, dev->ops->name, target, opts, k->def.name, src);
  return fclose(f) == 0 ? key : (free(key), NULL);
}

/* From the disk cache; GPAR_OK when e got a loaded module. */
static int from_disk(gpar__device *dev, const gpar__kernel *k, const char *dir, int dfd, const char *key, size_t keylen,
                     gpar__kentry *e) {
  void *bin = NULL;
  size_t len = 0;
  int st = gpar__kdisk_load(dir, dfd, key, keylen, &bin, &len);
  if (st == GPAR_OK && (st = dev->ops->kernel_load(dev->bdev, bin, len, k->def.name, &e->module, &e->lim)) != GPAR_OK)
    gpar__log("kernel cache: an entry for kernel '%s' does not load (%s): rebuilt from source", k->def.name,
              gpar__error_msg());
  else if (st == GPAR_EBACKEND)
    gpar__log("%s: rebuilt from source", gpar__error_msg());
  free(bin);
  return st;
}

/* Compile, keep on disk (when a cache folder is open: dfd), load. */
static int compile(gpar__device *dev, const gpar__kernel *k, const char *dir, int dfd, const char *key, size_t keylen,
                   const char *src, const char *opts, gpar__kentry *e) {
  void *bin = NULL;
  size_t len = 0;
  int st = dev->ops->kernel_compile(dev->bdev, src, opts, &bin, &len, &e->log);
  if (st == GPAR_OK && dfd >= 0) gpar__kdisk_store(dir, dfd, key, keylen, bin, len);
  if (st == GPAR_OK) st = dev->ops->kernel_load(dev->bdev, bin, len, k->def.name, &e->module, &e->lim);
  free(bin);
  return st;
}

/* Build e (BUILDING, ours) from the disk cache or the compiler. */
static int build_entry(gpar__kernel *k, gpar__device *dev, const char *target, gpar__kentry *e) {
  gpar_engine *eng = k->eng;
  double t0 = gpar__now();
  char opts[1024] = "";
  char *src = NULL, *key = NULL;
  size_t keylen = 0;
  const char *dir = eng->cfg.kernel_cache_dir ? eng->cfg.kernel_cache_dir : "";
  int st = gpar__fault(eng, GPAR__FAULT_BUILD), dfd = -1;
  if (st == GPAR_OK) st = dev->ops->kernel_source(dev->bdev, target, &k->def, &src, opts, sizeof opts);
  if (st == GPAR_OK && !(key = disk_key(k, dev, target, opts, src, &keylen))) st = gpar__errorf(GPAR_ENOMEM, "out of host memory");
  if (st == GPAR_OK && *dir) dfd = gpar__kdisk_open(dir); /* -1: not used (said why) */
  e->origin = GPAR_KERNEL_DISK_HIT;
  if (st == GPAR_OK && (dfd < 0 || from_disk(dev, k, dir, dfd, key, keylen, e) != GPAR_OK)) {
    e->origin = GPAR_KERNEL_COMPILED;
    st = compile(dev, k, dir, dfd, key, keylen, src, opts, e);
  }
  if (dfd >= 0) close(dfd);
  e->seconds = gpar__now() - t0;
  if (st == GPAR_OK) {
    gpar__clear_error(); /* a disk miss said why */
    atomic_fetch_add(e->origin == GPAR_KERNEL_COMPILED ? &eng->kernel_builds : &eng->kernel_disk_hits, 1);
    atomic_fetch_add(&eng->kernel_build_ns, (unsigned long)(e->seconds * 1e9));
  }
  free(src);
  free(key);
  return st;
}

/* ---------------------------------------------------------------- the memory cache */

static gpar__kentry *find_locked(gpar__kstate *ks, uint64_t h, const char *mkey, size_t len) {
  for (gpar__kentry *e = ks->bucket[h % (uint64_t)ks->nbuckets]; e; e = e->next)
    if (e->hash == h && e->mkey_len == len && !memcmp(e->mkey, mkey, len)) return e;
  return NULL;
}

/* The memory key of k on dev (malloc'ed). */
static char *memory_key(const gpar__kernel *k, const gpar__device *dev, const char *target, size_t *len) {
  size_t tl = strlen(target);
  char dv[24] = "";
  if (dev->ops->kernel_module_per_device) snprintf(dv, sizeof dv, "device %d", dev->index);
  size_t dl = strlen(dv);
  char *m = malloc(tl + dl + 2 + k->text_len);
  if (!m) return NULL;
  memcpy(m, target, tl);
  m[tl] = '\n';
  memcpy(m + tl + 1, dv, dl);
  m[tl + 1 + dl] = '\n';
  memcpy(m + tl + dl + 2, k->text, k->text_len);
  *len = tl + dl + 2 + k->text_len;
  return m;
}

/* The entry for mkey, new (BUILDING, *mine = 1: the caller builds it) or found (waited for
 * while another thread builds it; a RETRY one becomes the caller's to build). Takes mkey. */
static gpar__kentry *entry_for(gpar__kstate *ks, gpar__device *dev, char *mkey, size_t len, int *mine) {
  uint64_t h = gpar__khash(mkey, len, 1);
  gpar__kentry *fresh = calloc(1, sizeof *fresh), *e;
  pthread_mutex_lock(&ks->mu);
  if ((e = find_locked(ks, h, mkey, len))) {
    while (e->state == GPAR__KE_BUILDING) pthread_cond_wait(&ks->cv, &ks->mu);
    if ((*mine = e->state == GPAR__KE_RETRY)) e->state = GPAR__KE_BUILDING;
  } else if ((e = fresh)) {
    fresh = NULL;
    *e = (gpar__kentry){.next = ks->bucket[h % (uint64_t)ks->nbuckets], .hash = h, .mkey = mkey, .mkey_len = len,
                        .state = GPAR__KE_BUILDING, .dev = dev};
    mkey = NULL;
    ks->bucket[h % (uint64_t)ks->nbuckets] = e;
    ks->nentries++;
    *mine = 1;
  }
  pthread_mutex_unlock(&ks->mu);
  free(fresh);
  free(mkey);
  return e;
}

/* The end of our build of e, whose failure st carries msg ("whom: why", taken): READY, FAILED
 * (kept, with msg) or RETRY; waiters are woken. Returns the state set. */
static int entry_done(gpar__kstate *ks, gpar__kentry *e, int st, char *msg) {
  int kept = (st == GPAR_EBUILD || st == GPAR_ENOTSUP) && msg, state;
  if (kept) {
    e->msg = msg;
    e->status = st;
  }
  pthread_mutex_lock(&ks->mu);
  state = e->state = st == GPAR_OK ? GPAR__KE_READY : kept ? GPAR__KE_FAILED : GPAR__KE_RETRY;
  pthread_cond_broadcast(&ks->cv);
  pthread_mutex_unlock(&ks->mu);
  if (!kept) free(msg);
  return state;
}

/* k's build on dev known: it keeps it (READY and FAILED are final) and notes a memory hit. */
static void adopt(gpar__kernel *k, gpar__device *dev, gpar__kentry *e, int hit) {
  if (hit && e->state == GPAR__KE_READY) {
    atomic_fetch_add(&k->eng->kernel_mem_hits, 1);
    atomic_store(&k->built[dev->index].hit, 1);
  }
  gpar__kentry *none = NULL;
  atomic_compare_exchange_strong(&k->built[dev->index].e, &none, e);
}

/* Look up or make k's build on dev (the slow path of gpar__kernel_build_on): first its text's
 * build on dev, else through the memory key. */
static int build_slow(gpar__kernel *k, gpar__device *dev, gpar__kentry **out) {
  gpar__kentry *e = k->te ? atomic_load_explicit(&k->te->built[dev->index], memory_order_acquire) : NULL;
  if (e) { /* a memory hit without the target, the key or the lock */
    adopt(k, dev, e, 1);
    *out = e;
    return GPAR_OK;
  }
  char whom[256], target[512];
  who(k, dev, whom, sizeof whom);
  gpar__kstate *ks = gpar__kstate_get(k->eng);
  if (!ks) return gpar__errorf(GPAR_ENOMEM, "%s: out of host memory", whom);
  int st = gpar__kernel_target(ks, dev, k->eng->cfg.kernel_cache_dir, target, sizeof target), mine = 0;
  if (st != GPAR_OK) return gpar__errorf(st, "%s: %s", whom, target);
  size_t len = 0;
  char *mkey = memory_key(k, dev, target, &len);
  e = mkey ? entry_for(ks, dev, mkey, len, &mine) : NULL;
  if (!e) return gpar__errorf(GPAR_ENOMEM, "%s: out of host memory", whom);
  if (mine) {
    st = build_entry(k, dev, target, e);
    char *msg = NULL;
    if (st != GPAR_OK && (msg = malloc(strlen(whom) + strlen(gpar__error_msg()) + 3)))
      sprintf(msg, "%s: %s", whom, gpar__error_msg());
    if (st != GPAR_OK) gpar__errorf(st, "%s", msg ? msg : whom);
    if (entry_done(ks, e, st, msg) == GPAR__KE_RETRY) return st; /* its message is ours */
  }
  adopt(k, dev, e, !mine);
  gpar__kentry *none = NULL; /* final: the text's later kernels find it */
  if (k->te) atomic_compare_exchange_strong(&k->te->built[dev->index], &none, e);
  *out = e;
  return GPAR_OK;
}

int gpar__kernel_build_on(gpar__kernel *k, gpar__device *dev, gpar__kentry **out) {
  gpar__kentry *e = atomic_load_explicit(&k->built[dev->index].e, memory_order_acquire);
  int st;
  if (!e && gpar__in_op) /* an engine thread never compiles: its device's work would wait */
    return gpar__errorf(GPAR_EDEADLK, "kernel '%s' has no build for device %d: build it (gpar_kernel_build) outside "
                        "operations before launching it from inside one", k->def.name, dev->index);
  if (!e && (st = build_slow(k, dev, &e)) != GPAR_OK) return st;
  if (e->state != GPAR__KE_READY) return gpar__errorf(e->status, "%s", e->msg);
  *out = e;
  return GPAR_OK;
}
