/* engine_cycles.c: memory stays flat over many engine lifetimes that each ran an OpenCL GEMM
 * (a fuzzer finding: CLBlast's process-wide program cache used to keep every engine's
 * programs and context, about 1.7 MB per engine on PoCL). Two phases of N cycles of gpar_init,
 * one sgemm on the first OpenCL device, gpar_shutdown: first alone, then while another engine
 * with its own OpenCL GEMMs stays alive (its work must not be disturbed). Resident memory after
 * each phase may exceed the level after the warm-up cycles (10 of 40) by at most 5 MB.
 * GPAR_CYCLES sets N (default 40; the full run is 1000). Skips without OpenCL. */
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "testutil.h"

/* Sanitizers keep freed memory (ASan's quarantine) or shadow it: resident memory says nothing
 * about leaks there, so the flatness checks skip (the cycles still run). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RSS_MEANINGLESS "resident memory is not meaningful under a sanitizer"
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define RSS_MEANINGLESS "resident memory is not meaningful under a sanitizer"
#endif
#endif

#define DIM 64
#define SLACK_MB 5.0

/* Resident memory in MB. With glibc, free memory that malloc keeps in its per-thread arenas is
 * returned first (malloc_trim): every engine starts and joins its own threads, and the arenas
 * they leave behind fragment differently from run to run (seen: +0.7 MB over 1000 cycles with
 * MALLOC_ARENA_MAX=1, +7 MB without). What is still allocated (CLBlast's cache was) stays. */
static double rss_mb(void) {
  long pages = 0, resident = 0;
#ifdef __GLIBC__
  malloc_trim(0);
#endif
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f) return -1;
  if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
  fclose(f);
  return resident < 0 ? -1 : (double)resident * (double)sysconf(_SC_PAGESIZE) / (1024.0 * 1024.0);
}

static gpar_engine *engine(void) { return tu_engine(GPAR_BACKEND_HOST | GPAR_BACKEND_OPENCL, 2, 0); }

/* One sgemm C = A * B on dev (A = 1, B = 2: every C element is 2 * DIM); GPAR_OK when right. */
static int one_gemm(gpar_engine *eng, int dev, char *why, size_t whylen) {
  static float a[DIM * DIM], b[DIM * DIM], c[DIM * DIM];
  gpar_buffer ba = {0}, bb = {0}, bc = {0};
  const size_t bytes = sizeof a;
  int st;
  for (int i = 0; i < DIM * DIM; i++) {
    a[i] = 1.0f;
    b[i] = 2.0f;
    c[i] = -1.0f;
  }
  if ((st = gpar_buffer_create(eng, dev, bytes, &ba)) || (st = gpar_buffer_create(eng, dev, bytes, &bb)) ||
      (st = gpar_buffer_create(eng, dev, bytes, &bc)) || (st = gpar_write(ba, 0, a, bytes)) ||
      (st = gpar_write(bb, 0, b, bytes)) ||
      (st = gpar_sgemm(GPAR_NO_TRANS, GPAR_NO_TRANS, DIM, DIM, DIM, 1.0f, ba, 0, DIM, bb, 0, DIM, 0.0f, bc, 0, DIM)) ||
      (st = gpar_read(bc, 0, c, bytes))) {
    snprintf(why, whylen, "%s (%s)", gpar_status_name(st), gpar_last_error());
  } else {
    for (int i = 0; i < DIM * DIM && st == GPAR_OK; i++)
      if (c[i] != 2.0f * DIM) {
        snprintf(why, whylen, "C[%d] = %g, want %g", i, c[i], 2.0 * DIM);
        st = GPAR_EBACKEND;
      }
  }
  if (ba.id) gpar_buffer_release(ba);
  if (bb.id) gpar_buffer_release(bb);
  if (bc.id) gpar_buffer_release(bc);
  return st;
}

/* The flatness check: cycles worked (r) and memory grew by at most SLACK_MB. */
static void flat(int r, double growth, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void flat(int r, double growth, const char *fmt, ...) {
  char text[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
#ifdef RSS_MEANINGLESS
  (void)growth;
  printf("ok %d - %s # SKIP %s\n", ++tap_count, text, RSS_MEANINGLESS);
  if (!r) diag("(the cycles themselves failed)");
#else
  ok(r && growth <= SLACK_MB, "%s", text);
#endif
}

/* n cycles; 1 when every one worked. *base: RSS after the warm-up cycles, *end: at the end. */
static int cycles(int n, int warm, double *base, double *end, char *why, size_t whylen) {
  for (int i = 0; i < n; i++) {
    gpar_engine *eng = engine();
    int dev = gpar_device_find(eng, GPAR_BACKEND_OPENCL, -1, 0);
    int st = dev < 0 ? dev : one_gemm(eng, dev, why, whylen);
    int sst = gpar_shutdown(eng);
    if (st || sst) {
      if (!st) snprintf(why, whylen, "shutdown: %s", gpar_status_name(sst));
      diag("cycle %d failed", i);
      return 0;
    }
    if (i + 1 == warm) *base = rss_mb();
    if (n >= 200 && (i + 1) % (n / 4) == 0) diag("  after %d cycles: %.1f MB", i + 1, rss_mb());
  }
  *end = rss_mb();
  return 1;
}

int main(void) {
  const char *e = getenv("GPAR_CYCLES");
  int n = e && atoi(e) > 0 ? atoi(e) : 40;
  int warm = n < 10 ? 1 : n < 20 ? 5 : 10; /* the heap settles over the first engines (+5 MB over 200 after 5) */
  char why[512] = "";
  double base = 0, end = 0;

  gpar_engine *probe = engine();
  int has = gpar_device_find(probe, GPAR_BACKEND_OPENCL, -1, 0) >= 0;
  gpar_shutdown(probe);
  if (!has) skip_all("no OpenCL device");
  if (rss_mb() < 0) skip_all("no /proc/self/statm");
  plan(6);
  diag("%d cycles per phase (GPAR_CYCLES), %d warm-up", n, warm);

  double t0 = gpar_now();
  int r = cycles(n, warm, &base, &end, why, sizeof why);
  ok(r, "alone: %d cycles of init, sgemm %dx%dx%d on OpenCL, shutdown (%.1f ms each) %s", n, DIM, DIM, DIM,
     (gpar_now() - t0) * 1e3 / n, why);
  flat(r, end - base, "alone: resident memory flat: %.1f MB after %d cycles, %.1f MB at the end (%+.2f MB)", base, warm,
       end, end - base);

  /* The same while another engine lives and runs GEMMs before and after. */
  gpar_engine *anchor = engine();
  int adev = gpar_device_find(anchor, GPAR_BACKEND_OPENCL, -1, 0);
  int st = one_gemm(anchor, adev, why, sizeof why);
  ok(st == GPAR_OK, "a long-lived engine runs its sgemm %s", why);
  t0 = gpar_now();
  r = cycles(n, warm, &base, &end, why, sizeof why);
  flat(r, end - base,
       "beside it: %d cycles (%.1f ms each), resident memory %.1f MB after %d, %.1f MB at the end (%+.2f MB) %s", n,
       (gpar_now() - t0) * 1e3 / n, base, warm, end, end - base, why);
  st = one_gemm(anchor, adev, why, sizeof why);
  ok(st == GPAR_OK, "the long-lived engine's sgemm still works afterwards %s", why);
  ok(gpar_shutdown(anchor) == GPAR_OK, "its shutdown");
  return done_testing();
}
