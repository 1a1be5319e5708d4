/* badinput.c: a table of invalid calls through the public API, on every device: each must
 * return its exact status, leave a NEW message in gpar_last_error (each case first plants a
 * sentinel message there, which the call must replace), enqueue nothing (ops_submitted
 * unchanged), and leave the engine working (a write/read round trip after each case). */
#include <limits.h>
#include "testutil.h"

#define BUFSZ 1024

static gpar_engine *eng, *eng2, *eng3;
static int ndev, rt_dev;
static gpar_buffer rt_buf; /* the round-trip buffer of the device under test */
static uint64_t rt_seed = 1;

static int noop_fn(const gpar_native *nat, void *arg) {
  (void)nat;
  (void)arg;
  return GPAR_OK;
}

/* The message planted before each case: an unknown fault kind that names the case number. */
static char sentinel[64];
static void plant_sentinel(void) {
  snprintf(sentinel, sizeof sentinel, "badinput-sentinel-%d", tap_count + 1);
  gpar_fault_inject(eng, sentinel, 1); /* GPAR_EINVAL, message names the sentinel */
  if (!strstr(gpar_last_error(), sentinel)) bail_out("could not plant a sentinel in gpar_last_error");
}

static int round_trip(void) {
  unsigned char in[48], out[48];
  for (size_t i = 0; i < sizeof in; i++) in[i] = (unsigned char)tu_rand(&rt_seed);
  memset(out, 0, sizeof out);
  if (gpar_write(rt_buf, 16, in, sizeof in) != GPAR_OK) return 0;
  if (gpar_read(rt_buf, 16, out, sizeof out) != GPAR_OK) return 0;
  return memcmp(in, out, sizeof in) == 0;
}

static void case_end(const gpar_stats *b1, const gpar_stats *b2, int got, int want, const char *what) {
  char err[256];
  gpar_stats a1, a2;
  snprintf(err, sizeof err, "%s", gpar_last_error());
  gpar_stats_get(eng, &a1);
  gpar_stats_get(eng2, &a2);
  int quiet = a1.ops_submitted == b1->ops_submitted && a2.ops_submitted == b2->ops_submitted;
  /* the failure replaced the planted message; calls that return pointers (NULLP) need not */
  int msg = want == GPAR_OK || (err[0] != 0 && !strstr(err, sentinel)) || !strncmp(what, "NULLP", 5);
  int works = round_trip();
  if (!ok(got == want && quiet && msg && works, "dev %d: %s -> %s", rt_dev, what, gpar_status_name(want))) {
    if (got != want) diag("  got %s (%d), want %s (%d)", gpar_status_name(got), got, gpar_status_name(want), want);
    if (!quiet) diag("  ops_submitted changed: %llu -> %llu", (unsigned long long)b1->ops_submitted,
                     (unsigned long long)a1.ops_submitted);
    if (!msg) diag("  gpar_last_error() not replaced by the failure: \"%s\"", err);
    if (!works) diag("  write/read round trip failed afterwards");
  }
}

