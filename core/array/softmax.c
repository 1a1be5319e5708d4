/* softmax.c: gpar_softmax_xent, softmax cross-entropy of a batch of logit columns with its
 * gradient (the row max subtracted first): checks, then the operands (operands.c) and one op
 * (run.c). loss and G are each optional; neither may overlap anything. */
#include <math.h>

#include "array/array.h"

GPAR_API int gpar_softmax_xent(gpar_dtype dtype, int k, int n, gpar_buffer z, size_t z_off, int ldz,
                               gpar_buffer labels, size_t labels_off, double grad_scale, gpar_buffer loss,
                               size_t loss_off, gpar_buffer grad, size_t grad_off, int ldg) {
  const char *fn = "gpar_softmax_xent";
  int st = gpar__arr_check_float(fn, dtype);
  if (!st) st = gpar__arr_check_shape(fn, "Z", k, n, ldz);
  if (!st && grad.id) st = gpar__arr_check_shape(fn, "G", k, n, ldg);
  if (!st && !isfinite(grad_scale)) st = gpar__errorf(GPAR_EINVAL, "%s: grad_scale %g is not finite", fn, grad_scale);
  if (!st && !loss.id && !grad.id) st = gpar__errorf(GPAR_EINVAL, "%s: neither loss nor G is given", fn);
  if (st) return st;
  gpar__arr_call c = {
      .fn = fn,
      .args = {.kind = GPAR__ARR_SOFTMAX_XENT, .dtype = dtype, .m = (size_t)k, .n = (size_t)n, .scale = grad_scale},
      .nops = 4,
      .empty = n == 0};
  c.op[0] = gpar__arr_matrix("Z", z, z_off, k, n, ldz, dtype, 0);
  c.op[1] = gpar__arr_range("labels", labels, labels_off, (size_t)n, GPAR_INT32, 0);
  c.op[2] = gpar__arr_range("loss", loss, loss_off, (size_t)n, dtype, 1);
  c.op[3] = gpar__arr_matrix("G", grad, grad_off, k, n, grad.id ? ldg : 1, dtype, 1);
  c.op[2].optional = c.op[3].optional = 1;
  return gpar__array_issue(&c);
}
