/* bench_common.h: what the parts of gpar-bench share: options, the selected devices, timing,
 * statistics over --repeat runs, the JSON result writer and the raw-baseline lookup. */
#ifndef GPAR_TOOLS_BENCH_COMMON_H
#define GPAR_TOOLS_BENCH_COMMON_H

#include <stdio.h>

#include "gpar.h"
#include "raw.h"

/* Command line. Zero / NULL fields mean "default". */
typedef struct bench_opts {
  const char *subcommand;
  const char *backend;   /* --backend host|cuda|opencl */
  const char *devices;   /* --devices N or a list "0,1" */
  int size, iters, repeat;
  int tf32, pageable, raw, quiet;
  int graph;             /* --graph: time op-graph launches of the loops (gpar_graph_*) */
  int breakdown;         /* --breakdown (overhead) */
  const char *json_path, *trace_path, *svg_path;
} bench_opts;

/* Up to this many devices take part in one run. */
#define BENCH_MAX_DEV 64

typedef struct bench_ctx {
  bench_opts o;
  gpar_engine *eng;
  const char *backend; /* "host", "cuda", "opencl" */
  int backend_id;      /* GPAR_BACKEND_* */
  int ndev;            /* devices selected */
  int flat[BENCH_MAX_DEV];  /* their flat-list indices */
  int local[BENCH_MAX_DEV]; /* their backend-local indices */
  gpar_device_props info[BENCH_MAX_DEV];
  char label[BENCH_MAX_DEV][16]; /* "GPU1", "CPU2", "dev3" */
  int any_gpu;                   /* 1 when a selected device is a GPU */
  int n, iters, repeat;          /* resolved size, iterations, repeats */
  int host_dev;                  /* flat index of the host CPU device, or GPAR_HOST */
  int check_failed;              /* a correctness check failed */
  FILE *json;                    /* results object being written (a memory stream), or NULL */
  char *json_buf;
  size_t json_len;
  int json_first;                /* no member written yet at the current nesting level */
  double t_init;                 /* bench_now() just before gpar_init (the trace's time 0) */
  double svg_from, svg_to;       /* seconds since t_init the SVG shows (0, 0: everything) */
} bench_ctx;

/* Median, min and max of `count` timings. */
typedef struct bench_stat {
  double med, min, max;
  int count;
} bench_stat;

/* Seconds on a monotonic clock. */
double bench_now(void);
bench_stat bench_stats(const double *v, int count);
/* "0.1314 sec" or "0.1314 sec (min 0.1310, max 0.1320, 5 runs)" into buf. */
const char *bench_fmt_stat(char *buf, size_t len, bench_stat s);

/* "48.80 TFLOP/s" or "95.3 GFLOP/s". */
const char *bench_fmt_rate(char *buf, size_t len, double flop, double sec);

/* Progress line on stderr (unless --quiet). */
void bench_progress(bench_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Report a failed gpar call on stderr; returns st. */
int bench_fail(const char *what, int st);

/* JSON members of the "results" object; bench_json_* are no-ops without --json. */
void bench_json_num(bench_ctx *ctx, const char *key, double v);
void bench_json_str(bench_ctx *ctx, const char *key, const char *v);
void bench_json_stat(bench_ctx *ctx, const char *key, bench_stat s, const double *runs);
void bench_json_begin(bench_ctx *ctx, const char *key); /* nested object */
void bench_json_end(bench_ctx *ctx);

/* The raw loop for this backend: gpar_raw_cuda / gpar_raw_opencl (NULL when not built), or the
 * tool's own OpenBLAS loop for host (GPAR_RAW_GEMM only). *what names the vendor path. */
typedef int (*bench_raw_fn)(const gpar_raw_case *c, double *seconds);
bench_raw_fn bench_raw_lookup(bench_ctx *ctx, int mode, const char **what);
/* Print why there is no raw baseline (once per call site). */
void bench_raw_missing(bench_ctx *ctx, int mode);
int bench_raw_host(const gpar_raw_case *c, double *seconds);

/* Fill a device buffer of n*n floats with value (through gpar_write, from a host array). */
int bench_fill_matrix(gpar_buffer buf, int n, float value);
/* Check a few entries of a float array against want; prints and counts a failure. */
int bench_check(bench_ctx *ctx, const char *what, const float *v, size_t count, float want);

/* Subcommands; each returns the process exit status. */
int bench_multi_device(bench_ctx *ctx);
int bench_copy_overlap(bench_ctx *ctx);
int bench_gemm(bench_ctx *ctx);
int bench_overhead(bench_ctx *ctx);

/* Read a Chrome trace-event JSON (one event per line) and write an SVG timeline.
 * Returns 0, or -1 after printing why on stderr. */
/* from_us < to_us: only ops overlapping that window of trace time are drawn. */
int bench_trace_to_svg(const char *trace_path, const char *svg_path, const char *title, double from_us, double to_us);

#endif
