/* raw_blas_opencl.c: the hand-written CLBlast calls gpar-bench batched and gemm-ex time next to
 * libgpar on OpenCL: CLBlastSgemmStridedBatched for batches, CLBlastSgemmWithTempBuffer for one
 * GEMM (a temp buffer made once, as libgpar's backend keeps one per queue). f16/bf16 cases run
 * on f32 operands, converted before the timed part: CLBlast has no f16 GEMM with f32 sums (its
 * Hgemm sums in half and needs cl_khr_fp16), so this is the call libgpar's OpenCL path ends in,
 * without libgpar's conversion kernels. One in-order queue, one wait at the end. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <CL/cl.h>
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <clblast_c.h>
#pragma GCC diagnostic pop

#include "gpar.h" /* gpar_now */
#include "raw_blas.h"

/* Device dev in backend order (platforms in order, their devices in order). */
static int raw_device(int dev, cl_platform_id *plat, cl_device_id *id) {
  cl_platform_id p[16];
  cl_uint np = 0;
  if (clGetPlatformIDs(16, p, &np) != CL_SUCCESS) return 0;
  for (cl_uint i = 0; i < np && i < 16; i++) {
    cl_uint nd = 0;
    cl_device_id ids[64];
    if (clGetDeviceIDs(p[i], CL_DEVICE_TYPE_ALL, 64, ids, &nd) != CL_SUCCESS) continue;
    if (dev < (int)nd) {
      *plat = p[i];
      *id = ids[dev];
      return 1;
    }
    dev -= (int)nd;
  }
  return 0;
}

static CLBlastStatusCode raw_call(const gpar_raw_blas_case *c, cl_command_queue *q, cl_mem a, cl_mem b, cl_mem cc,
                                  cl_mem temp) {
  const size_t m = (size_t)c->m, n = (size_t)c->n, k = (size_t)c->k;
  if (c->batch == 1)
    return CLBlastSgemmWithTempBuffer(CLBlastLayoutColMajor, CLBlastTransposeNo, CLBlastTransposeNo, m, n, k, 1.0f, a, 0,
                                      m, b, 0, k, 0.0f, cc, 0, m, q, NULL, temp);
  return CLBlastSgemmStridedBatched(CLBlastLayoutColMajor, CLBlastTransposeNo, CLBlastTransposeNo, m, n, k, 1.0f, a, 0, m,
                                    m * k, b, 0, k, k * n, 0.0f, cc, 0, m, m * n, (size_t)c->batch, q, NULL);
}

int gpar_raw_blas_opencl(const gpar_raw_blas_case *c, double *seconds, const char **what) {
  const size_t nb = (size_t)c->batch, na = (size_t)c->m * c->k * nb, nbb = (size_t)c->k * c->n * nb;
  const size_t nc = (size_t)c->m * c->n * nb;
  *what = c->batch > 1 ? (c->ab_type ? "raw CLBlastSgemmStridedBatched on f32 copies" : "raw CLBlastSgemmStridedBatched")
                       : (c->ab_type ? "raw CLBlastSgemmWithTempBuffer on f32 copies" : "raw CLBlastSgemmWithTempBuffer");
  cl_platform_id plat;
  cl_device_id id;
  cl_int err = CL_SUCCESS;
  cl_context ctx = NULL;
  cl_command_queue q = NULL;
  cl_mem a = NULL, b = NULL, cc = NULL, temp = NULL;
  float *h = malloc((na > nbb ? na : nbb) * sizeof *h), v[2] = {0, 0};
  int rc = -1;
  size_t need = 0;
  if (!h || !raw_device(c->dev, &plat, &id)) {
    fprintf(stderr, "raw_blas_opencl: no OpenCL device %d\n", c->dev);
    goto done;
  }
  ctx = clCreateContext((cl_context_properties[]){CL_CONTEXT_PLATFORM, (cl_context_properties)plat, 0}, 1, &id, NULL,
                        NULL, &err);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  if (ctx) q = clCreateCommandQueue(ctx, id, 0, &err);
#pragma GCC diagnostic pop
  if (q) a = clCreateBuffer(ctx, CL_MEM_READ_WRITE, na * 4, NULL, &err);
  if (a) b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, nbb * 4, NULL, &err);
  if (b) cc = clCreateBuffer(ctx, CL_MEM_READ_WRITE, nc * 4, NULL, &err);
  if (cc && c->batch == 1 &&
      CLBlastSGemmTempBufferSize(CLBlastLayoutColMajor, CLBlastTransposeNo, CLBlastTransposeNo, (size_t)c->m,
                                 (size_t)c->n, (size_t)c->k, 0, (size_t)c->m, 0, (size_t)c->k, 0, (size_t)c->m, &q,
                                 &need) == CLBlastSuccess)
    temp = clCreateBuffer(ctx, CL_MEM_READ_WRITE, need > 4096 ? need : 4096, NULL, &err);
  if (!cc || (c->batch == 1 && !temp)) {
    fprintf(stderr, "raw_blas_opencl: setup failed (%d)\n", (int)err);
    goto done;
  }
  for (size_t i = 0; i < na; i++) h[i] = 1.0f;
  clEnqueueWriteBuffer(q, a, CL_TRUE, 0, na * 4, h, 0, NULL, NULL);
  for (size_t i = 0; i < nbb; i++) h[i] = 0.5f;
  clEnqueueWriteBuffer(q, b, CL_TRUE, 0, nbb * 4, h, 0, NULL, NULL);
  CLBlastStatusCode s = raw_call(c, &q, a, b, cc, temp);
  clFinish(q);
  double t0 = gpar_now();
  for (int i = 0; i < c->iters && s == CLBlastSuccess; i++) s = raw_call(c, &q, a, b, cc, temp);
  clFinish(q);
  *seconds = gpar_now() - t0;
  if (s != CLBlastSuccess) {
    fprintf(stderr, "raw_blas_opencl: %s failed (%d)\n", *what, (int)s);
    goto done;
  }
  clEnqueueReadBuffer(q, cc, CL_TRUE, 0, 4, &v[0], 0, NULL, NULL);
  clEnqueueReadBuffer(q, cc, CL_TRUE, (nc - 1) * 4, 4, &v[1], 0, NULL, NULL);
  if (v[0] != 0.5f * (float)c->k || v[1] != 0.5f * (float)c->k) {
    fprintf(stderr, "raw_blas_opencl: %s computed C = %g, %g, want %g\n", *what, (double)v[0], (double)v[1], 0.5 * c->k);
    goto done;
  }
  rc = 0;
done:
  if (temp) clReleaseMemObject(temp);
  if (cc) clReleaseMemObject(cc);
  if (b) clReleaseMemObject(b);
  if (a) clReleaseMemObject(a);
  if (q) clReleaseCommandQueue(q);
  if (ctx) clReleaseContext(ctx);
  free(h);
  return rc;
}
