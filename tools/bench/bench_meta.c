/* bench_meta.c: the provenance every gpar-bench JSON record carries, so that runs from other
 * backends and machines can be compared and reproduced: versions, devices, machine, date,
 * command; and the record file itself (bench_json_write). */
#include <cblas.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_common.h"
#include "bench_git.h" /* GPAR_GIT_COMMIT, generated at build time (tools/local.mk) */

#ifndef GPAR_CLBLAST_VERSION
#define GPAR_CLBLAST_VERSION "unknown"
#endif

const char *bench_version_string(void) { return GPAR_GIT_COMMIT; }

/* The CPU model from /proc/cpuinfo ("model name"), or "" where there is none. */
static void cpu_model(char *buf, size_t len) {
  char line[512];
  buf[0] = 0;
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10) != 0) continue;
    const char *v = strchr(line, ':');
    if (!v) continue;
    for (v++; *v == ' ' || *v == '\t'; v++) {}
    snprintf(buf, len, "%s", v);
    buf[strcspn(buf, "\n")] = 0;
    break;
  }
  fclose(f);
}

static long cores_online(void) { return sysconf(_SC_NPROCESSORS_ONLN); }

const char *bench_machine(char *buf, size_t len) {
  char model[256];
  cpu_model(model, sizeof model);
  snprintf(buf, len, "%ld cores online%s%s%s", cores_online(), *model ? " (" : "", model, *model ? ")" : "");
  return buf;
}

void bench_meta_collect(bench_ctx *ctx, gpar_engine *eng) {
  int n = gpar_device_count(eng);
  for (int d = 0; d < n; d++) {
    gpar_device_props p;
    if (gpar_device_info(eng, d, &p) != GPAR_OK) continue;
    int known = 0;
    for (int i = 0; i < ctx->nseen && !known; i++)
      known = ctx->seen[i].backend_id == p.backend_id && ctx->seen[i].backend_index == p.backend_index;
    if (known) continue;
    gpar_device_props *grown = realloc(ctx->seen, (size_t)(ctx->nseen + 1) * sizeof *grown);
    if (!grown) return;
    ctx->seen = grown;
    ctx->seen[ctx->nseen++] = p;
  }
}

static const char *type_name(gpar_device_type t) {
  return t == GPAR_DEVICE_GPU ? "GPU" : t == GPAR_DEVICE_CPU ? "CPU" : "other";
}

void bench_meta_device(FILE *f, const gpar_device_props *p, int flat) {
  fprintf(f, "{\"index\":%d,\"backend\":", flat);
  bench_json_string(f, p->backend);
  fprintf(f, ",\"backend_index\":%d,\"name\":", p->backend_index);
  bench_json_string(f, p->name);
  fprintf(f, ",\"vendor\":");
  bench_json_string(f, p->vendor);
  fprintf(f, ",\"type\":\"%s\",\"memory_bytes\":%llu,\"compute_units\":%d,\"copy_engines\":%d,"
             "\"driver_version\":",
          type_name(p->type), (unsigned long long)p->memory_bytes, p->compute_units, p->copy_engines);
  bench_json_string(f, p->driver_version);
  fprintf(f, ",\"runtime_version\":");
  bench_json_string(f, p->runtime_version);
  fputc('}', f);
}

/* The command line as a shell would take it back: arguments with odd characters quoted. */
static void write_command(FILE *f, int argc, char **argv) {
  char *cmd = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&cmd, &len);
  if (!m) return;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (i) fputc(' ', m);
    if (*a && strspn(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=.,/:+@%") == strlen(a)) {
      fputs(i == 0 && strrchr(a, '/') ? strrchr(a, '/') + 1 : a, m); /* program: its name */
      continue;
    }
    fputc('\'', m);
    for (; *a; a++) {
      if (*a == '\'')
        fputs("'\\''", m);
      else
        fputc(*a, m);
    }
    fputc('\'', m);
  }
  fclose(m);
  bench_json_string(f, cmd);
  free(cmd);
}

