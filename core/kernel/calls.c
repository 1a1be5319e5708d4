/* calls.c: the public calls that make, release, build and describe kernels: gpar_kernel_create,
 * _release, _build, _info, _log, _source and gpar_kernel_support; gpar__kernel_shutdown for
 * gpar_shutdown. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/kernel.h"

/* ---------------------------------------------------------------- create, release */

/* A kernel object of eng (entered), without its texts yet; NULL without memory. */
static gpar__kernel *kernel_alloc(gpar_engine *eng) {
  gpar__kernel *k = calloc(1, sizeof *k + sizeof k->built[0] * (size_t)eng->ndev);
  if (!k) return NULL;
  k->def.common = gpar__kernel_common;
  k->eng = eng;
  k->token = gpar__engine_token(eng);
  k->ndev = eng->ndev;
  atomic_init(&k->refs, 1);
  return k;
}

/* k's own copy of the texts txt (lengths len) and of the signature; GPAR_ENOMEM without memory. */
static int kernel_texts(gpar__kernel *k, const char *const txt[4], const size_t len[4]) {
  size_t total = len[0] + len[1] + len[2] + len[3] + 4;
  if (!(k->text = malloc(total)) || !(k->sig = malloc(len[1] + 1))) return GPAR_ENOMEM;
  char *p = k->text, *at[4];
  for (int i = 0; i < 4; i++) {
    memcpy(at[i] = p, txt[i], len[i] + 1);
    p += len[i] + 1;
  }
  memcpy(k->sig, txt[1], len[1] + 1);
  k->text_len = total;
  k->def.name = at[0], k->def.body = at[2], k->def.preamble = at[3];
  return GPAR_OK;
}

/* A new text's checks (after its name's), parse and kind; kept in ks once accepted (hash h). */
static int kernel_checked(gpar__kstate *ks, gpar__kernel *k, uint64_t h, const char *fn) {
  int st = gpar__kfiles_check(k->def.body, "body", fn);
  if (st == GPAR_OK) st = gpar__kfiles_check(k->def.preamble, "preamble", fn);
  if (st == GPAR_OK) st = gpar__ksig_parse(k->sig, fn, gpar__kernel_owned(0) > 0, &k->params, &k->def.nparams);
  if (st != GPAR_OK) return st;
  k->def.params = k->params;
  k->def.uses_group_memory = gpar__kuses_group_memory(k->def.body) || gpar__kuses_group_memory(k->def.preamble);
  if (!(k->kind = gpar__klaunch_kind(ks, k->def.name))) return gpar__errorf(GPAR_ENOMEM, "%s: out of host memory", fn);
  gpar__ktext_keep(ks, k, h);
  return GPAR_OK;
}

/* The kernel of texts txt (checked names and pointers), in *out: a text this engine accepted
 * before takes its entry's checks, parse and kind (and, at build, its builds); else it is checked. */
static int kernel_make(gpar_engine *eng, const char *const txt[4], gpar__kernel **out, const char *fn) {
  size_t len[4];
  for (int i = 0; i < 4; i++) len[i] = strlen(txt[i]);
  uint64_t h = gpar__ktext_hash(txt, len);
  gpar__kstate *ks = gpar__kstate_get(eng);
  gpar__ktext *te = ks ? gpar__ktext_find(ks, txt, len, h) : NULL;
  gpar__kernel *k = ks ? kernel_alloc(eng) : NULL;
  int st = k ? GPAR_OK : GPAR_ENOMEM;
  if (k && te)
    gpar__ktext_use(k, te);
  else if (k && (st = kernel_texts(k, txt, len)) == GPAR_OK && (st = gpar__kname_check(txt[0], fn)) == GPAR_OK)
    st = kernel_checked(ks, k, h, fn);
  if (st == GPAR_ENOMEM) gpar__errorf(GPAR_ENOMEM, "%s: out of host memory", fn);
  *out = k;
  return st;
}

GPAR_API int gpar_kernel_create(gpar_engine *e, const char *name, const char *params, const char *body,
                                const char *preamble, gpar_kernel *out) {
  static const char fn[] = "gpar_kernel_create";
  int st;
  if (out) out->id = 0;
  gpar_engine *eng = gpar__engine_enter(e, &st);
  if (!eng) return st;
  gpar__kernel *k = NULL;
  const char *txt[4] = {name, params, body, preamble ? preamble : ""};
  if (!out || !params || !body)
    st = gpar__errorf(GPAR_EINVAL, "%s: %s is NULL", fn, !out ? "kernel" : !params ? "params" : "body");
  else if (!name)
    st = gpar__kname_check(name, fn);
  else if ((st = kernel_make(eng, txt, &k, fn)) == GPAR_OK && (st = gpar__kernel_publish(k, out)) == GPAR_OK)
    k = NULL;
  if (k) gpar__kernel_discard(k); /* not handed out */
  gpar__engine_leave(eng);
  return st;
}

