/* cuda_kernel.c: kernels on CUDA devices. NVRTC compiles the generated CUDA C++ (the CUDA dialect
 * header, the portable part, the preamble, then an extern "C" __global__ entry point) into a
 * cubin for the device's sm_XY, clamped to the newest architecture of the same major version
 * that this NVRTC knows (a cubin runs on later minor versions; PTX, which a newer NVRTC can make
 * unloadable on an older driver, is never used). The runtime loads it with cudaLibraryLoadData,
 * once per device (a module per device: its load asks for the kernel's attributes in that
 * device's context, which loads it there, so no lazy load can fall inside a graph capture or a
 * timed launch), and launches it with cudaLaunchKernel, which a stream capture takes: libgpar
 * still links no libcuda. NVRTC is
 * loaded with dlopen at the first build (gpar_config.kernel_nvrtc, else libnvrtc.so.13, .12,
 * libnvrtc.so, then the toolkit's folder configure saw): where it is absent, builds are
 * GPAR_ENOTSUP saying so and everything else works. Buffer offsets are added on the host, so
 * the entry point takes plain pointers; GPAR_HOST memory goes as its mapped device address. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nvrtc.h>

#include "cuda_internal.h"

#ifndef GPAR_NVRTC_DIR
#define GPAR_NVRTC_DIR "/usr/local/cuda/lib64"
#endif

/* The CUDA dialect header (GPAR_KERNEL_DIALECT; gpar.h documents the names). */
static const char header[] =
    "/* libgpar kernel dialect 1: CUDA C++ (NVRTC) */\n"
    "#define GPAR_ON_CUDA 1\n"
    "typedef signed char gpar_i8; typedef unsigned char gpar_u8; typedef short gpar_i16; typedef unsigned short gpar_u16;\n"
    "typedef int gpar_i32; typedef unsigned int gpar_u32; typedef long long gpar_i64; typedef unsigned long long gpar_u64;\n"
    "typedef float gpar_f32; typedef double gpar_f64; typedef unsigned short gpar_f16; typedef unsigned short gpar_bf16;\n"
    "#define GPAR_FN static __device__ __forceinline__\n#define GPAR_GLOBAL_MEM\n#define GPAR_LOCAL_MEM\n"
    "#define GPAR__D3(v, d) ((d) == 0 ? v.x : (d) == 1 ? v.y : v.z)\n"
    "#define GPAR_LOCAL_ID(d) ((gpar_u32)GPAR__D3(threadIdx, d))\n"
    "#define GPAR_GROUP_ID(d) ((gpar_u32)GPAR__D3(blockIdx, d))\n"
    "#define GPAR_GROUP_SIZE(d) ((gpar_u32)GPAR__D3(blockDim, d))\n"
    "#define GPAR_NUM_GROUPS(d) ((gpar_u32)GPAR__D3(gridDim, d))\n"
    "#define GPAR_GLOBAL_ID(d) ((gpar_u64)GPAR_GROUP_ID(d) * GPAR_GROUP_SIZE(d) + GPAR_LOCAL_ID(d))\n"
    "#define GPAR_GLOBAL_SIZE(d) ((gpar_u64)GPAR_NUM_GROUPS(d) * GPAR_GROUP_SIZE(d))\n"
    "#define GPAR_LOCAL(type, name, count) __shared__ type name[count]\n"
    "#define GPAR_BARRIER() __syncthreads()\n"
    "#define gpar_as_u32(v) __float_as_uint((float)(v))\n#define gpar_as_f32(v) __uint_as_float((unsigned)(v))\n"
    "#define gpar_as_u64(v) ((gpar_u64)__double_as_longlong((double)(v)))\n"
    "#define gpar_as_f64(v) __longlong_as_double((long long)(v))\n"
    /* f16 numbers (NaNs: the portable part, as cvt gives one canonical NaN) */
    "GPAR_FN gpar_f32 gpar__f16_to_f32_num(gpar_f16 h) {\n"
    "  float f; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h)); return f; }\n"
    "GPAR_FN gpar_f16 gpar__f32_to_f16_num(gpar_f32 f) {\n"
    "  unsigned short h; asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f)); return h; }\n"
    /* atomics: CUDA's return the value before */
    "#define gpar_atomic_add_i32(p, v) atomicAdd((int *)(p), (int)(v))\n"
    "#define gpar_atomic_add_u32(p, v) atomicAdd((unsigned *)(p), (unsigned)(v))\n"
    "#define gpar_atomic_add_i64(p, v) ((gpar_i64)atomicAdd((unsigned long long *)(p), (unsigned long long)(v)))\n"
    "#define gpar_atomic_add_u64(p, v) atomicAdd((unsigned long long *)(p), (unsigned long long)(v))\n"
    "#define gpar_atomic_add_f32(p, v) atomicAdd((float *)(p), (float)(v))\n"
    "#define gpar_atomic_min_i32(p, v) atomicMin((int *)(p), (int)(v))\n"
    "#define gpar_atomic_min_u32(p, v) atomicMin((unsigned *)(p), (unsigned)(v))\n"
    "#define gpar_atomic_max_i32(p, v) atomicMax((int *)(p), (int)(v))\n"
    "#define gpar_atomic_max_u32(p, v) atomicMax((unsigned *)(p), (unsigned)(v))\n"
    "#define gpar_atomic_xchg_i32(p, v) atomicExch((int *)(p), (int)(v))\n"
    "#define gpar_atomic_xchg_u32(p, v) atomicExch((unsigned *)(p), (unsigned)(v))\n"
    "#define gpar_atomic_cas_i32(p, c, v) atomicCAS((int *)(p), (int)(c), (int)(v))\n"
    "#define gpar_atomic_cas_u32(p, c, v) atomicCAS((unsigned *)(p), (unsigned)(c), (unsigned)(v))\n"
    /* what float.h and math.h give elsewhere (NVRTC has no standard headers) */
    "#ifndef INFINITY\n#define INFINITY __int_as_float(0x7f800000)\n#endif\n"
    "#ifndef NAN\n#define NAN __int_as_float(0x7fffffff)\n#endif\n"
    "#ifndef FLT_MAX\n#define FLT_MAX 3.402823466e+38F\n#endif\n"
    "#ifndef FLT_EPSILON\n#define FLT_EPSILON 1.192092896e-07F\n#endif\n"
    "#ifndef DBL_MAX\n#define DBL_MAX 1.7976931348623158e+308\n#endif\n";

