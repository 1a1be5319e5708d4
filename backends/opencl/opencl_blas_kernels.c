/* opencl_blas_kernels.c: the OpenCL backend's own small program, for what CLBlast lacks: f16 and
 * bf16 storage converted to and from f32 (no device here reports cl_khr_fp16, so no half
 * arithmetic: vload_half / vstore_half_rte, which core OpenCL 1.2 has, for f16; bit shifts with
 * round to nearest even for bf16), and exact zeros over strided elements (CLBlast's scal by 0
 * and its gemv with beta 0 keep NaN). Built once per device at its first use, on the device's
 * dispatcher thread; also the lanes' temporary f32 buffers. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "opencl_internal.h"

static const char *const kernel_src =
    "__kernel void gpar_f16_to_f32(__global const half *src, ulong off, ulong ld, ulong stride,\n"
    "                              __global float *dst) {\n"
    "  size_t r = get_global_id(0), c = get_global_id(1), b = get_global_id(2);\n"
    "  size_t rows = get_global_size(0), cols = get_global_size(1);\n"
    "  dst[r + rows * (c + cols * b)] = vload_half(off + r + c * ld + b * stride, src);\n"
    "}\n"
    "__kernel void gpar_bf16_to_f32(__global const ushort *src, ulong off, ulong ld, ulong stride,\n"
    "                               __global float *dst) {\n"
    "  size_t r = get_global_id(0), c = get_global_id(1), b = get_global_id(2);\n"
    "  size_t rows = get_global_size(0), cols = get_global_size(1);\n"
    "  dst[r + rows * (c + cols * b)] = as_float((uint)src[off + r + c * ld + b * stride] << 16);\n"
    "}\n"
    "__kernel void gpar_f32_to_f16(__global half *dst, ulong off, ulong ld, ulong stride,\n"
    "                              __global const float *src) {\n"
    "  size_t r = get_global_id(0), c = get_global_id(1), b = get_global_id(2);\n"
    "  size_t rows = get_global_size(0), cols = get_global_size(1);\n"
    "  vstore_half_rte(src[r + rows * (c + cols * b)], off + r + c * ld + b * stride, dst);\n"
    "}\n"
    "__kernel void gpar_f32_to_bf16(__global ushort *dst, ulong off, ulong ld, ulong stride,\n"
    "                               __global const float *src) {\n"
    "  size_t r = get_global_id(0), c = get_global_id(1), b = get_global_id(2);\n"
    "  size_t rows = get_global_size(0), cols = get_global_size(1);\n"
    "  uint u = as_uint(src[r + rows * (c + cols * b)]);\n"
    "  ushort h = (u & 0x7fffffffu) > 0x7f800000u ? (ushort)((u >> 16) | 0x40u)\n"
    "                                             : (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);\n"
    "  dst[off + r + c * ld + b * stride] = h;\n"
    "}\n"
    "__kernel void gpar_zero32(__global uint *x, ulong off, ulong inc) { x[off + get_global_id(0) * inc] = 0; }\n"
    "__kernel void gpar_zero64(__global ulong *x, ulong off, ulong inc) { x[off + get_global_id(0) * inc] = 0; }\n";

static const char *const kernel_names[GPAR__CLK_COUNT] = {"gpar_f16_to_f32", "gpar_bf16_to_f32", "gpar_f32_to_f16",
                                                          "gpar_f32_to_bf16", "gpar_zero32", "gpar_zero64"};

/* Builds of the program on different devices run one at a time (rare; some compilers are not
 * known to be safe when called from two threads at once). */
static pthread_mutex_t build_lock = PTHREAD_MUTEX_INITIALIZER;