GPAR_API int gpar_kernel_release(gpar_kernel h) {
  int st;
  gpar__kernel *k = gpar__kernel_get(h, "gpar_kernel_release");
  if (!k) return GPAR_EINVAL;
  if (k->owned && !gpar__kernel_owned(0)) { /* a map's or an array op's: it goes with them */
    gpar__kernel_put(k);
    return gpar__errorf(GPAR_EINVAL, "gpar_kernel_release: kernel %#llx belongs to a map or the array ops",
                        (unsigned long long)h.id);
  }
  gpar_engine *eng = gpar__engine_enter(k->token, &st);
  /* Entered first: a concurrent gpar_shutdown waits for this call before it frees kernels. */
  gpar__kernel *mine = eng ? gpar__kernel_kill(k) : NULL;
  gpar__kernel_put(k);
  if (!mine) {
    if (eng) gpar__engine_leave(eng);
    return gpar__errorf(GPAR_EINVAL, "gpar_kernel_release: kernel %#llx is released or invalid", (unsigned long long)h.id);
  }
  gpar__kernel_recycle(k);
  gpar__kernel_unref(k); /* the handle's: launches in flight keep theirs */
  gpar__engine_leave(eng);
  return GPAR_OK;
}

/* ---------------------------------------------------------------- build and describe */

/* The kernel and device a call names, entered: GPAR_OK with *k (a table reference), *eng and
 * *d; the caller ends with call_end. */
static int call_begin(gpar_kernel h, int dev, const char *fn, gpar__kernel **k, gpar_engine **eng, gpar__device **d) {
  int st;
  if (!(*k = gpar__kernel_get(h, fn))) return GPAR_EINVAL;
  if (!(*eng = gpar__engine_enter((*k)->token, &st))) {
    gpar__kernel_put(*k);
    return st;
  }
  if (!(*d = gpar__engine_device(*eng, dev, fn))) {
    gpar__engine_leave(*eng);
    gpar__kernel_put(*k);
    return GPAR_ENODEV;
  }
  return GPAR_OK;
}

static void call_end(gpar__kernel *k, gpar_engine *eng) {
  gpar__engine_leave(eng);
  gpar__kernel_put(k);
}

GPAR_API int gpar_kernel_build(gpar_kernel h, int dev) {
  gpar__kernel *k;
  gpar_engine *eng;
  gpar__device *d;
  gpar__kentry *e;
  int st = call_begin(h, dev, "gpar_kernel_build", &k, &eng, &d);
  if (st != GPAR_OK) return st;
  st = gpar__kernel_build_on(k, d, &e);
  call_end(k, eng);
  return st;
}

GPAR_API int gpar_kernel_info(gpar_kernel h, int dev, gpar_kernel_props *props) {
  gpar__kernel *k;
  gpar_engine *eng;
  gpar__device *d;
  gpar__kentry *e;
  if (!props) return gpar__errorf(GPAR_EINVAL, "gpar_kernel_info: props is NULL");
  memset(props, 0, sizeof *props);
  int st = call_begin(h, dev, "gpar_kernel_info", &k, &eng, &d);
  if (st != GPAR_OK) return st;
  if ((st = gpar__kernel_build_on(k, d, &e)) == GPAR_OK) {
    props->max_group_size = e->lim.max_group_size;
    memcpy(props->max_group_dims, e->lim.max_group_dims, sizeof props->max_group_dims);
    memcpy(props->max_groups, e->lim.max_groups, sizeof props->max_groups);
    props->group_multiple = e->lim.multiple;
    int hit = atomic_load(&k->built[d->index].hit);
    props->origin = hit ? GPAR_KERNEL_MEMORY_HIT : e->origin;
    props->build_seconds = hit ? 0 : e->seconds;
    st = gpar__kernel_target(gpar__kstate_get(eng), d, eng->cfg.kernel_cache_dir, props->target, sizeof props->target);
  }
  call_end(k, eng);
  return st;
}

