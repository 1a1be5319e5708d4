/* host_internal.h: the host backend's private type and the calls its files share, listed file by
 * file from the bottom layer up. Included only by the .c files of backends/host.
 *
 * Layers (bottom first): host_cpu.c host_reduce.c host_array_t.h host_array.c host_blas.c host_cc.c host_kernel.c
 *   host_backend.c
 *
 * A file calls only into files listed before it (and libc, OpenBLAS, the C compiler):
 *   host_cpu.c      the CPU's description from /proc/cpuinfo
 *   host_reduce.c   the CPU reduction of staged collectives
 *   host_array_t.h  the array ops' loops, included once per element type by host_array.c
 *   host_array.c    the array ops in plain C
 *   host_blas.c     the BLAS entries (OpenBLAS)
 *   host_cc.c       kernels' compiler: its identity and version, a compile that reads nothing else
 *   host_kernel.c   kernels: C source, dlopen, launches over groups
 *   host_backend.c  gpar__host_backend: the table, the device, copies and fills */
#ifndef GPAR_HOST_INTERNAL_H
#define GPAR_HOST_INTERNAL_H

#include "backend.h"

/* One host backend instance (gpar_config.kernel_cc: what compiles its kernels). */
struct gpar__backend {
  char cc[512];
};

/* host_cpu.c: the value of /proc/cpuinfo's first line starting with key, into out ("" kept when none). */
GPAR__HIDDEN void gpar__host_cpuinfo(const char *key, char *out, size_t n);

/* CPU reduction of staged collectives (host_reduce.c). */
GPAR__HIDDEN int gpar__host_reduce(gpar__bdev *dev, const gpar__reduce_args *a);
/* Array ops in plain C (host_array.c). */
GPAR__HIDDEN int gpar__host_array(gpar__bdev *dev, const gpar__array_args *a);

/* The BLAS entries (host_blas.c): OpenBLAS on the calling worker. */
GPAR__HIDDEN int gpar__host_gemm(gpar__bdev *dev, int lane, const gpar__gemm_args *g);
GPAR__HIDDEN int gpar__host_gemm_ex(gpar__bdev *dev, int lane, const gpar__gemm_ex_args *x);
GPAR__HIDDEN int gpar__host_gemv(gpar__bdev *dev, int lane, const gpar__gemv_args *a);
GPAR__HIDDEN int gpar__host_axpy(gpar__bdev *dev, int lane, const gpar__blas1_args *a);
GPAR__HIDDEN int gpar__host_scal(gpar__bdev *dev, int lane, const gpar__blas1_args *a);
GPAR__HIDDEN int gpar__host_dot(gpar__bdev *dev, int lane, const gpar__blas1_args *a);
/* Kernels: the backend's kernel entries (core/backend.h); the compiler's in host_cc.c, the rest
 * in host_kernel.c. Each backend declares its own (backends use nothing of each other). */
GPAR__HIDDEN int gpar__host_kernel_target(gpar__bdev *dev, char *buf, size_t cap, char *files, size_t fcap);
GPAR__HIDDEN int gpar__host_kernel_ident(gpar__bdev *dev, char *buf, size_t cap);
GPAR__HIDDEN int gpar__host_kernel_compile(gpar__bdev *dev, const char *src, const char *opts, void **bin, size_t *len,
                                           char **log);
GPAR__HIDDEN int gpar__host_kernel_source(gpar__bdev *dev, const char *target, const gpar__kernel_def *def, char **src,
                                          char *opts, size_t optcap);
GPAR__HIDDEN int gpar__host_kernel_load(gpar__bdev *dev, const void *bin, size_t len, const char *name, void **module,
                                        gpar__klimits *lim);
GPAR__HIDDEN void gpar__host_kernel_unload(gpar__bdev *dev, void *module);
GPAR__HIDDEN int gpar__host_kernel_launch(gpar__bdev *dev, int lane, void *module, const gpar__kernel_launch *l);
GPAR__HIDDEN int gpar__host_kernel_host_ptr(gpar__bdev *dev, void *ptr, void **mem);

#endif
