/* raw_kernel_opencl.c: the hand-written OpenCL kernel loops (raw_kernel.h): the kernels below
 * built by clBuildProgram for one device, launched by clEnqueueNDRangeKernel on one in-order
 * queue, clFinish at the end. OpenCL 1.2 has no graphs: the graph case runs the eager loop. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <CL/cl.h>

#include "gpar.h" /* gpar_now */
#include "raw_kernel.h"

static const char src[] =
    "__kernel void tiny(__global float *y) { if (get_global_id(0) == 0) y[0] += 1.0f; }\n"
    "__kernel void saxpy(ulong n, float a, __global const float *x, __global float *y) {\n"
    "  ulong i = get_global_id(0);\n"
    "  if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n";

static struct {
  int dev, ready;
  cl_device_id id;
  cl_context ctx;
  cl_command_queue q;
  cl_program prog;
  cl_kernel tiny, saxpy;
  cl_mem y1, x, y;
  size_t n;
} R = {.dev = -1};

static int cl(cl_int e, const char *what) {
  if (e == CL_SUCCESS) return 0;
  fprintf(stderr, "raw_kernel_opencl: %s failed (%d)\n", what, e);
  return -1;
}

/* Device dev of every platform's devices in order (libgpar's backend-local order). */
static int find_device(int dev, cl_device_id *out) {
  cl_platform_id plats[16];
  cl_uint np = 0;
  if (cl(clGetPlatformIDs(16, plats, &np), "clGetPlatformIDs")) return -1;
  for (cl_uint p = 0; p < np && p < 16; p++) {
    cl_uint nd = 0;
    cl_device_id ids[64];
    if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 64, ids, &nd) != CL_SUCCESS) continue;
    if (dev < (int)nd) {
      *out = ids[dev];
      return 0;
    }
    dev -= (int)nd;
  }
  fprintf(stderr, "raw_kernel_opencl: no device %d\n", dev);
  return -1;
}

/* Build text for the device; the program in *prog, its binary reloaded for *load seconds. */
static int build(const char *text, cl_program *prog, double *build_s, double *load) {
  cl_int e = CL_SUCCESS;
  double t0 = gpar_now();
  *prog = clCreateProgramWithSource(R.ctx, 1, &text, NULL, &e);
  if (cl(e, "clCreateProgramWithSource") || cl(clBuildProgram(*prog, 1, &R.id, "-cl-std=CL1.2", NULL, NULL), "clBuildProgram"))
    return -1;
  if (build_s) *build_s = gpar_now() - t0;
  if (!load) return 0;
  size_t n = 0;
  unsigned char *bin = NULL;
  if (cl(clGetProgramInfo(*prog, CL_PROGRAM_BINARY_SIZES, sizeof n, &n, NULL), "binary size") || !(bin = malloc(n)) ||
      cl(clGetProgramInfo(*prog, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL), "binaries")) {
    free(bin);
    return -1;
  }
  double t1 = gpar_now();
  const unsigned char *b = bin;
  cl_program again = clCreateProgramWithBinary(R.ctx, 1, &R.id, &n, &b, NULL, &e);
  int rc = cl(e, "clCreateProgramWithBinary") || cl(clBuildProgram(again, 1, &R.id, NULL, NULL, NULL), "clBuildProgram");
  *load = gpar_now() - t1;
  if (again) clReleaseProgram(again);
  free(bin);
  return rc;
}

static int setup(int dev) {
  if (R.ready && R.dev == dev) return 0;
  if (R.ready) gpar_raw_kernel_opencl_done();
  cl_int e = CL_SUCCESS;
  R.dev = dev;
  if (find_device(dev, &R.id)) return -1;
  R.ctx = clCreateContext(NULL, 1, &R.id, NULL, NULL, &e);
  if (cl(e, "clCreateContext")) return -1;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  R.q = clCreateCommandQueue(R.ctx, R.id, 0, &e);
#pragma GCC diagnostic pop
  if (cl(e, "clCreateCommandQueue") || build(src, &R.prog, NULL, NULL)) return -1;
  R.tiny = clCreateKernel(R.prog, "tiny", &e);
  if (!cl(e, "clCreateKernel")) R.saxpy = clCreateKernel(R.prog, "saxpy", &e);
  if (!cl(e, "clCreateKernel")) R.y1 = clCreateBuffer(R.ctx, CL_MEM_READ_WRITE, 4, NULL, &e);
  if (cl(e, "clCreateBuffer") || cl(clSetKernelArg(R.tiny, 0, sizeof R.y1, &R.y1), "clSetKernelArg")) return -1;
  R.ready = 1;
  return 0;
}

static int tiny(const gpar_raw_kernel_case *c, double *sec) {
  float zero = 0, y = 0;
  size_t g = 32, l = 32;
  if (cl(clEnqueueWriteBuffer(R.q, R.y1, CL_TRUE, 0, 4, &zero, 0, NULL, NULL), "write")) return -1;
  long n = c->what == GPAR_RAW_K_TINY_GRAPH ? c->iters * c->reps : c->iters;
  double t0 = gpar_now();
  for (long i = 0; i < n; i++)
    if (cl(clEnqueueNDRangeKernel(R.q, R.tiny, 1, NULL, &g, &l, 0, NULL, NULL), "clEnqueueNDRangeKernel")) return -1;
  if (cl(clFinish(R.q), "clFinish")) return -1;
  *sec = gpar_now() - t0;
  if (cl(clEnqueueReadBuffer(R.q, R.y1, CL_TRUE, 0, 4, &y, 0, NULL, NULL), "read")) return -1;
  return y == (float)n ? 0 : (fprintf(stderr, "raw_kernel_opencl: tiny counted %g\n", y), -1);
}

