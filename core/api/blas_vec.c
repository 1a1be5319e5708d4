/* blas_vec.c: GEMV and the level-1 calls (gpar_[sd]gemv, gpar_[sd]axpy, gpar_[sd]scal,
 * gpar_[sd]dot) and their kinds. Each checks its sizes and increments, then ranges, overlaps
 * and devices (blas_operands.c), and runs as one op on its output's device through the
 * backend's gemv, axpy, scal or dot entry (cuBLAS, CLBlast, OpenBLAS). */
#include "api/blas_operands.h"

_Static_assert(sizeof(gpar__gemv_args) <= GPAR__OP_PAYLOAD, "GEMV arguments fit an op's payload");
_Static_assert(sizeof(gpar__blas1_args) <= GPAR__OP_PAYLOAD, "level-1 arguments fit an op's payload");

static int gemv_run(gpar__device *dev, gpar__op *op) {
  gpar__gemv_args *a = gpar__op_args(op);
  int st = gpar__fault(dev->eng, GPAR__FAULT_GEMM);
  if (st) return st;
  a->no_event = !op->need_event;
  return dev->ops->gemv(dev->bdev, op->lane, a);
}

/* The level-1 kinds differ in the backend entry only. */
#define BLAS1_RUN(name)                                           \
  static int name##_run(gpar__device *dev, gpar__op *op) {        \
    gpar__blas1_args *a = gpar__op_args(op);                      \
    int st = gpar__fault(dev->eng, GPAR__FAULT_GEMM);             \
    if (st) return st;                                            \
    a->no_event = !op->need_event;                                \
    return dev->ops->name(dev->bdev, op->lane, a);                \
  }
BLAS1_RUN(axpy)
BLAS1_RUN(scal)
BLAS1_RUN(dot)

static const gpar__op_kind kind_gemv[2] = {{.name = "sgemv", .run = gemv_run}, {.name = "dgemv", .run = gemv_run}};
static const gpar__op_kind kind_axpy[2] = {{.name = "saxpy", .run = axpy_run}, {.name = "daxpy", .run = axpy_run}};
static const gpar__op_kind kind_scal[2] = {{.name = "sscal", .run = scal_run}, {.name = "dscal", .run = scal_run}};
static const gpar__op_kind kind_dot[2] = {{.name = "sdot", .run = dot_run}, {.name = "ddot", .run = dot_run}};

/* Whether a backend has the entry a call needs. */
static int has_gemv(const gpar__backend_ops *ops) { return ops->gemv != NULL; }
static int has_axpy(const gpar__backend_ops *ops) { return ops->axpy != NULL; }
static int has_scal(const gpar__backend_ops *ops) { return ops->scal != NULL; }
static int has_dot(const gpar__backend_ops *ops) { return ops->dot != NULL; }

/* One checked call: its operands (o[0] the output), whether it is a quick return, what its
 * backend must have, and where each operand's memory goes in its arguments. */
typedef struct vec_call {
  const char *fn;
  const gpar__op_kind *kind;
  gpar__blas_opnd *o;
  int n;
  int quick;
  int (*has)(const gpar__backend_ops *ops);
  void *args;
  size_t size;
  void **mem[3]; /* o[i].b->mem goes to *mem[i] (NULL when o[i] is not accessed) */
} vec_call;

/* Enter the engine of o[0], prepare the operands, then (unless a quick return, or GPAR_ENOTSUP
 * when the backend lacks the entry) fill in the memory and submit the op. */
static int vec_submit(const vec_call *v) {
  int st;
  gpar_engine *eng = gpar__engine_enter_buf(v->o[0].h, &st);
  if (!eng) return st;
  st = gpar__blas_prepare(eng, v->fn, v->o, v->n);
  if (st == GPAR_OK && v->quick) {
    gpar__blas_release(v->o, v->n);
  } else if (st == GPAR_OK && !v->has(gpar__blas_device(eng, v->o)->ops)) {
    st = gpar__errorf(GPAR_ENOTSUP, "%s: the %s backend has no %s", v->fn, gpar__blas_device(eng, v->o)->ops->name,
                      v->kind->name);
    gpar__blas_release(v->o, v->n);
  } else if (st == GPAR_OK) {
    for (int i = 0; i < v->n; i++) *v->mem[i] = v->o[i].mode ? v->o[i].b->mem : NULL;
    st = gpar__blas_submit(eng, v->kind, v->args, v->size, v->o, v->n);
  }
  gpar__engine_leave(eng);
  return st;
}

