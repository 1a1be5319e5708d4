/* bench_report.c: gpar-bench report A.json B.json ...: merges the records of several sweeps
 * (backends, machines) into Markdown on stdout: what ran where, the three sweep metrics side by
 * side per size, where N devices pay, single runs, and SVG charts written to --outdir. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"

#ifndef GPAR_HAVE_JANSSON
int bench_report(bench_ctx *ctx) {
  (void)ctx;
  fprintf(stderr, "gpar-bench: report was not built: configure found no jansson "
                  "(install libjansson-dev and run configure again)\n");
  return 2;
}
#else
#include <math.h>

#include <jansson.h>

#define REPORT_MAX_SERIES 32

typedef struct report_run { /* one series, with where it came from */
  bench_series s;
  const char *file;
  json_t *meta, *group; /* borrowed from the file's root */
  int gpu;
} report_run;

static const char *jstr(json_t *o, const char *key) {
  const char *v = json_string_value(json_object_get(o, key));
  return v ? v : "";
}

static double jnum(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  return json_is_number(v) ? json_number_value(v) : NAN;
}

/* Markdown table cell: no '|' or newline. */
static void cell(const char *s) {
  for (; *s; s++) putchar(*s == '|' ? '/' : *s == '\n' ? ' ' : *s);
}

/* One sweep point from its record. */
static void read_point(json_t *jp, bench_point *p, int ndev) {
  *p = (bench_point){(int)jnum(jp, "size"), (int)jnum(jp, "iters"), ndev, NAN, NAN, NAN, NAN, NAN, NAN, NAN};
  json_t *md = json_object_get(jp, "multi_device"), *co = json_object_get(jp, "copy_overlap");
  json_t *alone = json_object_get(md, "alone"), *raw = json_object_get(md, "raw");
  p->md_ratio = jnum(md, "all_over_max_alone");
  p->md_speedup = jnum(md, "speedup");
  if (json_is_object(raw)) p->md_raw_ratio = jnum(raw, "all_over_max_alone");
  void *it = json_object_iter(alone); /* the first device */
  if (it && p->iters > 0) {
    p->op_us = jnum(json_object_iter_value(it), "median") / p->iters * 1e6;
    char key[64];
    snprintf(key, sizeof key, "alone_%s", json_object_iter_key(it));
    if (json_is_object(raw)) p->op_raw_us = jnum(json_object_get(raw, key), "median") / p->iters * 1e6;
  }
  p->co_ratio = jnum(co, "ratio_to_ideal");
  json_t *craw = json_object_get(co, "raw");
  if (json_is_object(craw)) p->co_raw_ratio = jnum(craw, "ratio_to_ideal");
}

/* The sweep groups of one record become runs. */
static int read_sweep(const char *file, json_t *root, report_run *runs, int nruns) {
  json_t *meta = json_object_get(root, "meta"), *groups = json_object_get(root, "groups");
  size_t gi;
  json_t *g;
  json_array_foreach(groups, gi, g) {
    if (nruns >= REPORT_MAX_SERIES) break;
    report_run *r = &runs[nruns];
    memset(r, 0, sizeof *r);
    r->file = file;
    r->meta = meta;
    r->group = g;
    r->gpu = !strcmp(jstr(g, "device_type"), "GPU");
    r->s.ndev = (int)jnum(g, "ndev");
    snprintf(r->s.label, sizeof r->s.label, "%s", jstr(g, "label"));
    json_t *pts = json_object_get(g, "points");
    size_t np = json_array_size(pts);
    r->s.pt = calloc(np ? np : 1, sizeof *r->s.pt);
    if (!r->s.pt) return -1;
    for (size_t i = 0; i < np; i++) read_point(json_array_get(pts, i), &r->s.pt[i], r->s.ndev);
    r->s.npt = (int)np;
    nruns++;
  }
  return nruns;
}

