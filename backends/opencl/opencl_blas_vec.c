/* opencl_blas_vec.c: GEMV and the level-1 calls on OpenCL through CLBlast (CLBlastSgemv/Dgemv,
 * Saxpy/Daxpy, Sscal/Dscal, Sdot/Ddot, the dot's result written into its buffer on the device).
 * CLBlast keeps NaN where a BLAS rule asks for exact zeros (scal by 0, gemv with beta 0), refuses
 * n == 0, and takes no wait list; so zeros come from the backend's fill or zero kernel
 * (opencl_blas_kernels.c), n == 0 never reaches CLBlast, and each call is ordered by the lane's
 * in-order queue. A lane's first call of each routine runs under CLBlast's cold lock
 * (opencl_blas_clblast.c). */
#include "opencl_internal.h"

static int fp64_ok(gpar__bdev *dev, int es, const char *what) {
  if (es != 8 || dev->d->fp64) return GPAR_OK;
  return gpar__errorf(GPAR_ENOTSUP, "%s: device %s has no fp64 support", what, dev->d->name);
}

/* x = alpha * x over n elements (alpha != 0, != 1), through CLBlast. */
static int scal(gpar__bdev *dev, gpar__cllane *ln, int es, int n, double alpha, cl_mem x, size_t off, int inc,
                int want_event) {
  const unsigned w = es == 8 ? GPAR__CLW_DSCAL : GPAR__CLW_SSCAL;
  cl_event ev = NULL, *evp = want_event ? &ev : NULL;
  int locked = gpar__cl_clblast_enter(ln, w);
  CLBlastStatusCode s = es == 8 ? CLBlastDscal((size_t)n, alpha, x, off, (size_t)inc, &ln->q, evp)
                                : CLBlastSscal((size_t)n, (float)alpha, x, off, (size_t)inc, &ln->q, evp);
  gpar__cl_clblast_leave(ln, w, locked, s == CLBlastSuccess);
  return gpar__cl_clblast_done(dev, ln, s, ev, es == 8 ? "CLBlastDscal" : "CLBlastSscal");
}

int gpar__cl_gemv(gpar__bdev *dev, int lane, const gpar__gemv_args *a) {
  gpar__cllane *ln = &dev->lanes[lane];
  const int es = a->elem_size, ly = a->trans == GPAR_NO_TRANS ? a->m : a->n;
  int st = fp64_ok(dev, es, "dgemv");
  if (st) return st;
  if (a->alpha == 0.0) /* y = beta * y; A and x unread */
    return a->beta == 0.0 ? gpar__cl_zero(dev, ln, es, (cl_mem)a->y, a->y_off, ly, a->incy, !a->no_event)
           : a->beta == 1.0 ? GPAR_OK
                            : scal(dev, ln, es, ly, a->beta, (cl_mem)a->y, a->y_off, a->incy, !a->no_event);
  /* beta == 0: y is write-only, but CLBlast computes 0 * y: zeros first */
  if (a->beta == 0.0 && (st = gpar__cl_zero(dev, ln, es, (cl_mem)a->y, a->y_off, ly, a->incy, 0))) return st;
  const unsigned w = es == 8 ? GPAR__CLW_DGEMV : GPAR__CLW_SGEMV;
  const CLBlastTranspose t = a->trans == GPAR_TRANS ? CLBlastTransposeYes : CLBlastTransposeNo;
  cl_event ev = NULL, *evp = a->no_event ? NULL : &ev;
  int locked = gpar__cl_clblast_enter(ln, w);
  CLBlastStatusCode s =
      es == 8 ? CLBlastDgemv(CLBlastLayoutColMajor, t, (size_t)a->m, (size_t)a->n, a->alpha, (cl_mem)a->a, a->a_off,
                             (size_t)a->lda, (cl_mem)a->x, a->x_off, (size_t)a->incx, a->beta, (cl_mem)a->y, a->y_off,
                             (size_t)a->incy, &ln->q, evp)
              : CLBlastSgemv(CLBlastLayoutColMajor, t, (size_t)a->m, (size_t)a->n, (float)a->alpha, (cl_mem)a->a,
                             a->a_off, (size_t)a->lda, (cl_mem)a->x, a->x_off, (size_t)a->incx, (float)a->beta,
                             (cl_mem)a->y, a->y_off, (size_t)a->incy, &ln->q, evp);
  gpar__cl_clblast_leave(ln, w, locked, s == CLBlastSuccess);
  return gpar__cl_clblast_done(dev, ln, s, ev, es == 8 ? "CLBlastDgemv" : "CLBlastSgemv");
}

