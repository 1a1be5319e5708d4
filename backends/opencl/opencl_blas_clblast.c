/* opencl_blas_clblast.c: GEMM on OpenCL through CLBlast: the per-lane temp buffer and its
 * shape cache, the lock that serialises CLBlast's cold calls, and the k == 0 path. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "opencl_internal.h"

/* alpha == 0 or k == 0: C = beta * C without reading A or B (BLAS: they are not referenced, so
 * NaN or garbage there stays out; CLBlast's GEMM would read them, and refuses k == 0 with
 * CLBlastInvalidDimension). beta 0 writes zeros (C is write-only then: no 0 * NaN), beta 1 leaves
 * C alone, else a scal per column (one when the columns are contiguous). Rare: not on the hot
 * path. */
static int gpar__cl_gemm_scale_c(gpar__bdev *dev, gpar__cllane *ln, const gpar__gemm_args *a) {
  const size_t es = (size_t)a->elem_size, m = (size_t)a->m, ldc = (size_t)a->ldc;
  const int contiguous = ldc == m;
  const size_t ncall = contiguous ? 1 : (size_t)a->n, len = contiguous ? m * (size_t)a->n : m;
  if (a->beta == 1.0) return GPAR_OK;
  for (size_t j = 0; j < ncall; j++) {
    const size_t off = a->c_off + j * ldc; /* elements */
    cl_event ev = NULL;
    if (a->beta == 0.0) {
      const unsigned char zero = 0;
      cl_int err = clEnqueueFillBuffer(ln->q, (cl_mem)a->c, &zero, 1, off * es, len * es, 0, NULL, &ev);
      if (err != CL_SUCCESS) return gpar__cl_fail("clEnqueueFillBuffer (gemm with alpha or k = 0)", err);
    } else {
      CLBlastStatusCode s = es == 8 ? CLBlastDscal(len, a->beta, (cl_mem)a->c, off, 1, &ln->q, &ev)
                                    : CLBlastSscal(len, (float)a->beta, (cl_mem)a->c, off, 1, &ln->q, &ev);
      if (s != CLBlastSuccess) {
        gpar__cl_mark_dirty(ln);
        return gpar__cl_fail(es == 8 ? "CLBlastDscal (dgemm with alpha or k = 0)"
                                      : "CLBlastSscal (sgemm with alpha or k = 0)", (cl_int)s);
      }
    }
    if (ev)
      gpar__cl_set_last(ln, ev);
    else
      gpar__cl_mark_dirty(ln);
  }
  return GPAR_OK;
}

/* CLBlast 1.5.x is not safe when two threads fill its caches for the same key at once (two
 * identical devices' first GEMMs: a heap use-after-free in clblast::Database, seen under ASan
 * with two PoCL devices; fixed upstream in CLBlast PR #495, after 1.5.3). A lane's first call for
 * a shape may fill caches, so it runs under this lock; repeated shapes only read them. */
static pthread_mutex_t gpar__clblast_cold_lock = PTHREAD_MUTEX_INITIALIZER;

static int gpar__cl_gemm_run(gpar__bdev *dev, gpar__cllane *ln, const gpar__gemm_args *a, const gpar__clgemm_key *kp,
                             int cold);

int gpar__cl_gemm(gpar__bdev *dev, int lane, const gpar__gemm_args *a) {
  gpar__cllane *ln = &dev->lanes[lane];
  const int dbl = a->elem_size == 8;
  if (dbl && !dev->d->fp64) return gpar__errorf(GPAR_ENOTSUP, "dgemm: device %s has no fp64 support", dev->d->name);
  if (a->elem_size != 4 && !dbl) return gpar__errorf(GPAR_EINVAL, "opencl: gemm element size %d", a->elem_size);
  if ((a->k == 0 || a->alpha == 0.0) && a->m > 0 && a->n > 0 && a->ldc >= a->m) {
    pthread_mutex_lock(&gpar__clblast_cold_lock);
    int st = gpar__cl_gemm_scale_c(dev, ln, a);
    pthread_mutex_unlock(&gpar__clblast_cold_lock);
    return st;
  }
  if (a->m <= 0 || a->n <= 0 || a->k <= 0 || a->lda <= 0 || a->ldb <= 0 || a->ldc <= 0)
    return gpar__errorf(GPAR_EINVAL, "%s: m=%d n=%d k=%d lda=%d ldb=%d ldc=%d: CLBlast needs all > 0",
                        dbl ? "CLBlastDgemm" : "CLBlastSgemm", a->m, a->n, a->k, a->lda, a->ldb, a->ldc);
  const CLBlastTranspose ta = a->trans_a == GPAR_TRANS ? CLBlastTransposeYes : CLBlastTransposeNo;
  const CLBlastTranspose tb = a->trans_b == GPAR_TRANS ? CLBlastTransposeYes : CLBlastTransposeNo;

  /* Temp buffer: ask CLBlast how much this shape needs (cached per lane for a repeated shape),
   * grow the lane's buffer when short. The old one is released at once: OpenCL keeps it alive
   * until the GEMMs already enqueued with it are done. */
  gpar__clgemm_key key;
  memset(&key, 0, sizeof key);
  key.elem_size = a->elem_size;
  key.ta = (int)ta;
  key.tb = (int)tb;
  key.m = a->m;
  key.n = a->n;
  key.k = a->k;
  key.lda = a->lda;
  key.ldb = a->ldb;
  key.ldc = a->ldc;
  key.a_off = a->a_off;
  key.b_off = a->b_off;
  key.c_off = a->c_off;
  const int cold = !(ln->key_valid && memcmp(&key, &ln->key, sizeof key) == 0);
  if (cold) pthread_mutex_lock(&gpar__clblast_cold_lock);
  int st = gpar__cl_gemm_run(dev, ln, a, &key, cold);
  if (cold) pthread_mutex_unlock(&gpar__clblast_cold_lock);
  return st;
}