/* ---------------------------------------------------------------- NVRTC, loaded once */

typedef struct nvrtc_api {
  nvrtcResult (*version)(int *, int *);
  nvrtcResult (*num_archs)(int *);
  nvrtcResult (*archs)(int *);
  nvrtcResult (*create)(nvrtcProgram *, const char *, const char *, int, const char *const *, const char *const *);
  nvrtcResult (*compile)(nvrtcProgram, int, const char *const *);
  nvrtcResult (*log_size)(nvrtcProgram, size_t *);
  nvrtcResult (*log)(nvrtcProgram, char *);
  nvrtcResult (*cubin_size)(nvrtcProgram, size_t *);
  nvrtcResult (*cubin)(nvrtcProgram, char *);
  nvrtcResult (*destroy)(nvrtcProgram *);
  const char *(*error)(nvrtcResult);
  int major, minor, narchs, arch[64];
} nvrtc_api;

/* One load per library name asked for ("" the default list), kept for the process. */
static pthread_mutex_t nvrtc_mu = PTHREAD_MUTEX_INITIALIZER;
static struct nvrtc_lib {
  char name[256];
  int st;          /* GPAR_OK, or why it is absent */
  char why[400];
  nvrtc_api api;
} nvrtc_libs[4];
static int nvrtc_nlibs;