/* Labels must tell runs apart: prefix the machine where two runs share a label. */
static void unique_labels(report_run *runs, int n) {
  for (int i = 0; i < n; i++) {
    int clash = 0;
    for (int j = 0; j < n; j++) clash |= i != j && !strcmp(runs[i].s.label, runs[j].s.label);
    if (!clash) continue;
    for (int j = 0; j < n; j++) {
      if (j == i || strcmp(runs[i].s.label, runs[j].s.label)) continue;
      char buf[sizeof runs[j].s.label];
      snprintf(buf, sizeof buf, "%s %.40s", jstr(runs[j].meta, "hostname"), runs[j].s.label);
      snprintf(runs[j].s.label, sizeof runs[j].s.label, "%s", buf);
    }
    char buf[sizeof runs[i].s.label];
    snprintf(buf, sizeof buf, "%s %.40s", jstr(runs[i].meta, "hostname"), runs[i].s.label);
    snprintf(runs[i].s.label, sizeof runs[i].s.label, "%s", buf);
  }
}

/* Write a chart of the runs that pass `pick` (-1 all, 1 GPU, 0 CPU) and link it. */
static int chart(bench_ctx *ctx, report_run *runs, int n, int pick, const char *name, const char *what) {
  bench_series s[REPORT_MAX_SERIES];
  int ns = 0;
  for (int i = 0; i < n; i++)
    if (pick < 0 || runs[i].gpu == pick) s[ns++] = runs[i].s;
  if (ns == 0) return 0;
  const char *dir = ctx->o.outdir ? ctx->o.outdir : ".";
  char path[4096], title[256];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  snprintf(title, sizeof title, "libgpar sweep: %s", what);
  if (bench_chart_svg(path, title, s, ns) != 0) return -1;
  printf("![%s](%s)\n\n", what, name);
  return 0;
}

/* One table: a row per size, two columns (libgpar, raw) per run. */
static void metric_table(report_run *runs, int n, const char *title, const char *note, int which,
                         const char *fmt) {
  int sizes[256], ns = 0;
  for (int i = 0; i < n; i++)
    for (int k = 0; k < runs[i].s.npt; k++) {
      int v = runs[i].s.pt[k].n, seen = 0;
      for (int j = 0; j < ns; j++) seen |= sizes[j] == v;
      if (!seen && ns < 256) sizes[ns++] = v;
    }
  for (int a = 0; a < ns; a++) /* ascending */
    for (int b = a + 1; b < ns; b++)
      if (sizes[b] < sizes[a]) {
        int t = sizes[a];
        sizes[a] = sizes[b];
        sizes[b] = t;
      }
  printf("### %s\n\n%s\n\n| n |", title, note);
  for (int i = 0; i < n; i++) {
    printf(" ");
    cell(runs[i].s.label);
    printf(" libgpar | raw |");
  }
  printf("\n|---:|");
  for (int i = 0; i < n; i++) printf("---:|---:|");
  printf("\n");
  for (int a = 0; a < ns; a++) {
    printf("| %d |", sizes[a]);
    for (int i = 0; i < n; i++) {
      const bench_point *p = NULL;
      for (int k = 0; k < runs[i].s.npt; k++)
        if (runs[i].s.pt[k].n == sizes[a]) p = &runs[i].s.pt[k];
      double lib = NAN, raw = NAN;
      if (p) {
        lib = which == 0 ? p->op_us : which == 1 ? p->md_ratio : p->co_ratio;
        raw = which == 0 ? p->op_raw_us : which == 1 ? p->md_raw_ratio : p->co_raw_ratio;
      }
      for (int r = 0; r < 2; r++) {
        double v = r ? raw : lib;
        if (isnan(v))
          printf(" - |");
        else {
          printf(" ");
          printf(fmt, v);
          printf(" |");
        }
      }
    }
    printf("\n");
  }
  printf("\n");
}

/* Devices of a run: "2 x NVIDIA H200 (driver 13.0; CUDA runtime 13.0, cuBLAS 13.0.2)". */
static void run_devices(report_run *r) {
  json_t *di = json_object_get(r->group, "device_info"), *d0 = json_array_get(di, 0);
  printf("%zu x ", json_array_size(di));
  cell(jstr(d0, "name"));
  printf(" | ");
  cell(jstr(d0, "driver_version"));
  printf(" | ");
  cell(jstr(d0, "runtime_version"));
}

