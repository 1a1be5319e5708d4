/* bench_json.c: the JSON writers behind --json: strings and numbers, and the members of the
 * "results" object being built in ctx->json (no-ops without --json). */
#include <stdio.h>
#include <string.h>

#include "bench_common.h"

void bench_json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; s && *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c < 0x20)
      fprintf(f, "\\u%04x", c);
    else
      fputc(c, f);
  }
  fputc('"', f);
}

void bench_json_number(FILE *f, double v) {
  if (v != v || v > 1e300 || v < -1e300)
    fprintf(f, "null");
  else
    fprintf(f, "%.9g", v);
}

static void json_key(bench_ctx *ctx, const char *key) {
  if (!ctx->json_first) fputc(',', ctx->json);
  ctx->json_first = 0;
  if (!key) return; /* an array element */
  bench_json_string(ctx->json, key);
  fputc(':', ctx->json);
}

void bench_json_num(bench_ctx *ctx, const char *key, double v) {
  if (!ctx->json) return;
  json_key(ctx, key);
  bench_json_number(ctx->json, v);
}

void bench_json_str(bench_ctx *ctx, const char *key, const char *v) {
  if (!ctx->json) return;
  json_key(ctx, key);
  bench_json_string(ctx->json, v);
}

void bench_json_stat(bench_ctx *ctx, const char *key, bench_stat s, const double *runs) {
  if (!ctx->json) return;
  json_key(ctx, key);
  fprintf(ctx->json, "{\"median\":");
  bench_json_number(ctx->json, s.med);
  fprintf(ctx->json, ",\"min\":");
  bench_json_number(ctx->json, s.min);
  fprintf(ctx->json, ",\"max\":");
  bench_json_number(ctx->json, s.max);
  fprintf(ctx->json, ",\"runs\":[");
  for (int i = 0; runs && i < s.count; i++) {
    if (i) fputc(',', ctx->json);
    bench_json_number(ctx->json, runs[i]);
  }
  fprintf(ctx->json, "]}");
}

void bench_json_begin(bench_ctx *ctx, const char *key) {
  if (!ctx->json) return;
  json_key(ctx, key);
  fputc('{', ctx->json);
  ctx->json_first = 1;
}

void bench_json_end(bench_ctx *ctx) {
  if (!ctx->json) return;
  fputc('}', ctx->json);
  ctx->json_first = 0;
}

void bench_json_array_begin(bench_ctx *ctx, const char *key) {
  if (!ctx->json) return;
  json_key(ctx, key);
  fputc('[', ctx->json);
  ctx->json_first = 1;
}

void bench_json_array_end(bench_ctx *ctx) {
  if (!ctx->json) return;
  fputc(']', ctx->json);
  ctx->json_first = 0;
}

void bench_json_elem_begin(bench_ctx *ctx) {
  if (!ctx->json) return;
  json_key(ctx, NULL);
  fputc('{', ctx->json);
  ctx->json_first = 1;
}
