/* backend_status.c: an absent device is not an error. gpar_init says nothing on stderr about a
 * backend without devices unless the caller named that backend; gpar_backend_status keeps the
 * reason, and its device counts add up to the flat list. OpenCL is made absent here on purpose
 * (OCL_ICD_VENDORS pointing at an empty folder), so the quiet path runs on every machine; CUDA
 * is absent wherever there is no driver. */
#include <unistd.h>

#include "testutil.h"

static const struct {
  int id;
  const char *name;
} backends[] = {{GPAR_BACKEND_HOST, "host"}, {GPAR_BACKEND_CUDA, "cuda"}, {GPAR_BACKEND_OPENCL, "opencl"}};
#define NB 3

/* gpar_init with cfg.backends = mask and diagnostics on, stderr captured into err (cap bytes). */
static gpar_engine *init_capture(unsigned mask, char *err, size_t cap) {
  gpar_config cfg;
  gpar_engine *eng = NULL;
  gpar_config_init(&cfg);
  cfg.backends = mask;
  cfg.quiet = 0;
  fflush(stderr);
  FILE *tmp = tmpfile();
  int saved = dup(2);
  if (!tmp || saved < 0) bail_out("cannot capture stderr");
  dup2(fileno(tmp), 2);
  int st = gpar_init(&eng, &cfg);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  rewind(tmp);
  size_t n = fread(err, 1, cap - 1, tmp);
  err[n] = 0;
  for (char *p = err; *p; p++) /* one TAP line */
    if (*p == '\n') *p = *(p + 1) ? '|' : 0;
  fclose(tmp);
  if (st != GPAR_OK) {
    printf("Bail out! gpar_init: %s (%s)\n", gpar_status_name(st), gpar_last_error());
    exit(1);
  }
  return eng;
}

int main(void) {
  static char err[8192];
  setenv("OCL_ICD_VENDORS", "/nonexistent/gpar-test-no-icd", 1); /* before the first OpenCL call */
  tap_start();

  /* Default: every built backend probed, none named. */
  gpar_engine *eng = init_capture(0, err, sizeof err);
  int total = 0, count = gpar_device_count(eng);
  int absent[NB] = {0};
  char why[NB][256];
  for (int b = 0; b < NB; b++) {
    int n = -1;
    const char *r = NULL;
    int st = gpar_backend_status(eng, backends[b].id, &n, &r);
    ok(st == GPAR_OK && n >= 0 && r != NULL, "%s: gpar_backend_status answers (%s): %d device(s), reason '%s'",
       backends[b].name, gpar_status_name(st), n, r ? r : "(null)");
    snprintf(why[b], sizeof why[b], "%s", r ? r : "");
    total += n > 0 ? n : 0;
    if (n == 0) {
      ok(r && *r, "%s: no device, and the reason is kept: '%s'", backends[b].name, r ? r : "(null)");
      absent[b] = r && strncmp(r, "not built", 9) != 0;
    } else {
      ok(r && (!*r || !strncmp(r, "device ", 7)), "%s: devices, so no reason (or a skipped device's)",
         backends[b].name);
    }
  }
  ok(total == count, "device counts add up to the flat list (%d of %d)", total, count);
  {
    int n = -1;
    const char *r = NULL;
    ok(gpar_backend_status(eng, GPAR_BACKEND_HOST, &n, &r) == GPAR_OK && n == 1 && r && !*r,
       "host: exactly one device, no reason");
    ok(gpar_backend_status(eng, 8, &n, &r) == GPAR_EINVAL, "an unknown backend id is GPAR_EINVAL");
    ok(gpar_backend_status(eng, GPAR_BACKEND_HOST, NULL, NULL) == GPAR_OK, "ndev and reason may be NULL");
  }
  ok(strstr(err, "no device") == NULL && strstr(err, "no platform") == NULL,
     "gpar_init printed nothing about absent devices (stderr: '%s')", err);
  ok(gpar_shutdown(eng) == GPAR_OK, "shutdown");
  {
    int n = -1;
    ok(gpar_backend_status(eng, GPAR_BACKEND_HOST, &n, NULL) == GPAR_ESHUTDOWN,
       "gpar_backend_status after shutdown is GPAR_ESHUTDOWN");
  }

  /* Only the host named: the others are "not requested", and nothing is printed. */
  eng = init_capture(GPAR_BACKEND_HOST, err, sizeof err);
  for (int b = 1; b < NB; b++) {
    int n = -1;
    const char *r = NULL;
    gpar_backend_status(eng, backends[b].id, &n, &r);
    ok(n == 0 && r && (strstr(r, "not requested") || strstr(r, "not built")),
       "%s left out of gpar_config.backends: 0 devices, '%s'", backends[b].name, r ? r : "(null)");
  }
  ok(err[0] == 0, "nothing printed (stderr: '%s')", err);
  gpar_shutdown(eng);

  /* Each absent backend named explicitly: now its reason is printed. */
  for (int b = 1; b < NB; b++) {
    if (!absent[b]) {
      printf("ok %d # SKIP %s is not absent here (%s)\n", ++tap_count, backends[b].name,
             why[b][0] ? why[b] : "it has devices");
      continue;
    }
    eng = init_capture(GPAR_BACKEND_HOST | (unsigned)backends[b].id, err, sizeof err);
    ok(strstr(err, why[b]) != NULL, "%s named and absent: gpar_init says why on stderr ('%s')", backends[b].name, err);
    gpar_shutdown(eng);
  }
  return done_testing();
}
