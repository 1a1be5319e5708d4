/* array_badinput.c: every array call refuses bad input with its status and enqueues nothing
 * (gpar_stats.ops_submitted unchanged): unknown ops, axes and element types, negative sizes and
 * short leading dimensions, ranges past the end and offsets that overflow, overlaps that are not
 * exactly in place, null, released and foreign handles, operands on another device; zero-size
 * elementwise calls succeed with nothing enqueued; maps: parameter lists that do not parse (the
 * column named), launches with wrong counts, kinds, offsets and ranges, stale and foreign maps;
 * the engine works on afterwards. */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "testutil.h"

static gpar_engine *eng;

static uint64_t submitted(void) {
  gpar_stats s;
  gpar_stats_get(eng, &s);
  return s.ops_submitted;
}

/* The call returns want and enqueues nothing. */
#define REFUSE(want, call, ...)                                                                     \
  do {                                                                                             \
    uint64_t before_ = submitted();                                                                \
    int st_ = (call);                                                                              \
    uint64_t after_ = submitted();                                                                 \
    if (!ok(st_ == (want) && after_ == before_, __VA_ARGS__))                                     \
      diag("  got %s (%s), want %s; ops submitted %llu -> %llu", gpar_status_name(st_), gpar_last_error(), \
           gpar_status_name(want), (unsigned long long)before_, (unsigned long long)after_);       \
  } while (0)

static const gpar_buffer null_buf = {0, 0};

static void test_elementwise(gpar_buffer x, gpar_buffer y, gpar_buffer dead, gpar_buffer foreign) {
  const size_t n = 256; /* x and y hold 256 floats */
  REFUSE(GPAR_EINVAL, gpar_unary((gpar_unop)8, GPAR_FLOAT, n, x, 0, y, 0), "unary: unknown op 8");
  REFUSE(GPAR_EINVAL, gpar_unary((gpar_unop)-1, GPAR_FLOAT, n, x, 0, y, 0), "unary: unknown op -1");
  REFUSE(GPAR_EINVAL, gpar_unary(GPAR_UN_EXP, GPAR_INT32, n, x, 0, y, 0), "unary: GPAR_INT32 refused");
  REFUSE(GPAR_EINVAL, gpar_unary(GPAR_UN_EXP, (gpar_dtype)9, n, x, 0, y, 0), "unary: unknown type 9");
  REFUSE(GPAR_ERANGE, gpar_unary(GPAR_UN_EXP, GPAR_FLOAT, n + 1, x, 0, y, 0), "unary: count past the end");
  REFUSE(GPAR_ERANGE, gpar_unary(GPAR_UN_EXP, GPAR_FLOAT, 10, x, 250, y, 0), "unary: offset + count past the end");
  REFUSE(GPAR_ERANGE, gpar_unary(GPAR_UN_EXP, GPAR_DOUBLE, 200, x, 0, y, 0), "unary: f64 count past the end");
  REFUSE(GPAR_ERANGE, gpar_unary(GPAR_UN_EXP, GPAR_FLOAT, 2, x, SIZE_MAX, y, 0), "unary: offset overflows");
  REFUSE(GPAR_ERANGE, gpar_unary(GPAR_UN_EXP, GPAR_FLOAT, SIZE_MAX, x, 0, y, 0), "unary: count SIZE_MAX");
  REFUSE(GPAR_ERANGE, gpar_unary(GPAR_UN_EXP, GPAR_FLOAT, 0, x, 257, y, 0), "unary: empty range, offset past the end");
  REFUSE(GPAR_EALIAS, gpar_unary(GPAR_UN_EXP, GPAR_FLOAT, 100, x, 0, x, 1), "unary: y overlaps x shifted by one");
  REFUSE(GPAR_EBADBUF, gpar_unary(GPAR_UN_EXP, GPAR_FLOAT, n, null_buf, 0, y, 0), "unary: null x");
  REFUSE(GPAR_EBADBUF, gpar_unary(GPAR_UN_EXP, GPAR_FLOAT, n, x, 0, dead, 0), "unary: released y");
  REFUSE(GPAR_EENGINE, gpar_unary(GPAR_UN_EXP, GPAR_FLOAT, n, x, 0, foreign, 0), "unary: y of another engine");
  REFUSE(GPAR_OK, gpar_unary(GPAR_UN_EXP, GPAR_FLOAT, 0, x, 0, y, 0), "unary: count 0 is GPAR_OK, nothing enqueued");
  REFUSE(GPAR_EINVAL, gpar_binary((gpar_binop)6, GPAR_FLOAT, n, x, 0, x, 0, y, 0), "binary: unknown op 6");
  REFUSE(GPAR_ERANGE, gpar_binary(GPAR_BIN_ADD, GPAR_FLOAT, n, x, 1, x, 0, y, 0), "binary: a past the end");
  REFUSE(GPAR_EALIAS, gpar_binary(GPAR_BIN_ADD, GPAR_FLOAT, 100, x, 0, y, 0, y, 50), "binary: c overlaps b, shifted");
  REFUSE(GPAR_EBADBUF, gpar_binary(GPAR_BIN_ADD, GPAR_FLOAT, n, x, 0, dead, 0, y, 0), "binary: released b");
  REFUSE(GPAR_OK, gpar_binary(GPAR_BIN_ADD, GPAR_FLOAT, 0, x, 0, x, 0, y, 0), "binary: count 0, nothing enqueued");
}

