/* gpar-bench: the D2L "Automatic Parallelism" experiments (multi-device, copy-overlap) and the
 * engine's own costs (gemm rate vs the vendor call, per-op overhead), with traces and SVG. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"

/* ---- the run's JSON record: the selection, the sizes, then the subcommand's results ---- */

static int json_write_file(bench_ctx *ctx) {
  if (!ctx->json) return 0;
  fclose(ctx->json);
  ctx->json = NULL;
  char *body = NULL;
  size_t blen = 0;
  FILE *f = open_memstream(&body, &blen);
  if (!f) {
    fprintf(stderr, "gpar-bench: open_memstream: %s\n", strerror(errno));
    return -1;
  }
  fprintf(f, "\"backend\":");
  bench_json_string(f, ctx->backend);
  fprintf(f, ",\"devices\":[");
  for (int d = 0; d < ctx->ndev; d++) {
    if (d) fputc(',', f);
    bench_json_string(f, ctx->info[d].name);
  }
  fprintf(f, "],\"device_indices\":[");
  for (int d = 0; d < ctx->ndev; d++) fprintf(f, "%s%d", d ? "," : "", ctx->flat[d]);
  fprintf(f, "],\"backend_indices\":[");
  for (int d = 0; d < ctx->ndev; d++) fprintf(f, "%s%d", d ? "," : "", ctx->local[d]);
  fprintf(f, "],\"device_info\":[");
  for (int d = 0; d < ctx->ndev; d++) {
    if (d) fputc(',', f);
    bench_meta_device(f, &ctx->info[d], ctx->flat[d]);
  }
  fprintf(f, "],\"size\":%d,\"iters\":%d,\"repeat\":%d,\"tf32\":%s,\"pageable\":%s,\"raw\":%s,"
             "\"results\":{%.*s}",
          ctx->n, ctx->iters, ctx->repeat, ctx->o.tf32 ? "true" : "false",
          ctx->o.pageable ? "true" : "false", ctx->o.raw ? "true" : "false",
          (int)ctx->json_len, ctx->json_buf ? ctx->json_buf : "");
  fclose(f);
  int rc = body ? bench_json_write(ctx, ctx->o.json_path, body) : -1;
  free(body);
  return rc;
}

/* ---- main ---- */

