/* bench_sweep.c: gpar-bench sweep: multi-device and copy-overlap, each next to the raw vendor
 * loop, over a range of op sizes, for one backend or every device group (backend x device
 * type) found; a table on stdout, the records in --json, the chart in --svg. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_common.h"

#define SWEEP_MAX_SIZES 32
#define SWEEP_MAX_GROUPS 8
#define SWEEP_PHASE_SEC 0.05 /* aim for each timed phase (one loop of iters GEMMs) */
#define SWEEP_MIN_ITERS 3
#define SWEEP_MAX_ITERS 400

typedef struct sweep_group {
  int backend_id;
  int type; /* GPAR_DEVICE_GPU / CPU; -1 with --devices (the list decides) */
} sweep_group;

/* "64,128,256" -> sizes; returns the count, or -1 after printing why. */
static int parse_sizes(const char *spec, int *sizes, int max) {
  int n = 0;
  const char *p = spec;
  while (*p) {
    char *end;
    errno = 0;
    long v = strtol(p, &end, 10);
    if (errno || end == p || v < 1 || v > 65536 || (*end && *end != ',') || n >= max) {
      fprintf(stderr, "gpar-bench: --sizes %s: want up to %d sizes in 1..65536, comma-separated\n",
              spec, max);
      return -1;
    }
    sizes[n++] = (int)v;
    p = *end ? end + 1 : end;
  }
  if (n == 0) fprintf(stderr, "gpar-bench: --sizes is empty\n");
  return n ? n : -1;
}

/* The device groups to sweep: with --backend that backend, else every one; its GPUs and its
 * CPU devices apart (NVIDIA OpenCL next to PoCL are two groups), unless --devices picks. */
static int find_groups(bench_ctx *ctx, sweep_group *g) {
  int st = bench_open(ctx, NULL);
  if (st != GPAR_OK) return -1;
  static const int order[3] = {GPAR_BACKEND_CUDA, GPAR_BACKEND_OPENCL, GPAR_BACKEND_HOST};
  int ng = 0;
  for (int b = 0; b < 3; b++) {
    if (ctx->o.backend && bench_backend_id(ctx->o.backend) != order[b]) continue;
    for (int type = GPAR_DEVICE_GPU; type >= GPAR_DEVICE_CPU; type--) {
      if (gpar_device_find(ctx->eng, order[b], type, 0) < 0) continue;
      if (ng < SWEEP_MAX_GROUPS) g[ng++] = (sweep_group){order[b], ctx->o.devices ? -1 : type};
      if (ctx->o.devices) break;
    }
  }
  gpar_last_error(); /* gpar_device_find set it for the absent ones */
  gpar_shutdown(ctx->eng);
  ctx->eng = NULL;
  if (ng == 0)
    fprintf(stderr, "gpar-bench: no device for backend %s (see gpar-info)\n",
            ctx->o.backend ? ctx->o.backend : "any");
  return ng;
}

/* Iterations for size n: about SWEEP_PHASE_SEC per timed loop, bounded by memory (copy-overlap
 * keeps one result and one host buffer per iteration). */
static int pick_iters(bench_ctx *ctx, int *iters) {
  if (ctx->o.iters) {
    *iters = ctx->o.iters;
    return GPAR_OK;
  }
  /* Twice, keeping the faster: a first call may still compile kernels or fault in pages. */
  double per_op = 1e30;
  for (int pass = 0; pass < 2; pass++) {
    double sec = 0;
    int k = 2, st;
    for (;;) {
      if ((st = bench_time_gemm(ctx, k, &sec)) != GPAR_OK) return st;
      if (sec >= 0.005 || k >= 256) break;
      k *= 4;
    }
    if (sec / k < per_op) per_op = sec / k;
  }
  if (per_op < 1e-7) per_op = 1e-7;
  double bytes = (double)ctx->n * ctx->n * sizeof(float);
  double mem_cap = (ctx->any_gpu ? 1024.0 : 256.0) * 1024 * 1024 / bytes;
  double it = SWEEP_PHASE_SEC / per_op;
  if (it > mem_cap) it = mem_cap;
  if (it > SWEEP_MAX_ITERS) it = SWEEP_MAX_ITERS;
  if (it < SWEEP_MIN_ITERS) it = SWEEP_MIN_ITERS;
  *iters = (int)it;
  return GPAR_OK;
}

static void fmt_pair(char *buf, size_t len, double lib, double raw, const char *fmt) {
  char a[32] = "-", b[32] = "-";
  if (!isnan(lib)) snprintf(a, sizeof a, fmt, lib);
  if (!isnan(raw)) snprintf(b, sizeof b, fmt, raw);
  snprintf(buf, len, "%s (%s)", a, b);
}

