/* bench_report.c: gpar-bench report: merges sweep records into Markdown (stub for now). */
#include <stdio.h>

#include "bench_common.h"

int bench_report(bench_ctx *ctx) {
  (void)ctx;
  fprintf(stderr, "gpar-bench: report was not built (configure found no jansson: install libjansson-dev)\n");
  return 2;
}