static void test_bcast(gpar_buffer x, gpar_buffer y, gpar_buffer v) {
  /* x, y: 256 floats = 16 x 16; v: 16 floats */
  REFUSE(GPAR_EINVAL, gpar_binary_bcast(GPAR_BIN_ADD, GPAR_FLOAT, 16, 16, x, 0, 16, v, 0, (gpar_axis)2, y, 0, 16),
         "bcast: unknown axis");
  REFUSE(GPAR_EINVAL, gpar_binary_bcast(GPAR_BIN_ADD, GPAR_FLOAT, -1, 16, x, 0, 16, v, 0, GPAR_PER_ROW, y, 0, 16),
         "bcast: negative m");
  REFUSE(GPAR_EINVAL, gpar_binary_bcast(GPAR_BIN_ADD, GPAR_FLOAT, 16, 16, x, 0, 15, v, 0, GPAR_PER_ROW, y, 0, 16),
         "bcast: lda < m");
  REFUSE(GPAR_EINVAL, gpar_binary_bcast(GPAR_BIN_ADD, GPAR_FLOAT, 16, 16, x, 0, 16, v, 0, GPAR_PER_ROW, y, 0, 0),
         "bcast: ldc 0");
  REFUSE(GPAR_ERANGE, gpar_binary_bcast(GPAR_BIN_ADD, GPAR_FLOAT, 16, 16, x, 0, 17, v, 0, GPAR_PER_ROW, y, 0, 16),
         "bcast: A with lda 17 past the end");
  REFUSE(GPAR_ERANGE, gpar_binary_bcast(GPAR_BIN_ADD, GPAR_FLOAT, 8, 17, x, 0, 8, v, 0, GPAR_PER_COLUMN, y, 0, 8),
         "bcast: 17 columns, v of 16 (per column) past the end");
  REFUSE(GPAR_ERANGE, gpar_binary_bcast(GPAR_BIN_ADD, GPAR_FLOAT, 16, 8, x, 0, 16, v, 1, GPAR_PER_ROW, y, 0, 16),
         "bcast: v at offset 1 past the end");
  REFUSE(GPAR_EALIAS, gpar_binary_bcast(GPAR_BIN_ADD, GPAR_FLOAT, 16, 8, x, 0, 16, y, 0, GPAR_PER_ROW, y, 0, 16),
         "bcast: v overlaps C");
  REFUSE(GPAR_EALIAS, gpar_binary_bcast(GPAR_BIN_ADD, GPAR_FLOAT, 8, 8, x, 0, 16, v, 0, GPAR_PER_ROW, x, 0, 8),
         "bcast: C over A with another ld");
  REFUSE(GPAR_OK, gpar_binary_bcast(GPAR_BIN_ADD, GPAR_FLOAT, 0, 16, x, 0, 1, v, 0, GPAR_PER_ROW, y, 0, 1),
         "bcast: m == 0, nothing enqueued");
}

