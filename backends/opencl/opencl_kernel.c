/* opencl_kernel.c: kernels on OpenCL devices. The generated OpenCL C 1.2 (the OpenCL dialect
 * header, the portable part, the preamble, then a __kernel taking each buffer as a cl_mem and a
 * byte offset) is built by clBuildProgram for one device; the binary it gives
 * (CL_PROGRAM_BINARIES) is what the core caches, and a module is a program built from such a
 * binary for that device, with its cl_kernel. The grid is work-groups x group size, so the
 * global size is always a multiple of the local size (NVIDIA's OpenCL 1.2 requires it). A
 * module's cl_kernel is set and enqueued only by its device's dispatcher thread (clSetKernelArg
 * is not thread-safe on one kernel object), which modules per device (kernel_module_per_device)
 * make sure of. GPAR_HOST memory is not a cl_mem of the device's context: refused. What a build
 * may read: no option names a file or folder (no -I), and on PoCL the words that read files are
 * poisoned (gpar__kernel_poison). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opencl_internal.h"

/* The OpenCL dialect header (GPAR_KERNEL_DIALECT; gpar.h documents the names). */
static const char header[] =
    "/* libgpar kernel dialect 1: OpenCL C 1.2 */\n"
    "#define GPAR_ON_OPENCL 1\n"
    "#ifdef cl_khr_fp64\n#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n#endif\n"
    "#ifdef cl_khr_int64_base_atomics\n#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable\n#endif\n"
    "typedef char gpar_i8; typedef uchar gpar_u8; typedef short gpar_i16; typedef ushort gpar_u16;\n"
    "typedef int gpar_i32; typedef uint gpar_u32; typedef long gpar_i64; typedef ulong gpar_u64;\n"
    "typedef float gpar_f32; typedef ushort gpar_f16; typedef ushort gpar_bf16;\n"
    "#ifdef cl_khr_fp64\ntypedef double gpar_f64;\n"
    "#define gpar_as_u64(v) as_ulong((double)(v))\n#define gpar_as_f64(v) as_double((ulong)(v))\n#endif\n"
    "#define GPAR_FN static inline\n#define GPAR_GLOBAL_MEM __global\n#define GPAR_LOCAL_MEM __local\n"
    "#define GPAR_LOCAL_ID(d) ((gpar_u32)get_local_id(d))\n"
    "#define GPAR_GROUP_ID(d) ((gpar_u32)get_group_id(d))\n"
    "#define GPAR_GROUP_SIZE(d) ((gpar_u32)get_local_size(d))\n"
    "#define GPAR_NUM_GROUPS(d) ((gpar_u32)get_num_groups(d))\n"
    "#define GPAR_GLOBAL_ID(d) ((gpar_u64)get_global_id(d))\n"
    "#define GPAR_GLOBAL_SIZE(d) ((gpar_u64)get_global_size(d))\n"
    "#define GPAR_LOCAL(type, name, count) __local type name[count]\n"
    "#define GPAR_BARRIER() barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)\n"
    "#define gpar_as_u32(v) as_uint((float)(v))\n#define gpar_as_f32(v) as_float((uint)(v))\n"
    /* f16 numbers (NaNs: the portable part, as these give one canonical NaN) */
    "GPAR_FN gpar_f32 gpar__f16_to_f32_num(gpar_f16 h) { return vload_half(0, (const __private half *)&h); }\n"
    "GPAR_FN gpar_f16 gpar__f32_to_f16_num(gpar_f32 f) {\n"
    "  gpar_f16 h; vstore_half_rte(f, 0, (__private half *)&h); return h; }\n"
    /* atomics: OpenCL 1.2's return the value before, in any address space */
    "#define gpar_atomic_add_i32(p, v) atomic_add((p), (gpar_i32)(v))\n"
    "#define gpar_atomic_add_u32(p, v) atomic_add((p), (gpar_u32)(v))\n"
    "#define gpar_atomic_add_i64(p, v) atom_add((p), (gpar_i64)(v))\n"
    "#define gpar_atomic_add_u64(p, v) atom_add((p), (gpar_u64)(v))\n"
    "#define gpar_atomic_min_i32(p, v) atomic_min((p), (gpar_i32)(v))\n"
    "#define gpar_atomic_min_u32(p, v) atomic_min((p), (gpar_u32)(v))\n"
    "#define gpar_atomic_max_i32(p, v) atomic_max((p), (gpar_i32)(v))\n"
    "#define gpar_atomic_max_u32(p, v) atomic_max((p), (gpar_u32)(v))\n"
    "#define gpar_atomic_xchg_i32(p, v) atomic_xchg((p), (gpar_i32)(v))\n"
    "#define gpar_atomic_xchg_u32(p, v) atomic_xchg((p), (gpar_u32)(v))\n"
    "#define gpar_atomic_cas_i32(p, c, v) atomic_cmpxchg((p), (gpar_i32)(c), (gpar_i32)(v))\n"
    "#define gpar_atomic_cas_u32(p, c, v) atomic_cmpxchg((p), (gpar_u32)(c), (gpar_u32)(v))\n"
    "GPAR_FN gpar_f32 gpar_atomic_add_f32(volatile __global gpar_f32 *p, gpar_f32 v) {\n"
    "  volatile __global gpar_u32 *q = (volatile __global gpar_u32 *)p;\n"
    "  gpar_u32 old = *q, seen;\n"
    "  do { seen = old; old = atomic_cmpxchg(q, seen, as_uint(as_float(seen) + v)); } while (old != seen);\n"
    "  return as_float(old);\n"
    "}\n"
    /* C99's float names for OpenCL C's overloaded built-ins */
    "#define sqrtf sqrt\n#define cbrtf cbrt\n#define expf exp\n#define exp2f exp2\n#define expm1f expm1\n"
    "#define logf log\n#define log2f log2\n#define log10f log10\n#define log1pf log1p\n#define powf pow\n"
    "#define sinf sin\n#define cosf cos\n#define tanf tan\n#define asinf asin\n#define acosf acos\n"
    "#define atanf atan\n#define atan2f atan2\n#define sinhf sinh\n#define coshf cosh\n#define tanhf tanh\n"
    "#define asinhf asinh\n#define acoshf acosh\n#define atanhf atanh\n#define fabsf fabs\n#define floorf floor\n"
    "#define ceilf ceil\n#define roundf round\n#define truncf trunc\n#define rintf rint\n#define fmodf fmod\n"
    "#define fminf fmin\n#define fmaxf fmax\n#define fmaf fma\n#define hypotf hypot\n#define erff erf\n"
    "#define erfcf erfc\n#define tgammaf tgamma\n#define lgammaf lgamma\n#define copysignf copysign\n"
    "#define nextafterf nextafter\n#define ldexpf ldexp\n#define fdimf fdim\n#define remainderf remainder\n"
    "#define logbf logb\n";