/* dlopen the first of the names that loads, and look its calls up. */
static int nvrtc_open(const char *name, nvrtc_api *a, char *why, size_t cap) {
  const char *defaults[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", GPAR_NVRTC_DIR "/libnvrtc.so.13", NULL};
  const char *one[] = {name, NULL}, **names = *name ? one : defaults;
  void *dl = NULL;
  size_t n = (size_t)snprintf(why, cap, "CUDA kernels need NVRTC, which did not load:");
  for (int i = 0; names[i] && !dl; i++)
    if (!(dl = dlopen(names[i], RTLD_NOW | RTLD_LOCAL)) && n < cap) {
      const char *e = dlerror();
      n += (size_t)snprintf(why + n, cap - n, " %s", e ? e : names[i]);
    }
  if (!dl) {
    if (n < cap) snprintf(why + n, cap - n, " (gpar_config.kernel_nvrtc / GPAR_NVRTC names another)");
    return GPAR_ENOTSUP;
  }
  static const char *const syms[] = {"nvrtcVersion", "nvrtcGetNumSupportedArchs", "nvrtcGetSupportedArchs",
                                     "nvrtcCreateProgram", "nvrtcCompileProgram", "nvrtcGetProgramLogSize",
                                     "nvrtcGetProgramLog", "nvrtcGetCUBINSize", "nvrtcGetCUBIN",
                                     "nvrtcDestroyProgram", "nvrtcGetErrorString"};
  void **slot[] = {(void **)&a->version, (void **)&a->num_archs, (void **)&a->archs, (void **)&a->create,
                   (void **)&a->compile, (void **)&a->log_size, (void **)&a->log, (void **)&a->cubin_size,
                   (void **)&a->cubin, (void **)&a->destroy, (void **)&a->error};
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++)
    if (!(*slot[i] = dlsym(dl, syms[i]))) {
      snprintf(why, cap, "CUDA kernels need NVRTC: the library loaded has no %s (too old)", syms[i]);
      return GPAR_ENOTSUP;
    }
  if (a->version(&a->major, &a->minor) != NVRTC_SUCCESS || a->num_archs(&a->narchs) != NVRTC_SUCCESS ||
      a->narchs < 1 || a->narchs > 64 || a->archs(a->arch) != NVRTC_SUCCESS) {
    snprintf(why, cap, "CUDA kernels: NVRTC loaded but does not say its version and architectures");
    return GPAR_ENOTSUP;
  }
  return GPAR_OK;
}

/* The NVRTC that be's devices use (its config's library name), loaded on first use. */
static int nvrtc_get(const gpar__backend *be, const nvrtc_api **api) {
  const char *name = be->nvrtc;
  struct nvrtc_lib *lib = NULL;
  pthread_mutex_lock(&nvrtc_mu);
  for (int i = 0; i < nvrtc_nlibs && !lib; i++)
    if (!strcmp(nvrtc_libs[i].name, name)) lib = &nvrtc_libs[i];
  if (!lib && nvrtc_nlibs < 4) {
    lib = &nvrtc_libs[nvrtc_nlibs++];
    snprintf(lib->name, sizeof lib->name, "%s", name);
    lib->st = nvrtc_open(name, &lib->api, lib->why, sizeof lib->why);
  }
  pthread_mutex_unlock(&nvrtc_mu);
  if (!lib) return gpar__errorf(GPAR_ENOTSUP, "CUDA kernels: too many NVRTC libraries asked for in one process");
  if (lib->st != GPAR_OK) return gpar__errorf(lib->st, "%s", lib->why);
  *api = &lib->api;
  return GPAR_OK;
}

