/* opencl_blas_clblast.c: GEMM on OpenCL through CLBlast: the per-lane temp buffer and its
 * shape cache, the lock that serialises CLBlast's cold calls (every routine's: GEMV and level 1
 * too), the k == 0 path, strided batches (CLBlastSgemmStridedBatched / Dgemm..., or entry by entry
 * with the temp buffer where CLBlast would allocate its own per call) and f16/bf16
 * operands, converted into f32 copies by the backend's own kernels (opencl_blas_kernels.c), then
 * CLBlast's SGEMM, then C converted back when it is f16/bf16. */
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

void gpar__cl_blas_forget(void) {
  CLBlastStatusCode s = CLBlastClearCache();
  if (s != CLBlastSuccess) {
    int st;
    gpar__log("opencl: CLBlastClearCache: %s (%d)", gpar__cl_name((cl_int)s, &st), (int)s);
  }
}

/* CLBlast 1.5.x is not safe when two threads fill its caches for the same key at once (two
 * identical devices' first GEMMs: a heap use-after-free in clblast::Database, seen under ASan
 * with two PoCL devices; fixed upstream in CLBlast PR #495, after 1.5.3). A lane's first call for
 * a shape may fill caches, so it runs under this lock; repeated shapes only read them. */
static pthread_mutex_t gpar__clblast_cold_lock = PTHREAD_MUTEX_INITIALIZER;

int gpar__cl_clblast_enter(gpar__cllane *ln, unsigned w) {
  if (ln->warm & w) return 0;
  pthread_mutex_lock(&gpar__clblast_cold_lock);
  return 1;
}

void gpar__cl_clblast_leave(gpar__cllane *ln, unsigned w, int locked, int ok) {
  if (!locked) return;
  if (ok) ln->warm |= w;
  pthread_mutex_unlock(&gpar__clblast_cold_lock);
}

int gpar__cl_clblast_done(gpar__bdev *dev, gpar__cllane *ln, CLBlastStatusCode s, cl_event ev, const char *what) {
  if (s != CLBlastSuccess) {
    if (ev) clReleaseEvent(ev);
    gpar__cl_mark_dirty(ln); /* something may have been enqueued before the failure */
    if (s == CLBlastNoDoublePrecision)
      return gpar__errorf(GPAR_ENOTSUP, "%s: device %s has no fp64 support (CLBlastNoDoublePrecision)", what,
                          dev->d->name);
    return gpar__cl_fail(what, (cl_int)s);
  }
  gpar__cl_enqueued(ln, ev);
  return GPAR_OK;
}

static int gpar__cl_gemm_run(gpar__bdev *dev, gpar__cllane *ln, const gpar__gemm_args *a, const gpar__gemm_key *kp,
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

  /* Temp buffer: ask CLBlast how much this shape needs (cached per lane for a repeated shape),
   * grow the lane's buffer when short. The old one is released at once: OpenCL keeps it alive
   * until the GEMMs already enqueued with it are done. */
  const gpar__gemm_ex_args x = gpar__gemm_ex_of(a);
  gpar__gemm_key key;
  gpar__gemm_key_set(&key, &x);
  key.a_off = a->a_off;
  key.b_off = a->b_off;
  key.c_off = a->c_off;
  const int cold = !(ln->key_valid && memcmp(&key, &ln->key, sizeof key) == 0);
  if (cold) pthread_mutex_lock(&gpar__clblast_cold_lock);
  int st = gpar__cl_gemm_run(dev, ln, a, &key, cold);
  if (cold) pthread_mutex_unlock(&gpar__clblast_cold_lock);
  return st;
}

/* The lane's temp buffer (the plain GEMMs' and the batched ones' run entry by entry) with room
 * for need bytes, grown only, at least 4096 (always pass a buffer: NULL would make CLBlast
 * allocate one per call). The old one is released at once: OpenCL keeps it alive until the GEMMs
 * already enqueued with it are done. Device close frees it. */
static int lane_temp(gpar__bdev *dev, gpar__cllane *ln, size_t need) {
  if (need < 4096) need = 4096;
  if (need <= ln->temp_size) return GPAR_OK;
  size_t want = need + need / 8; /* some slack against slowly growing shapes */
  if ((uint64_t)want > dev->d->max_alloc) want = need;
  cl_int err = CL_SUCCESS;
  cl_mem t = clCreateBuffer(dev->ctx, CL_MEM_READ_WRITE, want, NULL, &err);
  if (!t || err != CL_SUCCESS) return gpar__cl_fail("clCreateBuffer(CLBlast temp buffer)", err);
  if (ln->temp) clReleaseMemObject(ln->temp);
  ln->temp = t;
  ln->temp_size = want;
  return GPAR_OK;
}

