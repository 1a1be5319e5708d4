/* reduce.c: gpar_reduce_range, gpar_reduce_matrix and gpar_argmax: checks of the op, the type,
 * the axis and the shapes, then the operands (operands.c) and one op (run.c). A reduction over
 * zero elements still runs: it writes the identity. */
#include "array/array.h"

static int check_reduce(const char *fn, gpar_redop op, gpar_dtype dtype) {
  int st = gpar__arr_check_float(fn, dtype);
  if (st) return st;
  if (op != GPAR_SUM && op != GPAR_MAX && op != GPAR_MIN)
    return gpar__errorf(GPAR_EINVAL, "%s: op %d is not GPAR_SUM, GPAR_MAX or GPAR_MIN", fn, (int)op);
  return GPAR_OK;
}

GPAR_API int gpar_reduce_range(gpar_redop op, gpar_dtype dtype, size_t count, gpar_buffer x, size_t x_off,
                               gpar_buffer out, size_t out_off) {
  const char *fn = "gpar_reduce_range";
  int st = check_reduce(fn, op, dtype);
  if (st) return st;
  gpar__arr_call c = {
      .fn = fn,
      .args = {.kind = GPAR__ARR_REDUCE, .op = op, .dtype = dtype, .axis = GPAR_PER_COLUMN, .m = count, .n = 1},
      .nops = 2};
  c.op[0] = gpar__arr_range("x", x, x_off, count, dtype, 0);
  c.op[1] = gpar__arr_range("out", out, out_off, 1, dtype, 1);
  return gpar__array_issue(&c);
}

GPAR_API int gpar_reduce_matrix(gpar_redop op, gpar_dtype dtype, int m, int n, gpar_buffer a, size_t a_off, int lda,
                                gpar_axis axis, gpar_buffer out, size_t out_off) {
  const char *fn = "gpar_reduce_matrix";
  int st = check_reduce(fn, op, dtype);
  if (!st && axis != GPAR_PER_ROW && axis != GPAR_PER_COLUMN)
    st = gpar__errorf(GPAR_EINVAL, "%s: axis %d is neither GPAR_PER_ROW nor GPAR_PER_COLUMN", fn, (int)axis);
  if (!st) st = gpar__arr_check_shape(fn, "A", m, n, lda);
  if (st) return st;
  int nout = axis == GPAR_PER_ROW ? m : n;
  gpar__arr_call c = {
      .fn = fn,
      .args = {.kind = GPAR__ARR_REDUCE, .op = op, .dtype = dtype, .axis = axis, .m = (size_t)m, .n = (size_t)n},
      .nops = 2,
      .empty = nout == 0};
  c.op[0] = gpar__arr_matrix("A", a, a_off, m, n, lda, dtype, 0);
  c.op[1] = gpar__arr_range("out", out, out_off, (size_t)nout, dtype, 1);
  return gpar__array_issue(&c);
}

GPAR_API int gpar_argmax(gpar_dtype dtype, int m, int n, gpar_buffer a, size_t a_off, int lda, gpar_buffer idx,
                         size_t idx_off) {
  const char *fn = "gpar_argmax";
  int st = gpar__arr_check_float(fn, dtype);
  if (!st) st = gpar__arr_check_shape(fn, "A", m, n, lda);
  if (st) return st;
  gpar__arr_call c = {.fn = fn,
                      .args = {.kind = GPAR__ARR_ARGMAX, .dtype = dtype, .m = (size_t)m, .n = (size_t)n},
                      .nops = 2,
                      .empty = n == 0};
  c.op[0] = gpar__arr_matrix("A", a, a_off, m, n, lda, dtype, 0);
  c.op[1] = gpar__arr_range("idx", idx, idx_off, (size_t)n, GPAR_INT32, 1);
  return gpar__array_issue(&c);
}