static void print_crossover(const bench_series *s, FILE *f) {
  for (int raw = 0; raw < 2; raw++) {
    int x = bench_crossover(s, raw);
    fprintf(f, "%s%s", raw ? "; raw loop: " : "  N devices pay (all/one <= N / 1.05: N devices' work at least 5% sooner than on one): libgpar: ",
            x > 0 ? "" : "none in this range");
    if (x > 0) fprintf(f, "n >= %d", x);
  }
  fprintf(f, "\n");
}

/* Sweep one group with its own engine; fills s. */
static int sweep_group_run(bench_ctx *ctx, const sweep_group *g, const int *sizes, int nsizes,
                           bench_series *s) {
  ctx->o.backend = bench_backend_name(g->backend_id);
  int st = bench_open(ctx, NULL);
  if (st != GPAR_OK) return st;
  st = bench_select_devices(ctx, 1, g->type);
  int rc = st;
  if (st != GPAR_OK) goto out;
  int defaults[SWEEP_MAX_SIZES], nd = 0;
  if (!sizes) { /* GPU: 64..4096; CPU devices: 32..1024, doubling */
    for (int n = ctx->any_gpu ? 64 : 32; n <= (ctx->any_gpu ? 4096 : 1024); n *= 2) defaults[nd++] = n;
    sizes = defaults;
    nsizes = nd;
  }
  s->pt = calloc((size_t)nsizes, sizeof *s->pt);
  if (!s->pt) {
    rc = GPAR_ENOMEM;
    goto out;
  }
  s->ndev = ctx->ndev;
  snprintf(s->label, sizeof s->label, "%s%s%s: %d x %.40s", ctx->o.label ? ctx->o.label : "",
           ctx->o.label ? ", " : "", ctx->backend, ctx->ndev, ctx->info[0].name);

  bench_json_elem_begin(ctx);
  bench_json_str(ctx, "backend", ctx->backend);
  bench_json_str(ctx, "label", s->label);
  bench_json_str(ctx, "device_type", ctx->any_gpu ? "GPU" : "CPU");
  bench_json_num(ctx, "ndev", ctx->ndev);
  bench_json_num(ctx, "repeat", ctx->repeat);
  if (ctx->json) { /* after the members above, so the comma is due */
    fprintf(ctx->json, ",\"device_info\":[");
    for (int d = 0; d < ctx->ndev; d++) {
      if (d) fputc(',', ctx->json);
      bench_meta_device(ctx->json, &ctx->info[d], ctx->flat[d]);
    }
    fputc(']', ctx->json);
  }
  bench_json_array_begin(ctx, "points");

  printf("\nsweep %s (%d device%s:", s->label, ctx->ndev, ctx->ndev == 1 ? "" : "s");
  for (int d = 0; d < ctx->ndev; d++) printf(" %s = %s:%d", ctx->label[d], ctx->backend, ctx->local[d]);
  printf("), median of %d\n", ctx->repeat);
  char hdr[40];
  snprintf(hdr, sizeof hdr, "time, %d device%s / one", ctx->ndev, ctx->ndev == 1 ? "" : "s");
  printf("%6s %6s  %-22s %-22s %-22s\n", "size", "iters", "GEMM us, one device", hdr, "copy-overlap / ideal");
  printf("%6s %6s  %-22s %-22s %-22s\n", "", "", "libgpar (raw)", "libgpar (raw)", "libgpar (raw)");
  fflush(stdout);
  for (int i = 0; i < nsizes; i++) {
    bench_point *p = &s->pt[i];
    *p = (bench_point){sizes[i], 0, ctx->ndev, NAN, NAN, NAN, NAN, NAN, NAN, NAN};
    ctx->n = sizes[i];
    bench_progress(ctx, "sweep %s: size %d", s->label, ctx->n);
    if ((st = pick_iters(ctx, &ctx->iters)) != GPAR_OK) break;
    p->iters = ctx->iters;
    ctx->pt = p;
    bench_json_elem_begin(ctx);
    bench_json_num(ctx, "size", ctx->n);
    bench_json_num(ctx, "iters", ctx->iters);
    bench_json_begin(ctx, "multi_device");
    int r1 = bench_multi_device(ctx);
    bench_json_end(ctx);
    int nd_all = ctx->ndev; /* copy-overlap on the first device, as its subcommand does */
    ctx->ndev = 1;
    bench_json_begin(ctx, "copy_overlap");
    int r2 = bench_copy_overlap(ctx);
    bench_json_end(ctx);
    ctx->ndev = nd_all;
    bench_json_end(ctx);
    ctx->pt = NULL;
    s->npt = i + 1;
    char a[40], b[40], c[40];
    fmt_pair(a, sizeof a, p->op_us, p->op_raw_us, "%.1f");
    fmt_pair(b, sizeof b, p->md_ratio, p->md_raw_ratio, "%.3f");
    fmt_pair(c, sizeof c, p->co_ratio, p->co_raw_ratio, "%.3f");
    printf("%6d %6d  %-22s %-22s %-22s\n", p->n, p->iters, a, b, c);
    fflush(stdout);
    if (r1 || r2) {
      rc = 1;
      break;
    }
  }
  bench_json_array_end(ctx);
  int x = bench_crossover(s, 0), xr = bench_crossover(s, 1);
  bench_json_num(ctx, "crossover_size", x > 0 ? x : NAN);
  bench_json_num(ctx, "crossover_size_raw", xr > 0 ? xr : NAN);
  bench_json_end(ctx);
  if (ctx->ndev > 1) {
    printf("  (%d devices at once over one alone, same work per device: 1 = ideal, %d = no gain)\n",
           ctx->ndev, ctx->ndev);
    print_crossover(s, stdout);
  } else {
    printf("  (one device: the multi-device column times it alone and in the all-at-once loop)\n");
  }
  if (st != GPAR_OK) rc = st;
out:
  st = gpar_shutdown(ctx->eng);
  ctx->eng = NULL;
  if (st != GPAR_OK) rc = bench_fail("gpar_shutdown", st);
  return rc;
}