#define CASE(want, expr)                                                                          \
  do {                                                                                           \
    gpar_stats b1_, b2_;                                                                         \
    gpar_stats_get(eng, &b1_);                                                                   \
    gpar_stats_get(eng2, &b2_);                                                                  \
    plant_sentinel();                                                                            \
    int got_ = (expr);                                                                           \
    case_end(&b1_, &b2_, got_, (want), #expr);                                                   \
  } while (0)

/* For calls that return pointers: NULL expected; expressed as a status for the table. */
#define NULLP(expr) ((expr) == NULL ? GPAR_EBADBUF : GPAR_OK)

static void global_cases(int cpu, gpar_buffer x2, gpar_buffer y3) {
  gpar_buffer b = {0}, zero = {0}, garbage = {0x0123456789abcdefull, 42}, a = rt_buf;
  tu_devinfo info;
  gpar_stats st;
  size_t sz;
  int dv;
  gpar_config cfg;
  gpar_config_init(&cfg);
  CASE(GPAR_EINVAL, gpar_init(NULL, &cfg));
  CASE(GPAR_EINVAL, gpar_init(NULL, NULL));
  CASE(GPAR_EINVAL, gpar_device_count(NULL));
  CASE(GPAR_EINVAL, tu_device_info(NULL, 0, &info));
  CASE(GPAR_EINVAL, tu_device_info(eng, 0, NULL));
  CASE(GPAR_ENODEV, tu_device_info(eng, -2, &info));
  CASE(GPAR_ENODEV, tu_device_info(eng, -1, &info));
  CASE(GPAR_ENODEV, tu_device_info(eng, ndev, &info));
  CASE(GPAR_ENODEV, tu_device_info(eng, 1000, &info));
  CASE(GPAR_EINVAL, gpar_device_find(NULL, GPAR_BACKEND_HOST, GPAR_DEVICE_CPU, 0));
  CASE(GPAR_ENODEV, gpar_device_find(eng, GPAR_BACKEND_HOST, GPAR_DEVICE_GPU, 0));
  CASE(GPAR_ENODEV, gpar_device_find(eng, GPAR_BACKEND_HOST, GPAR_DEVICE_CPU, 1));
  CASE(GPAR_EINVAL, gpar_buffer_create(NULL, cpu, 16, &b));
  CASE(GPAR_EINVAL, gpar_buffer_create(eng, cpu, 16, NULL));
  CASE(GPAR_ENODEV, gpar_buffer_create(eng, -2, 16, &b));
  CASE(GPAR_ENODEV, gpar_buffer_create(eng, ndev, 16, &b));
  CASE(GPAR_ENODEV, gpar_buffer_create(eng, 1000, 16, &b));
  CASE(GPAR_EINVAL, gpar_buffer_create(eng, GPAR_HOST, 0, &b));
  CASE(GPAR_ENOMEM, gpar_buffer_create(eng, GPAR_HOST, SIZE_MAX, &b));
  CASE(GPAR_EBADBUF, gpar_buffer_release(zero));
  CASE(GPAR_EBADBUF, gpar_buffer_release(garbage));
  CASE(GPAR_EBADBUF, gpar_buffer_query(zero, &sz, &dv));
  CASE(GPAR_EBADBUF, gpar_buffer_query(garbage, &sz, &dv));
  CASE(GPAR_EBADBUF, NULLP(gpar_buffer_native(zero)));
  CASE(GPAR_EBADBUF, NULLP(gpar_buffer_host_ptr(garbage)));
  CASE(GPAR_EBADBUF, gpar_wait(zero));
  CASE(GPAR_EBADBUF, gpar_wait(garbage));
  CASE(GPAR_EINVAL, gpar_wait_all(NULL));
  CASE(GPAR_EINVAL, gpar_stats_get(NULL, &st));
  CASE(GPAR_EINVAL, gpar_stats_get(eng, NULL));
  CASE(GPAR_EINVAL, gpar_shutdown(NULL));
  CASE(GPAR_EINVAL, gpar_fault_inject(NULL, "alloc", 1));
  CASE(GPAR_EINVAL, gpar_fault_inject(eng, NULL, 1));
  CASE(GPAR_EINVAL, gpar_fault_inject(eng, "no-such-kind", 1));
  /* gpar_submit argument checks */
  gpar_buffer one[1] = {a}, bad1[1] = {zero}, bad2[1] = {garbage}, foreign[1] = {x2};
  gpar_buffer mixed[2] = {a, x2};
  CASE(GPAR_EINVAL, gpar_submit(NULL, cpu, noop_fn, NULL, one, 1, one, 1));
  CASE(GPAR_EINVAL, gpar_submit(eng, cpu, NULL, NULL, one, 1, one, 1));
  CASE(GPAR_EINVAL, gpar_submit(eng, cpu, noop_fn, NULL, one, -1, one, 1));
  CASE(GPAR_EINVAL, gpar_submit(eng, cpu, noop_fn, NULL, NULL, 1, one, 1));
  CASE(GPAR_EINVAL, gpar_submit(eng, cpu, noop_fn, NULL, one, 1, one, -1));
  CASE(GPAR_EINVAL, gpar_submit(eng, cpu, noop_fn, NULL, one, 1, NULL, 1));
  CASE(GPAR_ENODEV, gpar_submit(eng, -2, noop_fn, NULL, one, 1, one, 1));
  CASE(GPAR_ENODEV, gpar_submit(eng, ndev, noop_fn, NULL, one, 1, one, 1));
  CASE(GPAR_ENODEV, gpar_submit(eng, 1000, noop_fn, NULL, one, 1, one, 1));
  CASE(GPAR_EBADBUF, gpar_submit(eng, cpu, noop_fn, NULL, bad1, 1, one, 1));
  CASE(GPAR_EBADBUF, gpar_submit(eng, cpu, noop_fn, NULL, one, 1, bad2, 1));
  CASE(GPAR_EENGINE, gpar_submit(eng, cpu, noop_fn, NULL, foreign, 1, one, 1));
  CASE(GPAR_EENGINE, gpar_submit(eng, cpu, noop_fn, NULL, one, 1, mixed, 2));
  CASE(GPAR_EENGINE, gpar_submit(eng, cpu, noop_fn, NULL, mixed, 2, NULL, 0));
  /* An engine after shutdown and its buffers */
  CASE(GPAR_ESHUTDOWN, gpar_wait_all(eng3));
  CASE(GPAR_ESHUTDOWN, gpar_device_count(eng3));
  CASE(GPAR_ESHUTDOWN, tu_device_info(eng3, 0, &info));
  CASE(GPAR_ESHUTDOWN, gpar_buffer_create(eng3, 0, 16, &b));
  CASE(GPAR_ESHUTDOWN, gpar_submit(eng3, 0, noop_fn, NULL, NULL, 0, NULL, 0));
  CASE(GPAR_ESHUTDOWN, gpar_stats_get(eng3, &st));
  CASE(GPAR_ESHUTDOWN, gpar_shutdown(eng3));
  CASE(GPAR_EBADBUF, gpar_buffer_release(y3));
  CASE(GPAR_EBADBUF, gpar_wait(y3));
  CASE(GPAR_EBADBUF, gpar_write(y3, 0, &st, 8));
  CASE(GPAR_EBADBUF, gpar_read(y3, 0, &st, 8));
  CASE(GPAR_EBADBUF, gpar_copy(a, 0, y3, 0, 8));
  CASE(GPAR_EBADBUF, gpar_buffer_query(y3, &sz, &dv));
  CASE(GPAR_EBADBUF, NULLP(gpar_buffer_native(y3)));
  /* A foreign engine's buffer alone in a call is fine for that engine: no error here. */
}

static gpar_buffer garbage_buf(void);

/* The BLAS calls beyond sgemm/dgemm on device d: buffers a, b, c of BUFSZ bytes (256 floats, 512
 * f16) on d, h in GPAR_HOST memory, r released, o on another device (id 0 when none), x2 of
 * another engine. Each refusal enqueues nothing; so does each quick return (GPAR_OK, nothing
 * submitted), which CASE checks the same way. */
static void blas_cases(int host, gpar_buffer a, gpar_buffer b, gpar_buffer c, gpar_buffer h, gpar_buffer r,
                       gpar_buffer o, gpar_buffer x2) {
  const gpar_trans N = GPAR_NO_TRANS, T = GPAR_TRANS;
  gpar_buffer zero = {0};
  /* strided-batched sgemm: 4x4x4, two entries 16 apart (32 floats of 256) */
  CASE(GPAR_EINVAL, gpar_sgemm_strided_batched(N, N, -1, 4, 4, 1.f, a, 0, 4, 16, b, 0, 4, 16, 0.f, c, 0, 4, 16, 2));
  CASE(GPAR_EINVAL, gpar_sgemm_strided_batched(N, N, 4, 4, 4, 1.f, a, 0, 4, 16, b, 0, 4, 16, 0.f, c, 0, 4, 16, -1));
  CASE(GPAR_EINVAL, gpar_sgemm_strided_batched(N, N, 4, 4, 4, 1.f, a, 0, 4, -16, b, 0, 4, 16, 0.f, c, 0, 4, 16, 2));
  CASE(GPAR_EINVAL, gpar_sgemm_strided_batched(N, N, 4, 4, 4, 1.f, a, 0, 4, 16, b, 0, 4, -1, 0.f, c, 0, 4, 16, 2));
  CASE(GPAR_EINVAL, gpar_sgemm_strided_batched(N, N, 4, 4, 4, 1.f, a, 0, 4, 16, b, 0, 4, 16, 0.f, c, 0, 4, -16, 2));
  CASE(GPAR_EINVAL, gpar_sgemm_strided_batched(T, N, 4, 4, 4, 1.f, a, 0, 3, 16, b, 0, 4, 16, 0.f, c, 0, 4, 16, 2));
  CASE(GPAR_EINVAL, gpar_sgemm_strided_batched(N, (gpar_trans)2, 4, 4, 4, 1.f, a, 0, 4, 16, b, 0, 4, 16, 0.f, c, 0, 4, 16, 2));
  CASE(GPAR_ERANGE, gpar_sgemm_strided_batched(N, N, 4, 4, 4, 1.f, a, 0, 4, 16, b, 0, 4, 16, 0.f, c, 0, 4, 16, 20));
  CASE(GPAR_ERANGE, gpar_sgemm_strided_batched(N, N, 4, 4, 4, 1.f, a, 0, 4, 16, b, 0, 4, 16, 0.f, c, 230, 4, 16, 2));
  CASE(GPAR_ERANGE, gpar_sgemm_strided_batched(N, N, 4, 4, 4, 1.f, a, 0, 4, LLONG_MAX, b, 0, 4, 16, 0.f, c, 0, 4, 16, 2));
  CASE(GPAR_ERANGE, gpar_sgemm_strided_batched(N, N, 4, 4, 0, 1.f, a, 300, 4, 16, b, 0, 4, 16, 0.f, c, 0, 4, 16, 2));
  CASE(GPAR_ERANGE, gpar_sgemm_strided_batched(N, N, 4, 4, 0, 1.f, a, 100, 4, 100, b, 0, 4, 16, 0.f, c, 0, 4, 16, 3));
  CASE(GPAR_ERANGE, gpar_sgemm_strided_batched(N, N, 4, 4, 4, 1.f, a, 0, 4, 16, b, 0, 4, 16, 0.f, c, 257, 4, 16, 0));
  CASE(GPAR_EALIAS, gpar_sgemm_strided_batched(N, N, 4, 4, 4, 1.f, a, 0, 4, 16, b, 0, 4, 16, 0.f, a, 20, 4, 16, 2));
  CASE(GPAR_EALIAS, gpar_sgemm_strided_batched(N, N, 4, 4, 4, 1.f, a, 0, 4, 16, b, 0, 4, 16, 1.f, b, 31, 4, 16, 2));
  CASE(GPAR_EALIAS, gpar_sgemm_strided_batched(N, N, 4, 4, 4, 1.f, a, 0, 4, 16, b, 0, 4, 16, 0.f, c, 0, 4, 8, 2));
  CASE(GPAR_EALIAS, gpar_sgemm_strided_batched(N, N, 4, 4, 4, 1.f, a, 0, 4, 16, b, 0, 4, 16, 0.f, c, 0, 4, 0, 2));
  CASE(GPAR_EBADBUF, gpar_sgemm_strided_batched(N, N, 4, 4, 4, 1.f, a, 0, 4, 16, r, 0, 4, 16, 0.f, c, 0, 4, 16, 2));
  CASE(GPAR_EBADBUF, gpar_sgemm_strided_batched(N, N, 4, 4, 4, 1.f, a, 0, 4, 16, b, 0, 4, 16, 0.f, zero, 0, 4, 16, 2));
  CASE(GPAR_EENGINE, gpar_sgemm_strided_batched(N, N, 4, 4, 4, 1.f, x2, 0, 4, 16, b, 0, 4, 16, 0.f, c, 0, 4, 16, 2));
  if (o.id) CASE(GPAR_EINVAL, gpar_sgemm_strided_batched(N, N, 4, 4, 4, 1.f, o, 0, 4, 16, b, 0, 4, 16, 0.f, c, 0, 4, 16, 2));
  if (!host) CASE(GPAR_EINVAL, gpar_sgemm_strided_batched(N, N, 4, 4, 4, 1.f, a, 0, 4, 16, h, 0, 4, 16, 0.f, c, 0, 4, 16, 2));
  CASE(GPAR_OK, gpar_sgemm_strided_batched(N, N, 4, 4, 4, 1.f, a, 0, 4, 16, b, 0, 4, 16, 0.f, c, 0, 4, 16, 0));
  CASE(GPAR_OK, gpar_sgemm_strided_batched(N, N, 0, 4, 4, 1.f, a, 0, 4, 16, b, 0, 4, 16, 0.f, c, 0, 4, 16, 2));
  CASE(GPAR_OK, gpar_sgemm_strided_batched(N, N, 4, 4, 4, 0.f, a, 0, 4, 16, b, 0, 4, 16, 1.f, c, 0, 4, 16, 2));
  CASE(GPAR_ERANGE, gpar_dgemm_strided_batched(N, N, 4, 4, 4, 1., a, 0, 4, 16, b, 0, 4, 16, 0., c, 0, 4, 16, 9));
  CASE(GPAR_EALIAS, gpar_dgemm_strided_batched(N, N, 4, 4, 4, 1., a, 0, 4, 16, b, 0, 4, 16, 0., c, 0, 4, 15, 2));
  /* gpar_gemm_ex: f16 A and B (512 per buffer); C of f32 takes twice the bytes */
  CASE(GPAR_EINVAL, gpar_gemm_ex(N, N, 4, 4, 4, 1.f, GPAR_INT32, a, 0, 4, 16, b, 0, 4, 16, 0.f, GPAR_FLOAT, c, 0, 4, 16, 2));
  CASE(GPAR_EINVAL, gpar_gemm_ex(N, N, 4, 4, 4, 1.f, GPAR_DOUBLE, a, 0, 4, 16, b, 0, 4, 16, 0.f, GPAR_DOUBLE, c, 0, 4, 16, 2));
  CASE(GPAR_EINVAL, gpar_gemm_ex(N, N, 4, 4, 4, 1.f, GPAR_HALF, a, 0, 4, 16, b, 0, 4, 16, 0.f, GPAR_BFLOAT16, c, 0, 4, 16, 2));
  CASE(GPAR_EINVAL, gpar_gemm_ex(N, N, 4, 4, 4, 1.f, GPAR_HALF, a, 0, 4, 16, b, 0, 4, 16, 0.f, GPAR_DOUBLE, c, 0, 4, 16, 2));
  CASE(GPAR_EINVAL, gpar_gemm_ex(N, N, 4, 4, 4, 1.f, (gpar_dtype)9, a, 0, 4, 16, b, 0, 4, 16, 0.f, GPAR_FLOAT, c, 0, 4, 16, 2));
  CASE(GPAR_EINVAL, gpar_gemm_ex(N, N, 4, 4, 4, 1.f, GPAR_HALF, a, 0, 4, 16, b, 0, 3, 16, 0.f, GPAR_FLOAT, c, 0, 4, 16, 2));
  CASE(GPAR_ERANGE, gpar_gemm_ex(N, N, 16, 16, 16, 1.f, GPAR_HALF, a, 0, 16, 256, b, 0, 16, 256, 0.f, GPAR_HALF, c, 0, 16, 256, 3));
  CASE(GPAR_ERANGE, gpar_gemm_ex(N, N, 16, 16, 16, 1.f, GPAR_BFLOAT16, a, 0, 16, 256, b, 0, 16, 256, 0.f, GPAR_FLOAT, c, 0, 16, 256, 2));
  CASE(GPAR_EALIAS, gpar_gemm_ex(N, N, 4, 4, 4, 1.f, GPAR_HALF, a, 0, 4, 16, b, 0, 4, 16, 0.f, GPAR_FLOAT, a, 15, 4, 16, 2));
  CASE(GPAR_EBADBUF, gpar_gemm_ex(N, N, 4, 4, 4, 1.f, GPAR_HALF, r, 0, 4, 16, b, 0, 4, 16, 0.f, GPAR_FLOAT, c, 0, 4, 16, 2));
  CASE(GPAR_EENGINE, gpar_gemm_ex(N, N, 4, 4, 4, 1.f, GPAR_HALF, a, 0, 4, 16, x2, 0, 4, 16, 0.f, GPAR_FLOAT, c, 0, 4, 16, 2));
  if (o.id) CASE(GPAR_EINVAL, gpar_gemm_ex(N, N, 4, 4, 4, 1.f, GPAR_HALF, a, 0, 4, 16, b, 0, 4, 16, 0.f, GPAR_FLOAT, o, 0, 4, 16, 2));
  CASE(GPAR_OK, gpar_gemm_ex(N, N, 4, 0, 4, 1.f, GPAR_BFLOAT16, a, 0, 4, 16, b, 0, 4, 16, 0.f, GPAR_FLOAT, c, 0, 4, 16, 2));
}

/* GEMV, AXPY, SCAL and DOT, with the buffers of blas_cases. */
static void blas_vec_cases(int host, gpar_buffer a, gpar_buffer b, gpar_buffer c, gpar_buffer h, gpar_buffer r,
                           gpar_buffer o, gpar_buffer x2) {
  const gpar_trans N = GPAR_NO_TRANS, T = GPAR_TRANS;
  /* gemv: y = A x, A 8x8 */
  CASE(GPAR_EINVAL, gpar_sgemv(N, -1, 8, 1.f, a, 0, 8, b, 0, 1, 0.f, c, 0, 1));
  CASE(GPAR_EINVAL, gpar_sgemv(N, 8, 8, 1.f, a, 0, 7, b, 0, 1, 0.f, c, 0, 1));
  CASE(GPAR_EINVAL, gpar_sgemv(N, 8, 8, 1.f, a, 0, 8, b, 0, 0, 0.f, c, 0, 1));
  CASE(GPAR_EINVAL, gpar_sgemv(N, 8, 8, 1.f, a, 0, 8, b, 0, 1, 0.f, c, 0, -1));
  CASE(GPAR_EINVAL, gpar_sgemv((gpar_trans)3, 8, 8, 1.f, a, 0, 8, b, 0, 1, 0.f, c, 0, 1));
  CASE(GPAR_ERANGE, gpar_sgemv(N, 8, 8, 1.f, a, 0, 8, b, 250, 1, 0.f, c, 0, 1));
  CASE(GPAR_ERANGE, gpar_sgemv(T, 8, 8, 1.f, a, 0, 8, b, 0, 1, 0.f, c, 0, 40));
  CASE(GPAR_ERANGE, gpar_sgemv(N, 16, 17, 1.f, a, 0, 16, b, 0, 1, 0.f, c, 0, 1));
  CASE(GPAR_ERANGE, gpar_sgemv(N, 8, 0, 1.f, a, 0, 8, b, 257, 1, 0.f, c, 0, 1));
  CASE(GPAR_EALIAS, gpar_sgemv(N, 8, 8, 1.f, a, 0, 8, b, 0, 1, 0.f, b, 7, 1));
  CASE(GPAR_EALIAS, gpar_sgemv(N, 8, 8, 1.f, a, 0, 8, b, 0, 1, 0.f, a, 60, 1));
  CASE(GPAR_EBADBUF, gpar_sgemv(N, 8, 8, 1.f, a, 0, 8, r, 0, 1, 0.f, c, 0, 1));
  CASE(GPAR_EENGINE, gpar_sgemv(N, 8, 8, 1.f, a, 0, 8, b, 0, 1, 0.f, x2, 0, 1));
  if (o.id) CASE(GPAR_EINVAL, gpar_sgemv(N, 8, 8, 1.f, a, 0, 8, o, 0, 1, 0.f, c, 0, 1));
  CASE(GPAR_OK, gpar_sgemv(N, 8, 0, 1.f, a, 0, 8, b, 0, 1, 0.f, c, 0, 1));
  CASE(GPAR_OK, gpar_dgemv(T, 8, 8, 0., a, 0, 8, b, 0, 1, 1., c, 0, 1));
  CASE(GPAR_ERANGE, gpar_dgemv(N, 8, 8, 1., a, 0, 8, b, 0, 1, 0., c, 0, 19));
  /* axpy, scal, dot over 256 floats */
  CASE(GPAR_EINVAL, gpar_saxpy(-1, 1.f, a, 0, 1, b, 0, 1));
  CASE(GPAR_EINVAL, gpar_saxpy(8, 1.f, a, 0, 0, b, 0, 1));
  CASE(GPAR_EINVAL, gpar_saxpy(8, 1.f, a, 0, 1, b, 0, -2));
  CASE(GPAR_ERANGE, gpar_saxpy(257, 1.f, a, 0, 1, b, 0, 1));
  CASE(GPAR_ERANGE, gpar_saxpy(100, 1.f, a, 0, 3, b, 0, 1));
  CASE(GPAR_ERANGE, gpar_daxpy(8, 1., a, 0, 1, b, 127, 1));
  CASE(GPAR_EALIAS, gpar_saxpy(8, 1.f, a, 0, 1, a, 7, 1));
  CASE(GPAR_EALIAS, gpar_saxpy(8, 1.f, a, 0, 2, a, 1, 2)); /* interleaved: overlapping ranges */
  CASE(GPAR_EBADBUF, gpar_saxpy(8, 1.f, garbage_buf(), 0, 1, b, 0, 1));
  CASE(GPAR_EENGINE, gpar_saxpy(8, 1.f, x2, 0, 1, b, 0, 1));
  if (o.id) CASE(GPAR_EINVAL, gpar_saxpy(8, 1.f, a, 0, 1, o, 0, 1));
  if (!host) CASE(GPAR_EINVAL, gpar_saxpy(8, 1.f, h, 0, 1, b, 0, 1));
  CASE(GPAR_OK, gpar_saxpy(8, 0.f, a, 0, 1, b, 0, 1));
  CASE(GPAR_OK, gpar_saxpy(0, 1.f, a, 0, 1, b, 0, 1));
  CASE(GPAR_EINVAL, gpar_sscal(-1, 2.f, a, 0, 1));
  CASE(GPAR_EINVAL, gpar_sscal(8, 2.f, a, 0, 0));
  CASE(GPAR_ERANGE, gpar_sscal(257, 2.f, a, 0, 1));
  CASE(GPAR_ERANGE, gpar_dscal(1, 2.f, a, 128, 1));
  CASE(GPAR_EBADBUF, gpar_sscal(8, 2.f, r, 0, 1));
  CASE(GPAR_OK, gpar_sscal(0, 2.f, a, 0, 1));
  CASE(GPAR_EINVAL, gpar_sdot(-1, a, 0, 1, b, 0, 1, c, 0));
  CASE(GPAR_EINVAL, gpar_sdot(8, a, 0, 1, b, 0, 0, c, 0));
  CASE(GPAR_ERANGE, gpar_sdot(8, a, 0, 1, b, 0, 1, c, 256));
  CASE(GPAR_ERANGE, gpar_sdot(0, a, 257, 1, b, 0, 1, c, 0));
  CASE(GPAR_ERANGE, gpar_ddot(8, a, 0, 1, b, 0, 1, c, SIZE_MAX));
  CASE(GPAR_EALIAS, gpar_sdot(8, a, 0, 1, b, 0, 1, a, 7));
  CASE(GPAR_EALIAS, gpar_sdot(8, a, 0, 1, b, 0, 1, b, 0));
  CASE(GPAR_EBADBUF, gpar_sdot(8, a, 0, 1, b, 0, 1, r, 0));
  CASE(GPAR_EENGINE, gpar_sdot(8, a, 0, 1, x2, 0, 1, c, 0));
  if (o.id) CASE(GPAR_EINVAL, gpar_sdot(8, a, 0, 1, b, 0, 1, o, 0));
  if (!host) CASE(GPAR_EINVAL, gpar_sdot(8, a, 0, 1, b, 0, 1, h, 0));
}

static gpar_buffer garbage_buf(void) { return (gpar_buffer){0xfeedface12345678ull, 42}; }

static void device_cases(int d, gpar_buffer x2) {
  tu_devinfo info, oinfo;
  gpar_buffer a = rt_buf, b, c, h, r, o = {0}, zero = {0}, garbage = {0xfeedface12345678ull, 42};
  unsigned char tmp[64] = {0};
  int host = 0;
  tu_device_info(eng, d, &info);
  host = info.backend_id == GPAR_BACKEND_HOST;
  if (gpar_buffer_create(eng, d, BUFSZ, &b) || gpar_buffer_create(eng, d, BUFSZ, &c) ||
      gpar_buffer_create(eng, GPAR_HOST, BUFSZ, &h) || gpar_buffer_create(eng, d, BUFSZ, &r))
    bail_out("gpar_buffer_create");
  gpar_fill(a, 0, BUFSZ, 0);
  gpar_fill(b, 0, BUFSZ, 0);
  gpar_fill(c, 0, BUFSZ, 0);
  gpar_fill(h, 0, BUFSZ, 0);
  gpar_buffer_release(r);
  gpar_wait_all(eng);
  for (int e = 0; e < ndev && !o.id; e++)
    if (e != d) {
      tu_device_info(eng, e, &oinfo);
      if (gpar_buffer_create(eng, e, BUFSZ, &o) != GPAR_OK) o.id = 0;
    }
  if (o.id) gpar_fill(o, 0, BUFSZ, 0);
  gpar_wait_all(eng);

  gpar_buffer scratch;
  CASE(GPAR_EINVAL, gpar_buffer_create(eng, d, 0, &scratch));
  CASE(host ? GPAR_ENOMEM : GPAR_EDEVMEM, gpar_buffer_create(eng, d, SIZE_MAX, &scratch));
  CASE(host ? GPAR_ENOMEM : GPAR_EDEVMEM, gpar_buffer_create(eng, d, SIZE_MAX / 2, &scratch));
  /* copies */
  CASE(GPAR_ERANGE, gpar_copy(a, BUFSZ, b, 0, 1));
  CASE(GPAR_ERANGE, gpar_copy(a, 2 * BUFSZ, b, 0, 1));
  CASE(GPAR_ERANGE, gpar_copy(a, 0, b, BUFSZ - 100 + 1, 100));
  CASE(GPAR_ERANGE, gpar_copy(a, SIZE_MAX, b, 0, 2));
  CASE(GPAR_ERANGE, gpar_copy(a, 0, b, SIZE_MAX - 1, 4));
  CASE(GPAR_ERANGE, gpar_copy(a, 0, b, 0, SIZE_MAX));
  CASE(GPAR_ERANGE, gpar_copy(a, 0, b, 0, BUFSZ + 1));
  CASE(GPAR_ERANGE, gpar_copy(h, 0, a, BUFSZ - 4, 8));
  CASE(GPAR_ERANGE, gpar_copy(a, BUFSZ - 4, h, 0, 8));
  CASE(GPAR_EALIAS, gpar_copy(a, 0, a, 8, 16));
  CASE(GPAR_EALIAS, gpar_copy(a, 8, a, 0, 16));
  CASE(GPAR_EALIAS, gpar_copy(a, 0, a, 0, 1));
  CASE(GPAR_EBADBUF, gpar_copy(a, 0, zero, 0, 8));
  CASE(GPAR_EBADBUF, gpar_copy(garbage, 0, a, 0, 8));
  CASE(GPAR_EBADBUF, gpar_copy(r, 0, a, 0, 8));
  CASE(GPAR_EBADBUF, gpar_copy(a, 0, r, 0, 8));
  CASE(GPAR_EENGINE, gpar_copy(a, 0, x2, 0, 8));
  CASE(GPAR_EENGINE, gpar_copy(x2, 0, a, 0, 8));
  /* zero bytes: like gpar_buffer_create, an invalid size (gpar.h does not say; the engine does) */
  CASE(GPAR_EINVAL, gpar_copy(a, 0, b, 0, 0));
  CASE(GPAR_EINVAL, gpar_write(a, 0, tmp, 0));
  CASE(GPAR_EINVAL, gpar_read(a, 0, tmp, 0));
  CASE(GPAR_EINVAL, gpar_fill(a, 0, 0, 1));
  /* write / read / fill */
  CASE(GPAR_ERANGE, gpar_write(a, BUFSZ - 4, tmp, 8));
  CASE(GPAR_ERANGE, gpar_write(a, SIZE_MAX, tmp, 2));
  CASE(GPAR_ERANGE, gpar_write(a, 8, tmp, SIZE_MAX - 4));
  CASE(GPAR_EINVAL, gpar_write(a, 0, NULL, 8));
  CASE(GPAR_EBADBUF, gpar_write(zero, 0, tmp, 8));
  CASE(GPAR_EBADBUF, gpar_write(r, 0, tmp, 8));
  CASE(GPAR_ERANGE, gpar_read(a, BUFSZ - 4, tmp, 8));
  CASE(GPAR_ERANGE, gpar_read(a, SIZE_MAX - 2, tmp, 8));
  CASE(GPAR_ERANGE, gpar_read(a, 8, tmp, SIZE_MAX - 4));
  CASE(GPAR_EINVAL, gpar_read(a, 0, NULL, 8));
  CASE(GPAR_EBADBUF, gpar_read(r, 0, tmp, 8));
  CASE(GPAR_EBADBUF, gpar_read(garbage, 0, tmp, 8));
  CASE(GPAR_ERANGE, gpar_fill(a, BUFSZ, 1, 0));
  CASE(GPAR_ERANGE, gpar_fill(a, 1, BUFSZ, 0));
  CASE(GPAR_ERANGE, gpar_fill(a, 1, SIZE_MAX, 0));
  CASE(GPAR_ERANGE, gpar_fill(a, SIZE_MAX, 2, 0));
  CASE(GPAR_EBADBUF, gpar_fill(r, 0, 8, 0));
  CASE(GPAR_EBADBUF, gpar_fill(zero, 0, 8, 0));
  {
    size_t sz;
    int dv;
    CASE(GPAR_EBADBUF, gpar_buffer_query(r, &sz, &dv));
  }
  CASE(GPAR_EBADBUF, gpar_buffer_release(r));
  CASE(GPAR_EBADBUF, NULLP(gpar_buffer_native(r)));
  if (!host) CASE(GPAR_EBADBUF, NULLP(gpar_buffer_host_ptr(a))); /* device memory: no host pointer */
  /* sgemm: A = a, B = b, C = c, 8x8x8 fits (256 floats per buffer) */
  const gpar_trans N = GPAR_NO_TRANS, T = GPAR_TRANS;
  CASE(GPAR_EINVAL, gpar_sgemm(N, N, -1, 8, 8, 1.f, a, 0, 8, b, 0, 8, 0.f, c, 0, 8));
  CASE(GPAR_EINVAL, gpar_sgemm(N, N, 8, -1, 8, 1.f, a, 0, 8, b, 0, 8, 0.f, c, 0, 8));
  CASE(GPAR_EINVAL, gpar_sgemm(N, N, 8, 8, -1, 1.f, a, 0, 8, b, 0, 8, 0.f, c, 0, 8));
  CASE(GPAR_EINVAL, gpar_sgemm(N, N, 8, 8, 8, 1.f, a, 0, 7, b, 0, 8, 0.f, c, 0, 8));
  CASE(GPAR_EINVAL, gpar_sgemm(T, N, 8, 8, 4, 1.f, a, 0, 3, b, 0, 8, 0.f, c, 0, 8));
  CASE(GPAR_EINVAL, gpar_sgemm(N, N, 8, 8, 8, 1.f, a, 0, 8, b, 0, 7, 0.f, c, 0, 8));
  CASE(GPAR_EINVAL, gpar_sgemm(N, T, 8, 4, 8, 1.f, a, 0, 8, b, 0, 3, 0.f, c, 0, 8));
  CASE(GPAR_EINVAL, gpar_sgemm(N, N, 8, 8, 8, 1.f, a, 0, 8, b, 0, 8, 0.f, c, 0, 7));
  CASE(GPAR_EINVAL, gpar_sgemm(N, N, 8, 8, 8, 1.f, a, 0, 8, b, 0, 8, 0.f, c, 0, 0));
  CASE(GPAR_EINVAL, gpar_sgemm((gpar_trans)5, N, 8, 8, 8, 1.f, a, 0, 8, b, 0, 8, 0.f, c, 0, 8));
  CASE(GPAR_EINVAL, gpar_sgemm(N, (gpar_trans)-1, 8, 8, 8, 1.f, a, 0, 8, b, 0, 8, 0.f, c, 0, 8));
  CASE(GPAR_ERANGE, gpar_sgemm(N, N, 16, 16, 16, 1.f, a, 1, 16, b, 0, 16, 0.f, c, 0, 16));
  CASE(GPAR_ERANGE, gpar_sgemm(N, N, 16, 16, 16, 1.f, a, 0, 16, b, 1, 16, 0.f, c, 0, 16));
  CASE(GPAR_ERANGE, gpar_sgemm(N, N, 16, 16, 16, 1.f, a, 0, 16, b, 0, 16, 0.f, c, 1, 16));
  CASE(GPAR_ERANGE, gpar_sgemm(N, N, 8, 8, 8, 1.f, a, 0, 8, b, 0, 8, 0.f, c, 200, 8));
  CASE(GPAR_ERANGE, gpar_sgemm(N, N, 8, 8, 8, 1.f, a, SIZE_MAX, 8, b, 0, 8, 0.f, c, 0, 8));
  CASE(GPAR_ERANGE, gpar_sgemm(N, N, 8, 8, 8, 1.f, a, 0, INT_MAX, b, 0, 8, 0.f, c, 0, 8));
  CASE(GPAR_ERANGE, gpar_sgemm(N, N, 8, 8, 8, 1.f, a, 0, 8, b, SIZE_MAX / 2, 8, 0.f, c, 0, 8));
  CASE(GPAR_EALIAS, gpar_sgemm(N, N, 8, 8, 8, 1.f, a, 0, 8, b, 0, 8, 0.f, a, 0, 8));
  CASE(GPAR_EALIAS, gpar_sgemm(N, N, 8, 8, 8, 1.f, a, 0, 8, b, 0, 8, 1.f, b, 0, 8));
  CASE(GPAR_EALIAS, gpar_sgemm(N, N, 8, 8, 8, 1.f, a, 0, 8, b, 0, 8, 0.f, a, 32, 8));
  CASE(GPAR_EBADBUF, gpar_sgemm(N, N, 8, 8, 8, 1.f, zero, 0, 8, b, 0, 8, 0.f, c, 0, 8));
  CASE(GPAR_EBADBUF, gpar_sgemm(N, N, 8, 8, 8, 1.f, a, 0, 8, b, 0, 8, 0.f, r, 0, 8));
  CASE(GPAR_EENGINE, gpar_sgemm(N, N, 8, 8, 8, 1.f, a, 0, 8, x2, 0, 8, 0.f, c, 0, 8));
  if (o.id) {
    CASE(GPAR_EINVAL, gpar_sgemm(N, N, 8, 8, 8, 1.f, o, 0, 8, b, 0, 8, 0.f, c, 0, 8));
    CASE(GPAR_EINVAL, gpar_sgemm(N, N, 8, 8, 8, 1.f, a, 0, 8, b, 0, 8, 0.f, o, 0, 8));
  } else {
    skip(2, "one device: no operand on another device");
  }
  if (!host) CASE(GPAR_EINVAL, gpar_sgemm(N, N, 8, 8, 8, 1.f, h, 0, 8, b, 0, 8, 0.f, c, 0, 8));
  /* dgemm: 8x8 doubles = 512 bytes, 128 per buffer */
  CASE(GPAR_EINVAL, gpar_dgemm(N, N, -1, 8, 8, 1., a, 0, 8, b, 0, 8, 0., c, 0, 8));
  CASE(GPAR_EINVAL, gpar_dgemm(N, N, 8, 8, 8, 1., a, 0, 8, b, 0, 8, 0., c, 0, 7));
  CASE(GPAR_ERANGE, gpar_dgemm(N, N, 8, 8, 8, 1., a, 0, 8, b, 0, 8, 0., c, 100, 8));
  CASE(GPAR_ERANGE, gpar_dgemm(N, N, 12, 12, 12, 1., a, 0, 12, b, 0, 12, 0., c, 0, 12));
  CASE(GPAR_EALIAS, gpar_dgemm(N, N, 8, 8, 8, 1., a, 0, 8, b, 0, 8, 0., b, 0, 8));
  blas_cases(host, a, b, c, h, r, o, x2);
  blas_vec_cases(host, a, b, c, h, r, o, x2);
  /* submit on this device */
  gpar_buffer one[1] = {a}, rel[1] = {r}, foreign[1] = {x2};
  CASE(GPAR_EBADBUF, gpar_submit(eng, d, noop_fn, NULL, rel, 1, one, 1));
  CASE(GPAR_EENGINE, gpar_submit(eng, d, noop_fn, NULL, one, 1, foreign, 1));
  CASE(GPAR_EINVAL, gpar_submit(eng, d, NULL, NULL, one, 1, one, 1));

  /* The valid neighbours of the cases above are accepted. */
  float fa[64], fb[64], fc[64];
  for (int i = 0; i < 64; i++) fa[i] = (float)(i % 7), fb[i] = (float)(i % 5 - 2);
  gpar_write(a, 0, fa, sizeof fa);
  gpar_write(b, 0, fb, sizeof fb);
  int st1 = gpar_copy(a, 512, a, 0, 512);   /* same buffer, disjoint ranges */
  int st2 = gpar_copy(a, BUFSZ - 8, b, BUFSZ - 8, 8); /* up to the last byte */
  int st3 = gpar_sgemm(N, N, 8, 8, 8, 1.f, a, 0, 8, a, 0, 8, 0.f, a, 64, 8); /* A = B, C disjoint */
  int st4 = gpar_read(a, 256, fc, sizeof fc);
  float ref = 0;
  for (int p = 0; p < 8; p++) ref += fa[3 + p * 8] * fa[p + 5 * 8];
  ok(st1 == GPAR_OK && st2 == GPAR_OK && st3 == GPAR_OK && st4 == GPAR_OK && fc[3 + 5 * 8] == ref,
     "dev %d: valid edge cases accepted (%s %s %s %s)", d, gpar_status_name(st1), gpar_status_name(st2),
     gpar_status_name(st3), gpar_status_name(st4));
  {
    int z5 = gpar_sgemm(N, N, 0, 8, 8, 1.f, a, 0, 8, b, 0, 8, 0.f, c, 0, 8);
    diag("dev %d: m=0 sgemm returns %s (not asserted)", d, gpar_status_name(z5));
  }
  is_status(gpar_wait_all(eng), GPAR_OK, "wait_all after the table");
  gpar_buffer_release(b);
  gpar_buffer_release(c);
  gpar_buffer_release(h);
  if (o.id) gpar_buffer_release(o);
}

static void names(void) {
  static const struct {
    int code;
    const char *name, *text;
  } all[] = {
#define GPAR__T(n, v, t) {v, "GPAR_" #n, t},
      GPAR_STATUS_MAP(GPAR__T)
#undef GPAR__T
  };
  const int n = (int)(sizeof all / sizeof all[0]);
  int good_names = 1, good_text = 1, distinct = 1;
  for (int i = 0; i < n; i++) {
    const char *s = gpar_status_name(all[i].code), *t = gpar_strerror(all[i].code);
    good_names &= s && !strcmp(s, all[i].name);
    good_text &= t && !strcmp(t, all[i].text);
    for (int j = 0; j < i; j++)
      distinct &= s && t && strcmp(s, gpar_status_name(all[j].code)) && strcmp(t, gpar_strerror(all[j].code));
  }
  ok(good_names, "gpar_status_name of every status is its symbolic name");
  ok(good_text, "gpar_strerror of every status is its description");
  ok(distinct, "names and descriptions are distinct");
  const int unknown[] = {1, -99, -100, 12345, INT_MIN}; /* -99: below every status in the map */
  int good_unknown = 1;
  for (size_t u = 0; u < sizeof unknown / sizeof unknown[0]; u++) {
    const char *s = gpar_status_name(unknown[u]), *t = gpar_strerror(unknown[u]);
    good_unknown &= s != NULL && t != NULL;
    for (int i = 0; s && t && i < n; i++) good_unknown &= strcmp(s, all[i].name) && strcmp(t, all[i].text);
  }
  ok(good_unknown, "an unknown code gets a non-NULL string unlike any known one");
  gpar_buffer zero = {0};
  gpar_wait(zero);
  const char *e = gpar_last_error();
  ok(e && e[0], "gpar_last_error after a failure: \"%s\"", e ? e : "(null)");
}

int main(void) {
  tap_start();
  gpar_buffer x2, y3;
  eng = tu_engine(0, 2, 0);
  eng2 = tu_engine(GPAR_BACKEND_HOST, 1, 0);
  eng3 = tu_engine(GPAR_BACKEND_HOST, 1, 0);
  ndev = gpar_device_count(eng);
  if (ndev < 1) bail_out("no device");
  int cpu = gpar_device_find(eng, GPAR_BACKEND_HOST, GPAR_DEVICE_CPU, 0);
  if (gpar_buffer_create(eng2, 0, BUFSZ, &x2) != GPAR_OK) bail_out("create on eng2");
  gpar_fill(x2, 0, BUFSZ, 0);
  if (gpar_buffer_create(eng3, 0, BUFSZ, &y3) != GPAR_OK) bail_out("create on eng3");
  if (gpar_shutdown(eng3) != GPAR_OK) bail_out("shutdown eng3");
  names();
  for (int d = 0; d < ndev; d++) {
    tu_devinfo info;
    tu_device_info(eng, d, &info);
    diag("device %d: %s %s", d, info.backend, info.name);
    rt_dev = d;
    if (gpar_buffer_create(eng, d, BUFSZ, &rt_buf) != GPAR_OK) bail_out("create");
    if (d == cpu) global_cases(cpu, x2, y3);
    device_cases(d, x2);
    gpar_buffer_release(rt_buf);
  }
  gpar_stats st;
  gpar_stats_get(eng, &st);
  ok(st.ops_failed == 0, "no op failed in the engine (%llu)", (unsigned long long)st.ops_failed);
  gpar_buffer_release(x2);
  is_status(gpar_shutdown(eng2), GPAR_OK, "shutdown eng2");
  is_status(gpar_shutdown(eng), GPAR_OK, "shutdown");
  return done_testing();
}
