/* cuda_blas_vec.c: GEMV and the level-1 calls on CUDA through the device's cuBLAS handle on the
 * compute lane (cuda_blas_cublas.c made it): cublasSgemv/Dgemv, Saxpy/Daxpy, Sscal/Dscal and
 * Sdot/Ddot, the dot in device pointer mode so its result lands in device memory without a host
 * round trip (the mode is set back to host pointers at once: the GEMMs pass host scalars). Exact
 * zeros where a BLAS rule asks for them (SCAL by 0, GEMV with alpha 0 and beta 0, DOT of no
 * element) come from memsets, strided by the increment. Calls cuda_errors.c only. */
#include "cuda_internal.h"

/* The BLAS of the compute lane the call runs on; NULL (*st set) on any other lane. */
static struct cuda_blas *on_compute(gpar__bdev *dev, int lane, const char *what, int *st) {
  struct cuda_blas *b = gpar__cuda_blas_of(&dev->d, lane);
  *st = b ? GPAR_OK
          : gpar__errorf(GPAR_EINVAL, "cuda: %s on lane %d; cuBLAS handles are bound to compute lanes", what, lane);
  return b;
}

/* n elements inc apart from p set to zero bits (exact 0.0 in float and double). */
static int zero_strided(struct cuda_blas *b, char *p, size_t es, int n, int inc) {
  cudaStream_t s = b->s;
  if (inc == 1) return gpar__cuda_check(cudaMemsetAsync(p, 0, (size_t)n * es, s), "cudaMemsetAsync (blas zeros)");
  return gpar__cuda_check(cudaMemset2DAsync(p, (size_t)inc * es, 0, es, (size_t)n, s), "cudaMemset2DAsync (blas zeros)");
}

/* x = alpha * x over n elements (alpha != 0). */
static int scal(struct cuda_blas *b, int es, int n, double alpha, void *x, int inc) {
  if (es == 4) {
    const float f = (float)alpha;
    return gpar__cublas_check(cublasSscal(b->h, n, &f, (float *)x, inc), "cublasSscal");
  }
  return gpar__cublas_check(cublasDscal(b->h, n, &alpha, (double *)x, inc), "cublasDscal");
}

int gpar__cuda_gemv(gpar__bdev *dev, int lane, const gpar__gemv_args *a) {
  const size_t es = (size_t)a->elem_size;
  const int ly = a->trans == GPAR_NO_TRANS ? a->m : a->n;
  char *y = (char *)a->y + a->y_off * es;
  int st;
  struct cuda_blas *b = on_compute(dev, lane, "gemv", &st);
  if (!b) return st;
  if (a->alpha == 0.0) /* y = beta * y; A and x unread */
    return a->beta == 0.0 ? zero_strided(b, y, es, ly, a->incy)
           : a->beta == 1.0 ? GPAR_OK
                            : scal(b, a->elem_size, ly, a->beta, y, a->incy);
  const cublasOperation_t op = a->trans == GPAR_TRANS ? CUBLAS_OP_T : CUBLAS_OP_N;
  /* cuBLAS: with beta == 0, y need not be a valid input (NaN there does not survive) */
  if (es == 4) {
    const float alpha = (float)a->alpha, beta = (float)a->beta;
    return gpar__cublas_check(cublasSgemv(b->h, op, a->m, a->n, &alpha, (const float *)a->a + a->a_off, a->lda,
                                          (const float *)a->x + a->x_off, a->incx, &beta, (float *)y, a->incy),
                              "cublasSgemv");
  }
  return gpar__cublas_check(cublasDgemv(b->h, op, a->m, a->n, &a->alpha, (const double *)a->a + a->a_off, a->lda,
                                        (const double *)a->x + a->x_off, a->incx, &a->beta, (double *)y, a->incy),
                            "cublasDgemv");
}

int gpar__cuda_axpy(gpar__bdev *dev, int lane, const gpar__blas1_args *a) {
  int st;
  struct cuda_blas *b = on_compute(dev, lane, "axpy", &st);
  if (!b) return st;
  if (a->elem_size == 4) {
    const float alpha = (float)a->alpha;
    return gpar__cublas_check(cublasSaxpy(b->h, a->n, &alpha, (const float *)a->x + a->x_off, a->incx,
                                          (float *)a->y + a->y_off, a->incy),
                              "cublasSaxpy");
  }
  return gpar__cublas_check(cublasDaxpy(b->h, a->n, &a->alpha, (const double *)a->x + a->x_off, a->incx,
                                        (double *)a->y + a->y_off, a->incy),
                            "cublasDaxpy");
}

int gpar__cuda_scal(gpar__bdev *dev, int lane, const gpar__blas1_args *a) {
  const size_t es = (size_t)a->elem_size;
  char *x = (char *)a->x + a->x_off * es;
  int st;
  struct cuda_blas *b = on_compute(dev, lane, "scal", &st);
  if (!b) return st;
  if (a->alpha == 0.0) return zero_strided(b, x, es, a->n, a->incx); /* exact zeros, NaN included */
  return scal(b, a->elem_size, a->n, a->alpha, x, a->incx);
}

int gpar__cuda_dot(gpar__bdev *dev, int lane, const gpar__blas1_args *a) {
  const size_t es = (size_t)a->elem_size;
  char *r = (char *)a->r + a->r_off * es;
  int st;
  struct cuda_blas *b = on_compute(dev, lane, "dot", &st);
  if (!b) return st;
  if (a->n == 0) return zero_strided(b, r, es, 1, 1);
  if ((st = gpar__cublas_check(cublasSetPointerMode(b->h, CUBLAS_POINTER_MODE_DEVICE),
                               "cublasSetPointerMode(DEVICE)")))
    return st;
  if (es == 4)
    st = gpar__cublas_check(cublasSdot(b->h, a->n, (const float *)a->x + a->x_off, a->incx,
                                       (const float *)a->y + a->y_off, a->incy, (float *)r),
                            "cublasSdot");
  else
    st = gpar__cublas_check(cublasDdot(b->h, a->n, (const double *)a->x + a->x_off, a->incx,
                                       (const double *)a->y + a->y_off, a->incy, (double *)r),
                            "cublasDdot");
  int back = gpar__cublas_check(cublasSetPointerMode(b->h, CUBLAS_POINTER_MODE_HOST), "cublasSetPointerMode(HOST)");
  return st ? st : back;
}