static int gpar__cl_gemm_run(gpar__bdev *dev, gpar__cllane *ln, const gpar__gemm_args *a, const gpar__gemm_key *kp,
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
  int st = lane_temp(dev, ln, need);
  if (st) return st;

  /* No cl_event when the core will not ask for one after this GEMM (it creates a driver
   * object per call): the lane is then marked dirty and a later event_record uses a marker. */
  cl_event ev = NULL, *evp = a->no_event ? NULL : &ev;
  s = dbl ? CLBlastDgemmWithTempBuffer(lay, ta, tb, m, n, k, a->alpha, (cl_mem)a->a, a->a_off, lda, (cl_mem)a->b, a->b_off,
                                       ldb, a->beta, (cl_mem)a->c, a->c_off, ldc, &ln->q, evp, ln->temp)
          : CLBlastSgemmWithTempBuffer(lay, ta, tb, m, n, k, (float)a->alpha, (cl_mem)a->a, a->a_off, lda, (cl_mem)a->b,
                                       a->b_off, ldb, (float)a->beta, (cl_mem)a->c, a->c_off, ldc, &ln->q, evp, ln->temp);
  return gpar__cl_clblast_done(dev, ln, s, ev, dbl ? "CLBlastDgemmWithTempBuffer" : "CLBlastSgemmWithTempBuffer");
}

/* Temp bytes one entry of a strided batch needs through CLBlastXgemmWithTempBuffer: the most of
 * entries 0 and 1 (an offset of 0 can spare a copy; later entries' offsets are like entry 1's).
 * CLBlast answers 0 for a shape it runs with its direct kernel, which takes no temp buffer. */
static int batch_entry_temp(gpar__cllane *ln, const gpar__gemm_ex_args *x, size_t *need) {
  const gpar__gemm_args *a = &x->g;
  const int dbl = x->ab_type == GPAR_DOUBLE;
  const CLBlastTranspose ta = a->trans_a == GPAR_TRANS ? CLBlastTransposeYes : CLBlastTransposeNo;
  const CLBlastTranspose tb = a->trans_b == GPAR_TRANS ? CLBlastTransposeYes : CLBlastTransposeNo;
  const size_t m = (size_t)a->m, n = (size_t)a->n, k = (size_t)a->k;
  *need = 0;
  for (size_t i = 0; i < 2 && i < (size_t)x->batch; i++) {
    const size_t ao = a->a_off + i * (size_t)x->stride_a, bo = a->b_off + i * (size_t)x->stride_b;
    const size_t co = a->c_off + i * (size_t)x->stride_c;
    size_t one = 0;
    CLBlastStatusCode s =
        dbl ? CLBlastDGemmTempBufferSize(CLBlastLayoutColMajor, ta, tb, m, n, k, ao, (size_t)a->lda, bo, (size_t)a->ldb,
                                         co, (size_t)a->ldc, &ln->q, &one)
            : CLBlastSGemmTempBufferSize(CLBlastLayoutColMajor, ta, tb, m, n, k, ao, (size_t)a->lda, bo, (size_t)a->ldb,
                                         co, (size_t)a->ldc, &ln->q, &one);
    if (s != CLBlastSuccess)
      return gpar__cl_fail(dbl ? "CLBlastDGemmTempBufferSize" : "CLBlastSGemmTempBufferSize", (cl_int)s);
    if (one > *need) *need = one;
  }
  return GPAR_OK;
}

/* One CLBlastXgemmStridedBatched: for shapes CLBlast runs with its direct kernel, which
 * allocates nothing. */
static int gemm_strided(gpar__bdev *dev, gpar__cllane *ln, const gpar__gemm_ex_args *x) {
  const gpar__gemm_args *a = &x->g;
  const int dbl = x->ab_type == GPAR_DOUBLE;
  const CLBlastLayout lay = CLBlastLayoutColMajor;
  const CLBlastTranspose ta = a->trans_a == GPAR_TRANS ? CLBlastTransposeYes : CLBlastTransposeNo;
  const CLBlastTranspose tb = a->trans_b == GPAR_TRANS ? CLBlastTransposeYes : CLBlastTransposeNo;
  const size_t m = (size_t)a->m, n = (size_t)a->n, k = (size_t)a->k, nb = (size_t)x->batch;
  const size_t sa = (size_t)x->stride_a, sb = (size_t)x->stride_b, sc = (size_t)x->stride_c;
  cl_event ev = NULL, *evp = a->no_event ? NULL : &ev;
  CLBlastStatusCode s =
      dbl ? CLBlastDgemmStridedBatched(lay, ta, tb, m, n, k, a->alpha, (cl_mem)a->a, a->a_off, (size_t)a->lda, sa,
                                       (cl_mem)a->b, a->b_off, (size_t)a->ldb, sb, a->beta, (cl_mem)a->c, a->c_off,
                                       (size_t)a->ldc, sc, nb, &ln->q, evp)
          : CLBlastSgemmStridedBatched(lay, ta, tb, m, n, k, (float)a->alpha, (cl_mem)a->a, a->a_off, (size_t)a->lda,
                                       sa, (cl_mem)a->b, a->b_off, (size_t)a->ldb, sb, (float)a->beta, (cl_mem)a->c,
                                       a->c_off, (size_t)a->ldc, sc, nb, &ln->q, evp);
  return gpar__cl_clblast_done(dev, ln, s, ev, dbl ? "CLBlastDgemmStridedBatched" : "CLBlastSgemmStridedBatched");
}

