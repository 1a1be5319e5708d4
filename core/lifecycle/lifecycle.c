/* lifecycle.c: the engine's lifecycle, the top of core/: the one list of backends, the one
 * reader of the GPAR_* environment, gpar_init (open backends and devices, start their threads)
 * and gpar_shutdown (drain, then destroy the engine's graphs, communicators, maps and kernels, join,
 * free).
 * Engine slots and tokens live in engine/registry.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "array/array.h"
#include "comm/comm.h"
#include "graph/graph.h"
#include "kernel/kernel.h"

/* The backends, in probe order. GPU backends are weak symbols: NULL when configure left them out. */
static const gpar__backend_ops *const gpar__backends[] = {&gpar__host_backend, &gpar__cuda_backend,
                                                          &gpar__opencl_backend};

/* ---------------------------------------------------------------- configuration */

/* The one place that reads the environment: the gpar_config fields (cfg non-NULL), and the
 * fault to inject plus the engine's knobs without a config field at gpar_init (eng non-NULL). */
static void config_from_env(gpar_config *cfg, gpar_engine *eng, const char **fault) {
  const char *s;
  if (eng) {
    *fault = getenv("GPAR_FAULT");
    s = getenv("GPAR_PINNED_PROVIDER");
    snprintf(eng->env_pinned_provider, sizeof eng->env_pinned_provider, "%s", s ? s : "");
    eng->env_comm_staged = (s = getenv("GPAR_COMM_STAGED")) && atoi(s);
  }
  if (!cfg) return;
  if ((s = getenv("GPAR_SYNC"))) cfg->synchronous = atoi(s);
  if ((s = getenv("GPAR_HOST_THREADS"))) cfg->host_threads = atoi(s);
  if ((s = getenv("GPAR_TF32"))) cfg->tf32 = atoi(s);
  if ((s = getenv("GPAR_TRACE")) && *s) cfg->trace_path = s;
  if ((s = getenv("GPAR_PINNED_LIMIT_MB"))) cfg->pinned_limit = (size_t)strtoull(s, NULL, 10) << 20;
  if ((s = getenv("GPAR_QUIET"))) cfg->quiet = atoi(s);
  if ((s = getenv("GPAR_COMM_TIMEOUT")) && atof(s) > 0) cfg->comm_timeout = atof(s);
  if ((s = getenv("GPAR_CUBLASLT"))) cfg->cublaslt = atoi(s) ? 1 : -1;
  if ((s = getenv("GPAR_CACHE_DIR")) && *s) cfg->kernel_cache_dir = s;
  if ((s = getenv("GPAR_CACHE")) && !strcmp(s, "0")) cfg->kernel_cache_dir = "";
  if (((s = getenv("GPAR_CC")) && *s) || ((s = getenv("CC")) && *s)) cfg->kernel_cc = s;
  if ((s = getenv("GPAR_NVRTC")) && *s) cfg->kernel_nvrtc = s;
  if ((s = getenv("GPAR_LANES"))) cfg->lanes = atoi(s);
  if ((s = getenv("GPAR_BACKENDS"))) {
    cfg->backends = 0;
    static const char *const names[] = {"host", "cuda", "opencl"};
    static const unsigned bits[] = {GPAR_BACKEND_HOST, GPAR_BACKEND_CUDA, GPAR_BACKEND_OPENCL};
    for (int i = 0; i < 3; i++)
      if (strstr(s, names[i])) cfg->backends |= bits[i];
  }
}

/* The kernels' default disk cache, $XDG_CACHE_HOME/gpar or $HOME/.cache/gpar ("" when neither
 * is set), read once per process. */
static char default_cache_dir[1024];
static pthread_once_t default_cache_once = PTHREAD_ONCE_INIT;
static void default_cache_read(void) {
  const char *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
  if (x && *x)
    snprintf(default_cache_dir, sizeof default_cache_dir, "%s/gpar", x);
  else if (h && *h)
    snprintf(default_cache_dir, sizeof default_cache_dir, "%s/.cache/gpar", h);
}

GPAR_API void gpar_config_init(gpar_config *cfg) {
  if (!cfg) return;
  memset(cfg, 0, sizeof *cfg);
  config_from_env(cfg, NULL, NULL);
}

/* ---------------------------------------------------------------- devices and backends */

/* A zeroed device. */
static gpar__device *device_alloc(void) { return calloc(1, sizeof(gpar__device)); }