static void test_reduce(gpar_buffer x, gpar_buffer y, gpar_buffer v) {
  REFUSE(GPAR_EINVAL, gpar_reduce_range((gpar_redop)3, GPAR_FLOAT, 16, x, 0, y, 0), "reduce range: unknown op");
  REFUSE(GPAR_EINVAL, gpar_reduce_range(GPAR_SUM, GPAR_INT32, 16, x, 0, y, 0), "reduce range: GPAR_INT32");
  REFUSE(GPAR_ERANGE, gpar_reduce_range(GPAR_SUM, GPAR_FLOAT, 257, x, 0, y, 0), "reduce range: x past the end");
  REFUSE(GPAR_ERANGE, gpar_reduce_range(GPAR_SUM, GPAR_FLOAT, 16, x, 0, y, 256), "reduce range: out past the end");
  REFUSE(GPAR_EALIAS, gpar_reduce_range(GPAR_SUM, GPAR_FLOAT, 16, x, 0, x, 0), "reduce range: out in x (no in place)");
  REFUSE(GPAR_EALIAS, gpar_reduce_range(GPAR_MAX, GPAR_FLOAT, 16, x, 0, x, 15), "reduce range: out on x's last element");
  REFUSE(GPAR_EINVAL, gpar_reduce_matrix(GPAR_SUM, GPAR_FLOAT, 16, 16, x, 0, 16, (gpar_axis)-1, v, 0),
         "reduce matrix: unknown axis");
  REFUSE(GPAR_EINVAL, gpar_reduce_matrix(GPAR_SUM, GPAR_FLOAT, 16, -2, x, 0, 16, GPAR_PER_ROW, v, 0),
         "reduce matrix: negative n");
  REFUSE(GPAR_ERANGE, gpar_reduce_matrix(GPAR_SUM, GPAR_FLOAT, 17, 8, x, 0, 17, GPAR_PER_ROW, v, 0),
         "reduce matrix: 17 results into 16");
  REFUSE(GPAR_EALIAS, gpar_reduce_matrix(GPAR_SUM, GPAR_FLOAT, 16, 8, x, 0, 16, GPAR_PER_COLUMN, x, 100),
         "reduce matrix: out overlaps A");
  REFUSE(GPAR_EINVAL, gpar_argmax(GPAR_INT32, 16, 16, x, 0, 16, y, 0), "argmax: GPAR_INT32 input");
  REFUSE(GPAR_ERANGE, gpar_argmax(GPAR_FLOAT, 16, 16, x, 0, 16, v, 1), "argmax: idx past the end");
  REFUSE(GPAR_EALIAS, gpar_argmax(GPAR_FLOAT, 16, 8, x, 0, 16, x, 120), "argmax: idx overlaps A");
  REFUSE(GPAR_OK, gpar_argmax(GPAR_FLOAT, 16, 0, x, 0, 16, v, 0), "argmax: n == 0, nothing enqueued");
}

static void test_softmax(gpar_buffer z, gpar_buffer lab, gpar_buffer loss, gpar_buffer g, gpar_buffer dead) {
  /* z, g: 256 floats (10 x 25, ld 10); lab: 16 int32; loss: 16 floats */
  REFUSE(GPAR_EINVAL, gpar_softmax_xent(GPAR_FLOAT, 10, 16, z, 0, 10, lab, 0, 0.1, null_buf, 0, null_buf, 0, 10),
         "softmax: neither loss nor G");
  REFUSE(GPAR_EINVAL, gpar_softmax_xent(GPAR_INT32, 10, 16, z, 0, 10, lab, 0, 0.1, loss, 0, g, 0, 10),
         "softmax: GPAR_INT32 logits");
  REFUSE(GPAR_EINVAL, gpar_softmax_xent(GPAR_FLOAT, 10, 16, z, 0, 9, lab, 0, 0.1, loss, 0, g, 0, 10), "softmax: ldz < k");
  REFUSE(GPAR_EINVAL, gpar_softmax_xent(GPAR_FLOAT, 10, 16, z, 0, 10, lab, 0, 0.1, loss, 0, g, 0, 9), "softmax: ldg < k");
  REFUSE(GPAR_EINVAL, gpar_softmax_xent(GPAR_FLOAT, 10, 16, z, 0, 10, lab, 0, NAN, loss, 0, g, 0, 10),
         "softmax: grad_scale NaN");
  REFUSE(GPAR_ERANGE, gpar_softmax_xent(GPAR_FLOAT, 10, 17, z, 0, 10, lab, 0, 0.1, loss, 0, g, 0, 10),
         "softmax: 17 labels of 16");
  REFUSE(GPAR_ERANGE, gpar_softmax_xent(GPAR_FLOAT, 10, 16, z, 100, 10, lab, 0, 0.1, loss, 0, g, 0, 10),
         "softmax: Z past the end");
  REFUSE(GPAR_EALIAS, gpar_softmax_xent(GPAR_FLOAT, 10, 16, z, 0, 10, lab, 0, 0.1, loss, 0, z, 0, 10),
         "softmax: G in place over Z (refused)");
  REFUSE(GPAR_EALIAS, gpar_softmax_xent(GPAR_FLOAT, 10, 8, z, 0, 10, lab, 0, 0.1, g, 0, g, 4, 10),
         "softmax: loss overlaps G");
  REFUSE(GPAR_EALIAS, gpar_softmax_xent(GPAR_FLOAT, 10, 4, z, 0, 10, lab, 0, 0.1, lab, 2, null_buf, 0, 1),
         "softmax: loss over the labels");
  REFUSE(GPAR_EBADBUF, gpar_softmax_xent(GPAR_FLOAT, 10, 16, z, 0, 10, dead, 0, 0.1, loss, 0, g, 0, 10),
         "softmax: released labels");
  REFUSE(GPAR_EBADBUF, gpar_softmax_xent(GPAR_FLOAT, 10, 16, z, 0, 10, null_buf, 0, 0.1, loss, 0, g, 0, 10),
         "softmax: null labels");
}