/* ---------------------------------------------------------------- GEMV */

static int gemv(int dbl, gpar_trans trans, int m, int n, double alpha, gpar_buffer a, size_t a_off, int lda,
                gpar_buffer x, size_t x_off, int incx, double beta, gpar_buffer y, size_t y_off, int incy) {
  const char *fn = dbl ? "gpar_dgemv" : "gpar_sgemv";
  const size_t es = dbl ? 8 : 4;
  int st;
  if ((st = gpar__blas_check_trans(fn, "trans", trans))) return st;
  if (m < 0 || n < 0) return gpar__errorf(GPAR_EINVAL, "%s: negative dimension (m=%d n=%d)", fn, m, n);
  if ((st = gpar__blas_check_ld(fn, "lda", lda, m)) || (st = gpar__blas_check_inc(fn, "incx", incx)) ||
      (st = gpar__blas_check_inc(fn, "incy", incy)))
    return st;
  const int lx = trans == GPAR_NO_TRANS ? n : m, ly = trans == GPAR_NO_TRANS ? m : n;
  const int reads = alpha != 0.0 ? GPAR__READ : 0;
  gpar__blas_opnd o[3] = {{"y", y, y_off, es, 1, ly, incy, 0, 1, beta == 0.0 ? GPAR__WRITE : GPAR__READ | GPAR__WRITE, NULL, 0},
                          {"A", a, a_off, es, m, n, lda, 0, 1, reads, NULL, 0},
                          {"x", x, x_off, es, 1, lx, incx, 0, 1, reads, NULL, 0}};
  gpar__gemv_args args = {.elem_size = (int)es, .trans = trans, .m = m, .n = n, .lda = lda, .incx = incx,
                          .incy = incy, .alpha = alpha, .beta = beta, .a_off = a_off, .x_off = x_off, .y_off = y_off};
  /* reference BLAS: m or n 0, or y = 1 * y, returns at once (y is not scaled when the sum is empty) */
  vec_call v = {fn, &kind_gemv[dbl], o, 3, m == 0 || n == 0 || (alpha == 0.0 && beta == 1.0), has_gemv,
                &args, sizeof args, {&args.y, &args.a, &args.x}};
  return vec_submit(&v);
}

GPAR_API int gpar_sgemv(gpar_trans trans, int m, int n, float alpha, gpar_buffer a, size_t a_off, int lda,
                        gpar_buffer x, size_t x_off, int incx, float beta, gpar_buffer y, size_t y_off, int incy) {
  return gemv(0, trans, m, n, alpha, a, a_off, lda, x, x_off, incx, beta, y, y_off, incy);
}

GPAR_API int gpar_dgemv(gpar_trans trans, int m, int n, double alpha, gpar_buffer a, size_t a_off, int lda,
                        gpar_buffer x, size_t x_off, int incx, double beta, gpar_buffer y, size_t y_off, int incy) {
  return gemv(1, trans, m, n, alpha, a, a_off, lda, x, x_off, incx, beta, y, y_off, incy);
}

/* ---------------------------------------------------------------- AXPY, SCAL, DOT */

static int blas1_check(const char *fn, int n, int incx, const int *incy) {
  int st;
  if (n < 0) return gpar__errorf(GPAR_EINVAL, "%s: negative n (%d)", fn, n);
  if ((st = gpar__blas_check_inc(fn, "incx", incx))) return st;
  return incy ? gpar__blas_check_inc(fn, "incy", *incy) : GPAR_OK;
}

