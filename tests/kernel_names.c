/* kernel_names.c: names that pass at create must build everywhere, so the ones a build trips
 * over are refused at create (GPAR_EINVAL with the column), by kernels and maps alike (one
 * check): C, C++ (CUDA) and OpenCL C keywords and types, OpenCL C's and CUDA's built-in
 * functions and variables, the vector types, the macros and functions the dialect and the
 * C headers of each backend define (NAN, INFINITY, memcpy, ...). Ordinary names still pass and
 * build on every device. Grids: a launch whose count of groups, or of work-items, does not fit
 * 64 bits is refused (GPAR_EINVAL, nothing enqueued) instead of wrapping (2^31 x 2^31 x 4
 * groups wrapped to 0: GPAR_OK, nothing ran).
 * Names that merely begin like macros (M_rows, an array called M) build and run everywhere.
 * Mutants caught: in names.c's gpar__kname_why, dropping the call that looks a name up in the list
 * (every clash passes again); in launch.c's check_grid, dropping the groups product check. */
#include "kernel_util.h"

static gpar_engine *eng;
static char why[256];

/* Names a build fails on, on some backend (host and PoCL: seen; CUDA: its headers). */
static const char *const clash[] = {
    "int", "return", "char", "memcpy", "memset", "NAN", "INFINITY", "HUGE_VALF", "HUGE_VAL", "FLT_MAX", "DBL_MAX",
    "FLT_EPSILON", "M_PI", "MAXFLOAT", "CHAR_BIT", "INT_MAX", "UINT32_MAX", "get_global_id", "get_local_id",
    "get_group_id", "get_local_size", "get_num_groups", "get_global_size", "barrier", "mem_fence",
    "CLK_LOCAL_MEM_FENCE", "as_uint", "as_float", "atomic_add", "atom_add", "atomic_cmpxchg", "printf", "malloc",
    "sqrt", "sqrtf", "exp", "fma", "size_t", "int8_t", "uint64_t", "intptr_t", "float4", "uint2", "double16", "char3",
    "half8", "longlong2", "float2x2", "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "atomicAdd",
    "atomicCAS", "dim3", "asm", "typeof", "constexpr", "nullptr", "char16_t", "static_assert", "half", "uchar",
    "kernel", "global", "private", "uint", "ulong",
    /* macros that exist (the list, not prefixes) */
    "unix", "linux", "FLT_MIN", "M_PI_F", "FP_ILOGB0", "HALF_MAX", "CL_VERSION_1_2", "CLK_GLOBAL_MEM_FENCE", "LDBL_MAX",
    "CUDART_VERSION", "cudaStreamDefault", "cl_khr_fp64", "cl_nv_pragma_unroll"};

static void test_clash(void) {
  for (size_t i = 0; i < sizeof clash / sizeof clash[0]; i++) {
    const char *nm = clash[i];
    char params[96], col[32];
    gpar_kernel k = {7};
    snprintf(params, sizeof params, "u64 n, u32 %s", nm);
    int st = gpar_kernel_create(eng, "k", params, "", NULL, &k);
    int good =
        st == GPAR_EINVAL && k.id == 0 && strstr(gpar_last_error(), "column 12:") && strstr(gpar_last_error(), nm);
    if (!good) diag("  kernel scalar %s: %s %s", nm, gpar_status_name(st), gpar_last_error());
    snprintf(params, sizeof params, "inout f32 *%s", nm);
    st = gpar_kernel_create(eng, "k", params, "", NULL, &k);
    good = good && st == GPAR_EINVAL && strstr(gpar_last_error(), "column 12:");
    if (st != GPAR_EINVAL) diag("  kernel buffer %s: %s %s", nm, gpar_status_name(st), gpar_last_error());
    gpar_map m = {7};
    snprintf(params, sizeof params, "f32 a, inout f32 %s", nm);
    st = gpar_map_create(eng, "m", params, "a = a", &m);
    snprintf(col, sizeof col, "column %d:", 18);
    good = good && st == GPAR_EINVAL && m.id == 0 && strstr(gpar_last_error(), col) && strstr(gpar_last_error(), nm);
    if (st != GPAR_EINVAL || !strstr(gpar_last_error(), col))
      diag("  map array %s: %s %s", nm, gpar_status_name(st), gpar_last_error());
    snprintf(params, sizeof params, "f32 %s, out f32 y", nm);
    st = gpar_map_create(eng, "m", params, "y = 1", &m);
    good = good && st == GPAR_EINVAL && strstr(gpar_last_error(), "column 5:");
    if (st != GPAR_EINVAL) diag("  map scalar %s: %s %s", nm, gpar_status_name(st), gpar_last_error());
    ok(good, "'%s' is refused at create with its column: kernel scalar and buffer, map array and scalar", nm);
  }
}

