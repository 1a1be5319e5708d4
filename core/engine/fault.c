/* fault.c: fault injection for tests (fault.h): one countdown per engine and kind. */
#include <string.h>

#include "engine/fault.h"

static const char *const gpar__fault_names[GPAR__FAULT_KINDS] = {
    "alloc", "pinned", "copy", "gemm", "fill", "user", "event", "completion", "register", "capture", "build"};

int gpar__fault(gpar_engine *eng, int kind) {
  atomic_ulong *at = &eng->fault_at[kind];
  unsigned long n = atomic_load_explicit(at, memory_order_relaxed);
  while (n) {
    if (atomic_compare_exchange_weak(at, &n, n - 1)) {
      if (n == 1) return gpar__errorf(GPAR_EFAULT, "injected fault: %s", gpar__fault_names[kind]);
      return GPAR_OK;
    }
  }
  return GPAR_OK;
}

int gpar__fault_arm(gpar_engine *eng, const char *kind, unsigned long n) {
  if (!kind) return gpar__errorf(GPAR_EINVAL, "gpar_fault_inject: kind is NULL");
  for (int k = 0; k < GPAR__FAULT_KINDS; k++)
    if (!strcmp(kind, gpar__fault_names[k])) {
      atomic_store(&eng->fault_at[k], n);
      return GPAR_OK;
    }
  return gpar__errorf(GPAR_EINVAL, "gpar_fault_inject: unknown kind '%s'", kind);
}