void bench_meta_write(bench_ctx *ctx, FILE *f) {
  static const char *const env_vars[] = {"GPAR_BACKENDS", "GPAR_HOST_THREADS", "GPAR_CUBLASLT",
                                         "GPAR_PINNED_PROVIDER", "GPAR_COMM_STAGED",
                                         "GPAR_TF32", "GPAR_SYNC", "GPAR_TRACE", "POCL_DEVICES",
                                         "POCL_MAX_PTHREAD_COUNT", "CUDA_VISIBLE_DEVICES",
                                         "OCL_ICD_VENDORS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"};
  char host[256] = "";
  if (gethostname(host, sizeof host - 1) != 0) host[0] = 0;
  fprintf(f, "{\"tool\":\"gpar-bench\",\"libgpar_version\":");
  bench_json_string(f, PACKAGE_VERSION);
  fprintf(f, ",\"git_commit\":");
  bench_json_string(f, GPAR_GIT_COMMIT);
  fprintf(f, ",\"date\":");
  bench_json_string(f, ctx->date);
  fprintf(f, ",\"command\":");
  write_command(f, ctx->o.argc, ctx->o.argv);
  fprintf(f, ",\"hostname\":");
  bench_json_string(f, host);
  char model[256];
  cpu_model(model, sizeof model);
  fprintf(f, ",\"cpu_cores_online\":%ld,\"cpu_model\":", cores_online());
  bench_json_string(f, model);
  fprintf(f, ",\"environment\":{");
  int first = 1;
  for (size_t i = 0; i < sizeof env_vars / sizeof env_vars[0]; i++) {
    const char *v = getenv(env_vars[i]);
    if (!v) continue;
    fprintf(f, "%s\"%s\":", first ? "" : ",", env_vars[i]);
    bench_json_string(f, v);
    first = 0;
  }
  /* Library versions: OpenBLAS asks itself; CLBlast from configure (pkg-config); CUDA and
   * OpenCL from the devices (gpar_device_props driver_version / runtime_version). */
  const char *blas = openblas_get_config();
  fprintf(f, "},\"versions\":{\"openblas\":");
  bench_json_string(f, blas ? blas : "unknown");
  fprintf(f, ",\"clblast\":");
  bench_json_string(f, GPAR_CLBLAST_VERSION);
  fprintf(f, ",\"compiler\":");
  bench_json_string(f, __VERSION__);
  for (int i = 0; i < ctx->nseen; i++)
    if (ctx->seen[i].backend_id == GPAR_BACKEND_CUDA) {
      fprintf(f, ",\"cuda_driver\":");
      bench_json_string(f, ctx->seen[i].driver_version);
      fprintf(f, ",\"cuda_runtime\":");
      bench_json_string(f, ctx->seen[i].runtime_version);
      break;
    }
  fprintf(f, ",\"opencl\":[");
  first = 1;
  for (int i = 0; i < ctx->nseen; i++) { /* each platform once */
    if (ctx->seen[i].backend_id != GPAR_BACKEND_OPENCL) continue;
    int dup = 0;
    for (int j = 0; j < i && !dup; j++)
      dup = ctx->seen[j].backend_id == GPAR_BACKEND_OPENCL &&
            !strcmp(ctx->seen[j].runtime_version, ctx->seen[i].runtime_version) &&
            !strcmp(ctx->seen[j].driver_version, ctx->seen[i].driver_version);
    if (dup) continue;
    char buf[sizeof ctx->seen[i].runtime_version + sizeof ctx->seen[i].driver_version + 16];
    snprintf(buf, sizeof buf, "%s (driver %s)", ctx->seen[i].runtime_version, ctx->seen[i].driver_version);
    if (!first) fputc(',', f);
    bench_json_string(f, buf);
    first = 0;
  }
  fprintf(f, "]},\"devices\":[");
  for (int i = 0; i < ctx->nseen; i++) {
    if (i) fputc(',', f);
    bench_meta_device(f, &ctx->seen[i], i);
  }
  fprintf(f, "]}");
}

/* The record file: {"subcommand":..., "meta":{...}, <body>}. */
int bench_json_write(bench_ctx *ctx, const char *path, const char *body) {
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "gpar-bench: %s: %s\n", path, strerror(errno));
    return -1;
  }
  fprintf(f, "{\"subcommand\":");
  bench_json_string(f, ctx->o.subcommand);
  fprintf(f, ",\"meta\":");
  bench_meta_write(ctx, f);
  fprintf(f, ",%s}\n", body);
  int bad = ferror(f);
  if (fclose(f) != 0 || bad) {
    fprintf(stderr, "gpar-bench: writing %s failed\n", path);
    return -1;
  }
  return 0;
}
