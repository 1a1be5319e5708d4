/* error.c: status names and descriptions (from the GPAR_STATUS_MAP X-macro), the per-thread
 * detailed message of the last failure, and diagnostics on stderr. With backend.h, the bottom
 * of core/: backends and every layer above call it. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "backend.h"

static _Thread_local char gpar__msg[512];
static int gpar__quiet;

GPAR_API const char *gpar_strerror(int status) {
  switch (status) {
#define GPAR__STATUS_TEXT(name, value, text) case GPAR_##name: return text;
    GPAR_STATUS_MAP(GPAR__STATUS_TEXT)
#undef GPAR__STATUS_TEXT
  }
  return "unknown status";
}

GPAR_API const char *gpar_status_name(int status) {
  switch (status) {
#define GPAR__STATUS_NAME(name, value, text) case GPAR_##name: return "GPAR_" #name;
    GPAR_STATUS_MAP(GPAR__STATUS_NAME)
#undef GPAR__STATUS_NAME
  }
  return "GPAR_UNKNOWN";
}

GPAR_API const char *gpar_last_error(void) { return gpar__msg; }

const char *gpar__error_msg(void) { return gpar__msg; }

void gpar__clear_error(void) { gpar__msg[0] = 0; }

void gpar__set_error_msg(int status, const char *msg) {
  if (msg && *msg)
    snprintf(gpar__msg, sizeof gpar__msg, "%s", msg);
  else
    snprintf(gpar__msg, sizeof gpar__msg, "%s", gpar_strerror(status));
}

int gpar__errorf(int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(gpar__msg, sizeof gpar__msg, fmt, ap);
  va_end(ap);
  return status;
}

void gpar__set_quiet(int quiet) { gpar__quiet = quiet; }

void gpar__log(const char *fmt, ...) {
  if (gpar__quiet) return;
  va_list ap;
  va_start(ap, fmt);
  fputs("gpar: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

void gpar__log_errors(const char *log, char *out, size_t cap) {
  size_t n = 0;
  int lines = 0;
  out[0] = 0;
  for (int pass = 0; pass < 2 && !lines; pass++) /* lines naming an error; else the log's first */
    for (const char *p = log ? log : ""; *p && lines < 3 && n + 4 < cap;) {
      const char *nl = strchr(p, '\n');
      size_t l = nl ? (size_t)(nl - p) : strlen(p);
      int pick = l > 0 && (pass == 1 || memmem(p, l, "error", 5) || memmem(p, l, "Error", 5));
      if (pick) {
        n += (size_t)snprintf(out + n, cap - n, "%s%.*s", lines ? " | " : "", (int)(l > 200 ? 200 : l), p);
        if (n >= cap) n = cap - 1;
        lines++;
      }
      p += l + (nl != NULL);
    }
  if (!lines) snprintf(out, cap, "(the compiler said nothing)");
}
