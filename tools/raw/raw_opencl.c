/* raw_opencl.c: the hand-written OpenCL + CLBlast loop gpar-bench compares libgpar against (the
 * D2L "Automatic Parallelism" experiments): one host thread, a compute and a copy queue per device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CL/cl.h>
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <clblast_c.h>
#pragma GCC diagnostic pop

#include "gpar.h" /* gpar_now */
#include "raw.h"

#define RAW_MAXPLAT 16

typedef struct raw_dev {
  cl_device_id id;
  int plat;
  cl_command_queue qc, qx; /* compute, copy */
  cl_mem a, b, temp;
  cl_mem *c;               /* iters result buffers (copy modes) or one */
  int nc;
  cl_mem *hbuf;            /* pinned host slots (CL_MEM_ALLOC_HOST_PTR), mapped */
  void **hptr;
  int nh;
} raw_dev;

static int raw_fail(const char *what, int err) {
  fprintf(stderr, "raw_opencl: %s failed (%d)\n", what, err);
  return -1;
}

#define RAW_CL(call, what)                   \
  do {                                       \
    cl_int e_ = (call);                      \
    if (e_ != CL_SUCCESS) {                  \
      rc = raw_fail(what, e_);               \
      goto done;                             \
    }                                        \
  } while (0)

static cl_int raw_sgemm(raw_dev *d, size_t n, cl_mem c, cl_event *ev) {
  return (cl_int)CLBlastSgemmWithTempBuffer(CLBlastLayoutColMajor, CLBlastTransposeNo, CLBlastTransposeNo, n, n, n,
                                            1.0f, d->a, 0, n, d->b, 0, n, 0.0f, c, 0, n, &d->qc, ev, d->temp);
}