/* Operands on two devices: refused whichever is the output. */
static void test_devices(int d1, gpar_buffer x) {
  gpar_buffer o = tu_buffer(eng, d1, 1024);
  REFUSE(GPAR_EINVAL, gpar_unary(GPAR_UN_NEG, GPAR_FLOAT, 16, x, 0, o, 0), "unary: x on another device than y");
  REFUSE(GPAR_EINVAL, gpar_binary(GPAR_BIN_ADD, GPAR_FLOAT, 16, o, 0, x, 0, o, 16), "binary: b on another device");
  REFUSE(GPAR_EINVAL, gpar_binary_bcast(GPAR_BIN_ADD, GPAR_FLOAT, 4, 4, o, 0, 4, x, 0, GPAR_PER_ROW, o, 100, 4),
         "bcast: v on another device");
  REFUSE(GPAR_EINVAL, gpar_reduce_range(GPAR_SUM, GPAR_FLOAT, 16, x, 0, o, 0), "reduce range: out on another device");
  REFUSE(GPAR_EINVAL, gpar_argmax(GPAR_FLOAT, 4, 4, o, 0, 4, x, 0), "argmax: idx on another device");
  gpar_buffer_release(o);
}


/* Maps: parameter lists that do not parse (with the column), launches with wrong arguments. */
static void test_maps(int d1, gpar_buffer x, gpar_buffer y, gpar_engine *other, gpar_buffer foreign) {
  gpar_map m, bad = {0};
  const char *lists[] = {"in f32 x", "in f33 x, out f32 y", "out f32 i", "outt f32 y", "out f32 y, in f32 y",
                         "out f32 y, in f32 y_p, in f32 y", "out f32 y,, in f32 x", "f16 s, out f32 y", "out f32 y x z"};
  for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
    char what[96];
    snprintf(what, sizeof what, "map_create: \"%s\" refused", lists[i]);
    REFUSE(GPAR_EINVAL, gpar_map_create(eng, "m", lists[i], "y = 1", &bad), "%s", what);
  }
  REFUSE(GPAR_EINVAL, gpar_map_create(eng, "m", "in f33 x, out f32 y", "y = 1", &bad), "map_create: ... *map null: %s",
         bad.id == 0 ? "yes" : "no");
  ok(strstr(gpar_last_error(), "column 4") != NULL, "map_create: the message names the column (%s)", gpar_last_error());
  REFUSE(GPAR_EINVAL, gpar_map_create(eng, "2bad", "out f32 y", "y = 1", &bad), "map_create: a name that is no identifier");
  is_status(gpar_map_create(eng, "axpy", "f32 a, in f32 x, inout f32 y", "y = a * x + y", &m), GPAR_OK, "map_create: axpy");
  gpar_arg a[3] = {gpar_arg_f32(2), gpar_arg_buffer(x, 0), gpar_arg_buffer(y, 0)};
  REFUSE(GPAR_EINVAL, gpar_map_launch(m, 16, a, 2), "map_launch: 2 arguments for 3 parameters");
  a[0] = gpar_arg_f64(2);
  REFUSE(GPAR_EINVAL, gpar_map_launch(m, 16, a, 3), "map_launch: f64 given for an f32 scalar");
  a[0] = gpar_arg_f32(2), a[1] = gpar_arg_f32(1);
  REFUSE(GPAR_EINVAL, gpar_map_launch(m, 16, a, 3), "map_launch: a scalar given for an array");
  a[1] = gpar_arg_buffer(x, 2);
  REFUSE(GPAR_EINVAL, gpar_map_launch(m, 16, a, 3), "map_launch: byte offset 2 of an f32 array");
  a[1] = gpar_arg_buffer(x, 8);
  REFUSE(GPAR_ERANGE, gpar_map_launch(m, 255, a, 3), "map_launch: n elements past the end of x");
  a[1] = gpar_arg_buffer(y, 4);
  REFUSE(GPAR_EALIAS, gpar_map_launch(m, 16, a, 3), "map_launch: y overlaps x shifted by one");
  a[1] = gpar_arg_buffer(foreign, 0);
  REFUSE(GPAR_EENGINE, gpar_map_launch(m, 16, a, 3), "map_launch: x of another engine");
  a[1] = gpar_arg_buffer((gpar_buffer){0, 0}, 0);
  REFUSE(GPAR_EBADBUF, gpar_map_launch(m, 16, a, 3), "map_launch: null x");
  gpar_buffer o = d1 >= 0 ? tu_buffer(eng, d1, 1024) : x;
  a[1] = gpar_arg_buffer(o, 0);
  if (d1 >= 0) REFUSE(GPAR_EINVAL, gpar_map_launch(m, 16, a, 3), "map_launch: x on another device than y");
  else skip(1, "one device only");
  a[1] = gpar_arg_buffer(x, 0);
  REFUSE(GPAR_OK, gpar_map_launch(m, 0, a, 3), "map_launch: n == 0, nothing enqueued");
  gpar_map om;
  is_status(gpar_map_create(other, "axpy", "f32 a, in f32 x, inout f32 y", "y = a * x + y", &om), GPAR_OK, "map on another engine");
  REFUSE(GPAR_EENGINE, gpar_map_launch(om, 16, a, 3), "map_launch: a map of another engine than its buffers");
  gpar_map_release(om);
  is_status(gpar_map_launch(m, 16, a, 3), GPAR_OK, "map_launch: the good launch after the refusals");
  is_status(gpar_map_release(m), GPAR_OK, "map_release");
  REFUSE(GPAR_EINVAL, gpar_map_launch(m, 16, a, 3), "map_launch: released map");
  REFUSE(GPAR_EINVAL, gpar_map_release(m), "map_release: twice");
  REFUSE(GPAR_EINVAL, gpar_map_launch((gpar_map){m.id ^ 1}, 16, a, 3), "map_launch: forged handle");
  if (d1 >= 0) gpar_buffer_release(o);
}