static void dev_str(cl_device_id d, cl_device_info what, char *out, size_t cap) {
  if (clGetDeviceInfo(d, what, cap, out, NULL) != CL_SUCCESS) out[0] = 0;
  out[cap - 1] = 0;
}

int gpar__cl_kernel_target(gpar__bdev *dev, char *buf, size_t cap, char *files, size_t fcap) {
  char clc[128], pname[128], pver[128], driver[128];
  if (fcap) files[0] = 0; /* read from the driver each time: cheap */
  cl_bool compiler = CL_FALSE;
  clGetDeviceInfo(dev->d->id, CL_DEVICE_COMPILER_AVAILABLE, sizeof compiler, &compiler, NULL);
  if (!compiler)
    return gpar__errorf(GPAR_ENOTSUP, "opencl: %s has no compiler (CL_DEVICE_COMPILER_AVAILABLE is false)", dev->d->name);
  dev_str(dev->d->id, CL_DEVICE_OPENCL_C_VERSION, clc, sizeof clc);
  dev_str(dev->d->id, CL_DRIVER_VERSION, driver, sizeof driver);
  cl_platform_id p = dev->be->plats[dev->d->plat].id;
  if (clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof pname, pname, NULL) != CL_SUCCESS) pname[0] = 0;
  if (clGetPlatformInfo(p, CL_PLATFORM_VERSION, sizeof pver, pver, NULL) != CL_SUCCESS) pver[0] = 0;
  pname[sizeof pname - 1] = pver[sizeof pver - 1] = 0;
  snprintf(buf, cap, "%s; %s (%s); device %s; driver %s", clc, pname, pver, dev->d->name, driver);
  return GPAR_OK;
}

