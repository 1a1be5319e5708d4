/* host_internal.h: functions of the host backend shared between its files. */
#ifndef GPAR_HOST_INTERNAL_H
#define GPAR_HOST_INTERNAL_H

#include "backend.h"

/* CPU reduction of staged collectives (host_reduce.c). */
GPAR__HIDDEN int gpar__host_reduce(gpar__bdev *dev, const gpar__reduce_args *a);
/* Array ops in plain C (host_array.c). */
GPAR__HIDDEN int gpar__host_array(gpar__bdev *dev, const gpar__array_args *a);

#endif
