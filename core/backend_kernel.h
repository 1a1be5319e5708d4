/* backend_kernel.h: the kernel and array-op arguments of the backend table (core/backend.h
 * includes this): how core/kernel/ describes a kernel, its limits, arguments and launches to a
 * backend's kernel entries, and how core/array/ hands an array op on host memory to the host
 * backend's `array` entry. Layer 0: uses gpar.h only. */
#ifndef GPAR_CORE_BACKEND_KERNEL_H
#define GPAR_CORE_BACKEND_KERNEL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gpar.h"

/* Kernels: core/kernel/ parses signatures, checks launches, caches builds; a backend makes the
 * source, compiles, loads and launches. Parameter types and directions: */
enum {
  GPAR__KT_I8, GPAR__KT_U8, GPAR__KT_I16, GPAR__KT_U16, GPAR__KT_I32, GPAR__KT_U32, GPAR__KT_I64, GPAR__KT_U64,
  GPAR__KT_F16, GPAR__KT_BF16, GPAR__KT_F32, GPAR__KT_F64, GPAR__KT_NTYPES
};
enum { GPAR__KDIR_SCALAR = 0, GPAR__KDIR_IN = 1, GPAR__KDIR_OUT = 2, GPAR__KDIR_INOUT = 3 };
typedef struct gpar__kparam {
  const char *name;
  int type;          /* GPAR__KT_* */
  int dir;           /* GPAR__KDIR_*: a scalar, or a buffer of elements of type */
  const char *ctype; /* the dialect's name of type: "gpar_f32" */
} gpar__kparam;
/* A kernel as the backends see it: name, parameters, the user's body and preamble ("" when none),
 * and the dialect's portable part (core/kernel/dialect.c), which goes after the backend's own
 * dialect header and before the preamble. */
typedef struct gpar__kernel_def {
  const char *name, *body, *preamble, *common;
  int nparams;
  const gpar__kparam *params;
  int uses_group_memory; /* the body or preamble names GPAR_BARRIER or GPAR_LOCAL */
} gpar__kernel_def;
/* The limits a loaded kernel launches under on its device. */
typedef struct gpar__klimits {
  uint32_t max_group_size, max_group_dims[3], max_groups[3], multiple;
} gpar__klimits;
/* An argument: a buffer as (memory: mem_alloc's, or kernel_host_ptr's for GPAR_HOST memory; its
 * byte offset in bits), or a scalar's value in bits' low bytes (mem NULL). */
typedef struct gpar__karg {
  void *mem;
  uint64_t bits;
} gpar__karg;
/* One launch: the grid, and the groups first .. first + count - 1 in linear order (dimension 0
 * fastest; GPU backends are always given all of them). */
typedef struct gpar__kernel_launch {
  uint32_t groups[3], group_size[3]; /* every entry >= 1 */
  uint64_t first, count;
  int nargs;
  const gpar__kparam *params;
  const gpar__karg *args;
  int no_event; /* hint: the core records no event right after this launch (OpenCL: no cl_event) */
} gpar__kernel_launch;

/* An array op (core/array/) on host memory, run in plain C by the host backend's `array`
 * entry (GPU backends run array ops as portable kernels instead). Matrices are column-major
 * m x n with leading dimensions ld[]; a range is m elements, n = 1, ld = m. Offsets in
 * elements, applied by the backend. Operands by kind:
 *   UNARY  x[0] in, x[1] out (op: gpar_unop);  BINARY x[0] a, x[1] b, x[2] out (gpar_binop);
 *   BCAST  x[0] A, x[1] v (axis gpar_axis), x[2] C;  REDUCE x[0] in, x[1] out (gpar_redop; axis:
 *   GPAR_PER_ROW m results, GPAR_PER_COLUMN n, a range is one column);  SOFTMAX_XENT x[0] Z,
 *   x[1] int32 labels, x[2] loss or NULL, x[3] G or NULL, scale;  ARGMAX x[0] A, x[1] int32 out.
 * Every operand but labels and argmax's output has element type dtype (a gpar_dtype). */
enum { GPAR__ARR_UNARY, GPAR__ARR_BINARY, GPAR__ARR_BCAST, GPAR__ARR_REDUCE, GPAR__ARR_SOFTMAX_XENT, GPAR__ARR_ARGMAX };
typedef struct gpar__array_args {
  int kind, op, dtype, axis;
  size_t m, n;
  void *x[4];
  size_t off[4];
  size_t ld[4];
  double scale;
} gpar__array_args;

/* The guard a backend writes into a kernel's source before the user's text, where its compiler
 * honours it (gcc and clang: the host, PoCL): the words that read files (inline assembly's
 * .incbin, __has_include, __has_embed) poisoned, so a build that uses them fails however they are
 * spelled (token pasting included), inside a system-header line marker (no warning for poisoning
 * the built-in __has_include), then the compiler's line numbers set back to the source's own
 * (file names the file the lines are in: "kernel.c"). f is an open_memstream of *src. */
static inline void gpar__kernel_poison(FILE *f, char **src, const char *file) {
  fflush(f);
  long line = 1;
  for (const char *p = *src; p && *p; p++) line += *p == '\n';
  fprintf(f,
          "# 1 \"<libgpar: words that read files>\" 3\n"
          "#pragma GCC poison asm __asm __asm__ __has_include __has_include_next __has_embed\n"
          "# %ld \"%s\"\n",
          line + 3, file);
}

#endif