static int gpar__cl_gemm_run(gpar__bdev *dev, gpar__cllane *ln, const gpar__gemm_args *a, const gpar__clgemm_key *kp,
                             int cold) {
  const int dbl = a->elem_size == 8;
  const CLBlastLayout lay = CLBlastLayoutColMajor;
  const CLBlastTranspose ta = a->trans_a == GPAR_TRANS ? CLBlastTransposeYes : CLBlastTransposeNo;
  const CLBlastTranspose tb = a->trans_b == GPAR_TRANS ? CLBlastTransposeYes : CLBlastTransposeNo;
  const size_t m = (size_t)a->m, n = (size_t)a->n, k = (size_t)a->k;
  const size_t lda = (size_t)a->lda, ldb = (size_t)a->ldb, ldc = (size_t)a->ldc;
  CLBlastStatusCode s;
  size_t need;
  if (!cold) {
    need = ln->key_size;
  } else {
    need = 0;
    s = dbl ? CLBlastDGemmTempBufferSize(lay, ta, tb, m, n, k, a->a_off, lda, a->b_off, ldb, a->c_off, ldc, &ln->q, &need)
            : CLBlastSGemmTempBufferSize(lay, ta, tb, m, n, k, a->a_off, lda, a->b_off, ldb, a->c_off, ldc, &ln->q, &need);
    if (s != CLBlastSuccess)
      return gpar__cl_fail(dbl ? "CLBlastDGemmTempBufferSize" : "CLBlastSGemmTempBufferSize", (cl_int)s);
    ln->key = *kp;
    ln->key_size = need;
    ln->key_valid = 1;
  }
  if (need < 4096) need = 4096; /* always pass a buffer: NULL would make CLBlast allocate one */
  if (need > ln->temp_size) {
    size_t want = need + need / 8; /* some slack against slowly growing shapes */
    if ((uint64_t)want > dev->d->max_alloc) want = need;
    cl_int err = CL_SUCCESS;
    cl_mem t = clCreateBuffer(dev->ctx, CL_MEM_READ_WRITE, want, NULL, &err);
    if (!t || err != CL_SUCCESS) return gpar__cl_fail("clCreateBuffer(CLBlast temp buffer)", err);
    if (ln->temp) clReleaseMemObject(ln->temp);
    ln->temp = t;
    ln->temp_size = want;
  }

  /* No cl_event when the core will not ask for one after this GEMM (it creates a driver
   * object per call): the lane is then marked dirty and a later event_record uses a marker. */
  cl_event ev = NULL, *evp = a->no_event ? NULL : &ev;
  s = dbl ? CLBlastDgemmWithTempBuffer(lay, ta, tb, m, n, k, a->alpha, (cl_mem)a->a, a->a_off, lda, (cl_mem)a->b, a->b_off,
                                       ldb, a->beta, (cl_mem)a->c, a->c_off, ldc, &ln->q, evp, ln->temp)
          : CLBlastSgemmWithTempBuffer(lay, ta, tb, m, n, k, (float)a->alpha, (cl_mem)a->a, a->a_off, lda, (cl_mem)a->b,
                                       a->b_off, ldb, (float)a->beta, (cl_mem)a->c, a->c_off, ldc, &ln->q, evp, ln->temp);
  if (s != CLBlastSuccess) {
    if (ev) clReleaseEvent(ev);
    /* Something may have been enqueued before the failure: no longer trust `last`. */
    gpar__cl_mark_dirty(ln);
    if (s == CLBlastNoDoublePrecision)
      return gpar__errorf(GPAR_ENOTSUP, "dgemm: device %s has no fp64 support (CLBlastNoDoublePrecision)",
                          dev->d->name);
    return gpar__cl_fail(dbl ? "CLBlastDgemmWithTempBuffer" : "CLBlastSgemmWithTempBuffer", (cl_int)s);
  }
  if (ev) {
    gpar__cl_set_last(ln, ev);
  } else {
    gpar__cl_mark_dirty(ln);
    clFlush(ln->q);
  }
  return GPAR_OK;
}