/* Write the JSON (the groups so far) and the chart; final: also say where they went. */
static int sweep_save(bench_ctx *ctx, const bench_series *series, int ns, int final) {
  int rc = 0;
  if (ctx->json) {
    fflush(ctx->json);
    size_t len = ctx->json_len;
    char *body = malloc(len + 2);
    if (!body) return -1;
    memcpy(body, ctx->json_buf, len);
    memcpy(body + len, "]", 2); /* close "groups" */
    rc = bench_json_write(ctx, ctx->o.json_path, body);
    free(body);
    if (!rc && final) printf("json: %s\n", ctx->o.json_path);
  }
  if (ctx->o.svg_path && ns > 0) {
    char title[256], host[64] = "";
    if (gethostname(host, sizeof host - 1) != 0) host[0] = 0;
    snprintf(title, sizeof title, "gpar-bench sweep on %s%s%s: libgpar %s (%s), %s", host,
             ctx->o.label ? ", " : "", ctx->o.label ? ctx->o.label : "", PACKAGE_VERSION,
             bench_version_string(), ctx->date);
    if (bench_chart_svg(ctx->o.svg_path, title, series, ns) != 0)
      rc = -1;
    else if (final)
      printf("svg: %s\n", ctx->o.svg_path);
  }
  return rc;
}

int bench_sweep(bench_ctx *ctx) {
  int sizes[SWEEP_MAX_SIZES], nsizes = 0;
  if (ctx->o.sizes && (nsizes = parse_sizes(ctx->o.sizes, sizes, SWEEP_MAX_SIZES)) < 0) return 2;
  if (ctx->o.size) {
    fprintf(stderr, "gpar-bench: sweep takes --sizes, not --size\n");
    return 2;
  }
  ctx->o.raw = 1;
  ctx->repeat = ctx->o.repeat ? ctx->o.repeat : 3;
  FILE *devnull = fopen("/dev/null", "w");
  if (!devnull) return 1;
  ctx->out = devnull; /* the experiments' own text; the sweep prints a table */

  sweep_group groups[SWEEP_MAX_GROUPS];
  bench_series series[SWEEP_MAX_GROUPS];
  memset(series, 0, sizeof series);
  int ng = find_groups(ctx, groups), rc = ng > 0 ? 0 : 1, ns = 0;
  if (ctx->o.json_path) {
    ctx->json = open_memstream(&ctx->json_buf, &ctx->json_len);
    if (!ctx->json) {
      fclose(devnull);
      return 1;
    }
    ctx->json_first = 1;
    bench_json_array_begin(ctx, "groups");
  }
  const char *backend_opt = ctx->o.backend;
  for (int gi = 0; gi < ng; gi++) { /* after a failed group, the others still run */
    if (sweep_group_run(ctx, &groups[gi], ctx->o.sizes ? sizes : NULL, nsizes, &series[ns]) != GPAR_OK) rc = 1;
    if (series[ns].npt) ns++;
    if (gi < ng - 1 && sweep_save(ctx, series, ns, 0) != 0) rc = 1; /* kept if a later group hangs */
  }
  ctx->o.backend = backend_opt;
  if (sweep_save(ctx, series, ns, 1) != 0) rc = 1;
  if (ctx->json) {
    fclose(ctx->json);
    ctx->json = NULL;
  }
  free(ctx->json_buf);
  ctx->json_buf = NULL;
  for (int i = 0; i < ns; i++) free(series[i].pt);
  fclose(devnull);
  ctx->out = stdout;
  return rc;
}