/* The device's architecture and the one its cubins are built for. */
static int device_arch(const struct cuda_dev *d, const nvrtc_api *a, int *dev_arch, int *arch) {
  int major = 0, minor = 0;
  int st = gpar__cuda_check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d->ordinal),
                            "cudaDeviceGetAttribute");
  if (st == GPAR_OK)
    st = gpar__cuda_check(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, d->ordinal),
                          "cudaDeviceGetAttribute");
  if (st != GPAR_OK) return st;
  *dev_arch = major * 10 + minor;
  *arch = 0;
  for (int i = 0; i < a->narchs; i++) /* the newest of the same major, not above the device */
    if (a->arch[i] / 10 == major && a->arch[i] <= *dev_arch && a->arch[i] > *arch) *arch = a->arch[i];
  if (!*arch)
    return gpar__errorf(GPAR_ENOTSUP, "CUDA kernels: NVRTC %d.%d builds sm_%d to sm_%d, none runs on this sm_%d device",
                        a->major, a->minor, a->arch[0], a->arch[a->narchs - 1], *dev_arch);
  return GPAR_OK;
}

int gpar__cuda_kernel_target(gpar__bdev *dev, char *buf, size_t cap, char *files, size_t fcap) {
  const nvrtc_api *a;
  int st = nvrtc_get(dev->d.be, &a), dev_arch, arch;
  if (st == GPAR_OK) st = device_arch(&dev->d, a, &dev_arch, &arch);
  if (st != GPAR_OK) return st;
  char clamp[32] = "";
  if (arch != dev_arch) snprintf(clamp, sizeof clamp, " (device sm_%d)", dev_arch);
  snprintf(buf, cap, "NVRTC %d.%d, sm_%d%s", a->major, a->minor, arch, clamp);
  Dl_info info; /* the library dlopen found, and what steered it there */
  snprintf(files, fcap, "%s\n/etc/ld.so.cache\n",
           dladdr((void *)a->version, &info) && info.dli_fname ? info.dli_fname : "");
  return GPAR_OK;
}

/* What decides the target without loading NVRTC (7 ms): the library names asked for, how dlopen
 * searches (LD_LIBRARY_PATH; ld.so.cache and the library itself are kernel_target's files) and
 * the device's architecture. */
int gpar__cuda_kernel_ident(gpar__bdev *dev, char *buf, size_t cap) {
  int major = 0, minor = 0;
  int st = gpar__cuda_check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev->d.ordinal),
                            "cudaDeviceGetAttribute");
  if (st == GPAR_OK)
    st = gpar__cuda_check(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev->d.ordinal),
                          "cudaDeviceGetAttribute");
  if (st != GPAR_OK) return st;
  const char *lp = getenv("LD_LIBRARY_PATH");
  snprintf(buf, cap, "NVRTC asked for: %s\nLD_LIBRARY_PATH: %s\ndevice: sm_%d%d\n",
           *dev->d.be->nvrtc ? dev->d.be->nvrtc
                             : "libnvrtc.so.13 libnvrtc.so.12 libnvrtc.so " GPAR_NVRTC_DIR "/libnvrtc.so.13",
           lp ? lp : "", major, minor);
  return GPAR_OK;
}

/* ---------------------------------------------------------------- the generated source */

int gpar__cuda_kernel_source(gpar__bdev *dev, const char *target, const gpar__kernel_def *def, char **src, char *opts,
                             size_t optcap) {
  (void)dev;
  const char *sm = strstr(target, ", sm_"); /* kernel_target's words name the cubin's architecture */
  int arch = sm ? atoi(sm + 5) : 0;
  if (arch <= 0) return gpar__errorf(GPAR_EBACKEND, "cuda: no architecture in the kernel target '%s'", target);
  /* 177: an unused helper; --no-source-include: no folder is searched for a file the text names */
  snprintf(opts, optcap, "--gpu-architecture=sm_%d -diag-suppress=177 --no-source-include", arch);
  size_t n = 0;
  FILE *f = open_memstream(src, &n);
  if (!f) return gpar__errorf(GPAR_ENOMEM, "cuda: out of host memory");
  fprintf(f, "%s%s", header, def->common);
  if (*def->preamble) fprintf(f, "/* preamble */\n%s\n", def->preamble);
  fprintf(f, "extern \"C\" __global__ void gpar_kernel_%s(", def->name);
  for (int i = 0; i < def->nparams; i++) {
    const gpar__kparam *p = &def->params[i];
    fprintf(f, "%s\n    %s%s %s%s", i ? "," : "", p->dir == GPAR__KDIR_SCALAR || p->dir == GPAR__KDIR_IN ? "const " : "",
            p->ctype, p->dir == GPAR__KDIR_SCALAR ? "" : "*", p->name);
  }
  fprintf(f, ") {\n%s\n}\n", def->body);
  if (fclose(f) != 0) return gpar__errorf(GPAR_ENOMEM, "cuda: out of host memory");
  return GPAR_OK;
}