int gpar_raw_opencl(const gpar_raw_case *c, double *seconds) {
  int rc = 0;
  cl_platform_id plats[RAW_MAXPLAT];
  cl_context ctx[RAW_MAXPLAT];
  cl_device_id *all = NULL; /* backend order: platform order, then device order */
  int *allplat = NULL, nall = 0;
  cl_uint np = 0;
  raw_dev *devs = NULL;
  memset(ctx, 0, sizeof ctx);
  if (!c || c->n <= 0 || c->iters <= 0 || c->ndev <= 0 || !c->devs) {
    fprintf(stderr, "raw_opencl: bad case\n");
    return -1;
  }
  if (c->lt || c->graph) {
    fprintf(stderr, "raw_opencl: %s is CUDA only\n", c->lt ? "the cublasLt loop" : "a hand-captured graph");
    return -1;
  }
  const size_t n = (size_t)c->n, bytes = n * n * sizeof(float);
  const int copy_modes = c->mode == GPAR_RAW_GEMM_COPY || c->mode == GPAR_RAW_COPY;
  cl_int err = clGetPlatformIDs(RAW_MAXPLAT, plats, &np);
  if (err != CL_SUCCESS || np == 0) return raw_fail("clGetPlatformIDs (no OpenCL platform)", err);
  if (np > RAW_MAXPLAT) np = RAW_MAXPLAT;
  for (cl_uint p = 0; p < np; p++) {
    cl_uint nd = 0;
    if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) != CL_SUCCESS || nd == 0) continue;
    cl_device_id *ids = calloc(nd, sizeof *ids);
    cl_device_id *na = realloc(all, (size_t)(nall + (int)nd) * sizeof *all);
    int *npl = realloc(allplat, (size_t)(nall + (int)nd) * sizeof *allplat);
    if (na) all = na;
    if (npl) allplat = npl;
    if (!ids || !na || !npl) {
      free(ids);
      rc = raw_fail("malloc", 0);
      goto done;
    }
    if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd, ids, NULL) != CL_SUCCESS) {
      free(ids);
      continue;
    }
    /* One context per platform holding all its devices, as the backend does. */
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)plats[p], 0};
    ctx[p] = clCreateContext(props, nd, ids, NULL, NULL, &err);
    if (!ctx[p] || err != CL_SUCCESS) {
      ctx[p] = NULL;
      free(ids);
      continue;
    }
    for (cl_uint i = 0; i < nd; i++) {
      all[nall] = ids[i];
      allplat[nall++] = (int)p;
    }
    free(ids);
  }
  devs = calloc((size_t)c->ndev, sizeof *devs);
  if (!devs) {
    rc = raw_fail("malloc", 0);
    goto done;
  }
  for (int i = 0; i < c->ndev; i++) {
    int idx = c->devs[i];
    if (idx < 0 || idx >= nall) {
      fprintf(stderr, "raw_opencl: no OpenCL device %d (%d found)\n", idx, nall);
      rc = -1;
      goto done;
    }
    raw_dev *d = &devs[i];
    d->id = all[idx];
    d->plat = allplat[idx];
    cl_context cx = ctx[d->plat];
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    d->qc = clCreateCommandQueue(cx, d->id, 0, &err);
    RAW_CL(err, "clCreateCommandQueue");
    d->qx = clCreateCommandQueue(cx, d->id, 0, &err);
    RAW_CL(err, "clCreateCommandQueue");
#pragma GCC diagnostic pop
    d->a = clCreateBuffer(cx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    RAW_CL(err, "clCreateBuffer(A)");
    d->b = clCreateBuffer(cx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    RAW_CL(err, "clCreateBuffer(B)");
    d->nc = c->mode == GPAR_RAW_GEMM_COPY ? c->iters : 1;
    d->c = calloc((size_t)d->nc, sizeof *d->c);
    if (!d->c) {
      rc = raw_fail("malloc", 0);
      goto done;
    }
    for (int j = 0; j < d->nc; j++) {
      d->c[j] = clCreateBuffer(cx, CL_MEM_READ_WRITE, bytes, NULL, &err);
      RAW_CL(err, "clCreateBuffer(C)");
    }
    size_t tsz = 0;
    RAW_CL((cl_int)CLBlastSGemmTempBufferSize(CLBlastLayoutColMajor, CLBlastTransposeNo, CLBlastTransposeNo, n, n, n, 0,
                                              n, 0, n, 0, n, &d->qc, &tsz),
           "CLBlastSGemmTempBufferSize");
    d->temp = clCreateBuffer(cx, CL_MEM_READ_WRITE, tsz ? tsz : 4096, NULL, &err);
    RAW_CL(err, "clCreateBuffer(temp)");
    if (copy_modes) {
      d->nh = c->iters;
      d->hbuf = calloc((size_t)d->nh, sizeof *d->hbuf);
      d->hptr = calloc((size_t)d->nh, sizeof *d->hptr);
      if (!d->hbuf || !d->hptr) {
        rc = raw_fail("malloc", 0);
        goto done;
      }
      for (int j = 0; j < d->nh; j++) {
        d->hbuf[j] = clCreateBuffer(cx, CL_MEM_ALLOC_HOST_PTR | CL_MEM_READ_WRITE, bytes, NULL, &err);
        RAW_CL(err, "clCreateBuffer(CL_MEM_ALLOC_HOST_PTR)");
        d->hptr[j] = clEnqueueMapBuffer(d->qx, d->hbuf[j], CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0, NULL,
                                        NULL, &err);
        RAW_CL(err, "clEnqueueMapBuffer");
      }
    }
    /* A = B = 1: every element of C is n, exactly (checked after the warm-up). */
    const float one = 1.0f;
    RAW_CL(clEnqueueFillBuffer(d->qc, d->a, &one, sizeof one, 0, bytes, 0, NULL, NULL), "clEnqueueFillBuffer");
    RAW_CL(clEnqueueFillBuffer(d->qc, d->b, &one, sizeof one, 0, bytes, 0, NULL, NULL), "clEnqueueFillBuffer");
  }

  /* Warm-up: one GEMM (and one read) per device; CLBlast compiles its kernels here. */
  for (int i = 0; i < c->ndev; i++) {
    raw_dev *d = &devs[i];
    RAW_CL(raw_sgemm(d, n, d->c[0], NULL), "CLBlastSgemmWithTempBuffer (warm-up)");
    RAW_CL(clFinish(d->qc), "clFinish");
    float probe = 0.0f;
    RAW_CL(clEnqueueReadBuffer(d->qx, d->c[0], CL_TRUE, 0, sizeof probe, &probe, 0, NULL, NULL), "clEnqueueReadBuffer");
    if (probe != (float)n) {
      fprintf(stderr, "raw_opencl: device %d: warm-up GEMM gave %g, expected %zu\n", c->devs[i], (double)probe, n);
      rc = -1;
      goto done;
    }
    if (copy_modes)
      RAW_CL(clEnqueueReadBuffer(d->qx, d->c[0], CL_FALSE, 0, bytes, d->hptr[0], 0, NULL, NULL), "clEnqueueReadBuffer");
    RAW_CL(clFinish(d->qx), "clFinish");
  }

  double t0 = gpar_now();
  for (int it = 0; it < c->iters; it++)
    for (int i = 0; i < c->ndev; i++) {
      raw_dev *d = &devs[i];
      cl_mem cbuf = d->c[c->mode == GPAR_RAW_GEMM_COPY ? it : 0];
      if (c->mode == GPAR_RAW_COPY) {
        RAW_CL(clEnqueueReadBuffer(d->qx, cbuf, CL_FALSE, 0, bytes, d->hptr[it], 0, NULL, NULL), "clEnqueueReadBuffer");
        RAW_CL(clFlush(d->qx), "clFlush");
        continue;
      }
      cl_event ev = NULL;
      RAW_CL(raw_sgemm(d, n, cbuf, c->mode == GPAR_RAW_GEMM_COPY ? &ev : NULL), "CLBlastSgemmWithTempBuffer");
      RAW_CL(clFlush(d->qc), "clFlush"); /* the copy queue waits on ev: it must be submitted */
      if (c->mode == GPAR_RAW_GEMM_COPY) {
        err = clEnqueueReadBuffer(d->qx, cbuf, CL_FALSE, 0, bytes, d->hptr[it], 1, &ev, NULL);
        clReleaseEvent(ev);
        RAW_CL(err, "clEnqueueReadBuffer");
        RAW_CL(clFlush(d->qx), "clFlush");
      }
    }
  for (int i = 0; i < c->ndev; i++) {
    RAW_CL(clFinish(devs[i].qc), "clFinish");
    RAW_CL(clFinish(devs[i].qx), "clFinish");
  }
  *seconds = gpar_now() - t0;

done:
  if (devs) {
    for (int i = 0; i < c->ndev; i++) {
      raw_dev *d = &devs[i];
      if (d->qc) clFinish(d->qc);
      if (d->qx) clFinish(d->qx);
      for (int j = 0; j < d->nh; j++) {
        if (d->hptr && d->hptr[j]) clEnqueueUnmapMemObject(d->qx, d->hbuf[j], d->hptr[j], 0, NULL, NULL);
        if (d->hbuf && d->hbuf[j]) clReleaseMemObject(d->hbuf[j]);
      }
      if (d->qx) clFinish(d->qx);
      for (int j = 0; j < d->nc; j++)
        if (d->c && d->c[j]) clReleaseMemObject(d->c[j]);
      if (d->a) clReleaseMemObject(d->a);
      if (d->b) clReleaseMemObject(d->b);
      if (d->temp) clReleaseMemObject(d->temp);
      if (d->qc) clReleaseCommandQueue(d->qc);
      if (d->qx) clReleaseCommandQueue(d->qx);
      free(d->c);
      free(d->hbuf);
      free(d->hptr);
    }
    free(devs);
  }
  for (cl_uint p = 0; p < np; p++)
    if (ctx[p]) clReleaseContext(ctx[p]);
  free(all);
  free(allplat);
  return rc;
}
