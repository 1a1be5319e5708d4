/* gpar-info: lists every device of libgpar's flat device list in one table (think clinfo -l and
 * nvidia-smi -L together), then each backend's device count or why it has none, what builds
 * kernels on each device (NVRTC and the sm_XY, the OpenCL C version, the host compiler), then the
 * peer-access matrix. Exits 0 even when only the CPU exists. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpar.h"

static const char *type_name(gpar_device_type t) {
  switch (t) {
  case GPAR_DEVICE_CPU: return "CPU";
  case GPAR_DEVICE_GPU: return "GPU";
  default: return "other";
  }
}

static void usage(FILE *f) {
  fprintf(f, "usage: gpar-info [-h]\n"
             "Lists libgpar's devices (every built backend: host, cuda, opencl), each backend's\n"
             "device count or why it has none, what builds kernels on each device (NVRTC\n"
             "version and sm_XY, OpenCL C version, host compiler) or why nothing can, and the\n"
             "peer-access matrix ('P': direct copies from the row device to the column device).\n"
             "Environment: GPAR_BACKENDS=host,cuda,opencl limits the backends probed.\n");
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      usage(stdout);
      return 0;
    }
    usage(stderr);
    return 2;
  }

  gpar_engine *eng = NULL;
  int st = gpar_init(&eng, NULL); /* NULL: defaults plus environment (GPAR_BACKENDS, ...) */
  if (st != GPAR_OK) {
    fprintf(stderr, "gpar-info: gpar_init: %s (%s)\n", gpar_strerror(st), gpar_last_error());
    return 1;
  }
  int n = gpar_device_count(eng);
  if (n < 0) {
    fprintf(stderr, "gpar-info: gpar_device_count: %s (%s)\n", gpar_strerror(n), gpar_last_error());
    gpar_shutdown(eng);
    return 1;
  }

  gpar_device_props *info = calloc(n > 0 ? (size_t)n : 1, sizeof *info);
  if (!info) {
    fprintf(stderr, "gpar-info: out of memory\n");
    gpar_shutdown(eng);
    return 1;
  }
  int name_w = 4, vendor_w = 6;
  for (int d = 0; d < n; d++) {
    st = gpar_device_info(eng, d, &info[d]);
    if (st != GPAR_OK) {
      fprintf(stderr, "gpar-info: gpar_device_info(%d): %s (%s)\n", d, gpar_strerror(st),
              gpar_last_error());
      snprintf(info[d].backend, sizeof info[d].backend, "?");
      snprintf(info[d].name, sizeof info[d].name, "(error)");
      info[d].type = GPAR_DEVICE_OTHER;
      info[d].backend_index = -1;
    }
    int l = (int)strlen(info[d].name);
    if (l > name_w) name_w = l;
    l = (int)strlen(info[d].vendor);
    if (l > vendor_w) vendor_w = l;
  }
  if (name_w > 48) name_w = 48;
  if (vendor_w > 32) vendor_w = 32;

  printf("%d device%s\n\n", n, n == 1 ? "" : "s");
  printf("%-3s  %-10s  %-*s  %-*s  %-5s  %9s  %5s  %4s\n", "dev", "backend", vendor_w, "vendor",
         name_w, "name", "type", "mem(GiB)", "CUs", "copy");
  for (int d = 0; d < n; d++) {
    char be[24];
    snprintf(be, sizeof be, "%s:%d", info[d].backend, info[d].backend_index);
    printf("%-3d  %-10s  %-*.*s  %-*.*s  %-5s  %9.2f  %5d  %4d\n", d, be, vendor_w, vendor_w,
           info[d].vendor, name_w, name_w, info[d].name, type_name(info[d].type),
           (double)info[d].memory_bytes / (1024.0 * 1024.0 * 1024.0), info[d].compute_units,
           info[d].copy_engines);
  }

  /* Backends: device count, or why none (gpar_init prints that only for a backend the caller
   * named; gpar-info shows it always). */
  static const struct { int id; const char *name; } backends[] = {
      {GPAR_BACKEND_HOST, "host"}, {GPAR_BACKEND_CUDA, "cuda"}, {GPAR_BACKEND_OPENCL, "opencl"}};
  printf("\nbackends\n");
  for (size_t b = 0; b < sizeof backends / sizeof backends[0]; b++) {
    int nb = 0;
    const char *why = "";
    st = gpar_backend_status(eng, backends[b].id, &nb, &why);
    if (st != GPAR_OK)
      printf("  %-7s ? (gpar_backend_status: %s)\n", backends[b].name, gpar_status_name(st));
    else
      printf("  %-7s %d device%s%s%s\n", backends[b].name, nb, nb == 1 ? "" : "s", *why ? ": " : "", why);
  }

  /* Kernels: what builds them on each device (gpar_kernel_support), or why nothing can. */
  printf("\nkernels (gpar_kernel_*: what builds them)\n");
  for (int d = 0; d < n; d++) {
    char what[512];
    st = gpar_kernel_support(eng, d, what, sizeof what);
    printf("  %-3d %s%s\n", d, st == GPAR_OK ? "" : "no: ", what);
  }

  /* Peer-access matrix: row = source device, column = destination. */
  printf("\npeer access (row -> column: P direct copies, . staged through the host)\n");
  printf("     ");
  for (int j = 0; j < n; j++) printf("%3d", j);
  printf("\n");
  for (int i = 0; i < n; i++) {
    printf("%3d  ", i);
    for (int j = 0; j < n; j++) {
      char c = '.';
      if (i == j)
        c = '-';
      else if (j < 64 && (info[i].peer_mask >> j) & 1u)
        c = 'P';
      printf("%3c", c);
    }
    printf("\n");
  }

  free(info);
  st = gpar_shutdown(eng);
  if (st != GPAR_OK) {
    fprintf(stderr, "gpar-info: gpar_shutdown: %s (%s)\n", gpar_strerror(st), gpar_last_error());
    return 1;
  }
  return 0;
}