/* Entry by entry through CLBlastXgemmWithTempBuffer and the lane's temp buffer (need bytes), for
 * shapes that need one: CLBlastXgemmStridedBatched's indirect path would allocate batch-sized
 * copies of A, B and C on every call. Such shapes are large (CLBlast's XGEMM_MIN_INDIRECT_SIZE
 * cubed, 896^3 on PoCL), so a launch per entry costs little; the in-order queue runs the entries
 * one after another, each done with the temp buffer before the next fills it. */
static int gemm_entries(gpar__bdev *dev, gpar__cllane *ln, const gpar__gemm_ex_args *x, size_t need) {
  const gpar__gemm_args *a = &x->g;
  const int dbl = x->ab_type == GPAR_DOUBLE;
  const CLBlastLayout lay = CLBlastLayoutColMajor;
  const CLBlastTranspose ta = a->trans_a == GPAR_TRANS ? CLBlastTransposeYes : CLBlastTransposeNo;
  const CLBlastTranspose tb = a->trans_b == GPAR_TRANS ? CLBlastTransposeYes : CLBlastTransposeNo;
  const size_t m = (size_t)a->m, n = (size_t)a->n, k = (size_t)a->k;
  const size_t lda = (size_t)a->lda, ldb = (size_t)a->ldb, ldc = (size_t)a->ldc;
  int st = lane_temp(dev, ln, need);
  for (int i = 0; i < x->batch && st == GPAR_OK; i++) {
    const size_t ao = a->a_off + (size_t)i * (size_t)x->stride_a, bo = a->b_off + (size_t)i * (size_t)x->stride_b;
    const size_t co = a->c_off + (size_t)i * (size_t)x->stride_c;
    cl_event ev = NULL, *evp = a->no_event || i + 1 < x->batch ? NULL : &ev; /* the last one's event */
    CLBlastStatusCode s =
        dbl ? CLBlastDgemmWithTempBuffer(lay, ta, tb, m, n, k, a->alpha, (cl_mem)a->a, ao, lda, (cl_mem)a->b, bo, ldb,
                                         a->beta, (cl_mem)a->c, co, ldc, &ln->q, evp, ln->temp)
            : CLBlastSgemmWithTempBuffer(lay, ta, tb, m, n, k, (float)a->alpha, (cl_mem)a->a, ao, lda, (cl_mem)a->b, bo,
                                         ldb, (float)a->beta, (cl_mem)a->c, co, ldc, &ln->q, evp, ln->temp);
    st = gpar__cl_clblast_done(dev, ln, s, ev, dbl ? "CLBlastDgemmWithTempBuffer" : "CLBlastSgemmWithTempBuffer");
  }
  return st;
}

/* A strided batch (batch > 1) of f32 or f64 GEMMs: C = beta * C entry by entry when alpha or k
 * is 0, else one CLBlastXgemmStridedBatched (direct kernel) or the entries one by one with the
 * lane's temp buffer (gemm_entries). The temp size of a shape is asked once and cached per lane
 * with the shape (bkey, bkey_size), as the plain path does; a lane's first call for a shape runs
 * under the cold lock. */
static int gpar__cl_gemm_batched(gpar__bdev *dev, gpar__cllane *ln, const gpar__gemm_ex_args *x) {
  const gpar__gemm_args *a = &x->g;
  int st = GPAR_OK;
  if (x->ab_type == GPAR_DOUBLE && !dev->d->fp64)
    return gpar__errorf(GPAR_ENOTSUP, "dgemm: device %s has no fp64 support", dev->d->name);
  if (a->alpha == 0.0 || a->k == 0) {
    pthread_mutex_lock(&gpar__clblast_cold_lock);
    for (int i = 0; i < x->batch && st == GPAR_OK; i++) {
      gpar__gemm_args g = *a;
      g.c_off += (size_t)i * (size_t)x->stride_c;
      st = gpar__cl_gemm_scale_c(dev, ln, &g);
    }
    pthread_mutex_unlock(&gpar__clblast_cold_lock);
    return st;
  }
  gpar__gemm_key key;
  gpar__gemm_key_set(&key, x);
  key.a_off = a->a_off;
  key.b_off = a->b_off;
  key.c_off = a->c_off;
  const int cold = !(ln->bkey_valid && memcmp(&key, &ln->bkey, sizeof key) == 0);
  size_t need = ln->bkey_size;
  if (cold) pthread_mutex_lock(&gpar__clblast_cold_lock);
  if (cold) st = batch_entry_temp(ln, x, &need);
  if (st == GPAR_OK) st = need ? gemm_entries(dev, ln, x, need) : gemm_strided(dev, ln, x);
  if (cold) {
    if (st == GPAR_OK) {
      ln->bkey = key;
      ln->bkey_size = need;
      ln->bkey_valid = 1;
    }
    pthread_mutex_unlock(&gpar__clblast_cold_lock);
  }
  return st;
}