int gpar__cl_axpy(gpar__bdev *dev, int lane, const gpar__blas1_args *a) {
  gpar__cllane *ln = &dev->lanes[lane];
  const int es = a->elem_size;
  int st = fp64_ok(dev, es, "daxpy");
  if (st) return st;
  const unsigned w = es == 8 ? GPAR__CLW_DAXPY : GPAR__CLW_SAXPY;
  cl_event ev = NULL, *evp = a->no_event ? NULL : &ev;
  int locked = gpar__cl_clblast_enter(ln, w);
  CLBlastStatusCode s = es == 8 ? CLBlastDaxpy((size_t)a->n, a->alpha, (cl_mem)a->x, a->x_off, (size_t)a->incx,
                                               (cl_mem)a->y, a->y_off, (size_t)a->incy, &ln->q, evp)
                                : CLBlastSaxpy((size_t)a->n, (float)a->alpha, (cl_mem)a->x, a->x_off, (size_t)a->incx,
                                               (cl_mem)a->y, a->y_off, (size_t)a->incy, &ln->q, evp);
  gpar__cl_clblast_leave(ln, w, locked, s == CLBlastSuccess);
  return gpar__cl_clblast_done(dev, ln, s, ev, es == 8 ? "CLBlastDaxpy" : "CLBlastSaxpy");
}

int gpar__cl_scal(gpar__bdev *dev, int lane, const gpar__blas1_args *a) {
  gpar__cllane *ln = &dev->lanes[lane];
  const int es = a->elem_size;
  int st = fp64_ok(dev, es, "dscal");
  if (st) return st;
  if (a->alpha == 0.0) return gpar__cl_zero(dev, ln, es, (cl_mem)a->x, a->x_off, a->n, a->incx, !a->no_event);
  return scal(dev, ln, es, a->n, a->alpha, (cl_mem)a->x, a->x_off, a->incx, !a->no_event);
}

int gpar__cl_dot(gpar__bdev *dev, int lane, const gpar__blas1_args *a) {
  gpar__cllane *ln = &dev->lanes[lane];
  const int es = a->elem_size;
  int st = fp64_ok(dev, es, "ddot");
  if (st) return st;
  if (a->n == 0) return gpar__cl_zero(dev, ln, es, (cl_mem)a->r, a->r_off, 1, 1, !a->no_event);
  const unsigned w = es == 8 ? GPAR__CLW_DDOT : GPAR__CLW_SDOT;
  cl_event ev = NULL, *evp = a->no_event ? NULL : &ev;
  int locked = gpar__cl_clblast_enter(ln, w);
  CLBlastStatusCode s =
      es == 8 ? CLBlastDdot((size_t)a->n, (cl_mem)a->r, a->r_off, (cl_mem)a->x, a->x_off, (size_t)a->incx,
                            (cl_mem)a->y, a->y_off, (size_t)a->incy, &ln->q, evp)
              : CLBlastSdot((size_t)a->n, (cl_mem)a->r, a->r_off, (cl_mem)a->x, a->x_off, (size_t)a->incx,
                            (cl_mem)a->y, a->y_off, (size_t)a->incy, &ln->q, evp);
  gpar__cl_clblast_leave(ln, w, locked, s == CLBlastSuccess);
  return gpar__cl_clblast_done(dev, ln, s, ev, es == 8 ? "CLBlastDdot" : "CLBlastSdot");
}