static int axpy(int dbl, int n, double alpha, gpar_buffer x, size_t x_off, int incx, gpar_buffer y, size_t y_off,
                int incy) {
  const char *fn = dbl ? "gpar_daxpy" : "gpar_saxpy";
  const size_t es = dbl ? 8 : 4;
  int st = blas1_check(fn, n, incx, &incy);
  if (st) return st;
  gpar__blas_opnd o[2] = {{"y", y, y_off, es, 1, n, incy, 0, 1, GPAR__READ | GPAR__WRITE, NULL, 0},
                          {"x", x, x_off, es, 1, n, incx, 0, 1, GPAR__READ, NULL, 0}};
  gpar__blas1_args args = {.elem_size = (int)es, .n = n, .incx = incx, .incy = incy, .alpha = alpha,
                           .x_off = x_off, .y_off = y_off};
  /* reference BLAS: n 0 or alpha 0 returns at once (x unread, y unchanged) */
  vec_call v = {fn, &kind_axpy[dbl], o, 2, n == 0 || alpha == 0.0, has_axpy, &args, sizeof args, {&args.y, &args.x}};
  return vec_submit(&v);
}

GPAR_API int gpar_saxpy(int n, float alpha, gpar_buffer x, size_t x_off, int incx, gpar_buffer y, size_t y_off,
                        int incy) {
  return axpy(0, n, alpha, x, x_off, incx, y, y_off, incy);
}

GPAR_API int gpar_daxpy(int n, double alpha, gpar_buffer x, size_t x_off, int incx, gpar_buffer y, size_t y_off,
                        int incy) {
  return axpy(1, n, alpha, x, x_off, incx, y, y_off, incy);
}

static int scal(int dbl, int n, double alpha, gpar_buffer x, size_t x_off, int incx) {
  const char *fn = dbl ? "gpar_dscal" : "gpar_sscal";
  const size_t es = dbl ? 8 : 4;
  int st = blas1_check(fn, n, incx, NULL);
  if (st) return st;
  gpar__blas_opnd o[1] = {{"x", x, x_off, es, 1, n, incx, 0, 1, alpha == 0.0 ? GPAR__WRITE : GPAR__READ | GPAR__WRITE, NULL, 0}};
  gpar__blas1_args args = {.elem_size = (int)es, .n = n, .incx = incx, .alpha = alpha, .x_off = x_off};
  vec_call v = {fn, &kind_scal[dbl], o, 1, n == 0, has_scal, &args, sizeof args, {&args.x}};
  return vec_submit(&v);
}

GPAR_API int gpar_sscal(int n, float alpha, gpar_buffer x, size_t x_off, int incx) {
  return scal(0, n, alpha, x, x_off, incx);
}

GPAR_API int gpar_dscal(int n, double alpha, gpar_buffer x, size_t x_off, int incx) {
  return scal(1, n, alpha, x, x_off, incx);
}

static int dot(int dbl, int n, gpar_buffer x, size_t x_off, int incx, gpar_buffer y, size_t y_off, int incy,
               gpar_buffer r, size_t r_off) {
  const char *fn = dbl ? "gpar_ddot" : "gpar_sdot";
  const size_t es = dbl ? 8 : 4;
  int st = blas1_check(fn, n, incx, &incy);
  if (st) return st;
  const int reads = n > 0 ? GPAR__READ : 0; /* n == 0 writes 0 and reads nothing */
  gpar__blas_opnd o[3] = {{"result", r, r_off, es, 1, 1, 1, 0, 1, GPAR__WRITE, NULL, 0},
                          {"x", x, x_off, es, 1, n, incx, 0, 1, reads, NULL, 0},
                          {"y", y, y_off, es, 1, n, incy, 0, 1, reads, NULL, 0}};
  gpar__blas1_args args = {.elem_size = (int)es, .n = n, .incx = incx, .incy = incy, .x_off = x_off, .y_off = y_off,
                           .r_off = r_off};
  vec_call v = {fn, &kind_dot[dbl], o, 3, 0, has_dot, &args, sizeof args, {&args.r, &args.x, &args.y}};
  return vec_submit(&v);
}

GPAR_API int gpar_sdot(int n, gpar_buffer x, size_t x_off, int incx, gpar_buffer y, size_t y_off, int incy,
                       gpar_buffer result, size_t result_off) {
  return dot(0, n, x, x_off, incx, y, y_off, incy, result, result_off);
}

GPAR_API int gpar_ddot(int n, gpar_buffer x, size_t x_off, int incx, gpar_buffer y, size_t y_off, int incy,
                       gpar_buffer result, size_t result_off) {
  return dot(1, n, x, x_off, incx, y, y_off, incy, result, result_off);
}