static void usage(FILE *f) {
  fprintf(f,
          "Usage: gpar-bench SUBCOMMAND [OPTION]...\n"
          "Benchmarks libgpar (the D2L \"Automatic Parallelism\" experiments, size sweeps, the\n"
          "engine's own costs) next to the raw vendor loop, and merges results into reports.\n"
          "\n"
          "Subcommands:\n"
          "  multi-device  D2L experiment 1: ITERS SGEMMs of SIZE^3 per device, each device alone,\n"
          "                then all at once with a single wait (speedup, ratio to N-fold)\n"
          "  copy-overlap  D2L experiment 2: ITERS SGEMMs, each result copied to host memory;\n"
          "                run alone, copy alone, both overlapped (ratio to max(run,copy)+one chunk)\n"
          "  gemm          SGEMM rate through libgpar next to the vendor call (cuBLAS, CLBlast,\n"
          "                OpenBLAS) on the same shape\n"
          "  overhead      engine cost per op on empty host ops (no buffers, independent over a\n"
          "                64-buffer pool, chain, fan-in 8 -> 1) next to a direct call and a thread\n"
          "                hand-off, in rounds (--repeat, default 5) that run them all in turn;\n"
          "                --iters = ops per case and round (default 200000); --workers, --breakdown\n"
          "  kernel        portable kernels (gpar_kernel_*) next to the same kernels written against\n"
          "                the vendor API: a tiny kernel's launches eager and in a graph, saxpy's\n"
          "                bandwidth over --sizes (2^16..2^28 on GPUs, ..2^24 elsewhere; 20 = 2^20),\n"
          "                builds (cold, memory hit, disk hit, new process), two devices at once;\n"
          "                --repeat rounds (default 5), --iters tiny launches per round\n"
          "  lanes         eager independent small ops at each compute-lane count of --lanes (default\n"
          "                1,2,4; gpar_config.lanes, an engine per count and round): SGEMMs SIZE^3\n"
          "                and (SIZE/4)^3 (GPU 256, CPU 128) each into its own output of a ring of\n"
          "                64, tiny kernel launches, a dependent GEMM chain, and the first and third\n"
          "                as a graph (the floor); --iters N: N GEMMs SIZE^3, 5N of the small ones\n"
          "                (GPU 2000); next to the eager limit written by hand: T threads, T streams\n"
          "                (queues) and T BLAS handles for T = each lane count (--raw's T-thread\n"
          "                loop; CUDA, OpenCL); --repeat rounds (default 5). Lanes apply to GPU\n"
          "                backends only: on host every count runs the same path\n"
          "  branches      K independent branches (--branches, default 4) of L layers (--layers, 8),\n"
          "                each an SGEMM SIZE^3 (GPU 256) then ReLU in place, issued layer by layer\n"
          "                across the branches: eagerly at the default compute lanes and at 1, and as\n"
          "                a graph, next to hand CUDA (1 thread, K streams; a CUDA graph on K streams);\n"
          "                us per layer and the lane counters (waits, events, hand-offs, moves)\n"
          "  sweep         multi-device and copy-overlap (with the raw loop) over a range of sizes,\n"
          "                on one backend (--backend) or on every device group of every backend;\n"
          "                prints a table, writes --json and an SVG chart (--svg)\n"
          "  report        report A.json B.json ...: merges sweep records (backends, machines)\n"
          "                into Markdown on stdout, with SVG charts in --outdir\n"
          BENCH_COMM_USAGE
          BENCH_BLAS_USAGE
          BENCH_ARRAY_USAGE
          "\n"
          "Options:\n"
          "  --backend B      host, cuda or opencl (default: first backend with a GPU, else\n"
          "                   opencl when present, else host; sweep: every backend)\n"
          "  --all-backends   open every backend while benchmarking the one --backend names\n"
          "                   (default: only that one and the host)\n"
          "  --devices N|L    the first N devices of that backend (its GPUs when it has any),\n"
          "                   or a list of backend-local indices such as 0,1 (one index: '1,');\n"
          "                   default: all for multi-device and sweep, the first for\n"
          "                   copy-overlap and gemm\n"
          "  --size N         matrix size (GPU: 4000; CPU devices, host or PoCL: 512)\n"
          "  --sizes L        sweep: sizes such as 64,128,256 (GPU: 64 to 4096 doubling; CPU\n"
          "                   devices: 32 to 1024)\n"
          "  --iters N        GEMMs per device (GPU: 50; CPU: 10; sweep: scaled so that each\n"
          "                   timed phase takes about 50 ms)\n"
          "  --repeat R       timed runs; print the median with min and max (default 1; sweep 3)\n"
          "  --batch B        batched: the batch count (with --size: one shape, default 64)\n"
          "  --dtype T        gemm-ex: f16 or bf16 only (default both)\n"
          "  --tf32           allow TF32 tensor-core math (cfg.tf32)\n"
          "  --pageable       copy-overlap: gpar_read into malloc memory, not GPAR_HOST buffers;\n"
          "                   gpar_read blocks, so run + copy submits every GEMM first, then\n"
          "                   reads the results in order while later GEMMs still run\n"
          "  --raw            also time the same loop through the raw vendor API (tools/raw/raw.h);\n"
          "                   sweep always does; lanes always times the eager limit by hand: T\n"
          "                   threads, T streams and T BLAS handles next to the one-thread loop\n"
          "  --graph          multi-device, copy-overlap: record each timed loop once as an op graph\n"
          "                   (gpar_graph_*), then time its launches; with --raw, also a hand-\n"
          "                   captured CUDA graph of the raw loop next to the raw loop\n"
          "  --breakdown      overhead: per-op host time by phase (submit, hand-off, dispatch,\n"
          "                   completion, retire), timed by the engine's tracing (gpar_breakdown_get)\n"
          "  --workers L      overhead: the cases at each CPU worker count of L, such as 2,4,8,16\n"
          "                   (0: one per core), each on its own engine (gpar_config.host_threads)\n"
          "                   opened for every round; prints the most / fewest workers ratio\n"
          "  --lanes L        lanes: the compute-lane counts to compare, such as 1,2,4 (1..8)\n"
          "  --json FILE      machine-readable results with the versions, devices, date and\n"
          "                   command line\n"
          "  --trace FILE     Chrome trace-event JSON of every op (Perfetto, chrome://tracing)\n"
          "  --svg FILE       self-contained SVG: the timeline of the trace; sweep: the chart\n"
          "  --label TEXT     sweep: the series name in tables, charts and reports\n"
          "  --outdir DIR     report: where the SVG charts go (default .); put the Markdown\n"
          "                   there too, the charts are linked by file name\n"
          "  -q, --quiet      no progress on stderr\n"
          "  -h, --help       show this help and exit\n"
          "  -V, --version    show the version and exit\n"
          "\n"
          "Environment:\n"
          "  GPAR_BACKENDS    host,cuda,opencl: the backends gpar_init probes\n"
          "  POCL_DEVICES     \"pthread pthread\" gives PoCL two CPU devices\n"
          "  GPAR_CUBLASLT    0: CUDA GEMMs by cublasSgemm on every call instead of cublasLt\n"
          "                   plans cached per shape (the last line says which path ran)\n"
          "\n"
          "Examples:\n"
          "  gpar-bench multi-device --backend cuda --raw --repeat 5\n"
          "\n"
          "  gpar-bench overhead --backend host --workers 2,4,8,16 --breakdown\n"
          "\n"
          "  gpar-bench lanes --backend cuda --lanes 1,2,4 --repeat 5 --json lanes.json\n"
          "\n"
          "  POCL_DEVICES=\"pthread pthread\" gpar-bench sweep --backend opencl --json ocl.json --svg ocl.svg\n"
          "\n"
          "  gpar-bench report cuda.json ocl.json --outdir out > out/report.md\n");
}

