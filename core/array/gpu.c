/* gpu.c: an array call on a GPU device as launches of the array kernels (kernels.c): the
 * variant (in place only when an output is exactly an input's elements), the grid, the
 * arguments. A reduction too large for one group runs in two passes through a temporary buffer
 * of partial results in the compute type: a pass of groups over strided shares, then one group
 * over the partials, in an order fixed by the size (the same bits every run); the two launches
 * are one submission (no other thread's op between them: the call is as atomic as one op).
 * Every kernel a call needs is built before the first is launched. */
#include "array/kernels.h"
#include "kernel/kernel.h"

#define RANGE_ONE_GROUP 8192 /* a range reduction this short runs in one group, one pass */
#define RANGE_PER_GROUP 4096 /* elements per group of a range reduction's first pass */
#define RANGE_MAX_GROUPS 1024
#define ROW_CHUNK 32         /* columns per work-item of a per-row reduction's first pass */
#define ROW_MAX_CHUNKS 1024

static gpar_arg buf_arg(const gpar__arr_operand *o) {
  return gpar_arg_buffer(o->h, o->off * gpar_dtype_size(o->dtype));
}

/* groups of `group` work-items to cover work items, between 1 and max. */
static uint32_t groups_for(uint64_t work, uint32_t group, uint32_t max) {
  uint64_t g = (work + group - 1) / group;
  return g < 1 ? 1 : g > max ? max : (uint32_t)g;
}

static int launch(gpar__device *dev, const gpar__arr_kinfo *ki, uint32_t g0, uint32_t g1, const gpar_arg *a, int n) {
  gpar_grid grid = {{g0, g1, 1}, {ki->group, 1, 1}};
  return gpar_kernel_launch(ki->k, dev->index, &grid, a, n);
}

/* One pass of a two-pass reduction: its kernel, groups (g0 x g1) and arguments. */
typedef struct pass {
  const gpar__arr_kinfo *ki;
  uint32_t g0, g1;
  const gpar_arg *a;
  int n;
} pass;

/* Both passes as one submission (policy.h): checked and built whole, then linked together under
 * all their buffers' locks, so no other thread's op comes between them; or none of them. */
static int two_passes(gpar__device *dev, const pass p[2]) {
  gpar__batch sub;
  gpar__batch_init(&sub);
  int st = GPAR_OK;
  for (int i = 0; i < 2 && st == GPAR_OK; i++) {
    gpar_grid grid = {{p[i].g0, p[i].g1, 1}, {p[i].ki->group, 1, 1}};
    st = gpar__kernel_launch_into(&sub, p[i].ki->k, dev->index, &grid, p[i].a, p[i].n);
  }
  if (st != GPAR_OK) {
    gpar__batch_discard(&sub);
    return st;
  }
  return gpar__batch_submit(&sub, 0);
}

static int gpu_unary(gpar_engine *eng, gpar__device *dev, const gpar__arr_call *c) {
  const gpar__array_args *x = &c->args;
  int ip = gpar__arr_same(&c->op[0], &c->op[1]); /* in place: the same elements, not just the same buffer */
  gpar__arr_kinfo ki;
  int st = gpar__arr_kernel(eng, dev, GPAR__AK_UNARY, x->dtype, ip, &ki);
  if (st) return st;
  gpar_arg a[4] = {gpar_arg_u64(x->m), gpar_arg_i32(x->op), buf_arg(&c->op[0]), buf_arg(&c->op[1])};
  if (ip) a[2] = a[3];
  return launch(dev, &ki, groups_for(x->m, ki.group, ki.max_groups[0]), 1, a, ip ? 3 : 4);
}

static int gpu_binary(gpar_engine *eng, gpar__device *dev, const gpar__arr_call *c) {
  const gpar__array_args *x = &c->args;
  int var = gpar__arr_same(&c->op[2], &c->op[0]) + 2 * gpar__arr_same(&c->op[2], &c->op[1]), n = 2;
  gpar__arr_kinfo ki;
  int st = gpar__arr_kernel(eng, dev, GPAR__AK_BINARY, x->dtype, var, &ki);
  if (st) return st;
  gpar_arg a[5] = {gpar_arg_u64(x->m), gpar_arg_i32(x->op)};
  if (var == 0 || var == 2) a[n++] = buf_arg(&c->op[0]); /* a, unless it is c */
  if (var == 0 || var == 1) a[n++] = buf_arg(&c->op[1]); /* b, unless it is c */
  a[n++] = buf_arg(&c->op[2]);
  return launch(dev, &ki, groups_for(x->m, ki.group, ki.max_groups[0]), 1, a, n);
}

