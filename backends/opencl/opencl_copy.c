/* opencl_copy.c: copies and fills on an OpenCL lane (GEMM: opencl_blas_clblast.c). Host memory is
 * always passed as a raw pointer to Read/WriteBuffer; CopyBuffer is for device buffers (mem_alloc)
 * only. */
#include "opencl_internal.h"

int gpar__cl_copy(gpar__bdev *dev, int lane, const gpar__copy_args *a) {
  gpar__cllane *ln = &dev->lanes[lane];
  cl_event ev = NULL;
  cl_int err;
  const char *call;
  switch (a->kind) {
  case GPAR__COPY_H2D:
    call = "clEnqueueWriteBuffer";
    err = clEnqueueWriteBuffer(ln->q, (cl_mem)a->dst, CL_FALSE, a->dst_off, a->bytes, (const char *)a->src + a->src_off,
                               0, NULL, &ev);
    break;
  case GPAR__COPY_D2H:
    call = "clEnqueueReadBuffer";
    err = clEnqueueReadBuffer(ln->q, (cl_mem)a->src, CL_FALSE, a->src_off, a->bytes, (char *)a->dst + a->dst_off, 0,
                              NULL, &ev);
    break;
  case GPAR__COPY_D2D:
  case GPAR__COPY_PEER:
    if (a->kind == GPAR__COPY_PEER && (!a->peer || a->peer->ctx != dev->ctx))
      return gpar__errorf(GPAR_ENOTSUP, "opencl: peer copy between devices of different platforms");
    call = "clEnqueueCopyBuffer";
    err = clEnqueueCopyBuffer(ln->q, (cl_mem)a->src, (cl_mem)a->dst, a->src_off, a->dst_off, a->bytes, 0, NULL, &ev);
    break;
  default: return gpar__errorf(GPAR_ENOTSUP, "opencl: copy kind %d not supported", (int)a->kind);
  }
  if (err != CL_SUCCESS) return gpar__cl_fail(call, err);
  gpar__cl_set_last(ln, ev);
  return GPAR_OK;
}

int gpar__cl_fill(gpar__bdev *dev, int lane, void *mem, size_t off, size_t bytes, unsigned char value) {
  gpar__cllane *ln = &dev->lanes[lane];
  cl_event ev = NULL;
  cl_int err = clEnqueueFillBuffer(ln->q, (cl_mem)mem, &value, 1, off, bytes, 0, NULL, &ev);
  if (err != CL_SUCCESS) return gpar__cl_fail("clEnqueueFillBuffer", err);
  gpar__cl_set_last(ln, ev);
  return GPAR_OK;
}