int main(int argc, char **argv) {
  if ((argc == 7 && !strcmp(argv[1], "--kernel-child")) || (argc == 5 && !strcmp(argv[1], "--kernel-child-raw")))
    return bench_kernel_child(argc, argv); /* (bench_kernel.c) */
  bench_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.host_dev = GPAR_HOST;
  ctx.out = stdout;
  /* The command as typed, for the records (getopt_long permutes argv). */
  char *argv_copy[argc + 1];
  memcpy(argv_copy, argv, sizeof(char *) * (size_t)(argc + 1));
  ctx.o.argc = argc;
  ctx.o.argv = argv_copy;
  time_t now = time(NULL);
  strftime(ctx.date, sizeof ctx.date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));

  enum { O_BACKEND = 256, O_DEVICES, O_SIZE, O_ITERS, O_REPEAT, O_TF32, O_PAGEABLE, O_RAW,
         O_JSON, O_TRACE, O_SVG, O_QUIET, O_ALLBE, O_SIZES, O_LABEL, O_OUTDIR, O_BREAKDOWN, O_GRAPH,
         O_WORKERS, O_BATCH, O_DTYPE, O_LANES, O_BRANCHES, O_LAYERS };
  static const struct option longopts[] = {
      {"backend", required_argument, 0, O_BACKEND}, {"devices", required_argument, 0, O_DEVICES},
      {"size", required_argument, 0, O_SIZE},       {"iters", required_argument, 0, O_ITERS},
      {"repeat", required_argument, 0, O_REPEAT},   {"tf32", no_argument, 0, O_TF32},
      {"pageable", no_argument, 0, O_PAGEABLE},     {"raw", no_argument, 0, O_RAW},
      {"json", required_argument, 0, O_JSON},       {"trace", required_argument, 0, O_TRACE},
      {"svg", required_argument, 0, O_SVG},         {"quiet", no_argument, 0, O_QUIET},
      {"breakdown", no_argument, 0, O_BREAKDOWN}, {"graph", no_argument, 0, O_GRAPH},
      {"workers", required_argument, 0, O_WORKERS}, {"lanes", required_argument, 0, O_LANES},
      {"branches", required_argument, 0, O_BRANCHES}, {"layers", required_argument, 0, O_LAYERS},
      {"batch", required_argument, 0, O_BATCH},     {"dtype", required_argument, 0, O_DTYPE},
      {"all-backends", no_argument, 0, O_ALLBE},    {"sizes", required_argument, 0, O_SIZES},
      {"label", required_argument, 0, O_LABEL},     {"outdir", required_argument, 0, O_OUTDIR},
      {"help", no_argument, 0, 'h'},                {"version", no_argument, 0, 'V'},
      {0, 0, 0, 0}};
  int c;
  long v;
  while ((c = getopt_long(argc, argv, "hqV", longopts, NULL)) != -1) {
    switch (c) {
    case O_BACKEND: ctx.o.backend = optarg; break;
    case O_DEVICES: ctx.o.devices = optarg; break;
    case O_SIZE:
    case O_ITERS:
    case O_REPEAT:
      v = bench_parse_int(optarg, 1, c == O_ITERS ? 1000000000L : 1000000L);
      if (v < 0) {
        fprintf(stderr, "gpar-bench: bad number '%s'\n", optarg);
        return 2;
      }
      if (c == O_SIZE) ctx.o.size = (int)v;
      if (c == O_ITERS) ctx.o.iters = (int)v;
      if (c == O_REPEAT) ctx.o.repeat = (int)v;
      break;
    case O_TF32: ctx.o.tf32 = 1; break;
    case O_PAGEABLE: ctx.o.pageable = 1; break;
    case O_RAW: ctx.o.raw = 1; break;
    case O_GRAPH: ctx.o.graph = 1; break;
    case O_JSON: ctx.o.json_path = optarg; break;
    case O_TRACE: ctx.o.trace_path = optarg; break;
    case O_SVG: ctx.o.svg_path = optarg; break;
    case O_ALLBE: ctx.o.all_backends = 1; break;
    case O_SIZES: ctx.o.sizes = optarg; break;
    case O_LABEL: ctx.o.label = optarg; break;
    case O_OUTDIR: ctx.o.outdir = optarg; break;
    case 'q':
    case O_QUIET: ctx.o.quiet = 1; break;
    case O_BREAKDOWN: ctx.o.breakdown = 1; break;
    case O_WORKERS: ctx.o.workers = optarg; break;
    case O_LANES: ctx.o.lanes = optarg; break;
    case O_BRANCHES: ctx.o.branches = atoi(optarg); break;
    case O_LAYERS: ctx.o.layers = atoi(optarg); break;
    case O_BATCH:
      if ((v = bench_parse_int(optarg, 1, 1000000L)) < 0) {
        fprintf(stderr, "gpar-bench: bad batch count '%s'\n", optarg);
        return 2;
      }
      ctx.o.batch = (int)v;
      break;
    case O_DTYPE:
      if (strcmp(optarg, "f16") && strcmp(optarg, "bf16")) {
        fprintf(stderr, "gpar-bench: --dtype f16 or bf16, not '%s'\n", optarg);
        return 2;
      }
      ctx.o.dtype = optarg;
      break;
    case 'h': usage(stdout); return 0;
    case 'V':
      printf("gpar-bench (libgpar) %s\ncommit %s\n", PACKAGE_VERSION, bench_version_string());
      return 0;
    default: usage(stderr); return 2;
    }
  }
  if (optind < argc && !strcmp(argv[optind], "report")) {
    ctx.o.subcommand = "report";
    ctx.o.files = argv + optind + 1;
    ctx.o.nfiles = argc - optind - 1;
    return bench_report(&ctx); /* reads argv[optind + 1 ...] */
  }
  if (optind != argc - 1) {
    usage(stderr);
    return 2;
  }
  ctx.o.subcommand = argv[optind];
  if (ctx.o.backend && !bench_backend_id(ctx.o.backend)) {
    fprintf(stderr, "gpar-bench: unknown backend '%s' (host, cuda or opencl)\n", ctx.o.backend);
    return 2;
  }
  if (ctx.o.workers && strcmp(ctx.o.subcommand, "overhead") != 0) {
    fprintf(stderr, "gpar-bench: --workers applies to overhead only\n");
    return 2;
  }
  int lane_counts[8];
  if (ctx.o.lanes && strcmp(ctx.o.subcommand, "lanes") != 0) {
    fprintf(stderr, "gpar-bench: --lanes applies to lanes only\n");
    return 2;
  }
  if (ctx.o.lanes && bench_parse_lanes(ctx.o.lanes, lane_counts, 8) < 0) return 2;
  int asked[BENCH_MAX_WORKER_COUNTS];
  if (ctx.o.workers && bench_parse_workers(ctx.o.workers, asked, BENCH_MAX_WORKER_COUNTS) < 0) return 2;
  if (ctx.o.workers && (ctx.o.trace_path || ctx.o.svg_path)) {
    fprintf(stderr, "gpar-bench: overhead --workers runs an engine per count; --trace and --svg trace one "
                    "engine: leave --workers out to trace\n");
    return 2;
  }
  int (*run)(bench_ctx *) = NULL;
  int all_devices = 0;
  if (!strcmp(ctx.o.subcommand, "multi-device")) {
    run = bench_multi_device;
    all_devices = 1;
  } else if (!strcmp(ctx.o.subcommand, "copy-overlap")) {
    run = bench_copy_overlap;
  } else if (!strcmp(ctx.o.subcommand, "gemm")) {
    run = bench_gemm;
    ctx.o.raw = 1; /* gemm always times the vendor call next to libgpar */
  } else if (!strcmp(ctx.o.subcommand, "overhead")) {
    run = bench_overhead;
  } else if (!strcmp(ctx.o.subcommand, "kernel")) {
    run = bench_kernel;
  } else if (!strcmp(ctx.o.subcommand, "lanes")) {
    run = bench_lanes;
    ctx.o.raw = 1; /* always next to the T-thread hand loop */
  } else if (!strcmp(ctx.o.subcommand, "branches")) {
    run = bench_branches;
  } else if (!strcmp(ctx.o.subcommand, "sweep")) {
    int rc = bench_sweep(&ctx);
    free(ctx.seen);
    return rc;
  } else if (bench_comm_subcommand(ctx.o.subcommand, &run)) { /* tools/bench/bench_comm.c */
    all_devices = 1;
  } else if (bench_blas_subcommand(ctx.o.subcommand, &run)) { /* tools/bench/bench_blas.c */
    ctx.o.raw = 1; /* always next to the vendor call */
  } else if (bench_array_subcommand(ctx.o.subcommand, &run, &all_devices)) { /* tools/bench/bench_array.c */
  } else {
    fprintf(stderr, "gpar-bench: unknown subcommand '%s'\n", ctx.o.subcommand);
    usage(stderr);
    return 2;
  }

  /* The trace: --trace FILE, or a temporary file when only --svg was asked for. */
  char tmp_trace[64] = "";
  const char *trace = ctx.o.trace_path;
  if (ctx.o.svg_path && !trace) {
    snprintf(tmp_trace, sizeof tmp_trace, "/tmp/gpar-bench-trace-XXXXXX");
    int fd = mkstemp(tmp_trace);
    if (fd < 0) {
      fprintf(stderr, "gpar-bench: mkstemp: %s\n", strerror(errno));
      return 1;
    }
    close(fd);
    trace = tmp_trace;
  }

  int st = bench_open(&ctx, ctx.o.breakdown && !trace ? "" : trace); /* "": time ops, no file */
  if (st != GPAR_OK) {
    if (*tmp_trace) unlink(tmp_trace);
    return 1;
  }
  int hd = ctx.host_dev;

  int rc = 0;
  if (run == bench_overhead) {
    /* Host ops only: the "selection" is the host CPU device. */
    ctx.backend_id = GPAR_BACKEND_HOST;
    ctx.backend = "host";
    if (hd >= 0) {
      ctx.ndev = 1;
      ctx.flat[0] = hd;
      gpar_device_info(ctx.eng, hd, &ctx.info[0]);
      ctx.local[0] = ctx.info[0].backend_index;
      snprintf(ctx.label[0], sizeof ctx.label[0], "CPU1");
    }
    ctx.n = 0;
    ctx.iters = ctx.o.iters ? ctx.o.iters : 200000;
    ctx.repeat = ctx.o.repeat ? ctx.o.repeat : 5;
  } else {
    st = bench_select_devices(&ctx, all_devices, -1);
    if (st != GPAR_OK) rc = 1;
    ctx.n = ctx.o.size ? ctx.o.size : ctx.any_gpu ? 4000 : 512;
    ctx.iters = ctx.o.iters ? ctx.o.iters : ctx.any_gpu ? 50 : 10;
    ctx.repeat = ctx.o.repeat ? ctx.o.repeat : run == bench_kernel ? 5 : 1;
    if (run == bench_lanes) bench_lanes_defaults(&ctx);
    if (run == bench_branches) bench_branches_defaults(&ctx);
  }

  if (!rc && ctx.o.json_path) {
    ctx.json = open_memstream(&ctx.json_buf, &ctx.json_len);
    if (!ctx.json) {
      fprintf(stderr, "gpar-bench: open_memstream: %s\n", strerror(errno));
      rc = 1;
    }
    ctx.json_first = 1;
  }

  if (!rc) {
    if (run != bench_overhead) {
      printf("backend %s:", ctx.backend);
      for (int d = 0; d < ctx.ndev; d++)
        printf(" %s = device %d (%s:%d, %s)", ctx.label[d], ctx.flat[d], ctx.backend,
               ctx.local[d], ctx.info[d].name);
      char machine[320];
      printf("\nsize %d, iters %d, repeat %d%s; machine: %s\n", ctx.n, ctx.iters, ctx.repeat,
             ctx.o.tf32 ? ", tf32" : "", bench_machine(machine, sizeof machine));
    }
    fflush(stdout);
    rc = run(&ctx);
  }

  { /* Which path the CUDA GEMMs took (GPAR_CUBLASLT): cached cublasLt plans or cublasSgemm/Dgemm. */
    gpar_stats gs;
    if (gpar_stats_get(ctx.eng, &gs) == GPAR_OK && gs.gemm_lt_calls + gs.gemm_lt_fallbacks > 0)
      printf("cuda gemms: %llu through cublasLt plans, %llu by cublasSgemm/Dgemm\n",
             (unsigned long long)gs.gemm_lt_calls, (unsigned long long)gs.gemm_lt_fallbacks);
  }
  st = gpar_shutdown(ctx.eng); /* writes the trace */
  if (st != GPAR_OK) {
    bench_fail("gpar_shutdown", st);
    rc = 1;
  }
  if (ctx.json && json_write_file(&ctx) != 0) rc = 1;
  if (ctx.json) {
    fclose(ctx.json);
    ctx.json = NULL;
  }
  free(ctx.json_buf);
  if (ctx.o.trace_path && st == GPAR_OK) printf("trace: %s\n", ctx.o.trace_path);
  if (ctx.o.svg_path && st == GPAR_OK) {
    char title[256];
    snprintf(title, sizeof title, "gpar-bench %s, backend %s, size %d, iters %d",
             ctx.o.subcommand, ctx.backend ? ctx.backend : "?", ctx.n, ctx.iters);
    if (bench_trace_to_svg(trace, ctx.o.svg_path, title, ctx.svg_from * 1e6, ctx.svg_to * 1e6) != 0)
      rc = 1;
    else
      printf("svg: %s\n", ctx.o.svg_path);
  }
  if (*tmp_trace) unlink(tmp_trace);
  if (ctx.check_failed) {
    fprintf(stderr, "gpar-bench: results were WRONG (see above)\n");
    rc = 1;
  }
  free(ctx.seen);
  return rc;
}
