/* query.c: the public calls that read an engine without building ops: devices, counters,
 * configuration, fault injection, backend status, pinned memory status and the host-time
 * breakdown. Each holds the engine (enter/leave) across its reads, so a concurrent
 * gpar_shutdown frees nothing they read. */
#include <string.h>

#include "api/api.h"

GPAR_API int gpar_device_count(gpar_engine *e) {
  int st;
  gpar_engine *eng = gpar__engine_enter(e, &st);
  if (!eng) return st;
  st = eng->ndev;
  gpar__engine_leave(eng);
  return st;
}

GPAR_API int gpar_device_info(gpar_engine *e, int dev, gpar_device_props *info) {
  int st = GPAR_OK;
  gpar_engine *eng = gpar__engine_enter(e, &st);
  if (!eng) return st;
  if (!info)
    st = gpar__errorf(GPAR_EINVAL, "gpar_device_info: info is NULL");
  else if (dev < 0 || dev >= eng->ndev)
    st = gpar__errorf(GPAR_ENODEV, "device %d does not exist (%d devices)", dev, eng->ndev);
  else
    *info = eng->devs[dev]->info;
  gpar__engine_leave(eng);
  return st;
}

GPAR_API int gpar_device_find(gpar_engine *e, int backend_id, int type, int skip) {
  int st;
  gpar_engine *eng = gpar__engine_enter(e, &st);
  if (!eng) return st;
  st = gpar__errorf(GPAR_ENODEV, "no such device (backend %d, type %d)", backend_id, type);
  for (int i = 0; i < eng->ndev; i++) {
    const gpar_device_props *in = &eng->devs[i]->info;
    if ((!backend_id || (in->backend_id & backend_id)) && (type < 0 || (int)in->type == type) && skip-- == 0) {
      st = i;
      break;
    }
  }
  gpar__engine_leave(eng);
  return st;
}

GPAR_API int gpar_config_get(gpar_engine *e, gpar_config *cfg) {
  int st;
  gpar_engine *eng = gpar__engine_enter(e, &st);
  if (!eng) return st;
  if (cfg) {
    *cfg = eng->cfg;
    cfg->lanes = gpar__lanes_of(&eng->cfg, 1); /* no GPU: what was asked for */
    for (int i = eng->ndev - 1; i >= 0; i--) /* what runs: the first GPU's */
      if (eng->devs[i]->lanes > 0) cfg->lanes = eng->devs[i]->lanes;
  } else
    st = gpar__errorf(GPAR_EINVAL, "gpar_config_get: cfg is NULL");
  gpar__engine_leave(eng);
  return st;
}

GPAR_API int gpar_stats_get(gpar_engine *e, gpar_stats *stats) {
  int st;
  gpar_engine *eng = gpar__engine_enter(e, &st);
  if (!eng) return st;
  if (!stats) {
    gpar__engine_leave(eng);
    return gpar__errorf(GPAR_EINVAL, "gpar_stats_get: stats is NULL");
  }
  memset(stats, 0, sizeof *stats);
  gpar__stats(eng, stats);
  pthread_mutex_lock(&eng->pinned->mu);
  stats->pinned_bytes_pool = eng->pinned->held;
  pthread_mutex_unlock(&eng->pinned->mu);
  stats->events_live = (uint64_t)atomic_load(&eng->events_live);
  stats->graph_native_launches = atomic_load(&eng->graph_native);
  stats->kernels_live = atomic_load(&eng->kernels_live);
  stats->kernel_launches = atomic_load(&eng->kernel_launches);
  stats->kernel_builds = atomic_load(&eng->kernel_builds);
  stats->kernel_memory_hits = atomic_load(&eng->kernel_mem_hits);
  stats->kernel_disk_hits = atomic_load(&eng->kernel_disk_hits);
  stats->kernel_build_us = atomic_load(&eng->kernel_build_ns) / 1000;
  for (int i = 0; i < eng->ndev; i++) {
    const gpar__device *dev = eng->devs[i];
    for (int k = 0; k < dev->lanes; k++) { /* each issuer writes its own; relaxed reads */
      stats->lane_waits += atomic_load_explicit(&dev->issuer[k].waits, memory_order_relaxed);
      stats->lane_events += atomic_load_explicit(&dev->issuer[k].events, memory_order_relaxed);
      stats->lane_handoffs += atomic_load_explicit(&dev->issuer[k].handoffs, memory_order_relaxed);
      stats->lane_moves += atomic_load_explicit(&dev->issuer[k].moved, memory_order_relaxed);
    }
  }
  for (int i = 0; i < eng->ndev; i++) {
    const gpar__device *dev = eng->devs[i];
    uint64_t planned = 0, fallback = 0;
    if (!dev->ops->gemm_counts || !dev->bdev) continue;
    dev->ops->gemm_counts(dev->bdev, &planned, &fallback);
    stats->gemm_lt_calls += planned;
    stats->gemm_lt_fallbacks += fallback;
  }
  gpar__engine_leave(eng);
  return GPAR_OK;
}

GPAR_API int gpar_fault_inject(gpar_engine *e, const char *kind, unsigned long n) {
  int st;
  gpar_engine *eng = gpar__engine_enter(e, &st);
  if (!eng) return st;
  st = gpar__fault_arm(eng, kind, n);
  gpar__engine_leave(eng);
  return st;
}

GPAR_API int gpar_backend_status(gpar_engine *eng, int backend_id, int *ndev, const char **reason) {
  int st;
  const gpar__backend_ops *ops;
  switch (backend_id) {
  case GPAR_BACKEND_HOST: ops = &gpar__host_backend; break;
  case GPAR_BACKEND_CUDA: ops = &gpar__cuda_backend; break; /* weak: NULL when not built */
  case GPAR_BACKEND_OPENCL: ops = &gpar__opencl_backend; break;
  default: return gpar__errorf(GPAR_EINVAL, "gpar_backend_status: %d is not a GPAR_BACKEND_* value", backend_id);
  }
  if (!(eng = gpar__engine_enter(eng, &st))) return st;
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
  gpar__engine_leave(eng);
  return GPAR_OK;
}

GPAR_API int gpar_pinned_status(gpar_engine *eng, int *provider, unsigned *registered, const char **reason) {
  int st;
  if (!(eng = gpar__engine_enter(eng, &st))) return st;
  gpar__pinned_pool *p = eng->pinned;
  unsigned mask = 0;
  for (int r = 0; r < p->nreg; r++) mask |= (unsigned)p->reg[r].ops->id;
  if (provider) *provider = p->ops ? p->ops->id : 0;
  if (registered) *registered = mask;
  if (reason) {
    pthread_mutex_lock(&p->mu);
    *reason = p->reg_failures ? p->reg_why : ""; /* written once, before reg_failures moves */
    pthread_mutex_unlock(&p->mu);
  }
  gpar__engine_leave(eng);
  return GPAR_OK;
}

GPAR_API int gpar_breakdown_get(gpar_engine *e, gpar_breakdown *bd, int reset) {
  int st;
  gpar_engine *eng = gpar__engine_enter(e, &st);
  if (!eng) return st;
  if (!bd)
    st = gpar__errorf(GPAR_EINVAL, "gpar_breakdown_get: bd is NULL");
  else
    st = gpar__breakdown(eng, bd, reset);
  gpar__engine_leave(eng);
  return st;
}
