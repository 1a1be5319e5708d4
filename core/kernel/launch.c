/* launch.c: gpar_kernel_launch. Every argument is checked against the kernel's signature
 * before anything is enqueued; the kernel is built (in the calling thread) when it has no build
 * on the device yet; then one op of the kernel's kind (kind.c) goes to the engine, reading its
 * `in` buffers, writing its `out` ones, both for `inout`. gpar__kernel_launch_into adds the op
 * to a submission of several instead (a call made of several launches, applied as one). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/kernel.h"

/* ---------------------------------------------------------------- checks */

static const char *arg_kind_name(int kind) {
  static const char *const names[] = {"?", "i32", "u32", "i64", "u64", "f32", "f64", "a buffer"};
  return kind >= GPAR_ARG_I32 && kind <= GPAR_ARG_BUFFER ? names[kind] : "an unknown kind";
}

/* *a *= b, or 1 (and *a unchanged) when the product does not fit 64 bits. */
static int mul_over(uint64_t *a, uint64_t b) {
  if (b && *a > UINT64_MAX / b) return 1;
  *a *= b;
  return 0;
}

/* The grid, normalised (0 -> 1 in dimensions 1 and 2); GPAR_EINVAL when it cannot be one: its
 * counts of groups and of work-items must fit 64 bits (the host's runs of groups and every
 * backend's global ids count in 64 bits). */
static int check_grid(const gpar_grid *grid, uint32_t g[3], uint32_t s[3]) {
  if (!grid) return gpar__errorf(GPAR_EINVAL, "gpar_kernel_launch: grid is NULL");
  for (int d = 0; d < 3; d++) {
    g[d] = d && !grid->groups[d] ? 1 : grid->groups[d];
    s[d] = d && !grid->group_size[d] ? 1 : grid->group_size[d];
  }
  if (!s[0]) return gpar__errorf(GPAR_EINVAL, "gpar_kernel_launch: group_size[0] is 0");
  if (!g[0]) return GPAR_OK; /* runs nothing */
  uint64_t groups = g[0], items;
  if (mul_over(&groups, g[1]) || mul_over(&groups, g[2])) /* it would wrap: a wrong grid, or none (2^64 -> 0) */
    return gpar__errorf(GPAR_EINVAL, "gpar_kernel_launch: %u x %u x %u groups: their count does not fit 64 bits", g[0],
                        g[1], g[2]);
  items = groups;
  if (mul_over(&items, s[0]) || mul_over(&items, s[1]) || mul_over(&items, s[2]))
    return gpar__errorf(GPAR_EINVAL, "gpar_kernel_launch: %llu groups of %u x %u x %u work-items: the count of "
                        "work-items does not fit 64 bits", (unsigned long long)groups, s[0], s[1], s[2]);
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
  uint64_t items = s[0];
  if (mul_over(&items, s[1]) || mul_over(&items, s[2]) || items > e->lim.max_group_size)
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
static int check_args(gpar__kernel *k, gpar__device *dev, const gpar_arg *args, int nargs, gpar__klaunch *L, gpar__buf **b) {
  if (nargs != k->def.nparams || (nargs && !args))
    return gpar__errorf(GPAR_EINVAL, "gpar_kernel_launch: kernel '%s' takes %d argument%s, %d given%s", k->def.name,
                        k->def.nparams, k->def.nparams == 1 ? "" : "s", nargs, nargs && !args ? " (args is NULL)" : "");
  L->nargs = nargs;
  if (nargs > GPAR__KL_INLINE && !(L->more = malloc(sizeof *L->more * (size_t)nargs)))
    return gpar__errorf(GPAR_ENOMEM, "gpar_kernel_launch: out of host memory");
  gpar__karg *v = nargs > GPAR__KL_INLINE ? L->more : L->inl;
  int st = GPAR_OK;
  for (int i = 0; i < nargs && st == GPAR_OK; i++) st = check_arg(k, dev, i, &args[i], &v[i], &b[i]);
  return st;
}

/* Build the op over the checked arguments (taking L and the references in b[]) and submit it,
 * or add it to sub when given (the caller submits or discards sub). */
static int submit(gpar__kernel *k, gpar__device *dev, gpar__klaunch *L, gpar__buf **b, gpar__batch *sub) {
  static const int modes[] = {0, GPAR__READ, GPAR__WRITE, GPAR__READ | GPAR__WRITE};
  gpar__op *op = gpar__op_new(k->eng, k->kind, dev, GPAR__LANE_COMPUTE);
  if (!op) return gpar__errorf(GPAR_ENOMEM, "gpar_kernel_launch: out of host memory");
  gpar__kernel_ref(k);
  op->width = gpar__op_width((double)L->groups[0] * L->groups[1] * L->groups[2], 1); /* its work-groups */
  L->k = k;
  *(gpar__klaunch *)gpar__op_args(op) = *L;
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
  return sub ? gpar__batch_add(sub, op) : gpar__api_submit(op);
}

/* gpar_kernel_launch, its op submitted (sub NULL) or added to sub. */
static int launch(gpar_kernel h, int dev, const gpar_grid *grid, const gpar_arg *args, int nargs, gpar__batch *sub) {
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
  gpar__klaunch L = {0};
  gpar__device *d = gpar__engine_device(eng, dev, fn);
  if (!d) st = GPAR_ENODEV;
  if (st == GPAR_OK) st = check_grid(grid, L.groups, L.size);
  if (st == GPAR_OK) st = check_args(k, d, args, nargs, &L, b);
  if (st == GPAR_OK && L.groups[0] && (st = gpar__kernel_build_on(k, d, &L.e)) == GPAR_OK &&
      (st = check_limits(k, L.e, L.groups, L.size)) == GPAR_OK)
    st = submit(k, d, &L, b, sub);
  for (int i = 0; i < GPAR__KMAX_PARAMS; i++)
    if (b[i]) gpar__buf_put(b[i]);
  free(L.more);
  gpar__engine_leave(eng);
  gpar__kernel_put(k);
  return st;
}

GPAR_API int gpar_kernel_launch(gpar_kernel h, int dev, const gpar_grid *grid, const gpar_arg *args, int nargs) {
  return launch(h, dev, grid, args, nargs, NULL);
}

int gpar__kernel_launch_into(gpar__batch *sub, gpar_kernel h, int dev, const gpar_grid *grid, const gpar_arg *args,
                             int nargs) {
  return launch(h, dev, grid, args, nargs, sub);
}
