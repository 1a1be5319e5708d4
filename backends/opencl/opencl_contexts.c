/* opencl_contexts.c: one cl_context per OpenCL platform for the whole process, shared by the
 * OpenCL backend of every engine, and the end of CLBlast's caches with the last such backend.
 *
 * CLBlast caches compiled programs process-wide, keyed by context and device, and each cached
 * program keeps its context alive. A context per engine therefore grew the cache by one set of
 * programs and one context per engine that ran a GEMM (about 1.7 MB each on PoCL), without
 * bound. With shared contexts, a new engine finds the programs of the engines before it (no
 * growth, no recompilation); when the last OpenCL backend closes, the contexts are released and
 * CLBlastClearCache frees what CLBlast held. CLBlast offers no way to drop one context's entries,
 * so the cache is never cleared while any engine could still use it. */
#include <stdlib.h>

#include "opencl_internal.h"

/* Guards everything below. Lock order: taken alone (no other backend lock is held with it). */
static pthread_mutex_t gpar__clctx_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gpar__clctx_entry {
  cl_platform_id plat;
  cl_context ctx; /* the registry's own reference */
} *gpar__clctx;
static int gpar__clctx_n, gpar__clctx_users;

void gpar__cl_contexts_attach(void) {
  pthread_mutex_lock(&gpar__clctx_lock);
  gpar__clctx_users++;
  pthread_mutex_unlock(&gpar__clctx_lock);
}

cl_context gpar__cl_context_get(cl_platform_id plat, cl_uint nd, const cl_device_id *ids, cl_int *err) {
  cl_context ctx = NULL;
  *err = CL_SUCCESS;
  pthread_mutex_lock(&gpar__clctx_lock);
  for (int i = 0; i < gpar__clctx_n && !ctx; i++)
    if (gpar__clctx[i].plat == plat) ctx = gpar__clctx[i].ctx;
  if (ctx) {
    clRetainContext(ctx);
  } else {
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)plat, 0};
    ctx = clCreateContext(props, nd, ids, NULL, NULL, err);
    struct gpar__clctx_entry *grown =
        ctx && *err == CL_SUCCESS ? realloc(gpar__clctx, (size_t)(gpar__clctx_n + 1) * sizeof *grown) : NULL;
    if (grown) { /* the registry keeps one reference, the caller gets another */
      gpar__clctx = grown;
      gpar__clctx[gpar__clctx_n].plat = plat;
      gpar__clctx[gpar__clctx_n].ctx = ctx;
      gpar__clctx_n++;
      clRetainContext(ctx);
    } /* else: a context of the caller's own (out of memory for the registry) or the failure */
  }
  pthread_mutex_unlock(&gpar__clctx_lock);
  return ctx;
}

void gpar__cl_contexts_detach(void) {
  pthread_mutex_lock(&gpar__clctx_lock);
  if (--gpar__clctx_users == 0) {
    for (int i = 0; i < gpar__clctx_n; i++) clReleaseContext(gpar__clctx[i].ctx);
    free(gpar__clctx);
    gpar__clctx = NULL;
    gpar__clctx_n = 0;
    gpar__cl_blas_forget(); /* no OpenCL backend is open: nothing can be using CLBlast */
  }
  pthread_mutex_unlock(&gpar__clctx_lock);
}