/* Close a device whose threads are joined, and free it. */
static void device_free(gpar__device *dev) {
  if (dev->trace_ref) dev->ops->event_release(dev->trace_ref);
  if (dev->bdev) dev->ops->device_close(dev->bdev);
  gpar__queue_free(dev->ready);
  pthread_mutex_destroy(&dev->cmu);
  pthread_cond_destroy(&dev->ccv);
  free(dev);
}

static int engine_add_backend(gpar_engine *eng, const gpar__backend_ops *ops) {
  gpar__backend *be = NULL;
  int n = 0;
  char *why = eng->backend_why[GPAR__BACKEND_SLOT(ops->id)];
  int lanes = ops->ordered_by_events ? gpar__lanes_of(&eng->cfg, ops->lanes_default) : 0;
  int st = ops->open(&eng->cfg, lanes, &be, &n);
  if (st != GPAR_OK) {
    snprintf(why, sizeof eng->backend_why[0], "%s", gpar__error_msg());
    /* An absent device (GPAR_ENODEV) is not an error: said only for a backend the caller named. */
    if (st != GPAR_ENODEV || (eng->backends_named & (unsigned)ops->id))
      gpar__log("%s: backend unavailable: %s", ops->name, why);
    return ops == &gpar__host_backend ? st : GPAR_OK;
  }
  int first = eng->ndev;
  gpar__device **devs = realloc(eng->devs, sizeof *devs * (size_t)(eng->ndev + n));
  if (!devs) {
    ops->close(be);
    return GPAR_ENOMEM;
  }
  eng->devs = devs;
  eng->backends[eng->nbackends].ops = ops;
  eng->backends[eng->nbackends].be = be;
  eng->nbackends++;
  for (int i = 0; i < n; i++) {
    gpar__device *dev = device_alloc();
    if (!dev) return GPAR_ENOMEM;
    dev->ops = ops;
    dev->be = be;
    dev->bidx = i;
    dev->eng = eng;
    dev->lanes = lanes;
    if (!(dev->ready = gpar__queue_new(ops->ordered_by_events ? 1 : eng->cfg.host_threads))) {
      free(dev);
      return GPAR_ENOMEM;
    }
    pthread_mutex_init(&dev->cmu, NULL);
    pthread_cond_init(&dev->ccv, NULL);
    if ((st = ops->device_info(be, i, &dev->info)) || (st = ops->device_open(be, i, &dev->bdev))) {
      snprintf(why, sizeof eng->backend_why[0], "device %d skipped: %s", i, gpar__error_msg());
      gpar__log("%s: %s", ops->name, why);
      device_free(dev);
      continue;
    }
    dev->index = eng->ndev;
    dev->info.compute_lanes = lanes;
    eng->devs[eng->ndev++] = dev;
  }
  /* Peer masks: backend-local bits to flat indices. */
  for (int i = first; i < eng->ndev; i++) {
    uint64_t local = eng->devs[i]->info.peer_mask, flat = 0;
    for (int j = first; j < eng->ndev; j++)
      if (eng->devs[j]->bidx < 64 && (local >> eng->devs[j]->bidx & 1) && j < 64) flat |= 1ull << j;
    eng->devs[i]->info.peer_mask = flat;
  }
  return GPAR_OK;
}

/* Free what an engine holds, once no op is in flight and no call is inside. Threads are joined
 * before any buffer is freed; buffers before their devices close. */
static void engine_free_resources(gpar_engine *eng) {
  for (int i = 0; i < eng->ndev; i++) gpar__device_join(eng->devs[i]);
  gpar__buf_free_all(eng);
  gpar__engine_drop_ops(eng);
  for (int i = 0; i < eng->ndev; i++) device_free(eng->devs[i]);
  gpar__pinned_destroy(eng->pinned);
  eng->pinned = NULL;
  for (int i = 0; i < eng->nbackends; i++) eng->backends[i].ops->close(eng->backends[i].be);
  free(eng->devs);
  free(eng->first_errmsg);
  free(eng->trace);
}

/* ---------------------------------------------------------------- lifecycle */

