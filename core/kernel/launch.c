/* launch.c: gpar_kernel_launch and the op kinds of launches. Every argument is checked against
 * the kernel's signature before anything is enqueued; the kernel is built (in the calling
 * thread) when it has no build on the device yet; then one op of the kernel's kind goes to the
 * engine, reading its `in` buffers, writing its `out` ones, both for `inout`. On a GPU the op
 * enqueues the launch on the compute lane (kernel_launch). On the host device it spreads the
 * launch's groups over the CPU workers: the op submits one helper op per other worker, and it
 * and the helpers claim runs of groups from one counter until none is left; the op then waits
 * only for runs other workers have claimed and are running, never for a helper that has not
 * started (a helper that starts late finds nothing left and ends), so no worker ever waits for
 * work that waits for it. Kinds are interned per kernel name so that traces name the kernel. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/kernel.h"

/* ---------------------------------------------------------------- the launch op */

#define KL_INLINE 5 /* arguments held in the op's payload; more are allocated */

typedef struct klaunch {
  gpar__kernel *k;  /* a reference, dropped when the op is done (release) */
  gpar__kentry *e;  /* its build on the op's device (lives until gpar_shutdown) */
  gpar__karg *more; /* nargs > KL_INLINE: the arguments */
  uint32_t groups[3], size[3];
  int nargs;
  gpar__karg inl[KL_INLINE];
} klaunch;
_Static_assert(sizeof(klaunch) <= GPAR__OP_PAYLOAD, "a kernel launch fits an op's payload");

static const gpar__karg *klaunch_args(const klaunch *L) { return L->nargs <= KL_INLINE ? L->inl : L->more; }

/* The host's spreading of one launch: claimed in runs of `chunk` groups. */
typedef struct kspread {
  atomic_int refs;   /* the launching op's and one per helper op */
  atomic_ulong next; /* the next run to claim */
  atomic_ulong done; /* runs finished */
  unsigned long nruns;
  uint64_t chunk;
  gpar__device *dev;
  void *module;
  gpar__kernel_launch l; /* its args live in the launching op, which outlives every claimed run */
} kspread;

static void spread_unref(kspread *s) {
  if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1) free(s);
}

/* Run the runs this thread claims. */
static void spread_work(kspread *s) {
  for (unsigned long r; (r = atomic_fetch_add_explicit(&s->next, 1, memory_order_relaxed)) < s->nruns;) {
    gpar__kernel_launch l = s->l;
    l.first = r * s->chunk;
    l.count = l.first + s->chunk <= s->l.count ? s->chunk : s->l.count - l.first;
    s->dev->ops->kernel_launch(s->dev->bdev, GPAR__LANE_COMPUTE, s->module, &l); /* the host's never fails */
    atomic_fetch_add_explicit(&s->done, 1, memory_order_release);
  }
}

static int helper_run(gpar__device *dev, gpar__op *op) {
  (void)dev;
  spread_work(*(kspread **)gpar__op_args(op));
  return GPAR_OK;
}
static void helper_release(gpar__op *op) { spread_unref(*(kspread **)gpar__op_args(op)); }
static const gpar__op_kind kind_helper = {.name = "kernel_helper", .run = helper_run, .release = helper_release};

/* Run l over the host device's workers (the calling worker is one of them). */
static int host_spread(gpar__device *dev, void *module, const gpar__kernel_launch *l) {
  int workers = dev->nthreads > 0 ? dev->nthreads : 1;
  uint64_t chunk = l->count / ((uint64_t)workers * 8);
  if (chunk < 1) chunk = 1;
  unsigned long nruns = (unsigned long)((l->count + chunk - 1) / chunk);
  int helpers = nruns - 1 < (unsigned long)(workers - 1) ? (int)(nruns - 1) : workers - 1;
  if (helpers == 0) return dev->ops->kernel_launch(dev->bdev, GPAR__LANE_COMPUTE, module, l);
  kspread *s = malloc(sizeof *s);
  if (!s) return dev->ops->kernel_launch(dev->bdev, GPAR__LANE_COMPUTE, module, l);
  atomic_init(&s->refs, 1 + helpers);
  atomic_init(&s->next, 0);
  atomic_init(&s->done, 0);
  s->nruns = nruns;
  s->chunk = chunk;
  s->dev = dev;
  s->module = module;
  s->l = *l;
  for (int h = 0; h < helpers; h++) {
    gpar__op *op = gpar__op_new(dev->eng, &kind_helper, dev, GPAR__LANE_COMPUTE);
    if (!op) { /* fewer helpers: this worker does more */
      spread_unref(s);
      continue;
    }
    *(kspread **)gpar__op_args(op) = s;
    gpar__op_submit(op, 0); /* refused (never while this op is in flight): discarded, released */
  }
  spread_work(s);
  while (atomic_load_explicit(&s->done, memory_order_acquire) < nruns) gpar__spin_yield(); /* claimed runs end soon */
  spread_unref(s);
  return GPAR_OK;
}