/* f32 or f64 GEMMs, one (the plain path, with its temp buffer) or a strided batch. */
static int gpar__cl_gemm_float(gpar__bdev *dev, int lane, const gpar__gemm_ex_args *x) {
  return x->batch == 1 ? gpar__cl_gemm(dev, lane, &x->g) : gpar__cl_gemm_batched(dev, &dev->lanes[lane], x);
}

/* f16/bf16 A and B: packed f32 copies of them (one entry when its stride is 0), the f32 GEMM of
 * the copies, into C when C is f32, else into an f32 copy of C (made from C unless beta == 0)
 * that is rounded back into C's m x n elements of every entry. */
static int gpar__cl_gemm_mixed(gpar__bdev *dev, int lane, const gpar__gemm_ex_args *x) {
  gpar__cllane *ln = &dev->lanes[lane];
  const gpar__gemm_args *a = &x->g;
  const int m = a->m, n = a->n, k = a->k, half_c = x->c_type != GPAR_FLOAT, compute = a->alpha != 0.0 && k > 0;
  const int ar = a->trans_a == GPAR_NO_TRANS ? m : k, ac = a->trans_a == GPAR_NO_TRANS ? k : m;
  const int br = a->trans_b == GPAR_NO_TRANS ? k : n, bc = a->trans_b == GPAR_NO_TRANS ? n : k;
  const int na = x->stride_a ? x->batch : 1, nb = x->stride_b ? x->batch : 1;
  gpar__gemm_ex_args f = *x; /* the f32 GEMM that runs */
  f.ab_type = f.c_type = GPAR_FLOAT;
  f.g.elem_size = 4;
  int st = GPAR_OK;
  if (compute) {
    cl_mem ta = gpar__cl_conv_buffer(dev, ln, GPAR__CL_CONV_A, (size_t)ar * (size_t)ac * (size_t)na * 4, &st);
    cl_mem tb = ta ? gpar__cl_conv_buffer(dev, ln, GPAR__CL_CONV_B, (size_t)br * (size_t)bc * (size_t)nb * 4, &st) : NULL;
    if (!tb) return st;
    if ((st = gpar__cl_convert(dev, ln, 1, x->ab_type, (cl_mem)a->a, a->a_off, a->lda, x->stride_a, ar, ac, na, ta, 0)) ||
        (st = gpar__cl_convert(dev, ln, 1, x->ab_type, (cl_mem)a->b, a->b_off, a->ldb, x->stride_b, br, bc, nb, tb, 0)))
      return st;
    f.g.a = ta, f.g.a_off = 0, f.g.lda = ar, f.stride_a = na > 1 ? (long long)ar * ac : 0;
    f.g.b = tb, f.g.b_off = 0, f.g.ldb = br, f.stride_b = nb > 1 ? (long long)br * bc : 0;
  }
  cl_mem tc = NULL;
  if (half_c) {
    if (!(tc = gpar__cl_conv_buffer(dev, ln, GPAR__CL_CONV_C, (size_t)m * (size_t)n * (size_t)x->batch * 4, &st)))
      return st;
    if (a->beta != 0.0 &&
        (st = gpar__cl_convert(dev, ln, 1, x->c_type, (cl_mem)a->c, a->c_off, a->ldc, x->stride_c, m, n, x->batch, tc, 0)))
      return st;
    f.g.c = tc, f.g.c_off = 0, f.g.ldc = m, f.stride_c = (long long)m * n;
    f.g.no_event = 1; /* the conversion back comes last */
  }
  if ((st = gpar__cl_gemm_float(dev, lane, &f)) || !half_c) return st;
  return gpar__cl_convert(dev, ln, 0, x->c_type, (cl_mem)a->c, a->c_off, a->ldc, x->stride_c, m, n, x->batch, tc,
                          !a->no_event);
}

int gpar__cl_gemm_ex(gpar__bdev *dev, int lane, const gpar__gemm_ex_args *x) {
  if (x->ab_type == GPAR_HALF || x->ab_type == GPAR_BFLOAT16) return gpar__cl_gemm_mixed(dev, lane, x);
  return gpar__cl_gemm_float(dev, lane, x);
}
