/* host_array_t.h: the array ops of host_array.c for one element type, included once per type
 * with S (storage type), C (compute type), LOAD(p) (S to C), STORE(v) (C to S) and SUFFIX
 * defined. Matrices are column-major m x n with leading dimensions; a range is one column. */

#define FN_(name, suffix) name##_##suffix
#define FN2(name, suffix) FN_(name, suffix)
#define FN(name) FN2(name, SUFFIX)

/* y(i, j) = EXPR of v = x(i, j), over the m x n operands 0 (in) and 1 (out). */
#define UNARY_LOOP(EXPR)                                                         \
  for (size_t j = 0; j < a->n; j++) {                                            \
    const S *xs = (const S *)a->x[0] + a->off[0] + j * a->ld[0];                 \
    S *ys = (S *)a->x[1] + a->off[1] + j * a->ld[1];                             \
    for (size_t i = 0; i < a->m; i++) {                                          \
      C v = LOAD(xs[i]);                                                         \
      ys[i] = STORE(EXPR);                                                       \
    }                                                                            \
  }

static int FN(unary)(const gpar__array_args *a) {
  switch (a->op) {
  case GPAR_UN_RELU: UNARY_LOOP(v < 0 ? (C)0 : v) break;
  case GPAR_UN_EXP: UNARY_LOOP(exp(v)) break;
  case GPAR_UN_LOG: UNARY_LOOP(log(v)) break;
  case GPAR_UN_TANH: UNARY_LOOP(tanh(v)) break;
  case GPAR_UN_SIGMOID: UNARY_LOOP((C)1 / ((C)1 + exp(-v))) break;
  case GPAR_UN_ABS: UNARY_LOOP(fabs(v)) break;
  case GPAR_UN_SQRT: UNARY_LOOP(sqrt(v)) break;
  case GPAR_UN_NEG: UNARY_LOOP(-v) break;
  default: return gpar__errorf(GPAR_EINVAL, "host array: unknown unary op %d", a->op);
  }
  return GPAR_OK;
}

/* c(i, j) = EXPR of p = a(i, j) and q = the second operand, over operands 0 (A), 1 and 2 (C):
 * b(i, j) (BINARY), v[i] (BCAST per row) or v[j] (BCAST per column). */
#define BINARY_LOOP(EXPR)                                                         \
  for (size_t j = 0; j < a->n; j++) {                                             \
    const S *as = (const S *)a->x[0] + a->off[0] + j * a->ld[0];                  \
    const S *bs = (const S *)a->x[1] + a->off[1] + j * a->ld[1];                  \
    S *cs = (S *)a->x[2] + a->off[2] + j * a->ld[2];                              \
    if (a->kind == GPAR__ARR_BCAST && a->axis == GPAR_PER_COLUMN) {               \
      const C q = LOAD(((const S *)a->x[1] + a->off[1])[j]);                      \
      for (size_t i = 0; i < a->m; i++) {                                         \
        C p = LOAD(as[i]);                                                        \
        cs[i] = STORE(EXPR);                                                      \
      }                                                                           \
    } else {                                                                      \
      if (a->kind == GPAR__ARR_BCAST) bs = (const S *)a->x[1] + a->off[1];        \
      for (size_t i = 0; i < a->m; i++) {                                         \
        C p = LOAD(as[i]), q = LOAD(bs[i]);                                       \
        cs[i] = STORE(EXPR);                                                      \
      }                                                                           \
    }                                                                             \
  }

static int FN(binary)(const gpar__array_args *a) {
  switch (a->op) {
  case GPAR_BIN_ADD: BINARY_LOOP(p + q) break;
  case GPAR_BIN_SUB: BINARY_LOOP(p - q) break;
  case GPAR_BIN_MUL: BINARY_LOOP(p * q) break;
  case GPAR_BIN_DIV: BINARY_LOOP(p / q) break;
  case GPAR_BIN_MAX: BINARY_LOOP(MAXOF(p, q)) break;
  case GPAR_BIN_MIN: BINARY_LOOP(MINOF(p, q)) break;
  default: return gpar__errorf(GPAR_EINVAL, "host array: unknown binary op %d", a->op);
  }
  return GPAR_OK;
}

/* Accumulate column j of operand 0 into acc[0 .. rows) (per row: rows m, acc[i] op= A(i0 + i, j))
 * or the whole column into *acc (per column). Sums in double, max and min in C. */
static void FN(reduce_rows)(const gpar__array_args *a, size_t i0, size_t rows, double *acc) {
  for (size_t j = 0; j < a->n; j++) {
    const S *xs = (const S *)a->x[0] + a->off[0] + j * a->ld[0] + i0;
    if (a->op == GPAR_SUM)
      for (size_t i = 0; i < rows; i++) acc[i] += (double)LOAD(xs[i]);
    else if (a->op == GPAR_MAX)
      for (size_t i = 0; i < rows; i++) acc[i] = (double)MAXOF((C)acc[i], LOAD(xs[i]));
    else
      for (size_t i = 0; i < rows; i++) acc[i] = (double)MINOF((C)acc[i], LOAD(xs[i]));
  }
}

