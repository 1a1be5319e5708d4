/* raw_blas.h: the raw vendor calls gpar-bench's batched and gemm-ex subcommands time side by side
 * with libgpar (same shapes, same process, no engine): strided-batched SGEMM and f16/bf16 GEMM
 * with f32 sums. Each backend's file defines its entry; the declarations are weak, so an entry is
 * NULL when that backend was not built. */
#ifndef GPAR_TOOLS_RAW_BLAS_H
#define GPAR_TOOLS_RAW_BLAS_H

/* One raw run: iters calls of C_i = A_i B_i (alpha 1, beta 0, column-major, no transposes, tight
 * leading dimensions, entries back to back), batch entries each, A and B of ab_type (a
 * gpar_dtype: FLOAT, HALF or BFLOAT16), C of c_type, on one device. A holds 1, B 0.5 (exact in
 * every type), so every entry of C must be k / 2. */
typedef struct gpar_raw_blas_case {
  int m, n, k, batch, iters;
  int ab_type, c_type;
  int dev; /* backend-local device index (CUDA ordinal; OpenCL: backend order) */
} gpar_raw_blas_case;

/* Run the case once after a warm-up call; *seconds is the wall time of the timed calls and the
 * wait for them. *what names the vendor call. Returns 0, or -1 after printing why on stderr. */
int gpar_raw_blas_cuda(const gpar_raw_blas_case *c, double *seconds, const char **what) __attribute__((weak));
int gpar_raw_blas_opencl(const gpar_raw_blas_case *c, double *seconds, const char **what) __attribute__((weak));
/* OpenBLAS on the calling thread (always built): a loop of cblas_sgemm over the entries (the
 * f16/bf16 operands converted to f32 before the timed part: the call libgpar's host path ends in). */
int gpar_raw_blas_host(const gpar_raw_blas_case *c, double *seconds, const char **what);

#endif
