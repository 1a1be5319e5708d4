/* cuda_blas_lt.c: GEMMs through cublasLt with a plan per shape (matmul descriptor, three
 * layouts, the heuristic's algorithm) cached per device, so that a repeated GEMM costs the
 * dispatcher one cublasLtMatmul (measured on H200: ~2 us less per call than cublasSgemm at
 * 64^3-256^3, bench/results/h200-x2-2026-11-30/probes.txt, probe 3). One plan cache for every
 * form: f32 and f64, strided batches (the layouts' BATCH_COUNT and STRIDED_BATCH_OFFSET), f16 and
 * bf16 operands with f32 sums and C in f32 or their type. Calls cuda_errors.c only; the workspace
 * is the cuBLAS handle's (b->ws, made before the plans' handle). */
#include <string.h>

#include "cuda_internal.h"

int gpar__cuda_lt_open(struct cuda_blas *b) {
  return gpar__cublas_check(cublasLtCreate(&b->lt.lt), "cublasLtCreate");
}

static void lt_plan_clear(struct cuda_lt_plan *p) {
  if (p->la) (void)cublasLtMatrixLayoutDestroy(p->la);
  if (p->lb) (void)cublasLtMatrixLayoutDestroy(p->lb);
  if (p->lc) (void)cublasLtMatrixLayoutDestroy(p->lc);
  if (p->desc) (void)cublasLtMatmulDescDestroy(p->desc);
  memset(p, 0, sizeof *p);
}

void gpar__cuda_lt_close(struct cuda_blas *b) {
  for (int i = 0; i < CUDA_LT_PLANS; i++) lt_plan_clear(&b->lt.plan[i]);
  if (b->lt.lt) (void)cublasLtDestroy(b->lt.lt);
  b->lt.lt = NULL;
}

/* Largest power of two, at most 256, dividing the address, the leading dimension and the batch
 * stride in bytes: what cublasLt's heuristic must assume about an operand (it defaults to 256). */
static int lt_align(const void *p, int ld, long long stride, size_t es) {
  uintptr_t v = (uintptr_t)p | (uintptr_t)((size_t)ld * es) | (uintptr_t)((size_t)stride * es) | (uintptr_t)256;
  return (int)(v & (~v + 1));
}

static cudaDataType_t lt_type(int t) {
  return t == GPAR_DOUBLE ? CUDA_R_64F : t == GPAR_HALF ? CUDA_R_16F : t == GPAR_BFLOAT16 ? CUDA_R_16BF : CUDA_R_32F;
}

/* A layout of rows x cols (ld) of type t, batch entries stride apart. */
static int lt_layout(cublasLtMatrixLayout_t *l, int t, int rows, int cols, int ld, int batch, long long stride,
                     const char *what) {
  int st = gpar__cublas_check(cublasLtMatrixLayoutCreate(l, lt_type(t), (uint64_t)rows, (uint64_t)cols, ld), what);
  if (st || batch <= 1) return st;
  const int32_t n = batch;
  const int64_t s = stride;
  if ((st = gpar__cublas_check(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &n, sizeof n),
                               "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)")))
    return st;
  return gpar__cublas_check(
      cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &s, sizeof s),
      "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)");
}

/* Build plan p for key k: descriptor, layouts, and the heuristic's best algorithm within the
 * workspace and alignments. No algorithm (none returned, or CUBLAS_STATUS_NOT_SUPPORTED) leaves
 * p in state CUDA_LT_NONE; any other failure is returned, p empty. */
static int lt_plan_make(struct cuda_blas *b, const gpar__gemm_key *k, struct cuda_lt_plan *p) {
  const int dbl = k->ab_type == GPAR_DOUBLE;
  const cudaDataType_t dt = dbl ? CUDA_R_64F : CUDA_R_32F; /* alpha and beta */
  const cublasComputeType_t ct = dbl ? CUBLAS_COMPUTE_64F : k->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const cublasOperation_t ta = k->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = k->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasLtPointerMode_t pm = CUBLASLT_POINTER_MODE_HOST;
  const uint64_t ws = CUDA_BLAS_WORKSPACE;
  const uint32_t al[4] = {(uint32_t)k->align_a, (uint32_t)k->align_b, (uint32_t)k->align_c, (uint32_t)k->align_c};
  static const cublasLtMatmulPreferenceAttributes_t al_attr[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  cublasLtMatmulPreference_t pref = NULL;
  cublasLtMatmulHeuristicResult_t res;
  cublasStatus_t s;
  int got = 0, st;
  memset(p, 0, sizeof *p);
  p->key = *k;
  /* Column-major op(A) is m x k, op(B) k x n: the stored A is k x m when transposed. */
  if ((st = gpar__cublas_check(cublasLtMatmulDescCreate(&p->desc, ct, dt), "cublasLtMatmulDescCreate")) ||
      (st = gpar__cublas_check(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta),
                               "cublasLtMatmulDescSetAttribute(TRANSA)")) ||
      (st = gpar__cublas_check(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb),
                               "cublasLtMatmulDescSetAttribute(TRANSB)")) ||
      (st = gpar__cublas_check(
           cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_POINTER_MODE, &pm, sizeof pm),
           "cublasLtMatmulDescSetAttribute(POINTER_MODE)")) ||
      (st = lt_layout(&p->la, k->ab_type, k->trans_a ? k->k : k->m, k->trans_a ? k->m : k->k, k->lda, k->batch,
                      k->stride_a, "cublasLtMatrixLayoutCreate(A)")) ||
      (st = lt_layout(&p->lb, k->ab_type, k->trans_b ? k->n : k->k, k->trans_b ? k->k : k->n, k->ldb, k->batch,
                      k->stride_b, "cublasLtMatrixLayoutCreate(B)")) ||
      (st = lt_layout(&p->lc, k->c_type, k->m, k->n, k->ldc, k->batch, k->stride_c, "cublasLtMatrixLayoutCreate(C)")) ||
      (st = gpar__cublas_check(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate")) ||
      (st = gpar__cublas_check(
           cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws),
           "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)")))
    goto fail;
  for (int i = 0; i < 4; i++)
    if ((st = gpar__cublas_check(cublasLtMatmulPreferenceSetAttribute(pref, al_attr[i], &al[i], sizeof al[i]),
                                 "cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT)")))
      goto fail;
  s = cublasLtMatmulAlgoGetHeuristic(b->lt.lt, p->desc, p->la, p->lb, p->lc, p->lc, pref, 1, &res, &got);
  (void)cublasLtMatmulPreferenceDestroy(pref);
  pref = NULL;
  const int none = s == CUBLAS_STATUS_SUCCESS && (got < 1 || res.state != CUBLAS_STATUS_SUCCESS);
  if (none || s == CUBLAS_STATUS_NOT_SUPPORTED) {
    lt_plan_clear(p);
    p->key = *k;
    p->state = CUDA_LT_NONE;
    return GPAR_OK;
  }
  if ((st = gpar__cublas_check(s, "cublasLtMatmulAlgoGetHeuristic"))) goto fail;
  p->algo = res.algo;
  p->state = CUDA_LT_READY;
  return GPAR_OK;
