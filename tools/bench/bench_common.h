/* bench_common.h: what the parts of gpar-bench share: options, the selected devices, timing
 * (gpar_now), statistics over --repeat runs, the JSON result writer and the raw-baseline lookup. Layers, top
 * down: gpar-bench.c (main) -> the subcommands (bench_exp, bench_gemm, bench_overhead, bench_kernel,
 * bench_sweep, bench_report, bench_comm) -> bench_devices, bench_meta, bench_chart, bench_trace
 * -> bench_json -> bench_common; the raw loops (raw_*.c, raw.h) stand alone. */
#ifndef GPAR_TOOLS_BENCH_COMMON_H
#define GPAR_TOOLS_BENCH_COMMON_H

#include <stdio.h>

#include "gpar.h"
#include "raw/raw.h"
#include "raw/raw_blas.h"

/* Command line. Zero / NULL fields mean "default". */
typedef struct bench_opts {
  const char *subcommand;
  const char *backend;   /* --backend host|cuda|opencl */
  const char *devices;   /* --devices N or a list "0,1" */
  int size, iters, repeat;
  int tf32, pageable, raw, quiet;
  int graph;             /* --graph: time op-graph launches of the loops (gpar_graph_*) */
  int batch;             /* --batch B (batched) */
  const char *dtype;     /* --dtype f16|bf16 (gemm-ex) */
  int breakdown;         /* --breakdown (overhead) */
  const char *workers;   /* --workers 2,4,8,16 (overhead): one engine per CPU worker count */
  const char *lanes;     /* --lanes 1,2,4 (lanes): one engine per compute-lane count */
  int branches, layers;  /* --branches K --layers L (branches) */
  const char *json_path, *trace_path, *svg_path;
  int all_backends;      /* --all-backends: open every backend, benchmark --backend's */
  const char *sizes;     /* sweep --sizes 64,128,... */
  const char *label;     /* sweep --label: the series name in charts and reports */
  const char *outdir;    /* report --outdir: where the charts go */
  int nfiles;            /* report: the JSON files */
  char **files;
  int argc;              /* the command line, for the records */
  char **argv;
} bench_opts;

/* One size of a sweep: what the chart and the table show (NAN: not measured). */
typedef struct bench_point {
  int n, iters, ndev;
  double op_us, op_raw_us;       /* one GEMM alone on the first device, microseconds */
  double md_ratio, md_raw_ratio; /* multi-device: all at once / max(alone); 1 ideal, ndev no gain */
  double md_speedup;             /* sum(alone) / all */
  double co_ratio, co_raw_ratio; /* copy-overlap: run + copy / (max(run, copy) + one chunk) */
} bench_point;

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
  double t_init;                 /* gpar_now() just before gpar_init (the trace's time 0) */
  double svg_from, svg_to;       /* seconds since t_init the SVG shows (0, 0: everything) */
  FILE *out;                     /* where the subcommands print their results (stdout) */
  bench_point *pt;               /* sweep: the experiments also fill this */
  char date[32];                 /* start time, UTC, ISO 8601 */
  gpar_device_props *seen;       /* every device of every engine opened (bench_meta_collect) */
  int nseen;
} bench_ctx;

/* Median, min and max of `count` timings. */
typedef struct bench_stat {
  double med, min, max;
  int count;
} bench_stat;

/* bench_common.c (times come from gpar_now, libgpar's clock). */
bench_stat bench_stats(const double *v, int count);
/* "0.1314 sec" or "0.1314 sec (min 0.1310, max 0.1320, 5 runs)" into buf. */
const char *bench_fmt_stat(char *buf, size_t len, bench_stat s);

/* "48.80 TFLOP/s" or "95.3 GFLOP/s". */
const char *bench_fmt_rate(char *buf, size_t len, double flop, double sec);

/* Parse an integer in [lo, hi] (1e6 accepted); -1 when s is not one. */
long bench_parse_int(const char *s, long lo, long hi);

