/* cuda_errors.c: the CUDA backend's bottom layer: the one place that turns cudart and cuBLAS /
 * cublasLt statuses into gpar statuses with "what: name (text)" messages. (NCCL's statuses are
 * mapped by the NCCL layer itself, the only one built against NCCL.) */
#include "cuda_internal.h"

static int cuda_status(cudaError_t e) {
  return e == cudaErrorMemoryAllocation ? GPAR_EDEVMEM : GPAR_EBACKEND;
}

int gpar__cuda_check(cudaError_t e, const char *what) {
  if (e == cudaSuccess) return GPAR_OK;
  (void)cudaGetLastError();
  return gpar__errorf(cuda_status(e), "%s: %s (%s)", what, cudaGetErrorName(e), cudaGetErrorString(e));
}

int gpar__cublas_check(cublasStatus_t s, const char *what) {
  int st;
  if (s == CUBLAS_STATUS_SUCCESS) return GPAR_OK;
  switch (s) {
  case CUBLAS_STATUS_ALLOC_FAILED: st = GPAR_EDEVMEM; break;
  case CUBLAS_STATUS_INVALID_VALUE: st = GPAR_EINVAL; break;
  case CUBLAS_STATUS_NOT_SUPPORTED: st = GPAR_ENOTSUP; break;
  default: st = GPAR_EBACKEND; break;
  }
  return gpar__errorf(st, "%s: %s (%s)", what, cublasGetStatusName(s), cublasGetStatusString(s));
}
