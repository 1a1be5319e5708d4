/* bench_devices.c: choosing what a run measures: backend names, the engine a run opens (backend
 * mask, tracing), the devices of --backend/--devices, and the raw vendor loop of that backend. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"

/* ---- device selection ---- */

int bench_backend_id(const char *name) {
  if (!strcmp(name, "host")) return GPAR_BACKEND_HOST;
  if (!strcmp(name, "cuda")) return GPAR_BACKEND_CUDA;
  if (!strcmp(name, "opencl")) return GPAR_BACKEND_OPENCL;
  return 0;
}

const char *bench_backend_name(int id) {
  switch (id) {
  case GPAR_BACKEND_HOST: return "host";
  case GPAR_BACKEND_CUDA: return "cuda";
  case GPAR_BACKEND_OPENCL: return "opencl";
  default: return "?";
  }
}

int bench_select_devices(bench_ctx *ctx, int default_count_all, int type) {
  int total = gpar_device_count(ctx->eng);
  if (total < 0) return bench_fail("gpar_device_count", total);
  gpar_device_props *all = calloc((size_t)total + 1, sizeof *all);
  if (!all) return GPAR_ENOMEM;
  for (int d = 0; d < total; d++) {
    int st = gpar_device_info(ctx->eng, d, &all[d]);
    if (st != GPAR_OK) {
      free(all);
      return bench_fail("gpar_device_info", st);
    }
  }

  int be = 0;
  if (ctx->o.backend) {
    be = bench_backend_id(ctx->o.backend);
    if (!be) {
      fprintf(stderr, "gpar-bench: unknown backend '%s' (host, cuda or opencl)\n", ctx->o.backend);
      free(all);
      return GPAR_EINVAL;
    }
  } else {
    for (int d = 0; d < total && !be; d++)
      if (all[d].type == GPAR_DEVICE_GPU) be = all[d].backend_id;
    for (int d = 0; d < total && !be; d++)
      if (all[d].backend_id == GPAR_BACKEND_OPENCL) be = GPAR_BACKEND_OPENCL;
    if (!be) be = GPAR_BACKEND_HOST;
  }
  ctx->backend_id = be;
  ctx->backend = bench_backend_name(be);

  /* Devices of that backend in backend-local order. */
  int cand[BENCH_MAX_DEV], ncand = 0;
  for (int local = 0; ncand < BENCH_MAX_DEV; local++) {
    int found = -1, more = 0;
    for (int d = 0; d < total; d++) {
      if (all[d].backend_id != be) continue;
      if (all[d].backend_index == local) found = d;
      if (all[d].backend_index > local) more = 1;
    }
    if (found >= 0) cand[ncand++] = found;
    if (!more) break;
  }
  if (ncand == 0) {
    fprintf(stderr, "gpar-bench: backend %s has no device (see gpar-info)\n", ctx->backend);
    free(all);
    return GPAR_ENODEV;
  }

  /* Without an explicit list, a backend that has GPUs (e.g. NVIDIA OpenCL next to PoCL) is
   * taken as its GPUs only: timing a GPU next to a CPU device tells nothing. */
  int pref[BENCH_MAX_DEV], npref = 0;
  for (int i = 0; i < ncand; i++)
    if (all[cand[i]].type == (type >= 0 ? (gpar_device_type)type : GPAR_DEVICE_GPU)) pref[npref++] = cand[i];
  if (npref == 0 && type >= 0) {
    fprintf(stderr, "gpar-bench: backend %s has no %s device\n", ctx->backend,
            type == GPAR_DEVICE_GPU ? "GPU" : "CPU");
    free(all);
    return GPAR_ENODEV;
  }
  if (npref == 0) {
    memcpy(pref, cand, sizeof(int) * (size_t)ncand);
    npref = ncand;
  }

  int sel[BENCH_MAX_DEV], nsel = 0;
  const char *spec = ctx->o.devices;
  if (!spec) {
    nsel = default_count_all ? npref : 1;
    for (int i = 0; i < nsel; i++) sel[i] = pref[i];
  } else if (!strchr(spec, ',')) {
    long cnt = bench_parse_int(spec, 1, BENCH_MAX_DEV);
    if (cnt < 0 || cnt > npref) {
      fprintf(stderr, "gpar-bench: --devices %s: backend %s has %d %sdevice%s\n", spec,
              ctx->backend, npref, npref < ncand ? "GPU " : "", npref == 1 ? "" : "s");
      free(all);
      return GPAR_EINVAL;
    }
    nsel = (int)cnt;
    for (int i = 0; i < nsel; i++) sel[i] = pref[i];
  } else {
    char *copy = strdup(spec), *save = NULL;
    if (!copy) {
      free(all);
      return GPAR_ENOMEM;
    }
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
      long idx = bench_parse_int(tok, 0, BENCH_MAX_DEV - 1);
      if (idx < 0 || idx >= ncand || nsel >= BENCH_MAX_DEV) {
        fprintf(stderr, "gpar-bench: --devices %s: '%s' is not a %s device (0..%d)\n", spec, tok,
                ctx->backend, ncand - 1);
        free(copy);
        free(all);
        return GPAR_EINVAL;
      }
      for (int j = 0; j < nsel; j++)
        if (sel[j] == cand[idx]) {
          fprintf(stderr, "gpar-bench: --devices %s: device %ld listed twice\n", spec, idx);
          free(copy);
          free(all);
          return GPAR_EINVAL;
        }
      sel[nsel++] = cand[idx];
    }
    free(copy);
    if (nsel == 0) {
      fprintf(stderr, "gpar-bench: --devices %s: no device\n", spec);
      free(all);
      return GPAR_EINVAL;
    }
  }

  ctx->ndev = nsel;
  ctx->any_gpu = 0;
  for (int i = 0; i < nsel; i++) {
    ctx->flat[i] = sel[i];
    ctx->info[i] = all[sel[i]];
    ctx->local[i] = all[sel[i]].backend_index;
    const char *p = all[sel[i]].type == GPAR_DEVICE_GPU   ? "GPU"
                    : all[sel[i]].type == GPAR_DEVICE_CPU ? "CPU"
                                                          : "dev";
    snprintf(ctx->label[i], sizeof ctx->label[i], "%s%d", p, i + 1);
    if (all[sel[i]].type == GPAR_DEVICE_GPU) ctx->any_gpu = 1;
  }
  free(all);
  return GPAR_OK;
}

