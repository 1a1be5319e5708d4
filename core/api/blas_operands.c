/* blas_operands.c: the checks and the op building shared by every BLAS call (blas_operands.h): argument
 * checks of transposes, leading dimensions and increments; then, with the buffers, ranges of
 * every operand over all its batch entries (unread ones too), overlaps and devices; then the op
 * over exactly the operands it reads and writes. */
#include <stdint.h>
#include <string.h>

#include "api/blas_operands.h"

int gpar__blas_check_trans(const char *fn, const char *what, gpar_trans t) {
  if (t == GPAR_NO_TRANS || t == GPAR_TRANS) return GPAR_OK;
  return gpar__errorf(GPAR_EINVAL, "%s: %s is neither GPAR_NO_TRANS nor GPAR_TRANS (%d)", fn, what, (int)t);
}

int gpar__blas_check_ld(const char *fn, const char *what, int ld, int rows) {
  if (ld >= (rows > 1 ? rows : 1)) return GPAR_OK;
  return gpar__errorf(GPAR_EINVAL, "%s: %s=%d < max(1, %d)", fn, what, ld, rows);
}

int gpar__blas_check_inc(const char *fn, const char *what, int inc) {
  if (inc >= 1) return GPAR_OK;
  return gpar__errorf(GPAR_EINVAL, "%s: %s=%d: increments must be at least 1", fn, what, inc);
}

/* o->end for an operand with elements: off + (batch - 1) * stride + (cols - 1) * ld + rows; 0 on
 * overflow. */
static int opnd_end(gpar__blas_opnd *o) {
  size_t e = (size_t)(o->cols - 1) * (size_t)o->ld, s = (size_t)(o->batch - 1) * (size_t)o->stride;
  if (o->cols > 1 && e / (size_t)(o->cols - 1) != (size_t)o->ld) return 0;
  if (o->batch > 1 && s / (size_t)(o->batch - 1) != (size_t)o->stride) return 0;
  if (e > SIZE_MAX - (size_t)o->rows) return 0;
  e += (size_t)o->rows;
  if (s > SIZE_MAX - e || s + e > SIZE_MAX - o->off) return 0;
  o->end = o->off + s + e;
  return 1;
}

/* The range of o inside its buffer. An operand with no element (a dimension or the batch 0) is
 * still an argument: its offset, and its last entry's, must lie within the buffer. */
static int opnd_range(const char *fn, gpar__blas_opnd *o) {
  const size_t nelem = o->b->bytes / o->esize;
  if (o->rows == 0 || o->cols == 0 || o->batch == 0) {
    size_t last = o->off, s = o->batch > 1 ? (size_t)(o->batch - 1) * (size_t)o->stride : 0;
    int wrap = o->batch > 1 && (s / (size_t)(o->batch - 1) != (size_t)o->stride || s > SIZE_MAX - o->off);
    o->end = o->off;
    if (!wrap) last += s;
    if (wrap || last > nelem)
      return gpar__errorf(GPAR_ERANGE, "%s: %s (%dx%d, %d entries) offset %zu is past its buffer of %zu elements", fn,
                          o->name, o->rows, o->cols, o->batch, wrap ? SIZE_MAX : last, nelem);
    return GPAR_OK;
  }
  if (!opnd_end(o) || o->end > nelem)
    return gpar__errorf(GPAR_ERANGE, "%s: %s (%dx%d, ld %d, offset %zu, %d entries %lld apart) exceeds its buffer of %zu elements",
                        fn, o->name, o->rows, o->cols, o->ld, o->off, o->batch, o->stride, nelem);
  return GPAR_OK;
}

/* Byte ranges [off, end) of two operands of one buffer overlap (neither empty). */
static int opnd_overlap(const gpar__blas_opnd *x, const gpar__blas_opnd *y) {
  if (x->b != y->b || x->end == x->off || y->end == y->off) return 0;
  const size_t x0 = x->off * x->esize, x1 = x->end * x->esize, y0 = y->off * y->esize, y1 = y->end * y->esize;
  return x0 < y1 && y0 < x1;
}

static int opnd_alias(const char *fn, const gpar__blas_opnd *o, int n) {
  for (int i = 0; i < n; i++) {
    if (!(o[i].mode & GPAR__WRITE)) continue;
    for (int j = 0; j < n; j++)
      if (j != i && opnd_overlap(&o[i], &o[j]))
        return gpar__errorf(GPAR_EALIAS, "%s: %s overlaps %s", fn, o[i].name, o[j].name);
    const size_t extent = (size_t)(o[i].cols - 1) * (size_t)o[i].ld + (size_t)o[i].rows;
    if (o[i].batch > 1 && o[i].end > o[i].off && (size_t)o[i].stride < extent)
      return gpar__errorf(GPAR_EALIAS, "%s: the %d entries of %s overlap (stride %lld < its extent of %zu elements)", fn,
                          o[i].batch, o[i].name, o[i].stride, extent);
  }
  return GPAR_OK;
}

int gpar__blas_prepare(gpar_engine *eng, const char *fn, gpar__blas_opnd *o, int n) {
  int st = GPAR_OK;
  for (int i = 0; i < n; i++) o[i].b = NULL;
  for (int i = 0; i < n && st == GPAR_OK; i++) st = gpar__buf_get(eng, o[i].h, &o[i].b);
  for (int i = 0; i < n && st == GPAR_OK; i++) st = opnd_range(fn, &o[i]);
  if (st == GPAR_OK) st = opnd_alias(fn, o, n);
  for (int i = 1; i < n && st == GPAR_OK; i++)
    if (o[i].b->host_memory != o[0].b->host_memory || (!o[0].b->host_memory && o[i].b->dev != o[0].b->dev))
      st = gpar__errorf(GPAR_EINVAL, "%s: %s is not on %s's device (the call runs on %s's device)", fn, o[i].name,
                        o[0].name, o[0].name);
  if (st != GPAR_OK) gpar__blas_release(o, n);
  return st;
}

gpar__device *gpar__blas_device(gpar_engine *eng, const gpar__blas_opnd *o) {
  return o[0].b->host_memory ? eng->host_dev : o[0].b->dev;
}

void gpar__blas_release(gpar__blas_opnd *o, int n) {
  for (int i = 0; i < n; i++)
    if (o[i].b) {
      gpar__buf_put(o[i].b);
      o[i].b = NULL;
    }
}

int gpar__blas_submit(gpar_engine *eng, const gpar__op_kind *kind, const void *args, size_t size, gpar__blas_opnd *o,
                      int n) {
  gpar__op *op = size <= GPAR__OP_PAYLOAD ? gpar__op_new(eng, kind, gpar__blas_device(eng, o), GPAR__LANE_COMPUTE) : NULL;
  if (!op) {
    gpar__blas_release(o, n);
    return size <= GPAR__OP_PAYLOAD ? GPAR_ENOMEM : gpar__errorf(GPAR_EINVAL, "%s: arguments too large", kind->name);
  }
  memcpy(gpar__op_args(op), args, size);
  op->width = gpar__op_width((double)o[0].rows * o[0].cols * (o[0].batch > 0 ? o[0].batch : 1), 4096);
  int st = GPAR_OK;
  for (int i = 0; i < n; i++) {
    if (st == GPAR_OK && o[i].mode)
      st = gpar__op_use(op, o[i].b, o[i].mode); /* takes the reference, also on failure */
    else
      gpar__buf_put(o[i].b);
    o[i].b = NULL;
  }
  if (st != GPAR_OK) {
    gpar__op_discard(op);
    return st;
  }
  return gpar__api_submit(op);
}
