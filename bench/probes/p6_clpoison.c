/* p6_clpoison.c: does an OpenCL compiler honour the guard libgpar puts before a kernel's text on
 * PoCL (core/backend_kernel.h, gpar__kernel_poison): a line marker with the system-header flag,
 * #pragma GCC poison of the words that read files, a line marker back? For every OpenCL device:
 * (a) a kernel after the guard builds, and its log (warnings?) is printed; (b) the same kernel
 * using __has_include built by token pasting fails to build (poisoned), and (c) without the guard
 * the pasted __has_include of an existing file is evaluated (the #error fires). Build:
 * cc -o p6 p6_clpoison.c -lOpenCL. Prints one line per case and device. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <string.h>

static const char guard[] = "# 1 \"<libgpar: words that read files>\" 3\n"
                            "#pragma GCC poison asm __asm __asm__ __has_include __has_include_next __has_embed\n"
                            "# 4 \"kernel.cl\"\n";
static const char plain[] = "__kernel void k(__global int *y) { y[0] = 1; }\n";
static const char pasted[] = "#define CAT(a, b) a##b\n#if CAT(__has_, include)(\"/etc/hostname\")\n#error PROBED\n#endif\n"
                             "__kernel void k(__global int *y) { y[0] = 1; }\n";

static void build(cl_device_id d, const char *what, const char *pre, const char *body) {
  char src[2048], log[4096] = "";
  snprintf(src, sizeof src, "%s%s", pre, body);
  cl_int e;
  cl_context c = clCreateContext(NULL, 1, &d, NULL, NULL, &e);
  const char *s = src;
  cl_program p = clCreateProgramWithSource(c, 1, &s, NULL, &e);
  cl_int b = clBuildProgram(p, 1, &d, "-cl-std=CL1.2", NULL, NULL);
  clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
  for (char *q = log; *q; q++)
    if (*q == '\n') *q = ' ';
  printf("  %-34s build %d; log: %.300s\n", what, b, log);
  clReleaseProgram(p);
  clReleaseContext(c);
}

int main(void) {
  cl_platform_id plats[8];
  cl_uint np = 0;
  clGetPlatformIDs(8, plats, &np);
  for (cl_uint i = 0; i < np; i++) {
    cl_device_id devs[8];
    cl_uint nd = 0;
    char name[256];
    clGetPlatformInfo(plats[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
    if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_ALL, 8, devs, &nd) != CL_SUCCESS || !nd) continue;
    printf("p6 platform %s:\n", name);
    build(devs[0], "(a) guard + plain kernel", guard, plain);
    build(devs[0], "(b) guard + pasted __has_include", guard, pasted);
    build(devs[0], "(c) no guard, pasted __has_include", "", pasted);
  }
  return 0;
}