/* One column's reduction: 8 running partials (fixed order: the same bits every run). */
static C FN(reduce_col)(const gpar__array_args *a, const S *xs) {
  double p[8];
  for (int l = 0; l < 8; l++) p[l] = reduce_identity(a->op);
  size_t i = 0, m = a->m;
  if (a->op == GPAR_SUM) {
    for (; i + 8 <= m; i += 8)
      for (int l = 0; l < 8; l++) p[l] += (double)LOAD(xs[i + l]);
    for (; i < m; i++) p[0] += (double)LOAD(xs[i]);
    return (C)(((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7])));
  }
  C r = (C)p[0];
  for (; i < m; i++) r = a->op == GPAR_MAX ? MAXOF(r, LOAD(xs[i])) : MINOF(r, LOAD(xs[i]));
  return r;
}

static int FN(reduce)(const gpar__array_args *a) {
  S *out = (S *)a->x[1] + a->off[1];
  if (a->axis == GPAR_PER_COLUMN) {
    for (size_t j = 0; j < a->n; j++) out[j] = STORE(FN(reduce_col)(a, (const S *)a->x[0] + a->off[0] + j * a->ld[0]));
    return GPAR_OK;
  }
  double acc[256];
  for (size_t i0 = 0; i0 < a->m; i0 += 256) {
    size_t rows = a->m - i0 < 256 ? a->m - i0 : 256;
    for (size_t i = 0; i < rows; i++) acc[i] = reduce_identity(a->op);
    FN(reduce_rows)(a, i0, rows, acc);
    for (size_t i = 0; i < rows; i++) out[i0 + i] = STORE((C)acc[i]);
  }
  return GPAR_OK;
}

/* Column j of Z: loss[j] and G(:, j) (x[2], x[3] may be NULL). */
static void FN(softmax_col)(const gpar__array_args *a, size_t j) {
  const S *z = (const S *)a->x[0] + a->off[0] + j * a->ld[0];
  const int32_t y = ((const int32_t *)a->x[1] + a->off[1])[j];
  const size_t k = a->m;
  C mx = -(C)INFINITY, s = 0;
  for (size_t i = 0; i < k; i++) mx = MAXOF(mx, LOAD(z[i]));
  for (size_t i = 0; i < k; i++) s += exp(LOAD(z[i]) - mx);
  const int in = y >= 0 && (size_t)y < k;
  if (a->x[2]) ((S *)a->x[2] + a->off[2])[j] = STORE(in ? log(s) - (LOAD(z[y]) - mx) : (C)NAN);
  if (!a->x[3]) return;
  S *g = (S *)a->x[3] + a->off[3] + j * a->ld[3];
  const C scale = (C)a->scale;
  for (size_t i = 0; i < k; i++) g[i] = STORE(scale * (exp(LOAD(z[i]) - mx) / s - (in && i == (size_t)y ? (C)1 : (C)0)));
}

static int FN(softmax_xent)(const gpar__array_args *a) {
  for (size_t j = 0; j < a->n; j++) FN(softmax_col)(a, j);
  return GPAR_OK;
}

static int FN(argmax)(const gpar__array_args *a) {
  int32_t *out = (int32_t *)a->x[1] + a->off[1];
  for (size_t j = 0; j < a->n; j++) {
    const S *xs = (const S *)a->x[0] + a->off[0] + j * a->ld[0];
    int32_t best = a->m ? 0 : -1;
    C bv = a->m ? LOAD(xs[0]) : (C)0;
    for (size_t i = 1; i < a->m && bv == bv; i++) {
      C v = LOAD(xs[i]);
      if (v > bv || v != v) bv = v, best = (int32_t)i;
    }
    out[j] = best;
  }
  return GPAR_OK;
}

static int FN(run)(const gpar__array_args *a) {
  switch (a->kind) {
  case GPAR__ARR_UNARY: return FN(unary)(a);
  case GPAR__ARR_BINARY:
  case GPAR__ARR_BCAST: return FN(binary)(a);
  case GPAR__ARR_REDUCE: return FN(reduce)(a);
  case GPAR__ARR_SOFTMAX_XENT: return FN(softmax_xent)(a);
  case GPAR__ARR_ARGMAX: return FN(argmax)(a);
  default: return gpar__errorf(GPAR_EINVAL, "host array: unknown kind %d", a->kind);
  }
}

#undef UNARY_LOOP
#undef BINARY_LOOP
#undef FN
#undef FN2
#undef FN_
