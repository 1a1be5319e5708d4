/* blas_operands.h: what the BLAS calls of the api layer share (blas_operands.c): an operand as a strided
 * batch of matrices (a vector is one row, its increment the leading dimension), and the checks
 * and the op building every call goes through, so that each rule of gpar.h (ranges of unread
 * operands, overlaps by byte range over all batch entries, operands on the output's device,
 * exact read/write sets) is written once. Used by blas.c (GEMMs) and blas_vec.c (GEMV, level 1). */
#ifndef GPAR_CORE_API_BLAS_OPERANDS_H
#define GPAR_CORE_API_BLAS_OPERANDS_H

#include "api/api.h"

/* One operand of a call. The caller fills everything above b; gpar__blas_prepare fills b and end. */
typedef struct gpar__blas_opnd {
  const char *name;  /* "A", "x", ... in messages */
  gpar_buffer h;
  size_t off;        /* elements */
  size_t esize;      /* bytes per element */
  int rows, cols, ld;
  long long stride;  /* elements between batch entries */
  int batch;         /* entries (1 for a plain operand; 0: none) */
  int mode;          /* GPAR__READ and/or GPAR__WRITE; 0: checked but not accessed (alpha == 0) */
  gpar__buf *b;      /* a reference, once looked up */
  size_t end;        /* one past its last element over every entry; off when it has none */
} gpar__blas_opnd;

/* GPAR_EINVAL unless t is GPAR_NO_TRANS or GPAR_TRANS. */
GPAR__HIDDEN int gpar__blas_check_trans(const char *fn, const char *what, gpar_trans t);
/* GPAR_EINVAL unless ld >= max(1, rows). */
GPAR__HIDDEN int gpar__blas_check_ld(const char *fn, const char *what, int ld, int rows);
/* GPAR_EINVAL unless inc >= 1. */
GPAR__HIDDEN int gpar__blas_check_inc(const char *fn, const char *what, int inc);

/* The checks that need the buffers, in the order of gpar.h: each handle looked up (o[0], the
 * output, names the engine: eng was entered through it; GPAR_EBADBUF, GPAR_EENGINE), then each
 * range (GPAR_ERANGE), then overlaps of every output with every other operand and of an
 * output's own batch entries (GPAR_EALIAS), then devices (GPAR_EINVAL unless every operand is on
 * o[0]'s device, or all in host memory). On success every o[i].b holds a reference; on failure
 * none does. Nothing is enqueued. */
GPAR__HIDDEN int gpar__blas_prepare(gpar_engine *eng, const char *fn, gpar__blas_opnd *o, int n);
/* The device an op on the prepared operands runs on: o[0]'s (the host device for host memory). */
GPAR__HIDDEN gpar__device *gpar__blas_device(gpar_engine *eng, const gpar__blas_opnd *o);
/* Drop the references prepare took (a quick return, a refusal after prepare). */
GPAR__HIDDEN void gpar__blas_release(gpar__blas_opnd *o, int n);
/* Build the op of kind on the compute lane of o's device with the payload args (size bytes)
 * and hand it each operand whose mode is not 0, then submit it (gpar__api_submit). The
 * references of o go to the op, or are dropped on failure. Its width (lanes.c) counts a thread
 * block per 64 x 64 tile of the output o[0]. */
GPAR__HIDDEN int gpar__blas_submit(gpar_engine *eng, const gpar__op_kind *kind, const void *args, size_t size,
                                   gpar__blas_opnd *o, int n);

#endif