/* Names close to those still pass, and build and run on every device. */
static void test_fine(int ndev) {
  gpar_kernel k;
  int st = gpar_kernel_create(eng, "names_ok", "u64 n, f32 float5, f32 sqrt_, f32 Int, f32 get_id, inout f32 *intx",
                              "if (GPAR_GLOBAL_ID(0) < n) intx[GPAR_GLOBAL_ID(0)] = float5 + sqrt_ + Int + get_id;",
                              NULL, &k);
  is_status(st, GPAR_OK, "names near the reserved ones are kernel parameters");
  gpar_map m;
  is_status(gpar_map_create(eng, "map_ok", "f32 halfway, in f32 x2y, inout f32 result",
                            "result = halfway * x2y + result", &m),
            GPAR_OK, "  ... and map parameters");
  for (int d = 0; d < ndev && st == GPAR_OK; d++) {
    if (gpar_kernel_support(eng, d, why, sizeof why) != GPAR_OK) continue;
    float one[4] = {1, 1, 1, 1}, got[4] = {0};
    gpar_buffer b = ku_buffer_with(eng, d, one, sizeof one);
    gpar_grid g = {{1}, {4}};
    gpar_arg a[] = {gpar_arg_u64(4), gpar_arg_f32(1), gpar_arg_f32(2),
                    gpar_arg_f32(3), gpar_arg_f32(4), gpar_arg_buffer(b, 0)};
    int s = gpar_kernel_launch(k, d, &g, a, 6);
    gpar_arg ma[] = {gpar_arg_f32(2), gpar_arg_buffer(b, 0), gpar_arg_buffer(b, 0)};
    if (!s) s = gpar_map_launch(m, 4, ma, 3);
    if (!s) s = gpar_read(b, 0, got, sizeof got);
    ok(!s && got[0] == 30 && got[3] == 30, "dev %s: they build and run", ku_devname(eng, d));
    if (s) diag("  %s: %s", gpar_status_name(s), gpar_last_error());
    gpar_buffer_release(b);
  }
  gpar_map_release(m);
  gpar_kernel_release(k);
}

/* Names that only begin like macros (M_, FLT_, CL_, CLK_, DBL_, LDBL_, FP_) are not macros: a
 * kernel named M_step with such parameters, and a map whose arrays are named M, FP, CL, CLK, FLT,
 * DBL and LDBL (its pointers are the library's own names, gpar_p_M, which no accepted name can
 * be) next to a scalar named M_p, build and run on every device. Mutants: names.c's list check
 * put back as the prefixes it replaced (all refused at create); map.c's pointers named NAME_p
 * again (the map with a scalar M_p fails to build). */
static void test_macro_prefixes(int ndev) {
  gpar_kernel k;
  int st = gpar_kernel_create(eng, "M_step",
                              "u64 M_rows, f32 FLT_scale, f32 CL_x, f32 CLK_y, f32 DBL_z, f32 LDBL_w, f32 FP_v, "
                              "inout f32 *M_out",
                              "gpar_u64 i = GPAR_GLOBAL_ID(0);\n"
                              "if (i < M_rows) M_out[i] = FLT_scale * M_out[i] + CL_x + CLK_y + DBL_z + LDBL_w + FP_v;",
                              NULL, &k);
  is_status(st, GPAR_OK, "kernel M_step with parameters M_rows, FLT_scale, CL_x, CLK_y, DBL_z, LDBL_w, FP_v, M_out");
  gpar_map m;
  int ms = gpar_map_create(eng, "M_map",
                           "in f32 M, in f32 FP, in f32 CL, in f32 CLK, in f32 FLT, f32 M_p, in f32 DBL, "
                           "inout f32 LDBL",
                           "LDBL = M + FP + CL + CLK + FLT + DBL + LDBL + M_p", &m);
  is_status(ms, GPAR_OK, "a map over arrays M, FP, CL, CLK, FLT, DBL, LDBL and a scalar M_p");
  if (ms) diag("  %s", gpar_last_error());
  for (int d = 0; d < ndev && st == GPAR_OK && ms == GPAR_OK; d++) {
    if (gpar_kernel_support(eng, d, why, sizeof why) != GPAR_OK) continue;
    float one[4] = {1, 1, 1, 1}, got[4] = {0};
    gpar_buffer b = ku_buffer_with(eng, d, one, sizeof one);
    gpar_grid g = {{1}, {4}};
    gpar_arg a[] = {gpar_arg_u64(4), gpar_arg_f32(2), gpar_arg_f32(1), gpar_arg_f32(1),
                    gpar_arg_f32(1), gpar_arg_f32(1), gpar_arg_f32(1), gpar_arg_buffer(b, 0)};
    int s2 = gpar_kernel_launch(k, d, &g, a, 8); /* 2 * 1 + 5 = 7 */
    gpar_arg ma[] = {gpar_arg_buffer(b, 0), gpar_arg_buffer(b, 0), gpar_arg_buffer(b, 0), gpar_arg_buffer(b, 0),
                     gpar_arg_buffer(b, 0), gpar_arg_f32(3),       gpar_arg_buffer(b, 0), gpar_arg_buffer(b, 0)};
    if (!s2) s2 = gpar_map_launch(m, 4, ma, 8); /* 7 * 7 + 3 = 52 */
    if (!s2) s2 = gpar_read(b, 0, got, sizeof got);
    ok(!s2 && got[0] == 52 && got[3] == 52, "dev %s: they build and run (%g)", ku_devname(eng, d), got[0]);
    if (s2) diag("  %s: %s", gpar_status_name(s2), gpar_last_error());
    gpar_buffer_release(b);
  }
  if (ms == GPAR_OK) gpar_map_release(m);
  if (st == GPAR_OK) gpar_kernel_release(k);
}

