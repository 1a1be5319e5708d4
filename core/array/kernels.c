/* kernels.c: the array ops as portable kernels (the kernel dialect, gpar.h), written once for
 * every GPU backend: a preamble per element type (load, store and the compute type's math) and
 * one body per kind and variant (in place, partial results of two-pass reductions, optional
 * softmax outputs). Each engine keeps its kernels in a table indexed by (kind, type, variant),
 * made at first use, with each kernel's group size and grid limits per device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>

#include "array/kernels.h"
#include "kernel/kernel.h"

/* ---------------------------------------------------------------- sources */

/* Type-dependent part: the compute type arr_c, loads and stores of the storage type (ARR_LD,
 * ARR_ST), of the input and output of a reduction pass (ARR_LDI, ARR_STO: storage or compute
 * type), and the compute type's math. */
static size_t type_preamble(char *out, size_t cap, int dt, int var_in_c, int var_out_c) {
  static const char *const ld[4] = {"(p)[i]", "(p)[i]", "gpar_load_f16(p, i)", "gpar_load_bf16(p, i)"};
  static const char *const st[4] = {"((p)[i] = (v))", "((p)[i] = (v))", "gpar_store_f16(p, i, v)",
                                    "gpar_store_bf16(p, i, v)"};
  const char *c = dt == GPAR_DOUBLE ? "gpar_f64" : "gpar_f32", *f = dt == GPAR_DOUBLE ? "" : "f";
  /* -x and |x| as IEEE 754's sign-bit operations, NaN payloads kept: GPUs' neg and abs
   * instructions give their canonical NaN instead (f16 0x7c01 negated gave 0x7fff on CUDA and NVIDIA OpenCL). */
  const char *w = dt == GPAR_DOUBLE ? "64" : "32", *sb = dt == GPAR_DOUBLE ? "((gpar_u64)1 << 63)" : "0x80000000u";
  int n = snprintf(out, cap,
           "typedef %s arr_c;\n"
           "#define ARR_LD(p, i) %s\n#define ARR_ST(p, i, v) %s\n"
           "#define ARR_LDI(p, i) %s\n#define ARR_STO(p, i, v) %s\n"
           "#define ARR_EXP(x) exp%s(x)\n#define ARR_LOG(x) log%s(x)\n#define ARR_TANH(x) tanh%s(x)\n"
           "#define ARR_SQRT(x) sqrt%s(x)\n"
           "#define ARR_NEG(x) gpar_as_f%s(gpar_as_u%s(x) ^ %s)\n#define ARR_FABS(x) gpar_as_f%s(gpar_as_u%s(x) & ~%s)\n",
           c, ld[dt], st[dt], var_in_c ? "(p)[i]" : ld[dt], var_out_c ? "((p)[i] = (v))" : st[dt], f, f, f, f, w, w, sb,
           w, w, sb);
  return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

/* What every array kernel shares: NaN-propagating max and min, the ops, identities. */
static const char common_preamble[] =
    "#define ARR_MAX(p, q) ((p) != (p) || (p) > (q) ? (p) : (q))\n"
    "#define ARR_MIN(p, q) ((p) != (p) || (p) < (q) ? (p) : (q))\n"
    "#define ARR_ADD(p, q) ((p) + (q))\n"
    "GPAR_FN arr_c arr_unary(gpar_i32 op, arr_c v) {\n"
    "  switch (op) {\n"
    "  case 0: return v < (arr_c)0 ? (arr_c)0 : v;\n"
    "  case 1: return ARR_EXP(v);\n"
    "  case 2: return ARR_LOG(v);\n"
    "  case 3: return ARR_TANH(v);\n"
    "  case 4: return (arr_c)1 / ((arr_c)1 + ARR_EXP(-v));\n"
    "  case 5: return ARR_FABS(v);\n"
    "  case 6: return ARR_SQRT(v);\n"
    "  default: return ARR_NEG(v);\n"
    "  }\n"
    "}\n"
    "GPAR_FN arr_c arr_binary(gpar_i32 op, arr_c p, arr_c q) {\n"
    "  switch (op) {\n"
    "  case 0: return p + q;\n"
    "  case 1: return p - q;\n"
    "  case 2: return p * q;\n"
    "  case 3: return p / q;\n"
    "  case 4: return ARR_MAX(p, q);\n"
    "  default: return ARR_MIN(p, q);\n"
    "  }\n"
    "}\n"
    "GPAR_FN arr_c arr_ident(gpar_i32 op) { return op == 0 ? (arr_c)0 : op == 1 ? -(arr_c)INFINITY : (arr_c)INFINITY; }\n"
    "GPAR_FN arr_c arr_acc(gpar_i32 op, arr_c a, arr_c b) { return op == 0 ? a + b : op == 1 ? ARR_MAX(a, b) : ARR_MIN(a, b); }\n"
    /* a group's tree over sh[0 .. group size), a power of two: the result in sh[0] */
    "#define ARR_TREE(op, sh, l)                                                    \\\n"
    "  for (gpar_u32 s_ = GPAR_GROUP_SIZE(0) / 2; s_ > 0; s_ >>= 1) {              \\\n"
    "    if ((l) < s_) sh[l] = arr_acc(op, sh[l], sh[(l) + s_]);                   \\\n"
    "    GPAR_BARRIER();                                                           \\\n"
    "  }\n"
    /* a strided sweep x[i], x[i + s], ... (< n) into a0..a3, four loads in flight */
    "#define ARR_SWEEP(F, x, i, s, n)                                                      \\\n"
    "  for (; (i) + 3 * (s) < (n); (i) += 4 * (s)) {                                       \\\n"
    "    a0 = F(a0, ARR_LDI(x, i)); a1 = F(a1, ARR_LDI(x, (i) + (s)));                     \\\n"
    "    a2 = F(a2, ARR_LDI(x, (i) + 2 * (s))); a3 = F(a3, ARR_LDI(x, (i) + 3 * (s)));     \\\n"
    "  }                                                                                   \\\n"
    "  for (; (i) < (n); (i) += (s)) a0 = F(a0, ARR_LDI(x, i));\n";

/* Bodies. Pointers named by the signature; in-place variants alias one pointer to another. */
static const char body_unary[] =
    "for (gpar_u64 i = GPAR_GLOBAL_ID(0); i < n; i += GPAR_GLOBAL_SIZE(0)) ARR_ST(y, i, arr_unary(op, ARR_LD(x, i)));";
static const char body_binary[] =
    "for (gpar_u64 i = GPAR_GLOBAL_ID(0); i < n; i += GPAR_GLOBAL_SIZE(0))\n"
    "  ARR_ST(c, i, arr_binary(op, ARR_LD(a, i), ARR_LD(b, i)));";
static const char body_bcast[] =
    "for (gpar_u64 j = GPAR_GROUP_ID(1); j < n; j += GPAR_NUM_GROUPS(1))\n"
    "  for (gpar_u64 i = GPAR_GLOBAL_ID(0); i < m; i += GPAR_GLOBAL_SIZE(0))\n"
    "    ARR_ST(c, i + j * ldc, arr_binary(op, ARR_LD(a, i + j * lda), ARR_LD(v, axis == 0 ? i : j)));";
/* Range reduction pass: group g reduces its strided share of x into y[g]. */
static const char body_reduce[] =
    "GPAR_LOCAL(arr_c, sh, 256);\n"
    "gpar_u64 s = GPAR_GLOBAL_SIZE(0), i = GPAR_GLOBAL_ID(0);\n"
    "arr_c a0 = arr_ident(op), a1 = a0, a2 = a0, a3 = a0;\n"
    "if (op == 0) { ARR_SWEEP(ARR_ADD, x, i, s, n) }\n"
    "else if (op == 1) { ARR_SWEEP(ARR_MAX, x, i, s, n) }\n"
    "else { ARR_SWEEP(ARR_MIN, x, i, s, n) }\n"
    "gpar_u32 l = GPAR_LOCAL_ID(0);\n"
    "sh[l] = arr_acc(op, arr_acc(op, a0, a1), arr_acc(op, a2, a3));\n"
    "GPAR_BARRIER();\n"
    "ARR_TREE(op, sh, l)\n"
    "if (l == 0) ARR_STO(y, GPAR_GROUP_ID(0), sh[0]);";
/* Per-row reduction pass: column chunk GROUP_ID(1) of row i into y[i + GROUP_ID(1) * ldy]. */
static const char body_rowred[] =
    "gpar_u64 p = GPAR_NUM_GROUPS(1), cs = (n + p - 1) / p, j0 = GPAR_GROUP_ID(1) * cs;\n"
    "gpar_u64 j1 = j0 + cs < n ? j0 + cs : n;\n"
    "for (gpar_u64 i = GPAR_GLOBAL_ID(0); i < m; i += GPAR_GLOBAL_SIZE(0)) {\n"
    "  arr_c a0 = arr_ident(op), a1 = a0, a2 = a0, a3 = a0;\n"
    "  gpar_u64 k = i + j0 * lda, e = i + j1 * lda;\n"
    "  if (op == 0) { ARR_SWEEP(ARR_ADD, a, k, lda, e) }\n"
    "  else if (op == 1) { ARR_SWEEP(ARR_MAX, a, k, lda, e) }\n"
    "  else { ARR_SWEEP(ARR_MIN, a, k, lda, e) }\n"
    "  ARR_STO(y, i + GPAR_GROUP_ID(1) * ldy, arr_acc(op, arr_acc(op, a0, a1), arr_acc(op, a2, a3)));\n"
    "}";
/* Per-column reduction: a group per column, a tree over its rows. */
static const char body_colred[] =
    "GPAR_LOCAL(arr_c, sh, 256);\n"
    "gpar_u32 l = GPAR_LOCAL_ID(0);\n"
    "for (gpar_u64 j = GPAR_GROUP_ID(0); j < n; j += GPAR_NUM_GROUPS(0)) {\n"
    "  arr_c a0 = arr_ident(op), a1 = a0, a2 = a0, a3 = a0;\n"
    "  gpar_u64 i = j * lda + l, e = j * lda + m, s = GPAR_GROUP_SIZE(0);\n"
    "  if (op == 0) { ARR_SWEEP(ARR_ADD, a, i, s, e) }\n"
    "  else if (op == 1) { ARR_SWEEP(ARR_MAX, a, i, s, e) }\n"
    "  else { ARR_SWEEP(ARR_MIN, a, i, s, e) }\n"
    "  sh[l] = arr_acc(op, arr_acc(op, a0, a1), arr_acc(op, a2, a3));\n"
    "  GPAR_BARRIER();\n"
    "  ARR_TREE(op, sh, l)\n"
    "  if (l == 0) ARR_ST(y, j, sh[0]);\n"
    "  GPAR_BARRIER();\n"
    "}";
/* Softmax cross-entropy: a work-item per column; ARR_PUT_LOSS and ARR_PUT_G (the variant's
 * preamble) store the outputs it has, or nothing. */
static const char body_softmax[] =
    "for (gpar_u64 j = GPAR_GLOBAL_ID(0); j < n; j += GPAR_GLOBAL_SIZE(0)) {\n"
    "  gpar_u64 zc = j * ldz;\n"
    "  arr_c mx = -(arr_c)INFINITY, s = 0;\n"
    "  for (gpar_u64 i = 0; i < k; i++) mx = ARR_MAX(mx, ARR_LD(z, zc + i));\n"
    "  for (gpar_u64 i = 0; i < k; i++) s += ARR_EXP(ARR_LD(z, zc + i) - mx);\n"
    "  gpar_i32 y = lab[j];\n"
    "  int inr = y >= 0 && (gpar_u64)y < k;\n"
    "  ARR_PUT_LOSS(j, inr ? ARR_LOG(s) - (ARR_LD(z, zc + (gpar_u64)y) - mx) : (arr_c)NAN);\n"
    "  for (gpar_u64 i = 0; i < k; i++)\n"
    "    ARR_PUT_G(j * ldg + i, (arr_c)scale * (ARR_EXP(ARR_LD(z, zc + i) - mx) / s - (inr && i == (gpar_u64)y ? (arr_c)1 : (arr_c)0)));\n"
    "}";
static const char body_argmax[] =
    "for (gpar_u64 j = GPAR_GLOBAL_ID(0); j < n; j += GPAR_GLOBAL_SIZE(0)) {\n"
    "  gpar_i32 best = m ? 0 : -1;\n"
    "  arr_c bv = m ? ARR_LD(a, j * lda) : (arr_c)0;\n"
    "  for (gpar_u64 i = 1; i < m && bv == bv; i++) {\n"
    "    arr_c v = ARR_LD(a, j * lda + i);\n"
    "    if (v > bv || v != v) { bv = v; best = (gpar_i32)i; }\n"
    "  }\n"
    "  idx[j] = best;\n"
    "}";

static const char *const tname[4] = {"f32", "f64", "f16", "bf16"};

/* Signature of kernel (kind, dt, var), the declarations its body starts with (in-place
 * variants: one pointer standing for another), its variant's macros and its body. */
static void describe(int kind, int dt, int var, char *sig, size_t cap, char *alias, size_t acap, const char **macros,
                     const char **body) {
  const char *t = tname[dt], *c = dt == GPAR_DOUBLE ? "f64" : "f32";
  *alias = 0;
  *macros = "";
  switch (kind) {
  case GPAR__AK_UNARY: /* 0: y apart; 1: in place */
    if (var) snprintf(sig, cap, "u64 n, i32 op, inout %s *y", t), snprintf(alias, acap, "GPAR_GLOBAL_MEM arr_t *x = y;\n");
    else snprintf(sig, cap, "u64 n, i32 op, in %s *x, out %s *y", t, t);
    *body = body_unary;
    break;
  case GPAR__AK_BINARY: /* 0: c apart; 1: c is a; 2: c is b; 3: all three one */
    if (var == 0) snprintf(sig, cap, "u64 n, i32 op, in %s *a, in %s *b, out %s *c", t, t, t);
    else if (var == 3) snprintf(sig, cap, "u64 n, i32 op, inout %s *c", t);
    else snprintf(sig, cap, "u64 n, i32 op, in %s *%s, inout %s *c", t, var == 1 ? "b" : "a", t);
    if (var) snprintf(alias, acap, "%s%s", var != 2 ? "GPAR_GLOBAL_MEM arr_t *a = c;\n" : "",
                      var != 1 ? "GPAR_GLOBAL_MEM arr_t *b = c;\n" : "");
    *body = body_binary;
    break;
  case GPAR__AK_BCAST: /* 0: C apart; 1: C is A */
    if (var) snprintf(sig, cap, "u64 m, u64 n, i32 op, i32 axis, u64 lda, in %s *v, inout %s *c, u64 ldc", t, t),
        snprintf(alias, acap, "GPAR_GLOBAL_MEM arr_t *a = c;\n");
    else snprintf(sig, cap, "u64 m, u64 n, i32 op, i32 axis, in %s *a, u64 lda, in %s *v, out %s *c, u64 ldc", t, t, t);
    *body = body_bcast;
    break;
  case GPAR__AK_REDUCE: /* 0: storage to storage; 1: storage to compute (partials); 2: compute to storage */
    snprintf(sig, cap, "u64 n, i32 op, in %s *x, out %s *y", var == 2 ? c : t, var == 1 ? c : t);
    *body = body_reduce;
    break;
  case GPAR__AK_ROWRED: /* variants as GPAR__AK_REDUCE */
    snprintf(sig, cap, "u64 m, u64 n, i32 op, in %s *a, u64 lda, out %s *y, u64 ldy", var == 2 ? c : t, var == 1 ? c : t);
    *body = body_rowred;
    break;
  case GPAR__AK_COLRED:
    snprintf(sig, cap, "u64 m, u64 n, i32 op, in %s *a, u64 lda, out %s *y", t, t);
    *body = body_colred;
    break;
  case GPAR__AK_SOFTMAX: /* 1: loss; 2: G; 3: both */
    snprintf(sig, cap, "u64 k, u64 n, in %s *z, u64 ldz, in i32 *lab, %s scale", t, c);
    if (var & 1) snprintf(sig + strlen(sig), cap - strlen(sig), ", out %s *loss", t);
    if (var & 2) snprintf(sig + strlen(sig), cap - strlen(sig), ", out %s *g, u64 ldg", t);
    *macros = var == 1   ? "#define ARR_PUT_LOSS(j, v) ARR_ST(loss, j, v)\n#define ARR_PUT_G(e, v)\n"
              : var == 2 ? "#define ARR_PUT_LOSS(j, v)\n#define ARR_PUT_G(e, v) ARR_ST(g, e, v)\n"
                         : "#define ARR_PUT_LOSS(j, v) ARR_ST(loss, j, v)\n#define ARR_PUT_G(e, v) ARR_ST(g, e, v)\n";
    *body = body_softmax;
    break;
  default:
    snprintf(sig, cap, "u64 m, u64 n, in %s *a, u64 lda, out i32 *idx", t);
    *body = body_argmax;
  }
}

/* Create kernel (kind, dt, var) on eng (token: its user handle). */
static int create(gpar_engine *token, int kind, int dt, int var, gpar_kernel *k) {
  static const char *const kname[GPAR__AK_NKINDS] = {"unary", "binary", "bcast", "reduce", "rowred",
                                                      "colred", "softmax_xent", "argmax"};
  char sig[256], alias[256], pre[2048], name[64];
  const char *macros, *body;
  describe(kind, dt, var, sig, sizeof sig, alias, sizeof alias, &macros, &body);
  int partial = kind == GPAR__AK_REDUCE || kind == GPAR__AK_ROWRED;
  size_t n = type_preamble(pre, sizeof pre, dt, partial && var == 2, partial && var == 1);
  snprintf(pre + n, sizeof pre - n, "typedef gpar_%s arr_t;\n%s", tname[dt], macros);
  size_t plen = strlen(pre), alen = strlen(alias), blen = strlen(body);
  char *full = malloc(plen + sizeof common_preamble), *fbody = malloc(alen + blen + 1);
  if (!full || !fbody) {
    free(full), free(fbody);
    return gpar__errorf(GPAR_ENOMEM, "out of host memory for an array kernel");
  }
  memcpy(full, pre, plen);
  memcpy(full + plen, common_preamble, sizeof common_preamble);
  memcpy(fbody, alias, alen);
  memcpy(fbody + alen, body, blen + 1);
  snprintf(name, sizeof name, "arr_%s_%s_v%d", kname[kind], tname[dt], var);
  gpar__kernel_owned(1);
  int st = gpar_kernel_create(token, name, sig, fbody, full, k);
  gpar__kernel_owned(-1);
  free(full), free(fbody);
  return st;
}

/* ---------------------------------------------------------------- each engine's kernels */

#define NKERN (GPAR__AK_NKINDS * 4 * GPAR__AK_NVAR)

/* One kernel on one device, once built: group size and limits (group 0: not yet). */
typedef struct kdev {
  _Atomic uint32_t group;
  uint32_t max_groups[3];
} kdev;
typedef struct kstate {
  uint64_t serial; /* the engine lifetime it belongs to */
  int ndev;        /* devices, the host included (slot ndev: GPAR_HOST's device, unused) */
  _Atomic uint64_t id[NKERN];
  kdev *dev;       /* [NKERN][ndev] */
} kstate;

static _Atomic(kstate *) states[GPAR__MAX_ENGINES];
static pthread_mutex_t states_mu = PTHREAD_MUTEX_INITIALIZER; /* the tables and kernels' limits; held alone */

/* eng's table, made at first use (NULL without memory). */
static kstate *state_of(gpar_engine *eng) {
  kstate *s = atomic_load_explicit(&states[eng->slot], memory_order_acquire);
  uint64_t serial = atomic_load(&eng->serial);
  if (s && s->serial == serial) return s;
  pthread_mutex_lock(&states_mu);
  s = atomic_load(&states[eng->slot]);
  if (!s || s->serial != serial) {
    kstate *n = calloc(1, sizeof *n);
    if (n && !(n->dev = calloc((size_t)NKERN * (size_t)eng->ndev, sizeof *n->dev))) free(n), n = NULL;
    if (n) {
      n->serial = serial, n->ndev = eng->ndev;
      if (s) free(s->dev), free(s); /* a lifetime that ended without shutdown's drop (cannot happen) */
      atomic_store_explicit(&states[eng->slot], n, memory_order_release);
    }
    s = n;
  }
  pthread_mutex_unlock(&states_mu);
  return s;
}

int gpar__arr_kernel(gpar_engine *eng, gpar__device *dev, int kind, int dtype, int var, gpar__arr_kinfo *ki) {
  kstate *s = state_of(eng);
  if (!s) return gpar__errorf(GPAR_ENOMEM, "out of host memory for the array kernels");
  int i = (kind * 4 + dtype) * GPAR__AK_NVAR + var, st = GPAR_OK;
  uint64_t id = atomic_load_explicit(&s->id[i], memory_order_acquire);
  if (!id) { /* make it; a thread that lost the race releases its own */
    gpar_kernel k;
    if ((st = create(gpar__engine_token(eng), kind, dtype, var, &k)) != GPAR_OK) return st;
    uint64_t zero = 0;
    if (atomic_compare_exchange_strong(&s->id[i], &zero, k.id))
      id = k.id;
    else
      gpar__kernel_owned(1), gpar_kernel_release(k), gpar__kernel_owned(-1), id = zero;
  }
  ki->k.id = id;
  kdev *d = &s->dev[(size_t)i * (size_t)s->ndev + (size_t)dev->index];
  uint32_t g = atomic_load_explicit(&d->group, memory_order_acquire);
  if (!g) { /* build in this thread, then note the limits */
    gpar_kernel_props p;
    if ((st = gpar_kernel_info(ki->k, dev->index, &p)) != GPAR_OK) return st;
    uint32_t lim = p.max_group_size < p.max_group_dims[0] ? p.max_group_size : p.max_group_dims[0];
    for (g = GPAR__AK_GROUP; g > 1 && g > lim; g /= 2) {
    }
    pthread_mutex_lock(&states_mu);
    if (!atomic_load(&d->group)) { /* the first to get here writes the limits, then publishes */
      memcpy(d->max_groups, p.max_groups, sizeof d->max_groups);
      atomic_store_explicit(&d->group, g, memory_order_release);
    }
    g = atomic_load(&d->group);
    pthread_mutex_unlock(&states_mu);
  }
  ki->group = g;
  memcpy(ki->max_groups, d->max_groups, sizeof ki->max_groups);
  return GPAR_OK;
}

void gpar__arr_kernels_drop(gpar_engine *eng) {
  pthread_mutex_lock(&states_mu);
  kstate *s = atomic_exchange(&states[eng->slot], NULL);
  pthread_mutex_unlock(&states_mu);
  if (s) free(s->dev), free(s);
}