int main(void) {
  tap_start();
  eng = tu_engine(0, 0, 0);
  gpar_engine *other = tu_engine(GPAR_BACKEND_HOST, 1, 0);
  int host = gpar_device_find(eng, GPAR_BACKEND_HOST, -1, 0), d1 = -1;
  for (int d = 0; d < gpar_device_count(eng) && d1 < 0; d++)
    if (d != host) d1 = d;
  gpar_buffer x = tu_buffer(eng, host, 1024), y = tu_buffer(eng, host, 1024), v = tu_buffer(eng, host, 64);
  gpar_buffer lab = tu_buffer(eng, host, 64), dead = tu_buffer(eng, host, 1024), foreign = tu_buffer(other, 0, 1024);
  gpar_fill(x, 0, 1024, 0), gpar_fill(y, 0, 1024, 0), gpar_fill(v, 0, 64, 0), gpar_fill(lab, 0, 64, 0);
  gpar_buffer_release(dead);
  is_status(gpar_wait_all(eng), GPAR_OK, "setup");
  test_elementwise(x, y, dead, foreign);
  test_bcast(x, y, v);
  test_reduce(x, y, v);
  test_softmax(x, lab, v, y, dead);
  if (d1 >= 0)
    test_devices(d1, x);
  else
    skip(5, "one device only: no operands on two devices");
  test_maps(d1, x, y, other, foreign);
  /* the engine works on: one good call of each kind runs */
  float h[16];
  is_status(gpar_unary(GPAR_UN_NEG, GPAR_FLOAT, 16, x, 0, y, 0), GPAR_OK, "a good unary after the refusals");
  is_status(gpar_reduce_range(GPAR_MIN, GPAR_FLOAT, 16, y, 0, v, 3), GPAR_OK, "a good reduction");
  is_status(gpar_read(v, 0, h, sizeof h), GPAR_OK, "read");
  ok(h[3] == 0.0f, "the reduction ran: min of -0 = %g", h[3]);
  is_status(gpar_wait_all(eng), GPAR_OK, "wait_all: no failure left by the refusals");
  gpar_buffer_release(x), gpar_buffer_release(y), gpar_buffer_release(v), gpar_buffer_release(lab);
  gpar_buffer_release(foreign);
  is_status(gpar_shutdown(other), GPAR_OK, "shutdown the other engine");
  REFUSE(GPAR_EBADBUF, gpar_unary(GPAR_UN_NEG, GPAR_FLOAT, 16, foreign, 0, foreign, 0), "unary on a shut-down engine's buffer");
  is_status(gpar_shutdown(eng), GPAR_OK, "shutdown");
  return done_testing();
}