/* Copy s into buf as snprintf would; the full length into *len. */
static void copy_out(const char *s, char *buf, size_t cap, size_t *len) {
  size_t n = strlen(s);
  if (len) *len = n;
  if (buf && cap) {
    size_t c = n < cap - 1 ? n : cap - 1;
    memcpy(buf, s, c);
    buf[c] = 0;
  }
}

/* The build log of k on d, not owned (the entry outlives the call): "" when there is none or the
 * kernel came from memory. */
static int log_text(gpar__kernel *k, gpar__device *d, const char **text, char **owned) {
  gpar__kentry *e = atomic_load_explicit(&k->built[d->index].e, memory_order_acquire);
  *text = e && e->log && !atomic_load(&k->built[d->index].hit) ? e->log : "";
  return GPAR_OK;
}

/* src with each line prefixed by its number ("%5d  "), malloc'ed. */
static char *numbered(const char *src) {
  char *out = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&out, &n);
  if (!f) return NULL;
  int line = 1;
  for (const char *p = src; *p; line++) {
    const char *nl = strchr(p, '\n');
    size_t l = nl ? (size_t)(nl - p) : strlen(p);
    fprintf(f, "%5d  %.*s\n", line, (int)l, p);
    p += l + (nl != NULL);
  }
  return fclose(f) == 0 ? out : (free(out), NULL);
}

/* The source the backend builds for k on d, numbered, malloc'ed in *owned. */
static int source_text(gpar__kernel *k, gpar__device *d, const char **text, char **owned) {
  char opts[1024], target[512], *src = NULL;
  gpar__kstate *ks = gpar__kstate_get(k->eng);
  int st;
  if (!ks)
    st = gpar__errorf(GPAR_ENOMEM, "gpar_kernel_source: out of host memory");
  else if ((st = gpar__kernel_target(ks, d, k->eng->cfg.kernel_cache_dir, target, sizeof target)) != GPAR_OK)
    st = gpar__errorf(st, "gpar_kernel_source: %s", target);
  else if ((st = d->ops->kernel_source(d->bdev, target, &k->def, &src, opts, sizeof opts)) == GPAR_OK &&
           !(*owned = numbered(src)))
    st = gpar__errorf(GPAR_ENOMEM, "gpar_kernel_source: out of host memory");
  free(src);
  *text = *owned;
  return st;
}

/* A text of kernel h on device dev (get: *text, and in *owned what to free), copied out as
 * snprintf would, the full length in *len: gpar_kernel_log and gpar_kernel_source. */
static int text_call(gpar_kernel h, int dev, const char *fn,
                     int (*get)(gpar__kernel *k, gpar__device *d, const char **text, char **owned), char *buf,
                     size_t cap, size_t *len) {
  gpar__kernel *k;
  gpar_engine *eng;
  gpar__device *d;
  int st = call_begin(h, dev, fn, &k, &eng, &d);
  if (st != GPAR_OK) return st;
  const char *text = NULL;
  char *owned = NULL;
  if ((st = get(k, d, &text, &owned)) == GPAR_OK) copy_out(text, buf, cap, len);
  free(owned);
  call_end(k, eng);
  return st;
}

GPAR_API int gpar_kernel_log(gpar_kernel h, int dev, char *buf, size_t cap, size_t *len) {
  return text_call(h, dev, "gpar_kernel_log", log_text, buf, cap, len);
}

GPAR_API int gpar_kernel_source(gpar_kernel h, int dev, char *buf, size_t cap, size_t *len) {
  return text_call(h, dev, "gpar_kernel_source", source_text, buf, cap, len);
}

GPAR_API int gpar_kernel_support(gpar_engine *e, int dev, char *buf, size_t cap) {
  int st;
  gpar_engine *eng = gpar__engine_enter(e, &st);
  if (!eng) return st;
  char words[512];
  gpar__device *d = gpar__engine_device(eng, dev, "gpar_kernel_support");
  gpar__kstate *ks = d ? gpar__kstate_get(eng) : NULL;
  if (!d)
    st = GPAR_ENODEV;
  else if (!ks)
    st = gpar__errorf(GPAR_ENOMEM, "gpar_kernel_support: out of host memory");
  else
    st = gpar__kernel_target(ks, d, eng->cfg.kernel_cache_dir, words, sizeof words);
  if (ks) copy_out(words, buf, cap, NULL);
  gpar__engine_leave(eng);
  return st;
}

/* ---------------------------------------------------------------- shutdown */

void gpar__kernel_shutdown(gpar_engine *eng) {
  gpar__kernel_drain(eng);
  gpar__kstate_free(eng);
}
