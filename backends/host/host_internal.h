/* host_internal.h: functions of the host backend shared between its files. */
#ifndef GPAR_HOST_INTERNAL_H
#define GPAR_HOST_INTERNAL_H

#include "backend.h"

/* CPU reduction of staged collectives (host_reduce.c). */
GPAR__HIDDEN int gpar__host_reduce(gpar__bdev *dev, const gpar__reduce_args *a);

/* The BLAS entries (host_blas.c): OpenBLAS on the calling worker. */
GPAR__HIDDEN int gpar__host_gemm(gpar__bdev *dev, int lane, const gpar__gemm_args *g);
GPAR__HIDDEN int gpar__host_gemm_ex(gpar__bdev *dev, int lane, const gpar__gemm_ex_args *x);
GPAR__HIDDEN int gpar__host_gemv(gpar__bdev *dev, int lane, const gpar__gemv_args *a);
GPAR__HIDDEN int gpar__host_axpy(gpar__bdev *dev, int lane, const gpar__blas1_args *a);
GPAR__HIDDEN int gpar__host_scal(gpar__bdev *dev, int lane, const gpar__blas1_args *a);
GPAR__HIDDEN int gpar__host_dot(gpar__bdev *dev, int lane, const gpar__blas1_args *a);

#endif