/* ---------------------------------------------------------------- the generated source */

static int uses_f64(const gpar__kernel_def *def) {
  for (int i = 0; i < def->nparams; i++)
    if (def->params[i].type == GPAR__KT_F64) return 1;
  return 0;
}

/* The __kernel: scalars by value, each buffer as a pointer and a byte offset, applied first. */
static void write_entry(FILE *f, const gpar__kernel_def *def) {
  fprintf(f, "__kernel void gpar_kernel_%s(", def->name);
  for (int i = 0; i < def->nparams; i++) {
    const gpar__kparam *p = &def->params[i];
    const char *c = p->dir == GPAR__KDIR_IN ? "const " : "";
    if (p->dir == GPAR__KDIR_SCALAR)
      fprintf(f, "%s\n    const %s %s", i ? "," : "", p->ctype, p->name);
    else
      fprintf(f, "%s\n    __global %s%s *gpar__%s_p, const gpar_u64 gpar__%s_o", i ? "," : "", c, p->ctype, p->name,
              p->name);
  }
  fprintf(f, "%s) {\n", def->nparams ? "" : "void");
  for (int i = 0; i < def->nparams; i++) {
    const gpar__kparam *p = &def->params[i];
    const char *c = p->dir == GPAR__KDIR_IN ? "const " : "";
    if (p->dir != GPAR__KDIR_SCALAR)
      fprintf(f, "  __global %s%s *%s = (__global %s%s *)((__global %schar *)gpar__%s_p + gpar__%s_o);\n", c, p->ctype,
              p->name, c, p->ctype, c, p->name, p->name);
  }
  fprintf(f, "%s\n}\n", def->body);
}

/* 1 when dev's compiler honours #pragma GCC poison and line markers (gpar__kernel_poison): PoCL,
 * whose compiler is clang. NVIDIA's asm is PTX, which reads no file; token pasting that could
 * build __has_include is refused by the text check on every backend. */
static int honours_poison(gpar__bdev *dev) {
  char pname[128] = "";
  cl_platform_id p = dev->be->plats[dev->d->plat].id;
  if (clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof pname, pname, NULL) != CL_SUCCESS) return 0;
  pname[sizeof pname - 1] = 0;
  return strstr(pname, "Portable Computing Language") != NULL;
}

int gpar__cl_kernel_source(gpar__bdev *dev, const char *target, const gpar__kernel_def *def, char **src, char *opts,
                           size_t optcap) {
  (void)target;
  if (uses_f64(def) && !dev->d->fp64)
    return gpar__errorf(GPAR_ENOTSUP, "opencl: %s has no fp64 (cl_khr_fp64), which kernel '%s' takes", dev->d->name,
                        def->name);
  snprintf(opts, optcap, "-cl-std=CL1.2");
  size_t n = 0;
  FILE *f = open_memstream(src, &n);
  if (!f) return gpar__errorf(GPAR_ENOMEM, "opencl: out of host memory");
  fprintf(f, "%s%s", header, def->common);
  if (honours_poison(dev)) gpar__kernel_poison(f, src, "kernel.cl");
  if (*def->preamble) fprintf(f, "/* preamble */\n%s\n", def->preamble);
  write_entry(f, def);
  if (fclose(f) != 0) return gpar__errorf(GPAR_ENOMEM, "opencl: out of host memory");
  return GPAR_OK;
}

/* ---------------------------------------------------------------- compile, load, launch */

/* The build log of prog for dev (malloc'ed; NULL when empty). */
static char *build_log(cl_program prog, cl_device_id id) {
  size_t n = 0;
  if (clGetProgramBuildInfo(prog, id, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) != CL_SUCCESS || n <= 1) return NULL;
  char *log = malloc(n + 1);
  if (log && clGetProgramBuildInfo(prog, id, CL_PROGRAM_BUILD_LOG, n, log, NULL) != CL_SUCCESS) log[0] = 0;
  if (log) log[n] = 0;
  if (log && !log[strspn(log, " \t\r\n")]) { /* only white space */
    free(log);
    log = NULL;
  }
  return log;
}