/* Progress line on stderr (unless --quiet). */
void bench_progress(bench_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Report a failed gpar call on stderr; returns st. */
int bench_fail(const char *what, int st);

/* JSON (bench_json.c). Members of the "results" object; bench_json_* are no-ops without --json. */
void bench_json_num(bench_ctx *ctx, const char *key, double v);
void bench_json_str(bench_ctx *ctx, const char *key, const char *v);
void bench_json_stat(bench_ctx *ctx, const char *key, bench_stat s, const double *runs);
void bench_json_begin(bench_ctx *ctx, const char *key); /* nested object */
void bench_json_end(bench_ctx *ctx);
void bench_json_array_begin(bench_ctx *ctx, const char *key); /* array; elements follow */
void bench_json_array_end(bench_ctx *ctx);
void bench_json_elem_begin(bench_ctx *ctx); /* an object element of the current array */
/* Low-level writers shared with the metadata block. */
void bench_json_string(FILE *f, const char *s);
void bench_json_number(FILE *f, double v);

/* Provenance that every JSON record carries, and the record file (bench_meta.c). */
/* The file: {"subcommand":..., "meta":{...}, <body>} where body is the text of more members.
 * Returns 0, or -1 after printing why. */
int bench_json_write(bench_ctx *ctx, const char *path, const char *body);
/* Remember every device of eng (call once per engine, while it is open). */
void bench_meta_collect(bench_ctx *ctx, gpar_engine *eng);
/* Write the "meta" object's value: versions, devices, date, command. */
void bench_meta_write(bench_ctx *ctx, FILE *f);
/* One device as a JSON object. */
void bench_meta_device(FILE *f, const gpar_device_props *p, int flat);
/* "32 cores online (AMD EPYC 9654 96-Core Processor)": the machine a run states. */
const char *bench_machine(char *buf, size_t len);
/* "libgpar 0.1.0 (commit abc1234)" */
const char *bench_version_string(void);

/* The raw loop for this backend: gpar_raw_cuda / gpar_raw_opencl (NULL when not built), or
 * gpar_raw_host, the OpenBLAS loop (GPAR_RAW_GEMM only). *what names the vendor path. */
typedef int (*bench_raw_fn)(const gpar_raw_case *c, double *seconds);
bench_raw_fn bench_raw_lookup(bench_ctx *ctx, int mode, const char **what);
/* Print why there is no raw baseline (once per call site). */
void bench_raw_missing(bench_ctx *ctx, int mode);

/* Fill a device buffer of n*n floats with value (through gpar_write, from a host array). */
int bench_fill_matrix(gpar_buffer buf, int n, float value);
/* Check a few entries of a float array against want; prints and counts a failure. */
int bench_check(bench_ctx *ctx, const char *what, const float *v, size_t count, float want);

/* Subcommands; each returns the process exit status. */
int bench_multi_device(bench_ctx *ctx); /* bench_exp.c */
int bench_copy_overlap(bench_ctx *ctx); /* bench_exp.c */
int bench_gemm(bench_ctx *ctx);         /* bench_gemm.c */
int bench_overhead(bench_ctx *ctx);     /* bench_overhead.c */
int bench_kernel(bench_ctx *ctx);       /* bench_kernel.c */
/* gpar-bench --kernel-child DIR BACKENDS DEV ROUND PID: a build in a new process (bench_kernel.c). */
int bench_kernel_child(int argc, char **argv);
/* overhead --workers "2,4,8,16" -> asked[] (0: one worker per core); the count, or -1 after
 * printing why. */
#define BENCH_MAX_WORKER_COUNTS 16
int bench_parse_workers(const char *spec, int *asked, int max);
int bench_sweep(bench_ctx *ctx);  /* bench_sweep.c: opens its own engines */
/* bench_lanes.c: eager independent small ops at each --lanes count (an engine per count and
 * round) next to a T-thread, T-stream hand loop and the graph floor. bench_lanes_defaults: its
 * size (GPU 256, CPU 128), iters (2000, 100) and repeat (5) where the options leave them. */
int bench_lanes(bench_ctx *ctx);
void bench_lanes_defaults(bench_ctx *ctx);
/* bench_branches.c: K independent branches of L layers (SGEMM + ReLU) eagerly at the default
 * lanes and at one, and as a graph, next to the hand CUDA limit (K streams; a CUDA graph on K
 * streams). bench_branches_defaults: size (GPU 256, CPU 64), steps (200, 10), repeat (5). */
int bench_branches(bench_ctx *ctx);
void bench_branches_defaults(bench_ctx *ctx);
/* --lanes "1,2,4" -> lanes[]: the count, or -1 after printing why. */
int bench_parse_lanes(const char *spec, int *lanes, int max);
int bench_report(bench_ctx *ctx); /* bench_report.c (jansson) */

/* bench_devices.c. What main and the sweep share: open an engine for ctx->o (backend mask, trace), select the
 * devices of ctx->o.backend (all of them when all_devices, else the first) or of `type` (-1:
 * the default preference for GPUs). Returns GPAR_OK or a status after printing why. */
int bench_open(bench_ctx *ctx, const char *trace);
/* The configuration bench_open uses: the environment's, then --tf32, the trace and the backend
 * mask of --backend / --all-backends. */
void bench_config(bench_ctx *ctx, gpar_config *cfg, const char *trace);
int bench_select_devices(bench_ctx *ctx, int all_devices, int type);
/* Backend names and ids: "host" <-> GPAR_BACKEND_HOST etc.; 0 / "?" when unknown. */
int bench_backend_id(const char *name);
const char *bench_backend_name(int id);

/* Time k back-to-back GEMMs of size ctx->n on the first selected device (after one warm-up);
 * for the sweep's iteration count. */
int bench_time_gemm(bench_ctx *ctx, int k, double *sec);

/* The sweep chart (bench_chart.c): one series per run (backend, machine). */
typedef struct bench_series {
  char label[160];   /* e.g. "opencl: 2 x pthread-skylake (PoCL)" */
  int ndev;          /* devices in the multi-device run */
  int npt;
  bench_point *pt;
} bench_series;
/* N devices "pay" when they do N devices' work in at least 5% less time than one device does it
 * (all/max(alone) <= ndev / BENCH_PAYS). */
#define BENCH_PAYS 1.05
/* The smallest measured size from which every larger one pays, or 0 when the last point does
 * not (or there is one device); raw picks the raw loop's ratio. */
int bench_crossover(const bench_series *s, int raw);
/* Write the SVG. Returns 0, or -1 after printing why. */
int bench_chart_svg(const char *path, const char *title, const bench_series *s, int ns);
/* tools/bench/bench_blas.c: batched and gemm-ex; 1 and *run set when name is one of them. */
int bench_blas_subcommand(const char *name, int (**run)(bench_ctx *));
/* The raw BLAS calls for this backend (tools/raw/raw_blas_*.c; NULL when not built). */
typedef int (*bench_raw_blas_fn)(const gpar_raw_blas_case *c, double *seconds, const char **what);
bench_raw_blas_fn bench_raw_blas_lookup(bench_ctx *ctx);
#define BENCH_BLAS_USAGE                                                                         \
  "  batched       strided-batched SGEMM as one op (gpar_sgemm_strided_batched), 64 x 256^3 and\n" \
  "                1000 x 64^3 (or --size S --batch B), next to the raw vendor call (cuBLAS,\n"    \
  "                CLBlast strided batched, a cblas_sgemm loop) and a loop of gpar_sgemm ops\n"     \
  "  gemm-ex       f16 and bf16 GEMM with f32 sums, C in f32 (gpar_gemm_ex; --dtype f16|bf16),\n"  \
  "                GPU 8192^3, CPU 512^3 (--size), next to raw cublasGemmEx (OpenCL, host: the\n"  \
  "                SGEMM libgpar's conversion path ends in, on f32 copies)\n"
/* tools/bench/bench_comm.c: allreduce and data-parallel; 1 and *run set when name is one of them. */
int bench_comm_subcommand(const char *name, int (**run)(bench_ctx *));
#define BENCH_COMM_USAGE                                                                        \
  "  allreduce     gpar_allreduce (float sum) over all selected devices, 8 B to --size MiB\n"   \
  "                (GPU 512, CPU 8): time, algbw, busbw = algbw x 2(n-1)/n; --raw: ncclAllReduce\n" \
  "  data-parallel per device 8 GEMM layers (--size, GPU 4096) forward, backward with each\n"    \
  "                gradient allreduced at once, update; 1 device vs all, with/without allreduce\n"

/* tools/bench/bench_array.c: the array ops' bandwidth next to hand kernels; tools/bench/bench_train.c: the
 * training step. bench_array_subcommand: 1, with *run and *all_devices set, when name is one. */
int bench_array(bench_ctx *ctx);
int bench_train(bench_ctx *ctx);
int bench_array_subcommand(const char *name, int (**run)(bench_ctx *), int *all_devices);
#define BENCH_ARRAY_USAGE                                                                       \
  "  array         gpar_binary, an elementwise map (saxpy) and gpar_reduce_range (sum) on the\n" \
  "                first device next to hand kernels launched the raw way (saxpy, a two-pass\n"  \
  "                sum): GB/s and ratios; --sizes takes exponents (GPU 20,24,28; CPU 16,20,24)\n" \
  "  train         the d2l data-parallel MLP step (tools/train/train_mlp.c, 784-SIZE-SIZE-10,\n"   \
  "                batch 256) on every selected device: loss after --iters steps (100) eager\n" \
  "                and through graphs, time per step of both; with several devices also one\n"  \
  "                device and the speedup (bench/train_torch.py is the PyTorch peer)\n"

/* Read a Chrome trace-event JSON (one event per line) and write an SVG timeline.
 * Returns 0, or -1 after printing why on stderr. */
/* from_us < to_us: only ops overlapping that window of trace time are drawn. */
int bench_trace_to_svg(const char *trace_path, const char *svg_path, const char *title, double from_us, double to_us);

#endif
