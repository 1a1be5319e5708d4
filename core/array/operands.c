/* operands.c: the checks every array call goes through before anything is built: element
 * types and shapes (called by each public call), then handles, ranges, devices and overlap
 * of its operands (gpar__arr_operands, which run.c's gpar__array_issue calls first). */
#include <stdint.h>
#include <stdlib.h>

#include "array/array.h"

int gpar__arr_check_float(const char *fn, int dtype) {
  if (dtype == GPAR_FLOAT || dtype == GPAR_DOUBLE || dtype == GPAR_HALF || dtype == GPAR_BFLOAT16) return GPAR_OK;
  return gpar__errorf(GPAR_EINVAL, "%s: element type %d is not GPAR_FLOAT, GPAR_DOUBLE, GPAR_HALF or GPAR_BFLOAT16", fn,
                      dtype);
}

int gpar__arr_check_shape(const char *fn, const char *name, int m, int n, int ld) {
  if (m < 0 || n < 0) return gpar__errorf(GPAR_EINVAL, "%s: negative dimension of %s (m=%d n=%d)", fn, name, m, n);
  if (ld < (m > 1 ? m : 1)) return gpar__errorf(GPAR_EINVAL, "%s: ld of %s = %d < max(1, %d)", fn, name, ld, m);
  return GPAR_OK;
}

/* One past the last element of o (its offset when it is empty); 0 on overflow. */
static int extent(const gpar__arr_operand *o, size_t *end) {
  if (o->rows == 0 || o->cols == 0) {
    *end = o->off;
    return 1;
  }
  size_t c1 = o->cols - 1;
  if (c1 && o->ld > SIZE_MAX / c1) return 0;
  size_t e = c1 * o->ld;
  if (e > SIZE_MAX - o->rows || e + o->rows > SIZE_MAX - o->off) return 0;
  *end = o->off + e + o->rows;
  return 1;
}

/* Look every present operand up in eng and check its range; end[i] receives its extent. */
static int lookup(const char *fn, gpar__arr_operand *o, int n, gpar_engine *eng, size_t *end) {
  int st = GPAR_OK;
  for (int i = 0; i < n && st == GPAR_OK; i++) {
    if (!o[i].h.id) continue;
    if ((st = gpar__buf_get(eng, o[i].h, &o[i].b)) != GPAR_OK) break;
    size_t have = o[i].b->bytes / o[i].esize;
    if (!extent(&o[i], &end[i]) || end[i] > have || o[i].off > have)
      st = gpar__errorf(GPAR_ERANGE, "%s: %s (%zux%zu, ld %zu, offset %zu) exceeds its buffer of %zu elements", fn,
                        o[i].name, o[i].rows, o[i].cols, o[i].ld, o[i].off, have);
  }
  return st;
}

/* Every operand on the home operand's device (or all in host memory). */
static int same_device(const char *fn, const gpar__arr_operand *o, int n, int home) {
  const gpar__buf *h = o[home].b;
  for (int i = 0; i < n; i++)
    if (o[i].b && (o[i].b->host_memory != h->host_memory || (!h->host_memory && o[i].b->dev != h->dev)))
      return gpar__errorf(GPAR_EINVAL, "%s: %s is not on %s's device (the op runs on %s's device)", fn, o[i].name,
                          o[home].name, o[home].name);
  return GPAR_OK;
}

int gpar__arr_same(const gpar__arr_operand *p, const gpar__arr_operand *q) {
  return p->b && p->b == q->b && p->off == q->off && p->rows == q->rows && p->cols == q->cols &&
         (p->cols <= 1 || p->ld == q->ld);
}

/* An output overlapping another operand: allowed only in place (an input that may be, the same
 * elements exactly). Ranges in bytes, as gpar.h's overlap rule says. */
static int overlap(const char *fn, const gpar__arr_operand *o, int n, const size_t *end) {
  for (int i = 0; i < n; i++) {
    if (!o[i].b || !o[i].out) continue;
    for (int j = 0; j < n; j++) {
      const gpar__arr_operand *p = &o[j], *q = &o[i];
      if (j == i || p->b != q->b || (p->out && j < i)) continue;
      if (end[i] == q->off || end[j] == p->off) continue; /* an empty operand overlaps nothing */
      if (q->off * q->esize >= end[j] * p->esize || p->off * p->esize >= end[i] * q->esize) continue;
      int exact = !p->out && p->in_place && q->in_place && p->dtype == q->dtype && gpar__arr_same(p, q);
      if (!exact) return gpar__errorf(GPAR_EALIAS, "%s: %s overlaps %s", fn, q->name, p->name);
    }
  }
  return GPAR_OK;
}

int gpar__arr_operands(const char *fn, gpar__arr_operand *o, int n, gpar_engine **engp, int *home) {
  int st = GPAR_OK, first = -1;
  *engp = NULL;
  *home = -1;
  for (int i = 0; i < n && st == GPAR_OK; i++) {
    o[i].b = NULL;
    if (!o[i].h.id && !o[i].optional) st = gpar__errorf(GPAR_EBADBUF, "%s: %s is the null handle", fn, o[i].name);
    if (o[i].h.id && first < 0) first = i;
    if (o[i].h.id && o[i].out && *home < 0) *home = i;
  }
  if (st) return st;
  if (*home < 0) return gpar__errorf(GPAR_EINVAL, "%s: no output (every output is the null handle)", fn);
  gpar_engine *eng = gpar__engine_enter_buf(o[first].h, &st);
  if (!eng) return st;
  size_t *end = calloc((size_t)n, sizeof *end);
  if (!end) st = gpar__errorf(GPAR_ENOMEM, "%s: out of host memory", fn);
  if (st == GPAR_OK) st = lookup(fn, o, n, eng, end);
  if (st == GPAR_OK) st = same_device(fn, o, n, *home);
  if (st == GPAR_OK) st = overlap(fn, o, n, end);
  free(end);
  *engp = eng;
  if (st != GPAR_OK) gpar__arr_operands_done(eng, o, n), *engp = NULL;
  return st;
}

void gpar__arr_operands_done(gpar_engine *eng, gpar__arr_operand *o, int n) {
  for (int i = 0; i < n; i++) {
    if (o[i].b) gpar__buf_put(o[i].b);
    o[i].b = NULL;
  }
  gpar__engine_leave(eng);
}