/* --refused: the names read from stdin (one per line) that are not refused, printed
 * (tests/kernel_reserved.sh: every macro a compiler defines must be refused). */
static int list_unrefused(void) {
  char line[256];
  int n = 0;
  while (fgets(line, sizeof line, stdin)) {
    line[strcspn(line, "\n")] = 0;
    char params[300];
    gpar_kernel k = {0};
    snprintf(params, sizeof params, "u32 %s", line);
    if (*line && gpar_kernel_create(eng, "k", params, "", NULL, &k) == GPAR_OK) {
      printf("%s\n", line);
      gpar_kernel_release(k);
      n++;
    }
  }
  gpar_shutdown(eng);
  return n != 0;
}

/* ---------------------------------------------------------------- grids past 64 bits */

static void test_grids(int ndev) {
  gpar_kernel k = ku_kernel(eng, "count", "inout u32 *o", "gpar_atomic_add_u32(o, 1u);", NULL);
  for (int d = 0; d < ndev; d++) {
    if (gpar_kernel_support(eng, d, why, sizeof why) != GPAR_OK) continue;
    gpar_buffer b = tu_buffer(eng, d, 4);
    gpar_fill(b, 0, 4, 0);
    gpar_arg a[] = {gpar_arg_buffer(b, 0)};
    static const struct {
      gpar_grid g;
      const char *says, *what;
    } big[] = {
        {{{1u << 31, 1u << 31, 4}, {1, 1, 1}}, "groups", "2^31 x 2^31 x 4 groups (2^64: wrapped to 0)"},
        {{{UINT32_MAX, UINT32_MAX, UINT32_MAX}, {1, 1, 1}}, "groups", "(2^32 - 1)^3 groups"},
        {{{1u << 31, 1u << 31, 2}, {2, 1, 1}}, "work-items", "2^63 groups of 2 work-items (2^64 work-items)"},
    };
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
      gpar_stats s0, s1;
      gpar_stats_get(eng, &s0);
      int st = gpar_kernel_launch(k, d, &big[i].g, a, 1);
      gpar_stats_get(eng, &s1);
      ok(st == GPAR_EINVAL && strstr(gpar_last_error(), big[i].says) && strstr(gpar_last_error(), "64 bits") &&
             s1.ops_submitted == s0.ops_submitted,
         "dev %s: %s refused, nothing enqueued", ku_devname(eng, d), big[i].what);
      if (st != GPAR_EINVAL) diag("  %s: %s", gpar_status_name(st), gpar_last_error());
    }
    gpar_grid fine = {{3, 2, 2}, {2, 1, 1}};
    uint32_t n = 0;
    int st = gpar_kernel_launch(k, d, &fine, a, 1);
    if (!st) st = gpar_read(b, 0, &n, 4);
    ok(!st && n == 24, "dev %s: a 3-D grid still runs every work-item once (%u)", ku_devname(eng, d), n);
    gpar_buffer_release(b);
  }
  gpar_kernel_release(k);
}

int main(int argc, char **argv) {
  if (argc == 2 && !strcmp(argv[1], "--refused")) {
    gpar_config cfg;
    gpar_config_init(&cfg);
    cfg.quiet = 1;
    cfg.backends = GPAR_BACKEND_HOST;
    return gpar_init(&eng, &cfg) ? 2 : list_unrefused();
  }
  tap_start();
  eng = ku_engine(0);
  int ndev = gpar_device_count(eng);
  if (tu_want(argc, argv, "names")) test_clash();
  if (tu_want(argc, argv, "fine")) test_fine(ndev);
  if (tu_want(argc, argv, "prefixes")) test_macro_prefixes(ndev);
  if (tu_want(argc, argv, "grids")) test_grids(ndev);
  is_status(gpar_shutdown(eng), GPAR_OK, "shutdown");
  return done_testing();
}