static int klaunch_run(gpar__device *dev, gpar__op *op) {
  const klaunch *L = gpar__op_args(op);
  gpar__kernel_launch l = {{L->groups[0], L->groups[1], L->groups[2]}, {L->size[0], L->size[1], L->size[2]},
                           0, (uint64_t)L->groups[0] * L->groups[1] * L->groups[2], L->nargs, L->k->params,
                           klaunch_args(L)};
  if (dev->ops->ordered_by_events) return dev->ops->kernel_launch(dev->bdev, op->lane, L->e->module, &l);
  return host_spread(dev, L->e->module, &l);
}

static void klaunch_release(gpar__op *op) {
  klaunch *L = gpar__op_args(op);
  free(L->more);
  gpar__kernel_unref(L->k);
}

/* ---------------------------------------------------------------- kinds, one per name */

struct gpar__kkind {
  gpar__kkind *next;
  gpar__op_kind kind;
  char name[]; /* "kernel:NAME" */
};

const gpar__op_kind *gpar__klaunch_kind(gpar__kstate *ks, const char *name) {
  size_t len = strlen(name) + 8;
  gpar__kkind *fresh = malloc(sizeof *fresh + len), *found = NULL;
  if (fresh) {
    snprintf(fresh->name, len, "kernel:%s", name);
    fresh->kind = (gpar__op_kind){.name = fresh->name, .run = klaunch_run, .release = klaunch_release};
  }
  pthread_mutex_lock(&ks->mu);
  for (gpar__kkind *q = ks->kinds; q && !found; q = q->next)
    if (!strcmp(q->name + 7, name)) found = q;
  if (!found && fresh) {
    fresh->next = ks->kinds;
    ks->kinds = found = fresh;
    fresh = NULL;
  }
  pthread_mutex_unlock(&ks->mu);
  free(fresh);
  return found ? &found->kind : NULL;
}

void gpar__klaunch_kinds_free(gpar__kstate *ks) {
  for (gpar__kkind *q = ks->kinds, *n; q; q = n) {
    n = q->next;
    free(q);
  }
  ks->kinds = NULL;
}

/* ---------------------------------------------------------------- checks */

static const char *arg_kind_name(int kind) {
  static const char *const names[] = {"?", "i32", "u32", "i64", "u64", "f32", "f64", "a buffer"};
  return kind >= GPAR_ARG_I32 && kind <= GPAR_ARG_BUFFER ? names[kind] : "an unknown kind";
}

/* The grid, normalised (0 -> 1 in dimensions 1 and 2); GPAR_EINVAL when it cannot be one. */
static int check_grid(const gpar_grid *grid, uint32_t g[3], uint32_t s[3]) {
  if (!grid) return gpar__errorf(GPAR_EINVAL, "gpar_kernel_launch: grid is NULL");
  for (int d = 0; d < 3; d++) {
    g[d] = d && !grid->groups[d] ? 1 : grid->groups[d];
    s[d] = d && !grid->group_size[d] ? 1 : grid->group_size[d];
  }
  if (!s[0]) return gpar__errorf(GPAR_EINVAL, "gpar_kernel_launch: group_size[0] is 0");
  return GPAR_OK;
}

/* Argument i against parameter p: its kind, and a buffer's handle, device, offset and alignment.
 * A buffer's reference goes to *b (the caller hands it to the op or drops it). */
