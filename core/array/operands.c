/* operands.c: the checks every array call goes through before anything is built: element
 * types and shapes (called by each public call), then handles, ranges, devices and overlap
 * of its operands (gpar__array_issue), which hands a call that passed them to run.c. */
#include <stdint.h>

#include "array/array.h"

size_t gpar__arr_elem(int dtype) {
  switch (dtype) {
  case GPAR_FLOAT: return 4;
  case GPAR_DOUBLE: return 8;
  case GPAR_HALF: return 2;
  case GPAR_BFLOAT16: return 2;
  case GPAR_INT32: return 4;
  default: return 0;
  }
}

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
static int lookup(const gpar__arr_call *c, gpar_engine *eng, gpar__buf **b, size_t *end) {
  int st = GPAR_OK;
  for (int i = 0; i < c->nops && st == GPAR_OK; i++) {
    const gpar__arr_operand *o = &c->op[i];
    if (!o->h.id) continue;
    if ((st = gpar__buf_get(eng, o->h, &b[i])) != GPAR_OK) break;
    size_t es = gpar__arr_elem(o->dtype), have = b[i]->bytes / es;
    if (!extent(o, &end[i]) || end[i] > have || o->off > have)
      st = gpar__errorf(GPAR_ERANGE, "%s: %s (%zux%zu, ld %zu, offset %zu) exceeds its buffer of %zu elements", c->fn,
                        o->name, o->rows, o->cols, o->ld, o->off, have);
  }
  return st;
}

/* Every operand on the home operand's device (or all in host memory). */
static int same_device(const gpar__arr_call *c, gpar__buf *const *b) {
  const gpar__buf *h = b[c->home];
  for (int i = 0; i < c->nops; i++)
    if (b[i] && (b[i]->host_memory != h->host_memory || (!h->host_memory && b[i]->dev != h->dev)))
      return gpar__errorf(GPAR_EINVAL, "%s: %s is not on %s's device (the op runs on %s's device)", c->fn,
                          c->op[i].name, c->op[c->home].name, c->op[c->home].name);
  return GPAR_OK;
}

/* An output overlapping another operand: allowed only in place (an input that may be, the same
 * elements exactly). Ranges in bytes, as gpar.h's overlap rule says. */
static int overlap(const gpar__arr_call *c, gpar__buf *const *b, const size_t *end) {
  for (int i = 0; i < c->nops; i++) {
    const gpar__arr_operand *o = &c->op[i];
    if (!b[i] || !o->out) continue;
    for (int j = 0; j < c->nops; j++) {
      const gpar__arr_operand *p = &c->op[j];
      if (j == i || b[j] != b[i] || (p->out && j < i)) continue;
      size_t eo = gpar__arr_elem(o->dtype), ep = gpar__arr_elem(p->dtype);
      if (end[i] == o->off || end[j] == p->off) continue; /* an empty operand overlaps nothing */
      if (o->off * eo >= end[j] * ep || p->off * ep >= end[i] * eo) continue;
      int exact = !p->out && p->in_place && o->in_place && p->dtype == o->dtype && p->off == o->off &&
                  p->rows == o->rows && p->cols == o->cols && (p->cols <= 1 || p->ld == o->ld);
      if (!exact) return gpar__errorf(GPAR_EALIAS, "%s: %s overlaps %s", c->fn, o->name, p->name);
    }
  }
  return GPAR_OK;
}

int gpar__array_issue(gpar__arr_call *c) {
  int st = GPAR_OK, first = -1;
  for (int i = 0; i < c->nops && first < 0; i++)
    if (c->op[i].h.id) first = i;
  for (int i = 0; i < c->nops && st == GPAR_OK; i++)
    if (!c->op[i].h.id && !c->op[i].optional) st = gpar__errorf(GPAR_EBADBUF, "%s: %s is the null handle", c->fn, c->op[i].name);
  if (st) return st;
  if (first < 0) return gpar__errorf(GPAR_EINVAL, "%s: every operand is the null handle", c->fn);
  c->home = -1;
  for (int i = 0; i < c->nops && c->home < 0; i++)
    if (c->op[i].out && c->op[i].h.id) c->home = i;
  if (c->home < 0) return gpar__errorf(GPAR_EINVAL, "%s: no output (every output is the null handle)", c->fn);
  gpar_engine *eng = gpar__engine_enter_buf(c->op[first].h, &st);
  if (!eng) return st;
  gpar__buf *b[GPAR__ARR_MAX_OPERANDS] = {NULL};
  size_t end[GPAR__ARR_MAX_OPERANDS] = {0};
  st = lookup(c, eng, b, end);
  if (st == GPAR_OK) st = same_device(c, b);
  if (st == GPAR_OK) st = overlap(c, b, end);
  if (st == GPAR_OK && !c->empty) {
    for (int i = 0; i < c->nops; i++) c->op[i].b = b[i];
    gpar__device *dev = b[c->home]->host_memory ? eng->host_dev : b[c->home]->dev;
    st = gpar__array_submit(eng, dev, c); /* takes over the references */
    for (int i = 0; i < c->nops; i++) b[i] = NULL;
  }
  for (int i = 0; i < c->nops; i++)
    if (b[i]) gpar__buf_put(b[i]);
  gpar__engine_leave(eng);
  return st;
}