/* ---- raw baselines ---- */

bench_raw_fn bench_raw_lookup(bench_ctx *ctx, int mode, const char **what) {
  switch (ctx->backend_id) {
  case GPAR_BACKEND_CUDA:
    *what = "raw CUDA (cuBLAS)";
    return gpar_raw_cuda; /* weak: NULL when tools/raw/raw_cuda.c was not built */
  case GPAR_BACKEND_OPENCL:
    *what = "raw OpenCL (CLBlast)";
    return gpar_raw_opencl;
  case GPAR_BACKEND_HOST:
    *what = "raw OpenBLAS (cblas_sgemm)";
    return mode == GPAR_RAW_GEMM ? gpar_raw_host : NULL;
  default:
    *what = "raw";
    return NULL;
  }
}

void bench_raw_missing(bench_ctx *ctx, int mode) {
  if (ctx->backend_id == GPAR_BACKEND_HOST && mode != GPAR_RAW_GEMM)
    fprintf(ctx->out, "raw baseline not available for backend host in this subcommand (GEMM only)\n");
  else
    fprintf(ctx->out, "raw baseline not built for backend %s\n", ctx->backend);
  bench_json_str(ctx, "raw", "not built");
}

/* ---- engine ---- */

void bench_config(bench_ctx *ctx, gpar_config *cfg, const char *trace) {
  gpar_config_init(cfg);
  cfg->tf32 = ctx->o.tf32;
  cfg->trace_path = trace;
  /* With --backend, open only that backend (and the host): GPAR_HOST memory is then pinned by
   * the backend under test. NVIDIA's OpenCL treats CUDA-pinned memory as pageable (13 GB/s
   * instead of 55 GB/s for D2H copies, measured on H200). --all-backends opens every one. */
  if (ctx->o.backend && bench_backend_id(ctx->o.backend) > 0 && !ctx->o.all_backends)
    cfg->backends = GPAR_BACKEND_HOST | bench_backend_id(ctx->o.backend);
}

int bench_open(bench_ctx *ctx, const char *trace) {
  gpar_config cfg;
  bench_config(ctx, &cfg, trace);
  ctx->t_init = gpar_now();
  int st = gpar_init(&ctx->eng, &cfg);
  if (st != GPAR_OK) return bench_fail("gpar_init", st);
  ctx->host_dev = GPAR_HOST;
  int hd = gpar_device_find(ctx->eng, GPAR_BACKEND_HOST, -1, 0);
  if (hd >= 0) ctx->host_dev = hd;
  bench_meta_collect(ctx, ctx->eng);
  return GPAR_OK;
}
