/* kernels.h: the array layer's portable kernels (kernels.c) and how a GPU runs an array call
 * with them (gpu.c). */
#ifndef GPAR_CORE_ARRAY_KERNELS_H
#define GPAR_CORE_ARRAY_KERNELS_H

#include "array/array.h"

/* Kinds of array kernels; each has up to GPAR__AK_NVAR variants per element type. */
enum {
  GPAR__AK_UNARY, GPAR__AK_BINARY, GPAR__AK_BCAST, GPAR__AK_REDUCE, GPAR__AK_ROWRED, GPAR__AK_COLRED,
  GPAR__AK_SOFTMAX, GPAR__AK_ARGMAX, GPAR__AK_NKINDS
};
#define GPAR__AK_NVAR 4
#define GPAR__AK_GROUP 256 /* the largest group size (the reductions' group-local arrays) */

/* A kernel ready to launch on one device: its handle, a power-of-two group size (at most
 * GPAR__AK_GROUP and the kernel's limit there) and the most groups per dimension. */
typedef struct gpar__arr_kinfo {
  gpar_kernel k;
  uint32_t group, max_groups[3];
} gpar__arr_kinfo;

/* Kernel (kind, dtype, var) of eng, made at first use and built for dev in the calling thread:
 * GPAR_OK, or the build's failure (GPAR_EBUILD, GPAR_ENOTSUP) with its message. */
GPAR__HIDDEN int gpar__arr_kernel(gpar_engine *eng, gpar__device *dev, int kind, int dtype, int var,
                                  gpar__arr_kinfo *ki);
/* Forget eng's kernels (gpar_shutdown frees the kernel objects themselves). */
GPAR__HIDDEN void gpar__arr_kernels_drop(gpar_engine *eng);

/* gpu.c: run a checked call (its operands looked up; the caller keeps their references) on a
 * GPU device as kernel launches, two for a large reduction (through a temporary buffer). */
GPAR__HIDDEN int gpar__array_gpu(gpar_engine *eng, gpar__device *dev, gpar__arr_call *c);

#endif
