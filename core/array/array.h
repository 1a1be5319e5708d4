/* array.h: the array layer (above kernel/): elementwise ops, broadcasts, reductions, softmax
 * cross-entropy, argmax and the elementwise map, as engine ops. A public call describes its
 * operands (operands.c checks them: handles, element types, ranges, devices, overlap, all
 * before anything is built), then run.c builds one op on the device of the output: the CPU
 * runs it through the host backend's plain C (backend.h, gpar__array_args), a GPU through
 * portable kernels of the kernel layer.
 *
 * The files, bottom first; a file uses only files listed before it (tests/layers.sh checks the
 * includes and, with nm, the calls; a header stands where its .c file does):
 * Layers (bottom first): operands.c kernels.c prepare.c gpu.c run.c elementwise.c reduce.c softmax.c map.c
 *   operands.c     the checks of element types, shapes and operands
 *   kernels.c      the portable kernel sources (kernels.h), built per device at first use
 *   prepare.c      gpar_array_prepare: the kernels built up front, in parallel threads
 *   gpu.c          a call on a GPU: kernel launches
 *   run.c          where a checked call runs (an op on the CPU, gpu.c on a GPU): gpar__array_issue
 *   elementwise.c  unary, binary and broadcast ops
 *   reduce.c       reductions and argmax
 *   softmax.c      softmax cross-entropy
 *   map.c          gpar_map_*: elementwise maps from an expression; the layer's shutdown */
#ifndef GPAR_CORE_ARRAY_H
#define GPAR_CORE_ARRAY_H

#include "api/api.h"

#define GPAR__ARR_MAX_OPERANDS 4

/* One operand of an array call: an m x n column-major matrix (a range: rows = count, cols = 1)
 * of element type dtype in buffer h at element offset off. */
typedef struct gpar__arr_operand {
  gpar_buffer h;     /* id 0: an optional operand left out (allowed only when optional) */
  size_t off, rows, cols, ld;
  int dtype;         /* gpar_dtype of its elements (maps: a kernel type + 100) */
  size_t esize;      /* bytes per element */
  int out;           /* the op writes it */
  int optional;      /* may be the null handle */
  int in_place;      /* an input an output may be exactly (same buffer, offset, shape, ld) */
  const char *name;  /* for messages: "x", "A", "labels" ... */
  gpar__buf *b;      /* looked up by gpar__array_issue */
} gpar__arr_operand;

/* A checked-before-built array call: the public name, the op's arguments (kind, op, dtype,
 * axis, m, n, scale; gpar__array_issue fills x[], off[], ld[] from the operands, in order), the
 * operands (in the order the kind's arguments list them). */
typedef struct gpar__arr_call {
  const char *fn;
  gpar__array_args args;
  int nops;
  gpar__arr_operand op[GPAR__ARR_MAX_OPERANDS];
  int home;          /* set by gpar__array_issue: the first present output, whose device runs it */
  int empty;         /* nothing to compute: GPAR_OK once every check passed, nothing enqueued */
} gpar__arr_call;

/* GPAR_EINVAL unless dtype is one of the four float types (message names fn). */
GPAR__HIDDEN int gpar__arr_check_float(const char *fn, int dtype);
/* GPAR_EINVAL when a matrix's shape is bad: m or n negative, ld < max(1, m). */
GPAR__HIDDEN int gpar__arr_check_shape(const char *fn, const char *name, int m, int n, int ld);

/* An operand: a range of count elements, or an m x n matrix with leading dimension ld. */
static inline gpar__arr_operand gpar__arr_range(const char *name, gpar_buffer h, size_t off, size_t count, int dtype,
                                                int out) {
  return (gpar__arr_operand){h, off, count, 1, count ? count : 1, dtype, gpar_dtype_size(dtype), out, 0, 0, name, NULL};
}
static inline gpar__arr_operand gpar__arr_matrix(const char *name, gpar_buffer h, size_t off, int m, int n, int ld,
                                                 int dtype, int out) {
  return (gpar__arr_operand){h, off, (size_t)m, (size_t)n, (size_t)ld, dtype, gpar_dtype_size(dtype), out, 0, 0, name, NULL};
}

/* 1 when p and q are the same elements: one buffer (looked up), offset, shape and, for a
 * matrix of several columns, leading dimension (an exact in place); disjoint ranges of one
 * buffer are not. */
GPAR__HIDDEN int gpar__arr_same(const gpar__arr_operand *p, const gpar__arr_operand *q);

/* Enter the engine of operands o[0..n) and look each present one up (o[i].b, a reference),
 * checking ranges, devices and overlap; *home: the first present output, whose device runs the
 * op. On GPAR_OK the caller holds the engine and the references (gpar__arr_operands_done). */
GPAR__HIDDEN int gpar__arr_operands(const char *fn, gpar__arr_operand *o, int n, gpar_engine **eng, int *home);
/* Drop the references left in o[0..n) and leave eng. */
GPAR__HIDDEN void gpar__arr_operands_done(gpar_engine *eng, gpar__arr_operand *o, int n);

/* Check every operand of c (gpar__arr_operands) and submit its op: GPAR_OK, or the first
 * failure with nothing enqueued. */
GPAR__HIDDEN int gpar__array_issue(gpar__arr_call *c);

/* Free eng's maps and forget its array kernels (lifecycle/: gpar_shutdown, after the drain
 * and before the kernel layer frees the engine's kernels). */
GPAR__HIDDEN void gpar__array_shutdown(gpar_engine *eng);

#endif