static int gpu_bcast(gpar_engine *eng, gpar__device *dev, const gpar__arr_call *c) {
  const gpar__array_args *x = &c->args;
  int ip = gpar__arr_same(&c->op[2], &c->op[0]), n = 0;
  gpar__arr_kinfo ki;
  int st = gpar__arr_kernel(eng, dev, GPAR__AK_BCAST, x->dtype, ip, &ki);
  if (st) return st;
  gpar_arg a[9];
  a[n++] = gpar_arg_u64(x->m), a[n++] = gpar_arg_u64(x->n), a[n++] = gpar_arg_i32(x->op);
  a[n++] = gpar_arg_i32(x->axis);
  if (!ip) a[n++] = buf_arg(&c->op[0]);
  a[n++] = gpar_arg_u64(c->op[0].ld), a[n++] = buf_arg(&c->op[1]), a[n++] = buf_arg(&c->op[2]);
  a[n++] = gpar_arg_u64(c->op[2].ld);
  uint32_t g1 = x->n < ki.max_groups[1] ? (uint32_t)x->n : ki.max_groups[1];
  return launch(dev, &ki, groups_for(x->m, ki.group, ki.max_groups[0]), g1, a, n);
}

/* A temporary device buffer of bytes for partial results (released at once: its memory goes
 * when the launches that use it are done). */
static int scratch(gpar_engine *eng, gpar__device *dev, size_t bytes, gpar_buffer *b) {
  return gpar_buffer_create(gpar__engine_token(eng), dev->index, bytes, b);
}

/* sum, max or min of count elements of operand 0 from element offset off into operand 1. */
static int gpu_reduce_range(gpar_engine *eng, gpar__device *dev, const gpar__arr_call *c, size_t count, size_t off) {
  const gpar__array_args *x = &c->args;
  gpar_arg in = gpar_arg_buffer(c->op[0].h, off * gpar_dtype_size(x->dtype)), out = buf_arg(&c->op[1]);
  gpar__arr_kinfo k1, k2;
  int st;
  if (count <= RANGE_ONE_GROUP) {
    if ((st = gpar__arr_kernel(eng, dev, GPAR__AK_REDUCE, x->dtype, 0, &k1))) return st;
    gpar_arg a[4] = {gpar_arg_u64(count), gpar_arg_i32(x->op), in, out};
    return launch(dev, &k1, 1, 1, a, 4);
  }
  if ((st = gpar__arr_kernel(eng, dev, GPAR__AK_REDUCE, x->dtype, 1, &k1)) ||
      (st = gpar__arr_kernel(eng, dev, GPAR__AK_REDUCE, x->dtype, 2, &k2)))
    return st;
  uint32_t g = groups_for(count, RANGE_PER_GROUP, RANGE_MAX_GROUPS);
  gpar_buffer part;
  if ((st = scratch(eng, dev, (size_t)g * (x->dtype == GPAR_DOUBLE ? 8 : 4), &part))) return st;
  gpar_arg a1[4] = {gpar_arg_u64(count), gpar_arg_i32(x->op), in, gpar_arg_buffer(part, 0)};
  gpar_arg a2[4] = {gpar_arg_u64(g), gpar_arg_i32(x->op), gpar_arg_buffer(part, 0), out};
  st = two_passes(dev, (const pass[2]){{&k1, g, 1, a1, 4}, {&k2, 1, 1, a2, 4}});
  gpar_buffer_release(part);
  return st;
}

/* out[i] = op over the columns of row i: chunks of ROW_CHUNK columns, then over the chunks. */
static int gpu_reduce_rows(gpar_engine *eng, gpar__device *dev, const gpar__arr_call *c) {
  const gpar__array_args *x = &c->args;
  uint64_t chunks = (x->n + ROW_CHUNK - 1) / ROW_CHUNK;
  uint32_t p = chunks > ROW_MAX_CHUNKS ? ROW_MAX_CHUNKS : (uint32_t)chunks;
  gpar__arr_kinfo k1, k2;
  int st = gpar__arr_kernel(eng, dev, GPAR__AK_ROWRED, x->dtype, p > 1, &k1);
  if (!st && p > 1) st = gpar__arr_kernel(eng, dev, GPAR__AK_ROWRED, x->dtype, 2, &k2);
  if (st) return st;
  uint32_t g0 = groups_for(x->m, k1.group, k1.max_groups[0]);
  gpar_arg a[7] = {gpar_arg_u64(x->m), gpar_arg_u64(x->n), gpar_arg_i32(x->op), buf_arg(&c->op[0]),
                   gpar_arg_u64(c->op[0].ld), buf_arg(&c->op[1]), gpar_arg_u64(x->m)};
  if (p <= 1) return launch(dev, &k1, g0, 1, a, 7);
  gpar_buffer part;
  if ((st = scratch(eng, dev, (size_t)x->m * p * (x->dtype == GPAR_DOUBLE ? 8 : 4), &part))) return st;
  gpar_arg out = a[5];
  a[5] = gpar_arg_buffer(part, 0);
  gpar_arg b[7] = {gpar_arg_u64(x->m), gpar_arg_u64(p), gpar_arg_i32(x->op), gpar_arg_buffer(part, 0),
                   gpar_arg_u64(x->m), out, gpar_arg_u64(x->m)};
  st = two_passes(dev, (const pass[2]){{&k1, g0, p, a, 7}, {&k2, g0, 1, b, 7}});
  gpar_buffer_release(part);
  return st;
}