/* The binary of a program built for device id (malloc'ed; NULL and length 0 when the program
 * holds none for id). The program belongs to its context's every device, so
 * CL_PROGRAM_BINARY_SIZES and CL_PROGRAM_BINARIES take one entry per device of
 * CL_PROGRAM_DEVICES (PoCL 5 refuses a one-entry buffer with CL_INVALID_VALUE when the context
 * has two devices). PoCL 3.1 files a build for its second of two alike devices under the first
 * and copies it even into a NULL entry (the spec says a NULL entry is skipped): every entry with
 * a size gets a buffer, and all but id's are freed. */
static int program_binary(cl_program prog, cl_device_id id, void **bin, size_t *len) {
  cl_uint nd = 0;
  cl_int err = clGetProgramInfo(prog, CL_PROGRAM_NUM_DEVICES, sizeof nd, &nd, NULL);
  if (err != CL_SUCCESS) return gpar__cl_fail("clGetProgramInfo(CL_PROGRAM_NUM_DEVICES)", err);
  if (nd == 0) return gpar__errorf(GPAR_EBACKEND, "opencl: a program with no device");
  cl_device_id *ids = calloc(nd, sizeof *ids);
  size_t *sizes = calloc(nd, sizeof *sizes);
  unsigned char **bins = calloc(nd, sizeof *bins);
  int st = ids && sizes && bins ? GPAR_OK : gpar__errorf(GPAR_ENOMEM, "opencl: out of host memory");
  cl_uint me = nd;
  if (st == GPAR_OK && (err = clGetProgramInfo(prog, CL_PROGRAM_DEVICES, sizeof *ids * nd, ids, NULL)) != CL_SUCCESS)
    st = gpar__cl_fail("clGetProgramInfo(CL_PROGRAM_DEVICES)", err);
  for (cl_uint i = 0; st == GPAR_OK && i < nd; i++)
    if (ids[i] == id) me = i;
  if (st == GPAR_OK && me == nd) st = gpar__errorf(GPAR_EBACKEND, "opencl: the program does not name its device");
  if (st == GPAR_OK &&
      (err = clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof *sizes * nd, sizes, NULL)) != CL_SUCCESS)
    st = gpar__cl_fail("clGetProgramInfo(CL_PROGRAM_BINARY_SIZES)", err);
  for (cl_uint i = 0; st == GPAR_OK && i < nd; i++)
    if (sizes[i] && !(bins[i] = malloc(sizes[i]))) st = gpar__errorf(GPAR_ENOMEM, "opencl: out of host memory");
  if (st == GPAR_OK && (err = clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof *bins * nd, bins, NULL)) != CL_SUCCESS)
    st = gpar__cl_fail("clGetProgramInfo(CL_PROGRAM_BINARIES)", err);
  *bin = NULL;
  *len = 0;
  if (st == GPAR_OK) {
    *bin = bins[me];
    *len = sizes[me];
    bins[me] = NULL;
  }
  for (cl_uint i = 0; bins && i < nd; i++) free(bins[i]);
  free(ids);
  free(sizes);
  free(bins);
  return st;
}

/* Builds src for device id in context ctx and takes its binary (see program_binary). */
static int build_in(cl_context ctx, cl_device_id id, const char *src, const char *opts, void **bin, size_t *len,
                    char **log) {
  cl_int err = CL_SUCCESS;
  cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
  if (!prog || err != CL_SUCCESS) return gpar__cl_fail("clCreateProgramWithSource", err);
  err = clBuildProgram(prog, 1, &id, opts, NULL, NULL);
  *log = build_log(prog, id);
  int st;
  if (err == CL_BUILD_PROGRAM_FAILURE || err == CL_COMPILE_PROGRAM_FAILURE) {
    char first[400];
    gpar__log_errors(*log, first, sizeof first);
    st = gpar__errorf(GPAR_EBUILD, "clBuildProgram: %s", first);
  } else if (err != CL_SUCCESS) {
    st = gpar__cl_fail("clBuildProgram", err);
  } else {
    st = program_binary(prog, id, bin, len);
  }
  clReleaseProgram(prog);
  return st;
}

