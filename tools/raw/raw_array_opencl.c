/* raw_array_opencl.c: the hand OpenCL sum of `gpar-bench array` (raw_array.h): two passes
 * (strided loads, a local-memory tree per group, then one group over the partials), built with
 * clBuildProgram for the device and enqueued with clEnqueueNDRangeKernel on one in-order queue. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <CL/cl.h>

#include "gpar.h" /* gpar_now */
#include "raw_array.h"

static const char source[] =
    "__kernel void sum(ulong n, __global const float *x, __global float *out) {\n"
    "  __local float sh[256];\n"
    "  float s = 0.0f;\n"
    "  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) s += x[i];\n"
    "  uint l = get_local_id(0);\n"
    "  sh[l] = s;\n"
    "  barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  for (uint k = get_local_size(0) / 2; k > 0; k >>= 1) {\n"
    "    if (l < k) sh[l] += sh[l + k];\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  }\n"
    "  if (l == 0) out[get_group_id(0)] = sh[0];\n"
    "}\n";

static int fail(const char *what, cl_int e) {
  fprintf(stderr, "raw_array_opencl: %s failed (%d)\n", what, (int)e);
  return -1;
}

/* Device `index` in backend order (platform order, then each platform's devices). */
static int find_device(int index, cl_device_id *dev) {
  cl_platform_id plats[16];
  cl_uint np = 0;
  if (clGetPlatformIDs(16, plats, &np) != CL_SUCCESS) return fail("clGetPlatformIDs", 0);
  for (cl_uint p = 0; p < np && p < 16; p++) {
    cl_uint nd = 0;
    cl_device_id ids[64];
    if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 64, ids, &nd) != CL_SUCCESS) continue;
    if (index < (int)nd) {
      *dev = ids[index];
      return 0;
    }
    index -= (int)nd;
  }
  return fail("no such OpenCL device", 0);
}

/* One sum: pass 1 into part, pass 2 into out. */
static cl_int launch(const gpar_raw_sum_case *c, cl_command_queue q, cl_kernel kr, cl_mem x, cl_mem part, cl_mem out) {
  cl_ulong n = c->n, np = 1024;
  size_t local = 256, global = 1024 * 256;
  clSetKernelArg(kr, 0, sizeof n, &n), clSetKernelArg(kr, 1, sizeof x, &x), clSetKernelArg(kr, 2, sizeof part, &part);
  cl_int e = clEnqueueNDRangeKernel(q, kr, 1, NULL, &global, &local, 0, NULL, NULL);
  if (e != CL_SUCCESS) return e;
  global = 256;
  clSetKernelArg(kr, 0, sizeof np, &np), clSetKernelArg(kr, 1, sizeof part, &part), clSetKernelArg(kr, 2, sizeof out, &out);
  return clEnqueueNDRangeKernel(q, kr, 1, NULL, &global, &local, 0, NULL, NULL);
}

int gpar_raw_sum_opencl(const gpar_raw_sum_case *c, double *seconds, double *sum) {
  cl_device_id dev;
  cl_int e = CL_SUCCESS;
  if (find_device(c->dev, &dev)) return -1;
  cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &e);
  if (!ctx) return fail("clCreateContext", e);
  cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &e);
  const char *src = source;
  cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &e);
  int rc = !q || !prog ? fail("clCreateCommandQueue/ProgramWithSource", e) : 0;
  if (!rc && (e = clBuildProgram(prog, 1, &dev, "", NULL, NULL)) != CL_SUCCESS) rc = fail("clBuildProgram", e);
  cl_kernel kr = rc ? NULL : clCreateKernel(prog, "sum", &e);
  cl_mem x = rc ? NULL : clCreateBuffer(ctx, CL_MEM_READ_WRITE, c->n * 4, NULL, &e);
  cl_mem part = rc ? NULL : clCreateBuffer(ctx, CL_MEM_READ_WRITE, 1024 * 4, NULL, &e);
  cl_mem out = rc ? NULL : clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4, NULL, &e);
  if (!rc && (!kr || !x || !part || !out)) rc = fail("clCreateKernel/Buffer", e);
  float one = 1.0f, h = 0.0f;
  if (!rc && (e = clEnqueueFillBuffer(q, x, &one, 4, 0, c->n * 4, 0, NULL, NULL)) != CL_SUCCESS) rc = fail("clEnqueueFillBuffer", e);
  if (!rc && ((e = launch(c, q, kr, x, part, out)) != CL_SUCCESS || (e = clFinish(q)) != CL_SUCCESS)) rc = fail("warm-up", e);
  double t0 = gpar_now();
  for (int i = 0; i < c->iters && !rc; i++)
    if ((e = launch(c, q, kr, x, part, out)) != CL_SUCCESS) rc = fail("clEnqueueNDRangeKernel", e);
  if (!rc && (e = clFinish(q)) != CL_SUCCESS) rc = fail("clFinish", e);
  *seconds = gpar_now() - t0;
  if (!rc && (e = clEnqueueReadBuffer(q, out, CL_TRUE, 0, 4, &h, 0, NULL, NULL)) != CL_SUCCESS) rc = fail("clEnqueueReadBuffer", e);
  *sum = h;
  cl_mem mems[3] = {x, part, out};
  for (int i = 0; i < 3; i++)
    if (mems[i]) clReleaseMemObject(mems[i]);
  if (kr) clReleaseKernel(kr);
  if (prog) clReleaseProgram(prog);
  if (q) clReleaseCommandQueue(q);
  clReleaseContext(ctx);
  return rc;
}