fail:
  if (pref) (void)cublasLtMatmulPreferenceDestroy(pref);
  lt_plan_clear(p);
  return st;
}

/* The plan for key k: the last one used, another cached one, or a new one in the place of the
 * least recently used (its descriptors are host objects: destroying them does not touch GEMMs
 * already enqueued or captured). NULL with *st set when a new one could not be made. */
static struct cuda_lt_plan *lt_plan_get(struct cuda_blas *b, const gpar__gemm_key *k, int *st) {
  struct cuda_lt_cache *c = &b->lt;
  struct cuda_lt_plan *p = &c->plan[c->last];
  *st = GPAR_OK;
  c->tick++;
  if (p->state != CUDA_LT_EMPTY && !memcmp(&p->key, k, sizeof *k)) {
    p->used = c->tick;
    return p;
  }
  int victim = 0;
  for (int i = 0; i < CUDA_LT_PLANS; i++) {
    p = &c->plan[i];
    if (p->state != CUDA_LT_EMPTY && !memcmp(&p->key, k, sizeof *k)) {
      p->used = c->tick;
      c->last = i;
      return p;
    }
    if (c->plan[i].used < c->plan[victim].used) victim = i; /* empty slots have used 0 */
  }
  p = &c->plan[victim];
  lt_plan_clear(p);
  if ((*st = lt_plan_make(b, k, p))) return NULL;
  p->used = c->tick;
  c->last = victim;
  return p;
}

int gpar__cuda_lt_gemm(struct cuda_blas *b, const gpar__gemm_ex_args *x, int *ran) {
  const gpar__gemm_args *a = &x->g;
  const size_t es = (size_t)a->elem_size, cs = gpar_dtype_size((gpar_dtype)x->c_type);
  const void *A = (const char *)a->a + a->a_off * es, *B = (const char *)a->b + a->b_off * es;
  void *C = (char *)a->c + a->c_off * cs;
  const int batched = x->batch > 1;
  gpar__gemm_key k;
  int st;
  *ran = 0;
  gpar__gemm_key_set(&k, x);
  k.align_a = lt_align(A, a->lda, batched ? x->stride_a : 0, es);
  k.align_b = lt_align(B, a->ldb, batched ? x->stride_b : 0, es);
  k.align_c = lt_align(C, a->ldc, batched ? x->stride_c : 0, cs);
  k.tf32 = x->ab_type == GPAR_FLOAT && b->be->tf32;
  struct cuda_lt_plan *p = lt_plan_get(b, &k, &st);
  if (!p) return st;
  if (p->state != CUDA_LT_READY) return GPAR_OK;
  const float fa = (float)a->alpha, fb = (float)a->beta;
  const int dbl = x->ab_type == GPAR_DOUBLE;
  const void *alpha = dbl ? (const void *)&a->alpha : (const void *)&fa;
  const void *beta = dbl ? (const void *)&a->beta : (const void *)&fb;
  cublasStatus_t s = cublasLtMatmul(b->lt.lt, p->desc, alpha, A, p->la, B, p->lb, beta, C, p->lc, C, p->lc, &p->algo,
                                    b->ws, CUDA_BLAS_WORKSPACE, b->s);
  if (s == CUBLAS_STATUS_NOT_SUPPORTED) { /* keep the key, remember to use cuBLAS for it */
    gpar__gemm_key kept = p->key;
    lt_plan_clear(p);
    p->key = kept;
    p->state = CUDA_LT_NONE;
    p->used = b->lt.tick;
    return GPAR_OK;
  }
  if ((st = gpar__cublas_check(s, "cublasLtMatmul"))) return st;
  *ran = 1;
  return GPAR_OK;
}