static int check_arg(gpar__kernel *k, gpar__device *dev, int i, const gpar_arg *a, gpar__karg *out, gpar__buf **b) {
  const gpar__kparam *p = &k->params[i];
  const char *fn = "gpar_kernel_launch";
  if (p->dir == GPAR__KDIR_SCALAR) {
    int want = gpar__ktype_arg(p->type);
    if ((int)a->kind != want)
      return gpar__errorf(GPAR_EINVAL, "%s: kernel '%s', argument %d (%s): %s declared, %s given", fn, k->def.name, i + 1,
                          p->name, gpar__ktype_name(p->type), arg_kind_name(a->kind));
    out->mem = NULL;
    out->bits = 0;
    memcpy(&out->bits, &a->v, gpar__ktype_size(p->type)); /* little-endian low bytes */
    return GPAR_OK;
  }
  static const char *const dirs[] = {"", "in", "out", "inout"};
  if (a->kind != GPAR_ARG_BUFFER)
    return gpar__errorf(GPAR_EINVAL, "%s: kernel '%s', argument %d (%s): a buffer (%s %s *) declared, %s given", fn,
                        k->def.name, i + 1, p->name, dirs[p->dir], gpar__ktype_name(p->type), arg_kind_name(a->kind));
  char why[512]; /* the lookup's message, copied: gpar__errorf writes where it lies */
  int st = gpar__buf_get(k->eng, a->v.buffer.buf, b);
  if (st != GPAR_OK) {
    snprintf(why, sizeof why, "%s", gpar__error_msg());
    return gpar__errorf(st, "%s: kernel '%s', argument %d (%s): %s", fn, k->def.name, i + 1, p->name, why);
  }
  size_t off = a->v.buffer.offset, esz = gpar__ktype_size(p->type);
  out->mem = (*b)->mem;
  out->bits = off;
  if (off > (*b)->bytes)
    return gpar__errorf(GPAR_ERANGE, "%s: kernel '%s', argument %d (%s): offset %zu is past the buffer's %zu bytes", fn,
                        k->def.name, i + 1, p->name, off, (*b)->bytes);
  if (off % esz)
    return gpar__errorf(GPAR_EINVAL, "%s: kernel '%s', argument %d (%s): offset %zu is not a multiple of %s's %zu bytes", fn,
                        k->def.name, i + 1, p->name, off, gpar__ktype_name(p->type), esz);
  if ((*b)->dev == dev) return GPAR_OK;
  if ((*b)->dev) /* a device other than the launch's */
    return gpar__errorf(GPAR_EINVAL, "%s: kernel '%s', argument %d (%s): the buffer is on device %d, the launch on device %d",
                        fn, k->def.name, i + 1, p->name, (*b)->dev->index, dev->index);
  if (!dev->ops->kernel_host_ptr)
    return gpar__errorf(GPAR_EINVAL, "%s: kernel '%s', argument %d (%s): %s kernels cannot take GPAR_HOST memory", fn,
                        k->def.name, i + 1, p->name, dev->ops->name);
  if ((st = dev->ops->kernel_host_ptr(dev->bdev, (*b)->mem, &out->mem)) != GPAR_OK) {
    snprintf(why, sizeof why, "%s", gpar__error_msg());
    return gpar__errorf(GPAR_EINVAL, "%s: kernel '%s', argument %d (%s): GPAR_HOST memory: %s", fn, k->def.name, i + 1,
                        p->name, why);
  }
  return GPAR_OK;
}

/* The grid against the build's limits. */
static int check_limits(const gpar__kernel *k, const gpar__kentry *e, const uint32_t g[3], const uint32_t s[3]) {
  uint64_t items = (uint64_t)s[0] * s[1] * s[2];
  if (items > e->lim.max_group_size)
    return gpar__errorf(GPAR_EINVAL, "gpar_kernel_launch: kernel '%s': %llu work-items per group, at most %u on this device",
                        k->def.name, (unsigned long long)items, e->lim.max_group_size);
  for (int d = 0; d < 3; d++) {
    if (s[d] > e->lim.max_group_dims[d])
      return gpar__errorf(GPAR_EINVAL, "gpar_kernel_launch: kernel '%s': group_size[%d] = %u, at most %u on this device",
                          k->def.name, d, s[d], e->lim.max_group_dims[d]);
    if (g[d] > e->lim.max_groups[d])
      return gpar__errorf(GPAR_EINVAL, "gpar_kernel_launch: kernel '%s': groups[%d] = %u, at most %u on this device",
                          k->def.name, d, g[d], e->lim.max_groups[d]);
  }
  return GPAR_OK;
}