static int saxpy(const gpar_raw_kernel_case *c, double *sec) {
  cl_int e = CL_SUCCESS;
  if (R.n != c->n) {
    if (R.x) clReleaseMemObject(R.x), clReleaseMemObject(R.y);
    R.x = clCreateBuffer(R.ctx, CL_MEM_READ_WRITE, c->n * 4, NULL, &e);
    if (!cl(e, "clCreateBuffer")) R.y = clCreateBuffer(R.ctx, CL_MEM_READ_WRITE, c->n * 4, NULL, &e);
    float one = 1.0f;
    if (cl(e, "clCreateBuffer") || cl(clEnqueueFillBuffer(R.q, R.x, &one, 4, 0, c->n * 4, 0, NULL, NULL), "fill")) return -1;
    R.n = c->n;
  }
  float zero = 0, a = 1.0f, y0 = 0;
  cl_ulong n = c->n;
  size_t l = 256, g = (c->n + 255) / 256 * 256;
  if (cl(clEnqueueFillBuffer(R.q, R.y, &zero, 4, 0, c->n * 4, 0, NULL, NULL), "fill") ||
      cl(clSetKernelArg(R.saxpy, 0, sizeof n, &n), "arg") || cl(clSetKernelArg(R.saxpy, 1, sizeof a, &a), "arg") ||
      cl(clSetKernelArg(R.saxpy, 2, sizeof R.x, &R.x), "arg") || cl(clSetKernelArg(R.saxpy, 3, sizeof R.y, &R.y), "arg") ||
      cl(clFinish(R.q), "clFinish"))
    return -1;
  double t0 = gpar_now();
  for (long i = 0; i < c->iters; i++)
    if (cl(clEnqueueNDRangeKernel(R.q, R.saxpy, 1, NULL, &g, &l, 0, NULL, NULL), "clEnqueueNDRangeKernel")) return -1;
  if (cl(clFinish(R.q), "clFinish")) return -1;
  *sec = gpar_now() - t0;
  if (cl(clEnqueueReadBuffer(R.q, R.y, CL_TRUE, 0, 4, &y0, 0, NULL, NULL), "read")) return -1;
  return y0 == (float)c->iters ? 0 : (fprintf(stderr, "raw_kernel_opencl: saxpy gave %g\n", y0), -1);
}

/* The binary in path loaded as a user's program would: clCreateProgramWithBinary, clBuildProgram,
 * after a context of its own and nothing else (no build from source first: in a new process the
 * first build also pays for the compiler's start, in libgpar and here alike). */
static int load_binary(int dev, const char *path, double *sec) {
  cl_device_id id;
  cl_int e = CL_SUCCESS, st = CL_SUCCESS;
  if (find_device(dev, &id)) return -1;
  cl_context ctx = clCreateContext(NULL, 1, &id, NULL, NULL, &e);
  if (cl(e, "clCreateContext")) return -1;
  FILE *f = fopen(path, "rb");
  if (!f) return clReleaseContext(ctx), -1;
  long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
  unsigned char *bin = size > 0 ? malloc((size_t)size) : NULL;
  rewind(f);
  size_t n = bin ? fread(bin, 1, (size_t)size, f) : 0;
  fclose(f);
  if (!n || n != (size_t)size) {
    free(bin);
    clReleaseContext(ctx);
    return -1;
  }
  const unsigned char *b = bin;
  double t0 = gpar_now();
  cl_program p = clCreateProgramWithBinary(ctx, 1, &id, &n, &b, &st, &e);
  int rc = cl(e, "clCreateProgramWithBinary") || cl(clBuildProgram(p, 1, &id, NULL, NULL, NULL), "clBuildProgram");
  *sec = gpar_now() - t0;
  if (p) clReleaseProgram(p);
  clReleaseContext(ctx);
  free(bin);
  return rc;
}

int gpar_raw_kernel_opencl(const gpar_raw_kernel_case *c, double *seconds) {
  if (c->what == GPAR_RAW_K_BINARY) return load_binary(c->dev, c->path, &seconds[0]);
  if (setup(c->dev)) return -1;
  if (c->what == GPAR_RAW_K_TINY || c->what == GPAR_RAW_K_TINY_GRAPH) return tiny(c, seconds);
  if (c->what == GPAR_RAW_K_SAXPY) return saxpy(c, seconds);
  char text[sizeof src + 64];
  cl_program p = NULL;
  snprintf(text, sizeof text, "/* round %d */\n%s", c->salt, src);
  int rc = build(text, &p, &seconds[0], &seconds[1]);
  if (p) clReleaseProgram(p);
  return rc;
}

void gpar_raw_kernel_opencl_done(void) {
  if (!R.ready) return;
  if (R.x) clReleaseMemObject(R.x), clReleaseMemObject(R.y);
  clReleaseMemObject(R.y1);
  clReleaseKernel(R.tiny);
  clReleaseKernel(R.saxpy);
  clReleaseProgram(R.prog);
  clReleaseCommandQueue(R.q);
  clReleaseContext(R.ctx);
  memset(&R, 0, sizeof R);
  R.dev = -1;
}
