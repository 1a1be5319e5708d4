/* fault.h: fault injection for tests (fault.c; gpar_fault_inject, env GPAR_FAULT=kind:n). A
 * kind (GPAR__FAULT_*, registry.h) armed with n makes its nth later backend call fail with
 * GPAR_EFAULT; each call site asks gpar__fault with the kind it stands for. */
#ifndef GPAR_CORE_ENGINE_FAULT_H
#define GPAR_CORE_ENGINE_FAULT_H

#include "engine/registry.h"

/* GPAR_EFAULT (with its message) when the armed fault of this kind fires now, else GPAR_OK. */
GPAR__HIDDEN int gpar__fault(gpar_engine *eng, int kind);
/* Arm fault `kind` (its name) to fire at the nth later call; n = 0 disarms. */
GPAR__HIDDEN int gpar__fault_arm(gpar_engine *eng, const char *kind, unsigned long n);

#endif