/* ---------------------------------------------------------------- compile, load, launch */

int gpar__cuda_kernel_compile(gpar__bdev *dev, const char *src, const char *opts, void **bin, size_t *len, char **log) {
  const nvrtc_api *a;
  int st = nvrtc_get(dev->d.be, &a);
  if (st != GPAR_OK) return st;
  nvrtcProgram prog;
  nvrtcResult r = a->create(&prog, src, "kernel.cu", 0, NULL, NULL);
  if (r != NVRTC_SUCCESS) return gpar__errorf(GPAR_EBACKEND, "nvrtcCreateProgram: %s", a->error(r));
  char words[512], *save = NULL; /* opts: options separated by spaces */
  const char *optv[8];
  int nopt = 0;
  snprintf(words, sizeof words, "%s", opts);
  for (char *w = strtok_r(words, " ", &save); w && nopt < 8; w = strtok_r(NULL, " ", &save)) optv[nopt++] = w;
  r = a->compile(prog, nopt, optv);
  size_t n = 0;
  if (a->log_size(prog, &n) == NVRTC_SUCCESS && n > 1 && (*log = malloc(n)) && a->log(prog, *log) != NVRTC_SUCCESS)
    (*log)[0] = 0;
  if (r == NVRTC_ERROR_COMPILATION) {
    char first[400];
    gpar__log_errors(*log, first, sizeof first);
    st = gpar__errorf(GPAR_EBUILD, "NVRTC: %s", first);
  } else if (r == NVRTC_ERROR_BUILTIN_OPERATION_FAILURE) {
    st = gpar__errorf(GPAR_ENOTSUP, "NVRTC: %s (is libnvrtc-builtins of the same version beside libnvrtc?)", a->error(r));
  } else if (r != NVRTC_SUCCESS) {
    st = gpar__errorf(GPAR_EBACKEND, "nvrtcCompileProgram: %s", a->error(r));
  } else if (a->cubin_size(prog, len) != NVRTC_SUCCESS || !*len || !(*bin = malloc(*len)) ||
             a->cubin(prog, *bin) != NVRTC_SUCCESS) {
    st = gpar__errorf(GPAR_EBACKEND, "nvrtcGetCUBIN: no cubin");
  }
  a->destroy(&prog);
  return st;
}

/* A loaded kernel: its library and entry point. */
typedef struct cuda_module {
  cudaLibrary_t lib;
  cudaKernel_t k;
} cuda_module;