/* Builds in the device's shared context; where the platform then files no binary under the
 * device (PoCL 3.1's second alike device), builds again in a context of that device alone, whose
 * program has one entry. The binary loads in the shared context either way. */
int gpar__cl_kernel_compile(gpar__bdev *dev, const char *src, const char *opts, void **bin, size_t *len, char **log) {
  int st = build_in(dev->ctx, dev->d->id, src, opts, bin, len, log);
  if (st != GPAR_OK || *len) return st;
  free(*bin);
  free(*log);
  *log = NULL;
  cl_platform_id plat = NULL;
  cl_int err = clGetDeviceInfo(dev->d->id, CL_DEVICE_PLATFORM, sizeof plat, &plat, NULL);
  if (err != CL_SUCCESS) return gpar__cl_fail("clGetDeviceInfo(CL_DEVICE_PLATFORM)", err);
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)plat, 0};
  cl_context alone = clCreateContext(props, 1, &dev->d->id, NULL, NULL, &err);
  if (!alone || err != CL_SUCCESS) return gpar__cl_fail("clCreateContext (one device, to build)", err);
  st = build_in(alone, dev->d->id, src, opts, bin, len, log);
  clReleaseContext(alone);
  if (st == GPAR_OK && !*len) st = gpar__errorf(GPAR_EBACKEND, "opencl: the build gave no binary for the device");
  return st;
}

/* The argument slots whose last values a module keeps (two per buffer parameter). */
#define CL_ARG_CACHE 128

/* A loaded kernel: its program (built from a binary for one device) and kernel object, and the
 * values its argument slots were last given (the first `nset`, while the backend's count of
 * mem_free calls is still `frees`: no cl_mem among them was freed, so an equal handle is the same
 * buffer). Only the thread that launches it on its device reads and writes them, under the
 * device's shared_mu when it has several compute lanes (opencl_table.c). */
typedef struct cl_module {
  cl_program prog;
  cl_kernel k;
  unsigned frees;
  int nset;
  uint64_t val[CL_ARG_CACHE];
} cl_module;

static void limits(gpar__bdev *dev, cl_kernel k, gpar__klimits *lim) {
  size_t wg = 0, mult = 1, dims[3] = {1, 1, 1};
  clGetKernelWorkGroupInfo(k, dev->d->id, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL);
  clGetKernelWorkGroupInfo(k, dev->d->id, CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE, sizeof mult, &mult, NULL);
  clGetDeviceInfo(dev->d->id, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof dims, dims, NULL);
  lim->max_group_size = (uint32_t)(wg ? (wg < UINT32_MAX ? wg : UINT32_MAX) : 1);
  lim->multiple = (uint32_t)(mult ? mult : 1);
  for (int d = 0; d < 3; d++) {
    lim->max_group_dims[d] = (uint32_t)(dims[d] < UINT32_MAX ? dims[d] : UINT32_MAX);
    lim->max_groups[d] = UINT32_MAX;
  }
}

int gpar__cl_kernel_load(gpar__bdev *dev, const void *bin, size_t len, const char *name, void **module,
                         gpar__klimits *lim) {
  cl_int err = CL_SUCCESS, binst = CL_SUCCESS;
  const unsigned char *b = bin;
  char sym[96];
  cl_module *m = calloc(1, sizeof *m);
  if (!m) return gpar__errorf(GPAR_ENOMEM, "opencl: out of host memory");
  m->prog = clCreateProgramWithBinary(dev->ctx, 1, &dev->d->id, &len, &b, &binst, &err);
  int st = GPAR_OK;
  if (!m->prog || err != CL_SUCCESS || binst != CL_SUCCESS)
    st = gpar__cl_fail("clCreateProgramWithBinary", err != CL_SUCCESS ? err : binst);
  else if ((err = clBuildProgram(m->prog, 1, &dev->d->id, NULL, NULL, NULL)) != CL_SUCCESS)
    st = gpar__cl_fail("clBuildProgram (from a binary)", err);
  snprintf(sym, sizeof sym, "gpar_kernel_%s", name);
  if (st == GPAR_OK && (!(m->k = clCreateKernel(m->prog, sym, &err)) || err != CL_SUCCESS))
    st = gpar__cl_fail("clCreateKernel", err);
  if (st != GPAR_OK) {
    if (m->prog) clReleaseProgram(m->prog);
    free(m);
    return st;
  }
  limits(dev, m->k, lim);
  *module = m;
  return GPAR_OK;
}

