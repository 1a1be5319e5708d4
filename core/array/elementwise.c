/* elementwise.c: gpar_unary, gpar_binary and gpar_binary_bcast: checks of the op, the type and
 * the shapes, then the operands (operands.c) and one op (run.c). An output may be one of its
 * full-size inputs exactly (in place); a broadcast vector may not overlap the output. */
#include "array/array.h"

GPAR_API int gpar_unary(gpar_unop op, gpar_dtype dtype, size_t count, gpar_buffer x, size_t x_off, gpar_buffer y,
                        size_t y_off) {
  const char *fn = "gpar_unary";
  int st = gpar__arr_check_float(fn, dtype);
  if (st) return st;
  if ((int)op < GPAR_UN_RELU || op > GPAR_UN_NEG) return gpar__errorf(GPAR_EINVAL, "%s: unknown op %d", fn, (int)op);
  gpar__arr_call c = {.fn = fn, .args = {.kind = GPAR__ARR_UNARY, .op = op, .dtype = dtype, .m = count, .n = 1},
                      .nops = 2, .empty = count == 0};
  c.op[0] = gpar__arr_range("x", x, x_off, count, dtype, 0);
  c.op[1] = gpar__arr_range("y", y, y_off, count, dtype, 1);
  c.op[0].in_place = c.op[1].in_place = 1;
  return gpar__array_issue(&c);
}

static int check_binop(const char *fn, gpar_binop op, gpar_dtype dtype) {
  int st = gpar__arr_check_float(fn, dtype);
  if (st) return st;
  if ((int)op < GPAR_BIN_ADD || op > GPAR_BIN_MIN) return gpar__errorf(GPAR_EINVAL, "%s: unknown op %d", fn, (int)op);
  return GPAR_OK;
}

GPAR_API int gpar_binary(gpar_binop op, gpar_dtype dtype, size_t count, gpar_buffer a, size_t a_off, gpar_buffer b,
                         size_t b_off, gpar_buffer c, size_t c_off) {
  const char *fn = "gpar_binary";
  int st = check_binop(fn, op, dtype);
  if (st) return st;
  gpar__arr_call call = {.fn = fn, .args = {.kind = GPAR__ARR_BINARY, .op = op, .dtype = dtype, .m = count, .n = 1},
                         .nops = 3, .empty = count == 0};
  call.op[0] = gpar__arr_range("a", a, a_off, count, dtype, 0);
  call.op[1] = gpar__arr_range("b", b, b_off, count, dtype, 0);
  call.op[2] = gpar__arr_range("c", c, c_off, count, dtype, 1);
  call.op[0].in_place = call.op[1].in_place = call.op[2].in_place = 1;
  return gpar__array_issue(&call);
}

GPAR_API int gpar_binary_bcast(gpar_binop op, gpar_dtype dtype, int m, int n, gpar_buffer a, size_t a_off, int lda,
                               gpar_buffer v, size_t v_off, gpar_axis axis, gpar_buffer c, size_t c_off, int ldc) {
  const char *fn = "gpar_binary_bcast";
  int st = check_binop(fn, op, dtype);
  if (!st && axis != GPAR_PER_ROW && axis != GPAR_PER_COLUMN)
    st = gpar__errorf(GPAR_EINVAL, "%s: axis %d is neither GPAR_PER_ROW nor GPAR_PER_COLUMN", fn, (int)axis);
  if (!st) st = gpar__arr_check_shape(fn, "A", m, n, lda);
  if (!st) st = gpar__arr_check_shape(fn, "C", m, n, ldc);
  if (st) return st;
  gpar__arr_call call = {
      .fn = fn,
      .args = {.kind = GPAR__ARR_BCAST, .op = op, .dtype = dtype, .axis = axis, .m = (size_t)m, .n = (size_t)n},
      .nops = 3,
      .empty = m == 0 || n == 0};
  call.op[0] = gpar__arr_matrix("A", a, a_off, m, n, lda, dtype, 0);
  call.op[1] = gpar__arr_range("v", v, v_off, (size_t)(axis == GPAR_PER_ROW ? m : n), dtype, 0);
  call.op[2] = gpar__arr_matrix("C", c, c_off, m, n, ldc, dtype, 1);
  call.op[0].in_place = call.op[2].in_place = 1;
  return gpar__array_issue(&call);
}