static int gpu_reduce(gpar_engine *eng, gpar__device *dev, const gpar__arr_call *c) {
  const gpar__array_args *x = &c->args;
  if (x->axis == GPAR_PER_ROW) return gpu_reduce_rows(eng, dev, c);
  if (x->n == 1) return gpu_reduce_range(eng, dev, c, x->m, c->op[0].off); /* one column: a range */
  gpar__arr_kinfo ki;
  int st = gpar__arr_kernel(eng, dev, GPAR__AK_COLRED, x->dtype, 0, &ki);
  if (st) return st;
  gpar_arg a[6] = {gpar_arg_u64(x->m), gpar_arg_u64(x->n), gpar_arg_i32(x->op), buf_arg(&c->op[0]),
                   gpar_arg_u64(c->op[0].ld), buf_arg(&c->op[1])};
  return launch(dev, &ki, x->n < ki.max_groups[0] ? (uint32_t)x->n : ki.max_groups[0], 1, a, 6);
}

static int gpu_softmax(gpar_engine *eng, gpar__device *dev, const gpar__arr_call *c) {
  const gpar__array_args *x = &c->args;
  int var = (c->op[2].b ? 1 : 0) | (c->op[3].b ? 2 : 0), n = 0;
  gpar__arr_kinfo ki;
  int st = gpar__arr_kernel(eng, dev, GPAR__AK_SOFTMAX, x->dtype, var, &ki);
  if (st) return st;
  gpar_arg a[10];
  a[n++] = gpar_arg_u64(x->m), a[n++] = gpar_arg_u64(x->n), a[n++] = buf_arg(&c->op[0]);
  a[n++] = gpar_arg_u64(c->op[0].ld), a[n++] = buf_arg(&c->op[1]);
  a[n++] = x->dtype == GPAR_DOUBLE ? gpar_arg_f64(x->scale) : gpar_arg_f32((float)x->scale);
  if (var & 1) a[n++] = buf_arg(&c->op[2]);
  if (var & 2) a[n++] = buf_arg(&c->op[3]), a[n++] = gpar_arg_u64(c->op[3].ld);
  return launch(dev, &ki, groups_for(x->n, ki.group, ki.max_groups[0]), 1, a, n);
}

static int gpu_argmax(gpar_engine *eng, gpar__device *dev, const gpar__arr_call *c) {
  const gpar__array_args *x = &c->args;
  gpar__arr_kinfo ki;
  int st = gpar__arr_kernel(eng, dev, GPAR__AK_ARGMAX, x->dtype, 0, &ki);
  if (st) return st;
  gpar_arg a[5] = {gpar_arg_u64(x->m), gpar_arg_u64(x->n), buf_arg(&c->op[0]), gpar_arg_u64(c->op[0].ld),
                   buf_arg(&c->op[1])};
  return launch(dev, &ki, groups_for(x->n, ki.group, ki.max_groups[0]), 1, a, 5);
}

int gpar__array_gpu(gpar_engine *eng, gpar__device *dev, gpar__arr_call *c) {
  switch (c->args.kind) {
  case GPAR__ARR_UNARY: return gpu_unary(eng, dev, c);
  case GPAR__ARR_BINARY: return gpu_binary(eng, dev, c);
  case GPAR__ARR_BCAST: return gpu_bcast(eng, dev, c);
  case GPAR__ARR_REDUCE: return gpu_reduce(eng, dev, c);
  case GPAR__ARR_SOFTMAX_XENT: return gpu_softmax(eng, dev, c);
  default: return gpu_argmax(eng, dev, c);
  }
}