GPAR_API int gpar_init(gpar_engine **out, const gpar_config *cfg) {
  if (!out) return gpar__errorf(GPAR_EINVAL, "gpar_init: out pointer is NULL");
  *out = NULL;
  int st;
  gpar_engine *eng = gpar__engine_claim(&st);
  if (!eng) return st;

  if (cfg)
    eng->cfg = *cfg;
  else
    gpar_config_init(&eng->cfg);
  eng->backends_named = eng->cfg.backends;
  if (!eng->cfg.backends) eng->cfg.backends = GPAR_BACKEND_HOST | GPAR_BACKEND_CUDA | GPAR_BACKEND_OPENCL;
  eng->cfg.backends |= GPAR_BACKEND_HOST;
  if (!(eng->cfg.comm_timeout > 0)) eng->cfg.comm_timeout = 300.0;
  if (!eng->cfg.kernel_cache_dir) {
    pthread_once(&default_cache_once, default_cache_read);
    eng->cfg.kernel_cache_dir = default_cache_dir;
  }
  if (!eng->cfg.kernel_cc) eng->cfg.kernel_cc = "cc";
  if (eng->cfg.lanes < 0) eng->cfg.lanes = 0; /* 0: each backend's default; the devices say what runs */
  if (eng->cfg.host_threads <= 0) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    eng->cfg.host_threads = n > 0 ? (int)n : 2;
  }
  gpar__set_quiet(eng->cfg.quiet);
  const char *fault = NULL;
  config_from_env(NULL, eng, &fault);
  eng->tracing = !eng->cfg.trace_path ? 0 : *eng->cfg.trace_path ? 2 : 1; /* "": breakdown, no file */
  eng->t0 = gpar__now();

  st = GPAR_OK;
  for (size_t i = 0; i < sizeof gpar__backends / sizeof gpar__backends[0] && st == GPAR_OK; i++)
    if (gpar__backends[i] && (eng->cfg.backends & (unsigned)gpar__backends[i]->id))
      st = engine_add_backend(eng, gpar__backends[i]);
  if (st == GPAR_OK) st = gpar__pinned_init(eng); /* which backend pins GPAR_HOST memory, which register it */
  for (int i = 0; i < eng->ndev && st == GPAR_OK; i++) {
    if (eng->devs[i]->ops == &gpar__host_backend) eng->host_dev = eng->devs[i];
    st = gpar__device_start(eng->devs[i]);
  }
  if (st == GPAR_OK && !eng->host_dev) st = gpar__errorf(GPAR_ENODEV, "host backend has no device");
  if (st != GPAR_OK) {
    engine_free_resources(eng);
    gpar__engine_release_slot(eng);
    return st;
  }
  if (eng->tracing)
    for (int i = 0; i < eng->ndev; i++) {
      gpar__device *dev = eng->devs[i];
      if (dev->ops->ordered_by_events && dev->ops->event_elapsed &&
          dev->ops->event_record(dev->bdev, GPAR__LANE_COMPUTE, GPAR__EVENT_TIMING, &dev->trace_ref) == GPAR_OK) {
        dev->ops->event_sync(dev->trace_ref);
        dev->trace_t0 = gpar__now() - eng->t0;
      }
    }
  if (fault) {
    char kind[32];
    unsigned long n;
    if (sscanf(fault, "%31[a-z]:%lu", kind, &n) == 2) gpar__fault_arm(eng, kind, n);
  }
  atomic_store(&eng->state, GPAR__ENG_OPEN);
  *out = gpar__engine_token(eng);
  return GPAR_OK;
}

/* Shutdown: refuse new outside calls (CLOSING), drain until nothing is in flight, then refuse
 * everything (CLOSED, set under the engine lock so no submit slips in after the drain), wait
 * for the calls still inside to leave, destroy the engine's communicators and graphs (nothing
 * of theirs is in flight any more), join the threads, and only then free memory. */
GPAR_API int gpar_shutdown(gpar_engine *e) {
  int st;
  gpar_engine *eng = gpar__engine_enter(e, &st);
  if (!eng) return st;
  if (gpar__in_op) {
    gpar__engine_leave(eng);
    return gpar__errorf(GPAR_EDEADLK, "gpar_shutdown called from inside an operation");
  }
  if ((st = gpar__engine_begin_close(eng))) {
    gpar__engine_leave(eng);
    return st;
  }
  st = gpar__drain(eng);
  char msg[512];
  snprintf(msg, sizeof msg, "%s", gpar_last_error()); /* the clean-up below may set its own */
  gpar__engine_leave(eng);
  gpar__engine_wait_callers(eng);
  gpar__comm_shutdown(eng);  /* comm/: the engine's communicators */
  gpar__graph_shutdown(eng); /* graph/: its graphs, their buffers and backend graphs */
  gpar__array_shutdown(eng); /* array/: its maps and the table of its array kernels */
  if (eng->tracing == 2) gpar__trace_write(eng);
  gpar__kernel_shutdown(eng); /* kernel/: its kernels and caches (after the trace: it names them) */
  engine_free_resources(eng);
  gpar__engine_release_slot(eng);
  if (st != GPAR_OK) gpar__set_error_msg(st, msg);
  return st;
}