void gpar__cl_kernel_unload(gpar__bdev *dev, void *module) {
  (void)dev;
  cl_module *m = module;
  clReleaseKernel(m->k);
  clReleaseProgram(m->prog);
  free(m);
}

/* clSetKernelArg for slot unless the module's cache says it holds val already. */
static cl_int set_arg(cl_module *m, cl_uint slot, size_t size, const void *p, uint64_t val) {
  if ((int)slot < m->nset && m->val[slot] == val) return CL_SUCCESS;
  cl_int err = clSetKernelArg(m->k, slot, size, p);
  if (slot < CL_ARG_CACHE) m->val[slot] = val;
  return err;
}

/* Set the launch's arguments: only those that changed since the module's last launch. */
static int set_args(gpar__bdev *dev, cl_module *m, const gpar__kernel_launch *l) {
  unsigned frees = atomic_load_explicit(&dev->be->mem_frees, memory_order_acquire);
  if (frees != m->frees) m->nset = 0;
  m->frees = frees;
  cl_uint slot = 0;
  cl_int err = CL_SUCCESS;
  for (int i = 0; i < l->nargs && err == CL_SUCCESS; i++) {
    const gpar__kparam *p = &l->params[i];
    uint64_t bits = l->args[i].bits;
    if (p->dir == GPAR__KDIR_SCALAR) {
      size_t size = p->type == GPAR__KT_I64 || p->type == GPAR__KT_U64 || p->type == GPAR__KT_F64 ? 8 : 4;
      err = set_arg(m, slot++, size, &bits, size == 8 ? bits : (uint32_t)bits); /* little-endian low bytes */
    } else {
      cl_mem mem = (cl_mem)l->args[i].mem;
      cl_ulong off = bits;
      if ((err = set_arg(m, slot++, sizeof mem, &mem, (uint64_t)(uintptr_t)mem)) == CL_SUCCESS)
        err = set_arg(m, slot++, sizeof off, &off, off);
    }
  }
  m->nset = err == CL_SUCCESS && slot <= CL_ARG_CACHE ? (int)slot : 0;
  return err == CL_SUCCESS ? GPAR_OK : gpar__cl_fail("clSetKernelArg", err);
}

/* The launch: no cl_event where the core records none right after it (the lane is then marked
 * dirty, so event_record enqueues a marker), and a flush every GPAR__CL_FLUSH_EVERY launches
 * (event_record flushes before it hands out an event). */
int gpar__cl_kernel_launch(gpar__bdev *dev, int lane, void *module, const gpar__kernel_launch *l) {
  cl_module *m = module;
  gpar__cllane *ln = &dev->lanes[lane];
  int st = set_args(dev, m, l);
  if (st != GPAR_OK) return st;
  size_t global[3], local[3];
  cl_uint dims = l->groups[2] > 1 || l->group_size[2] > 1 ? 3 : l->groups[1] > 1 || l->group_size[1] > 1 ? 2 : 1;
  for (int d = 0; d < 3; d++) {
    local[d] = l->group_size[d];
    global[d] = (size_t)l->groups[d] * l->group_size[d];
  }
  cl_event ev = NULL;
  cl_int err = clEnqueueNDRangeKernel(ln->q, m->k, dims, NULL, global, local, 0, NULL, l->no_event ? NULL : &ev);
  if (err != CL_SUCCESS) return gpar__cl_fail("clEnqueueNDRangeKernel", err);
  if (ev)
    gpar__cl_keep_last(ln, ev);
  else
    gpar__cl_mark_dirty(ln);
  if (++ln->unflushed >= GPAR__CL_FLUSH_EVERY) {
    clFlush(ln->q);
    ln->unflushed = 0;
  }
  return GPAR_OK;
}