static int program_build(gpar__bdev *dev) {
  cl_int err = CL_SUCCESS;
  int st = GPAR_OK;
  pthread_mutex_lock(&build_lock);
  const char *src = kernel_src;
  dev->prog = clCreateProgramWithSource(dev->ctx, 1, &src, NULL, &err);
  if (!dev->prog || err != CL_SUCCESS) {
    st = gpar__cl_fail("clCreateProgramWithSource (libgpar's conversion kernels)", err);
  } else if ((err = clBuildProgram(dev->prog, 1, &dev->d->id, "", NULL, NULL)) != CL_SUCCESS) {
    char log[2048] = "";
    clGetProgramBuildInfo(dev->prog, dev->d->id, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
    int ignored;
    st = gpar__errorf(GPAR_EBACKEND, "clBuildProgram (libgpar's conversion kernels) on %s: %s (%d): %s", dev->d->name,
                      gpar__cl_name(err, &ignored), (int)err, log);
  }
  for (int i = 0; i < GPAR__CLK_COUNT && st == GPAR_OK; i++)
    if (!(dev->kern[i] = clCreateKernel(dev->prog, kernel_names[i], &err)) || err != CL_SUCCESS)
      st = gpar__cl_fail("clCreateKernel (libgpar's conversion kernels)", err);
  pthread_mutex_unlock(&build_lock);
  if (st != GPAR_OK) {
    gpar__cl_kernels_close(dev);
    dev->prog_err = st;
  }
  return st;
}

/* Kernel i of dev's program, building it the first time. */
static cl_kernel kernel_get(gpar__bdev *dev, int i, int *st) {
  *st = GPAR_OK;
  if (!dev->prog && !dev->prog_err) *st = program_build(dev);
  else if (dev->prog_err) *st = gpar__errorf(dev->prog_err, "opencl: libgpar's conversion kernels did not build on %s",
                                             dev->d->name);
  return *st ? NULL : dev->kern[i];
}

void gpar__cl_kernels_close(gpar__bdev *dev) {
  for (int i = 0; i < GPAR__CLK_COUNT; i++)
    if (dev->kern[i]) clReleaseKernel(dev->kern[i]), dev->kern[i] = NULL;
  if (dev->prog) clReleaseProgram(dev->prog), dev->prog = NULL;
  for (int l = 0; l < GPAR__NLANES; l++)
    for (int i = 0; i < GPAR__CL_NCONV; i++)
      if (dev->lanes[l].conv[i]) {
        clReleaseMemObject(dev->lanes[l].conv[i]);
        dev->lanes[l].conv[i] = NULL;
        dev->lanes[l].conv_size[i] = 0;
      }
}

/* Set the arguments and enqueue kernel k over dims global sizes; the event as gpar__cl_convert
 * says. */
static int enqueue(gpar__cllane *ln, cl_kernel k, cl_uint dims, const size_t *global, int nargs, const size_t *sizes,
                   const void *const *vals, int want_event, const char *what) {
  cl_int err = CL_SUCCESS;
  for (int i = 0; i < nargs && err == CL_SUCCESS; i++) err = clSetKernelArg(k, (cl_uint)i, sizes[i], vals[i]);
  if (err != CL_SUCCESS) return gpar__cl_fail("clSetKernelArg", err);
  cl_event ev = NULL;
  err = clEnqueueNDRangeKernel(ln->q, k, dims, NULL, global, NULL, 0, NULL, want_event ? &ev : NULL);
  if (err != CL_SUCCESS) {
    gpar__cl_mark_dirty(ln);
    return gpar__cl_fail(what, err);
  }
  gpar__cl_enqueued(ln, ev);
  return GPAR_OK;
}

int gpar__cl_convert(gpar__bdev *dev, gpar__cllane *ln, int to_f32, int t, cl_mem hbuf, size_t off, int ld,
                     long long stride, int rows, int cols, int batch, cl_mem f32, int want_event) {
  const int bf = t == GPAR_BFLOAT16;
  const int which = to_f32 ? (bf ? GPAR__CLK_BF16_TO_F32 : GPAR__CLK_F16_TO_F32)
                           : (bf ? GPAR__CLK_F32_TO_BF16 : GPAR__CLK_F32_TO_F16);
  int st;
  cl_kernel k = kernel_get(dev, which, &st);
  if (!k) return st;
  const cl_ulong o = off, l = (cl_ulong)ld, s = (cl_ulong)stride;
  const size_t global[3] = {(size_t)rows, (size_t)cols, (size_t)batch};
  const size_t sizes[5] = {sizeof hbuf, sizeof o, sizeof l, sizeof s, sizeof f32};
  const void *const vals[5] = {&hbuf, &o, &l, &s, &f32};
  return enqueue(ln, k, 3, global, 5, sizes, vals, want_event, to_f32 ? "clEnqueueNDRangeKernel (to f32)"
                                                                       : "clEnqueueNDRangeKernel (from f32)");
}

int gpar__cl_zero(gpar__bdev *dev, gpar__cllane *ln, int es, cl_mem x, size_t off, int n, int inc, int want_event) {
  int st;
  if (inc == 1) { /* contiguous: a fill */
    const unsigned char zero = 0;
    cl_event ev = NULL;
    cl_int err = clEnqueueFillBuffer(ln->q, x, &zero, 1, off * (size_t)es, (size_t)n * (size_t)es, 0, NULL,
                                     want_event ? &ev : NULL);
    if (err != CL_SUCCESS) return gpar__cl_fail("clEnqueueFillBuffer (blas zeros)", err);
    gpar__cl_enqueued(ln, ev);
    return GPAR_OK;
  }
  cl_kernel k = kernel_get(dev, es == 8 ? GPAR__CLK_ZERO64 : GPAR__CLK_ZERO32, &st);
  if (!k) return st;
  const cl_ulong o = off, i = (cl_ulong)inc;
  const size_t global[1] = {(size_t)n};
  const size_t sizes[3] = {sizeof x, sizeof o, sizeof i};
  const void *const vals[3] = {&x, &o, &i};
  return enqueue(ln, k, 1, global, 3, sizes, vals, want_event, "clEnqueueNDRangeKernel (blas zeros)");
}

cl_mem gpar__cl_conv_buffer(gpar__bdev *dev, gpar__cllane *ln, int i, size_t bytes, int *st) {
  *st = GPAR_OK;
  if (bytes <= ln->conv_size[i]) return ln->conv[i];
  if ((uint64_t)bytes > dev->d->max_alloc) {
    *st = gpar__errorf(GPAR_EDEVMEM, "opencl: the f32 copy of an f16/bf16 operand needs %zu bytes, over %s's largest "
                                     "allocation (%llu)", bytes, dev->d->name, (unsigned long long)dev->d->max_alloc);
    return NULL;
  }
  cl_int err = CL_SUCCESS;
  cl_mem m = clCreateBuffer(dev->ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
  if (!m || err != CL_SUCCESS) {
    *st = gpar__cl_fail("clCreateBuffer (f32 copy of an f16/bf16 operand)", err);
    return NULL;
  }
  /* the old one lives on until the commands already enqueued with it are done */
  if (ln->conv[i]) clReleaseMemObject(ln->conv[i]);
  ln->conv[i] = m;
  ln->conv_size[i] = bytes;
  return m;
}
