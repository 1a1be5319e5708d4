/* backend_status.c: gpar_backend_status, how many devices each backend gave an engine and, when
 * none, why (not built, not requested, or the backend's own reason kept by gpar_init). */
#include <string.h>

#include "internal.h"

GPAR_API int gpar_backend_status(gpar_engine *eng, int backend_id, int *ndev, const char **reason) {
  int st;
  const gpar__backend_ops *ops;
  switch (backend_id) {
  case GPAR_BACKEND_HOST: ops = &gpar__host_backend; break;
  case GPAR_BACKEND_CUDA: ops = &gpar__cuda_backend; break; /* weak: NULL when not built */
  case GPAR_BACKEND_OPENCL: ops = &gpar__opencl_backend; break;
  default: return gpar__errorf(GPAR_EINVAL, "gpar_backend_status: %d is not a GPAR_BACKEND_* value", backend_id);
  }
  if (!(eng = gpar__engine_check(eng, &st))) return st;
  int n = 0;
  for (int i = 0; i < eng->ndev; i++) /* the device list is fixed after gpar_init */
    if (eng->devs[i]->ops->id == backend_id) n++;
  const char *why = eng->backend_why[GPAR__BACKEND_SLOT(backend_id)];
  if (!ops)
    why = "not built into this libgpar (configure did not find it)";
  else if (!(eng->cfg.backends & (unsigned)backend_id))
    why = "not requested (GPAR_BACKENDS or gpar_config.backends leaves it out)";
  else if (n > 0 && strncmp(why, "device ", 7) != 0)
    why = ""; /* devices, none skipped */
  else if (n == 0 && !*why)
    why = "no device";
  if (ndev) *ndev = n;
  if (reason) *reason = why;
  return GPAR_OK;
}