static void single_run(const char *file, json_t *root) {
  json_t *res = json_object_get(root, "results"), *meta = json_object_get(root, "meta");
  printf("| %s | %s | %s | ", file, jstr(root, "subcommand"), jstr(root, "backend"));
  json_t *devs = json_object_get(root, "devices");
  printf("%zu x ", json_array_size(devs));
  cell(json_string_value(json_array_get(devs, 0)) ? json_string_value(json_array_get(devs, 0)) : "");
  printf(" | %d x %d | ", (int)jnum(root, "size"), (int)jnum(root, "iters"));
  /* The headline numbers each subcommand writes, where present. */
  static const char *const keys[] = {"speedup", "all_over_max_alone", "ratio_to_ideal", "copy_gbps"};
  int any = 0;
  for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
    double v = jnum(res, keys[k]);
    if (isnan(v)) continue;
    printf("%s%s %.3f", any ? ", " : "", keys[k], v);
    any = 1;
  }
  printf(" | %s |\n", jstr(meta, "date"));
}

int bench_report(bench_ctx *ctx) {
  if (ctx->o.nfiles < 1) {
    fprintf(stderr, "gpar-bench: report needs one or more JSON files written by gpar-bench --json\n");
    return 2;
  }
  json_t *roots[REPORT_MAX_SERIES];
  report_run runs[REPORT_MAX_SERIES];
  int nroots = 0, nruns = 0, nsingle = 0, rc = 0;
  for (int i = 0; i < ctx->o.nfiles && nroots < REPORT_MAX_SERIES; i++) {
    json_error_t err;
    json_t *root = json_load_file(ctx->o.files[i], 0, &err);
    if (!root || !json_is_object(root) || !json_is_object(json_object_get(root, "meta"))) {
      fprintf(stderr, "gpar-bench: %s:%d: %s\n", ctx->o.files[i], root ? 0 : err.line,
              root ? "not a gpar-bench record (no \"meta\" object)" : err.text);
      json_decref(root);
      rc = 1;
      continue;
    }
    roots[nroots++] = root;
    if (!strcmp(jstr(root, "subcommand"), "sweep")) {
      int n = read_sweep(ctx->o.files[i], root, runs, nruns);
      if (n < 0) rc = 1;
      else nruns = n;
    } else {
      nsingle++;
    }
  }
  if (nroots == 0) return 1;
  unique_labels(runs, nruns);

  printf("# libgpar benchmark report\n\n");
  printf("Made by `gpar-bench report` (libgpar %s, commit %s) from %d record%s:", PACKAGE_VERSION,
         bench_version_string(), nroots, nroots == 1 ? "" : "s");
  for (int i = 0; i < ctx->o.nfiles; i++) printf(" `%s`", ctx->o.files[i]);
  printf(".\nEach sweep runs the D2L experiments at every op size n (one n\u00d7n\u00d7n SGEMM per op): "
         "multi-device (the same GEMMs on every device, each alone, then all at once) and "
         "copy-overlap (each GEMM's result copied to pinned host memory while the next GEMMs run), "
         "through libgpar and through the raw vendor loop (CUDA + cuBLAS, OpenCL + CLBlast, OpenBLAS) "
         "in the same process. Times are medians of repeated runs.\n\n");

  if (nruns > 0) {
    printf("## Runs\n\n| run | machine | devices | driver | runtime, BLAS | libgpar | date | command |\n"
           "|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < nruns; i++) {
      printf("| ");
      cell(runs[i].s.label);
      printf(" | ");
      cell(jstr(runs[i].meta, "hostname"));
      printf(" | ");
      run_devices(&runs[i]);
      printf(" | %s (", jstr(runs[i].meta, "libgpar_version"));
      cell(jstr(runs[i].meta, "git_commit"));
      printf(") | %s | `", jstr(runs[i].meta, "date"));
      json_t *env = json_object_get(runs[i].meta, "environment");
      const char *k;
      json_t *v;
      json_object_foreach(env, k, v) {
        printf("%s='", k);
        cell(json_string_value(v) ? json_string_value(v) : "");
        printf("' ");
      }
      cell(jstr(runs[i].meta, "command"));
      printf("` |\n");
    }
    printf("\n## Charts\n\n");
    int gpus = 0, cpus = 0;
    for (int i = 0; i < nruns; i++) gpus += runs[i].gpu, cpus += !runs[i].gpu;
    if (chart(ctx, runs, nruns, -1, "sweep-all.svg", "every run") != 0) rc = 1;
    if (gpus && cpus && gpus > 1 && chart(ctx, runs, nruns, 1, "sweep-gpu.svg", "GPU runs") != 0) rc = 1;
    if (gpus && cpus && cpus > 1 && chart(ctx, runs, nruns, 0, "sweep-cpu.svg", "CPU-device runs") != 0) rc = 1;

    printf("## Where N devices pay\n\nThe smallest size from which every larger one runs N devices' work "
           "at once at least 5%% sooner than one device would run it all (time ratio at most N / 1.05).\n\n"
           "| run | devices | libgpar | raw loop |\n|---|---:|---|---|\n");
    for (int i = 0; i < nruns; i++) {
      int x = bench_crossover(&runs[i].s, 0), xr = bench_crossover(&runs[i].s, 1);
      printf("| ");
      cell(runs[i].s.label);
      printf(" | %d | ", runs[i].s.ndev);
      if (runs[i].s.ndev < 2) printf("one device | one device |\n");
      else {
        if (x > 0) printf("n \u2265 %d | ", x);
        else printf("not in this range | ");
        if (xr > 0) printf("n \u2265 %d |\n", xr);
        else printf("not in this range |\n");
      }
    }
    printf("\n## Tables\n\n");
    metric_table(runs, nruns, "Multi-device: time, all devices at once / one alone",
                 "Same work per device. 1 = ideal (N times the work in the time of one); N = no gain.", 1,
                 "%.3f");
    metric_table(runs, nruns, "Time per GEMM, one device alone (microseconds)",
                 "The raw loop is the floor; the difference is libgpar's cost per op.", 0, "%.1f");
    metric_table(runs, nruns, "Copy-overlap: time / ideal",
                 "Ideal = max(run, copy) + one copy. 1 = every copy hidden behind the GEMMs.", 2, "%.3f");
  }
  if (nsingle > 0) {
    printf("## Single runs\n\n| file | subcommand | backend | devices | size x iters | results | date |\n"
           "|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < nroots; i++)
      if (strcmp(jstr(roots[i], "subcommand"), "sweep")) single_run(ctx->o.files[i], roots[i]);
    printf("\n");
  }
  printf("## Versions\n\n| record | OpenBLAS | CLBlast | CUDA driver | CUDA runtime | OpenCL platforms | compiler |\n"
         "|---|---|---|---|---|---|---|\n");
  for (int i = 0; i < nroots; i++) {
    json_t *ver = json_object_get(json_object_get(roots[i], "meta"), "versions");
    printf("| %s | ", ctx->o.files[i]);
    cell(jstr(ver, "openblas"));
    printf(" | %s | %s | ", jstr(ver, "clblast"), jstr(ver, "cuda_driver"));
    cell(jstr(ver, "cuda_runtime"));
    printf(" | ");
    size_t k;
    json_t *v;
    json_array_foreach(json_object_get(ver, "opencl"), k, v) {
      if (k) printf("<br>");
      cell(json_string_value(v) ? json_string_value(v) : "");
    }
    printf(" | %s |\n", jstr(ver, "compiler"));
  }
  for (int i = 0; i < nruns; i++) free(runs[i].s.pt);
  for (int i = 0; i < nroots; i++) json_decref(roots[i]);
  return rc;
}
#endif