static void limits(const struct cuda_dev *d, const cuda_module *m, gpar__klimits *lim) {
  static const enum cudaDeviceAttr block[3] = {cudaDevAttrMaxBlockDimX, cudaDevAttrMaxBlockDimY, cudaDevAttrMaxBlockDimZ};
  static const enum cudaDeviceAttr grid[3] = {cudaDevAttrMaxGridDimX, cudaDevAttrMaxGridDimY, cudaDevAttrMaxGridDimZ};
  struct cudaFuncAttributes fa;
  int v = 0;
  lim->max_group_size = cudaFuncGetAttributes(&fa, (const void *)m->k) == cudaSuccess ? (uint32_t)fa.maxThreadsPerBlock : 1024;
  for (int i = 0; i < 3; i++) {
    lim->max_group_dims[i] = cudaDeviceGetAttribute(&v, block[i], d->ordinal) == cudaSuccess ? (uint32_t)v : 1;
    lim->max_groups[i] = cudaDeviceGetAttribute(&v, grid[i], d->ordinal) == cudaSuccess ? (uint32_t)v : 1;
  }
  lim->multiple = cudaDeviceGetAttribute(&v, cudaDevAttrWarpSize, d->ordinal) == cudaSuccess ? (uint32_t)v : 32;
  (void)cudaGetLastError();
}

int gpar__cuda_kernel_load(gpar__bdev *dev, const void *bin, size_t len, const char *name, void **module,
                           gpar__klimits *lim) {
  (void)len; /* a cubin's ELF header gives its size */
  struct cuda_dev *d = &dev->d;
  char sym[96];
  int prev, st = gpar__cuda_enter(d, &prev);
  if (st != GPAR_OK) return st;
  cuda_module *m = calloc(1, sizeof *m);
  if (!m) st = gpar__errorf(GPAR_ENOMEM, "cuda: out of host memory");
  if (st == GPAR_OK) st = gpar__cuda_check(cudaLibraryLoadData(&m->lib, bin, NULL, NULL, 0, NULL, NULL, 0), "cudaLibraryLoadData");
  snprintf(sym, sizeof sym, "gpar_kernel_%s", name);
  if (st == GPAR_OK && (st = gpar__cuda_check(cudaLibraryGetKernel(&m->k, m->lib, sym), "cudaLibraryGetKernel")) != GPAR_OK)
    cudaLibraryUnload(m->lib);
  if (st == GPAR_OK) limits(d, m, lim);
  gpar__cuda_exit(d, prev);
  if (st != GPAR_OK) {
    free(m);
    return st;
  }
  *module = m;
  return GPAR_OK;
}

void gpar__cuda_kernel_unload(gpar__bdev *dev, void *module) {
  (void)dev;
  cuda_module *m = module;
  cudaLibraryUnload(m->lib);
  (void)cudaGetLastError();
  free(m);
}

int gpar__cuda_kernel_launch(gpar__bdev *dev, int lane, void *module, const gpar__kernel_launch *l) {
  const cuda_module *m = module;
  void *argv[64], *ptr[64];
  for (int i = 0; i < l->nargs && i < 64; i++) {
    if (l->params[i].dir == GPAR__KDIR_SCALAR) {
      argv[i] = (void *)&l->args[i].bits; /* little-endian low bytes */
    } else {
      ptr[i] = (char *)l->args[i].mem + l->args[i].bits;
      argv[i] = &ptr[i];
    }
  }
  dim3 grid = {l->groups[0], l->groups[1], l->groups[2]}, block = {l->group_size[0], l->group_size[1], l->group_size[2]};
  return gpar__cuda_check(cudaLaunchKernel((const void *)m->k, grid, block, argv, 0, dev->d.lane[lane]), "cudaLaunchKernel");
}

int gpar__cuda_kernel_host_ptr(gpar__bdev *dev, void *ptr, void **mem) {
  struct cudaPointerAttributes a;
  int prev, st = gpar__cuda_enter(&dev->d, &prev);
  if (st != GPAR_OK) return st;
  cudaError_t e = cudaPointerGetAttributes(&a, ptr);
  gpar__cuda_exit(&dev->d, prev);
  if (e != cudaSuccess || a.type != cudaMemoryTypeHost || !a.devicePointer) {
    (void)cudaGetLastError();
    return gpar__errorf(GPAR_EINVAL, "this memory is not pinned for CUDA (its registration was refused: gpar_pinned_status)");
  }
  *mem = a.devicePointer;
  return GPAR_OK;
}