/* ---------------------------------------------------------------- gpar_kernel_launch */

/* Check every argument into L and take its buffers' references into b[]. */
static int check_args(gpar__kernel *k, gpar__device *dev, const gpar_arg *args, int nargs, klaunch *L, gpar__buf **b) {
  if (nargs != k->def.nparams || (nargs && !args))
    return gpar__errorf(GPAR_EINVAL, "gpar_kernel_launch: kernel '%s' takes %d argument%s, %d given%s", k->def.name,
                        k->def.nparams, k->def.nparams == 1 ? "" : "s", nargs, nargs && !args ? " (args is NULL)" : "");
  L->nargs = nargs;
  if (nargs > KL_INLINE && !(L->more = malloc(sizeof *L->more * (size_t)nargs)))
    return gpar__errorf(GPAR_ENOMEM, "gpar_kernel_launch: out of host memory");
  gpar__karg *v = nargs > KL_INLINE ? L->more : L->inl;
  int st = GPAR_OK;
  for (int i = 0; i < nargs && st == GPAR_OK; i++) st = check_arg(k, dev, i, &args[i], &v[i], &b[i]);
  return st;
}

/* Build the op over the checked arguments (taking L and the references in b[]) and submit it. */
static int submit(gpar__kernel *k, gpar__device *dev, klaunch *L, gpar__buf **b) {
  static const int modes[] = {0, GPAR__READ, GPAR__WRITE, GPAR__READ | GPAR__WRITE};
  gpar__op *op = gpar__op_new(k->eng, k->kind, dev, GPAR__LANE_COMPUTE);
  if (!op) return gpar__errorf(GPAR_ENOMEM, "gpar_kernel_launch: out of host memory");
  gpar__kernel_ref(k);
  L->k = k;
  *(klaunch *)gpar__op_args(op) = *L;
  L->more = NULL; /* the op's now */
  int st = GPAR_OK;
  for (int i = 0; i < k->def.nparams; i++) {
    if (!b[i]) continue;
    if (st == GPAR_OK)
      st = gpar__op_use(op, b[i], modes[k->params[i].dir]);
    else
      gpar__buf_put(b[i]);
    b[i] = NULL;
  }
  if (st != GPAR_OK) {
    gpar__op_discard(op); /* its release drops the kernel's reference */
    return st;
  }
  atomic_fetch_add(&k->eng->kernel_launches, 1);
  return gpar__api_submit(op);
}

GPAR_API int gpar_kernel_launch(gpar_kernel h, int dev, const gpar_grid *grid, const gpar_arg *args, int nargs) {
  static const char fn[] = "gpar_kernel_launch";
  int st;
  gpar__kernel *k = gpar__kernel_get(h, fn);
  if (!k) return GPAR_EINVAL;
  gpar_engine *eng = gpar__engine_enter(k->token, &st);
  if (!eng) {
    gpar__kernel_put(k);
    return st;
  }
  gpar__buf *b[GPAR__KMAX_PARAMS] = {NULL};
  klaunch L = {0};
  gpar__device *d = gpar__kernel_device(eng, dev, fn);
  if (!d) st = GPAR_ENODEV;
  if (st == GPAR_OK) st = check_grid(grid, L.groups, L.size);
  if (st == GPAR_OK) st = check_args(k, d, args, nargs, &L, b);
  if (st == GPAR_OK && L.groups[0] && (st = gpar__kernel_build_on(k, d, &L.e)) == GPAR_OK &&
      (st = check_limits(k, L.e, L.groups, L.size)) == GPAR_OK)
    st = submit(k, d, &L, b);
  for (int i = 0; i < GPAR__KMAX_PARAMS; i++)
    if (b[i]) gpar__buf_put(b[i]);
  free(L.more);
  gpar__engine_leave(eng);
  gpar__kernel_put(k);
  return st;
}
