/* sig.c: kernel signatures and names: the parameter types, the parser of "u64 n, f32 a, in f32
 * *x, inout f32 *y" (each mistake GPAR_EINVAL with its 1-based column), name checks, and the
 * scans for group barriers and group-local memory (which the host device cannot run) and for
 * directives that read files (which no cache key holds). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/kernel.h"

static const struct {
  const char *name, *ctype;
  size_t size;
  int arg; /* the gpar_arg kind of a scalar of this type; 0: buffers only */
} types[GPAR__KT_NTYPES] = {
    [GPAR__KT_I8] = {"i8", "gpar_i8", 1, 0},
    [GPAR__KT_U8] = {"u8", "gpar_u8", 1, 0},
    [GPAR__KT_I16] = {"i16", "gpar_i16", 2, 0},
    [GPAR__KT_U16] = {"u16", "gpar_u16", 2, 0},
    [GPAR__KT_I32] = {"i32", "gpar_i32", 4, GPAR_ARG_I32},
    [GPAR__KT_U32] = {"u32", "gpar_u32", 4, GPAR_ARG_U32},
    [GPAR__KT_I64] = {"i64", "gpar_i64", 8, GPAR_ARG_I64},
    [GPAR__KT_U64] = {"u64", "gpar_u64", 8, GPAR_ARG_U64},
    [GPAR__KT_F16] = {"f16", "gpar_f16", 2, 0},
    [GPAR__KT_BF16] = {"bf16", "gpar_bf16", 2, 0},
    [GPAR__KT_F32] = {"f32", "gpar_f32", 4, GPAR_ARG_F32},
    [GPAR__KT_F64] = {"f64", "gpar_f64", 8, GPAR_ARG_F64},
};

const char *gpar__ktype_name(int type) { return type >= 0 && type < GPAR__KT_NTYPES ? types[type].name : "?"; }
size_t gpar__ktype_size(int type) { return type >= 0 && type < GPAR__KT_NTYPES ? types[type].size : 0; }
int gpar__ktype_arg(int type) { return type >= 0 && type < GPAR__KT_NTYPES ? types[type].arg : 0; }

/* Names a parameter or kernel may not take, sorted (strcmp order, for bsearch): the ones a build
 * trips over on some backend, or that the dialect's macros expand to. Keywords of C11, C23 and
 * GNU C (the host compiler's default mode), C++ (CUDA C++ through NVRTC) and OpenCL C; their type
 * names (stdint.h's, OpenCL C's scalar, image and atomic types, CUDA's dim3); OpenCL C's
 * work-item, synchronisation, atomic, as_type and vload/vstore built-ins; CUDA's built-in
 * variables and atomics; the C99 math functions (float and double: the OpenCL dialect maps sqrtf
 * to sqrt, ...) and classification macros; the macros of float.h, math.h, limits.h and stdint.h
 * that the host's and OpenCL C's headers define (NAN, INFINITY, HUGE_VALF, INT_MAX, UINT32_MAX,
 * ...; and by prefix below: CLK_, CL_, FLT_, DBL_, LDBL_, FP_, M_); string.h's and stdlib.h's
 * memory calls (the host's entry point calls memcpy) and printf; main, and the signature's words
 * in, out, inout. Seen failing a build on the host and PoCL when not refused: a scratch program
 * built a kernel and a map with each candidate as a parameter, its body using the whole dialect;
 * CUDA's from its headers and the dialect's preamble. */
static const char *const reserved[] = {
    "BUFSIZ", "CHAR_BIT", "CHAR_MAX", "CHAR_MIN", "DECIMAL_DIG", "ENDIAN_LITTLE", "EOF", "FAST_RELAXED_MATH",
    "HUGE_VAL", "HUGE_VALF", "HUGE_VALL", "IMAGE_SUPPORT", "INFINITY", "INT16_C", "INT16_MAX", "INT16_MIN",
    "INT16_WIDTH", "INT32_C", "INT32_MAX", "INT32_MIN", "INT32_WIDTH", "INT64_C", "INT64_MAX", "INT64_MIN",
    "INT64_WIDTH", "INT8_C", "INT8_MAX", "INT8_MIN", "INT8_WIDTH", "INTMAX_C", "INTMAX_MAX", "INTMAX_MIN",
    "INTMAX_WIDTH", "INTPTR_MAX", "INTPTR_MIN", "INTPTR_WIDTH", "INT_FAST16_MAX", "INT_FAST16_MIN",
    "INT_FAST16_WIDTH", "INT_FAST32_MAX", "INT_FAST32_MIN", "INT_FAST32_WIDTH", "INT_FAST64_MAX", "INT_FAST64_MIN",
    "INT_FAST64_WIDTH", "INT_FAST8_MAX", "INT_FAST8_MIN", "INT_FAST8_WIDTH", "INT_LEAST16_MAX", "INT_LEAST16_MIN",
    "INT_LEAST16_WIDTH", "INT_LEAST32_MAX", "INT_LEAST32_MIN", "INT_LEAST32_WIDTH", "INT_LEAST64_MAX",
    "INT_LEAST64_MIN", "INT_LEAST64_WIDTH", "INT_LEAST8_MAX", "INT_LEAST8_MIN", "INT_LEAST8_WIDTH", "INT_MAX",
    "INT_MIN", "LONG_MAX", "LONG_MIN", "MATH_ERREXCEPT", "MATH_ERRNO", "MAXFLOAT", "NAN", "NULL", "PTRDIFF_MAX",
    "PTRDIFF_MIN", "PTRDIFF_WIDTH", "SCHAR_MAX", "SCHAR_MIN", "SHRT_MAX", "SHRT_MIN", "SIG_ATOMIC_MAX",
    "SIG_ATOMIC_MIN", "SIG_ATOMIC_WIDTH", "SIZE_MAX", "SIZE_WIDTH", "UCHAR_MAX", "UINT16_C", "UINT16_MAX",
    "UINT16_WIDTH", "UINT32_C", "UINT32_MAX", "UINT32_WIDTH", "UINT64_C", "UINT64_MAX", "UINT64_WIDTH", "UINT8_C",
    "UINT8_MAX", "UINT8_WIDTH", "UINTMAX_C", "UINTMAX_MAX", "UINTMAX_WIDTH", "UINTPTR_MAX", "UINTPTR_WIDTH",
    "UINT_FAST16_MAX", "UINT_FAST16_WIDTH", "UINT_FAST32_MAX", "UINT_FAST32_WIDTH", "UINT_FAST64_MAX",
    "UINT_FAST64_WIDTH", "UINT_FAST8_MAX", "UINT_FAST8_WIDTH", "UINT_LEAST16_MAX", "UINT_LEAST16_WIDTH",
    "UINT_LEAST32_MAX", "UINT_LEAST32_WIDTH", "UINT_LEAST64_MAX", "UINT_LEAST64_WIDTH", "UINT_LEAST8_MAX",
    "UINT_LEAST8_WIDTH", "UINT_MAX", "ULONG_MAX", "USHRT_MAX", "WCHAR_MAX", "WCHAR_MIN", "WCHAR_WIDTH", "WINT_MAX",
    "WINT_MIN", "WINT_WIDTH", "acos", "acosf", "acosh", "acoshf", "alignas", "alignof", "and", "and_eq", "as_char",
    "as_double", "as_float", "as_half", "as_int", "as_long", "as_short", "as_uchar", "as_uint", "as_ulong",
    "as_ushort", "asin", "asinf", "asinh", "asinhf", "asm", "assert", "async_work_group_copy", "atan", "atan2",
    "atan2f", "atanf", "atanh", "atanhf", "atom_add", "atom_and", "atom_cmpxchg", "atom_dec", "atom_inc", "atom_max",
    "atom_min", "atom_or", "atom_sub", "atom_xchg", "atom_xor", "atomicAdd", "atomicAnd", "atomicCAS", "atomicDec",
    "atomicExch", "atomicInc", "atomicMax", "atomicMin", "atomicOr", "atomicSub", "atomicXor", "atomic_add",
    "atomic_and", "atomic_cmpxchg", "atomic_dec", "atomic_double", "atomic_flag", "atomic_float", "atomic_inc",
    "atomic_int", "atomic_intptr_t", "atomic_long", "atomic_max", "atomic_min", "atomic_or", "atomic_ptrdiff_t",
    "atomic_size_t", "atomic_sub", "atomic_uint", "atomic_uintptr_t", "atomic_ulong", "atomic_xchg", "atomic_xor",
    "auto", "barrier", "bitand", "bitor", "blockDim", "blockIdx", "bool", "break", "calloc", "case", "catch", "cbrt",
    "cbrtf", "ceil", "ceilf", "char", "char16_t", "char32_t", "char8_t", "cl_mem_fence_flags", "class", "clk_event_t",
    "clock64", "co_await", "co_return", "co_yield", "compl", "complex", "concept", "const", "const_cast", "constant",
    "consteval", "constexpr", "constinit", "continue", "convert_float", "convert_int", "copysign", "copysignf", "cos",
    "cosf", "cosh", "coshf", "decltype", "default", "delete", "dim3", "do", "double", "double_t", "dynamic_cast",
    "else", "enum", "erf", "erfc", "erfcf", "erff", "errno", "event_t", "exp", "exp2", "exp2f", "expf", "explicit",
    "expm1", "expm1f", "export", "extern", "fabs", "fabsf", "false", "fdim", "fdimf", "float", "float_t", "floor",
    "floorf", "fma", "fmaf", "fmax", "fmaxf", "fmin", "fminf", "fmod", "fmodf", "for", "fpclassify", "fprintf",
    "free", "frexp", "frexpf", "friend", "generic", "get_enqueued_local_size", "get_global_id",
    "get_global_linear_id", "get_global_offset", "get_global_size", "get_group_id", "get_local_id",
    "get_local_linear_id", "get_local_size", "get_num_groups", "get_work_dim", "global", "goto", "gridDim", "half",
    "half_sqrt", "hypot", "hypotf", "if", "ilogb", "ilogbf", "image1d_array_t", "image1d_buffer_t", "image1d_t",
    "image2d_array_depth_t", "image2d_array_t", "image2d_depth_t", "image2d_t", "image3d_t", "imaginary", "in",
    "inline", "inout", "int", "int16_t", "int32_t", "int64_t", "int8_t", "int_fast16_t", "int_fast32_t",
    "int_fast64_t", "int_fast8_t", "int_least16_t", "int_least32_t", "int_least64_t", "int_least8_t", "intmax_t",
    "intptr_t", "isfinite", "isgreater", "isgreaterequal", "isinf", "isless", "islessequal", "islessgreater", "isnan",
    "isnormal", "isunordered", "kernel", "ldexp", "ldexpf", "lgamma", "lgammaf", "llrint", "llrintf", "llround",
    "llroundf", "local", "log", "log10", "log10f", "log1p", "log1pf", "log2", "log2f", "logb", "logbf", "logf",
    "long", "lrint", "lrintf", "lround", "lroundf", "mad", "mad24", "main", "malloc", "math_errhandling", "mem_fence",
    "memcmp", "memcpy", "memmove", "memory_order", "memory_scope", "memset", "modf", "modff", "mul24", "mutable",
    "namespace", "nan", "nanf", "native_sqrt", "ndrange_t", "nearbyint", "nearbyintf", "new", "nextafter",
    "nextafterf", "nexttoward", "nexttowardf", "noexcept", "not", "not_eq", "nullptr", "offsetof", "operator", "or",
    "or_eq", "out", "pipe", "pow", "powf", "printf", "private", "protected", "ptrdiff_t", "public", "quad", "queue_t",
    "read_mem_fence", "read_only", "read_write", "realloc", "register", "reinterpret_cast", "remainder", "remainderf",
    "remquo", "remquof", "requires", "reserve_id_t", "restrict", "return", "rint", "rintf", "round", "roundf",
    "sampler_t", "scalbln", "scalblnf", "scalbn", "scalbnf", "short", "signbit", "signed", "sin", "sinf", "sinh",
    "sinhf", "size_t", "sizeof", "snprintf", "sprintf", "sqrt", "sqrtf", "static", "static_assert", "static_cast",
    "struct", "switch", "tan", "tanf", "tanh", "tanhf", "template", "tgamma", "tgammaf", "this", "threadIdx",
    "thread_local", "throw", "true", "trunc", "truncf", "try", "typedef", "typeid", "typename", "typeof",
    "typeof_unqual", "uchar", "uint", "uint16_t", "uint32_t", "uint64_t", "uint8_t", "uint_fast16_t", "uint_fast32_t",
    "uint_fast64_t", "uint_fast8_t", "uint_least16_t", "uint_least32_t", "uint_least64_t", "uint_least8_t",
    "uintmax_t", "uintptr_t", "ulong", "union", "unsigned", "ushort", "using", "virtual", "vload_half", "vloada_half",
    "void", "volatile", "vstore_half", "vstore_half_rte", "vstorea_half", "wait_group_events", "warpSize", "wchar_t",
    "while", "work_group_barrier", "write_mem_fence", "write_only", "xor", "xor_eq", NULL};
#define NRESERVED (sizeof reserved / sizeof reserved[0] - 1)

static int cmp_name(const void *key, const void *elem) { return strcmp(key, *(const char *const *)elem); }

/* Whether p is a vector size (1 2 3 4 8 16), or two of them joined by x (a matrix, 2x4). */
static int vector_sizes(const char *p) {
  static const char *const sizes[] = {"16", "1", "2", "3", "4", "8", NULL};
  for (int dims = 0; dims < 2; dims++) {
    int i = 0;
    while (sizes[i] && strncmp(p, sizes[i], strlen(sizes[i]))) i++;
    if (!sizes[i]) return 0;
    p += strlen(sizes[i]);
    if (!*p) return 1;
    if (dims == 1 || *p++ != 'x') return 0;
  }
  return 0;
}

/* OpenCL C's and CUDA's vector types (float4, uint2, longlong3, double16, half8, float2x2 ...). */
static int vector_type(const char *w) {
  static const char *const base[] = {"char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "float",
                                     "double", "half", "bool", "longlong", "ulonglong", "quad", NULL};
  for (int b = 0; base[b]; b++)
    if (!strncmp(w, base[b], strlen(base[b])) && vector_sizes(w + strlen(base[b]))) return 1;
  return 0;
}

const char *gpar__kname_why(const char *name, size_t len) {
  if (len == 0) return "is empty";
  if (len > 64) return "is longer than 64 characters";
  if (!(isalpha((unsigned char)name[0]) || name[0] == '_')) return "is not a C identifier";
  for (size_t i = 1; i < len; i++)
    if (!(isalnum((unsigned char)name[i]) || name[i] == '_')) return "is not a C identifier";
  if (len >= 4 && (!strncmp(name, "gpar", 4) || !strncmp(name, "GPAR", 4))) return "starts with gpar (reserved)";
  if (len >= 2 && name[0] == '_' && (name[1] == '_' || isupper((unsigned char)name[1]))) return "is reserved (__ or _X)";
  char w[65];
  memcpy(w, name, len);
  w[len] = 0;
  static const char *const prefix[] = {"CLK_", "CL_", "FLT_", "DBL_", "LDBL_", "FP_", "M_", NULL};
  int hit = bsearch(w, reserved, NRESERVED, sizeof reserved[0], cmp_name) || vector_type(w);
  for (int i = 0; prefix[i] && !hit; i++) hit = !strncmp(w, prefix[i], strlen(prefix[i]));
  return hit ? "is reserved: a keyword, type, built-in or macro of C, CUDA, OpenCL C or the dialect" : NULL;
}

int gpar__kname_check(const char *name, const char *fn) {
  if (!name) return gpar__errorf(GPAR_EINVAL, "%s: kernel name is NULL", fn);
  const char *why = gpar__kname_why(name, strlen(name));
  return why ? gpar__errorf(GPAR_EINVAL, "%s: kernel name '%s' %s", fn, name, why) : GPAR_OK;
}

static int type_of(const char *w, size_t len) {
  for (int t = 0; t < GPAR__KT_NTYPES; t++)
    if (strlen(types[t].name) == len && !strncmp(w, types[t].name, len)) return t;
  return -1;
}

/* The parser's position: text, where it is, and the signature's start (for columns). */
typedef struct cursor {
  char *p;
  const char *start;
  const char *fn;
} cursor;

static void skip_space(cursor *c) {
  while (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r') c->p++;
}
static int col(const cursor *c, const char *at) { return (int)(at - c->start) + 1; }

/* The next word (identifier characters) at the cursor; *len 0 when none. */
static char *word(cursor *c, size_t *len) {
  skip_space(c);
  char *w = c->p;
  while (isalnum((unsigned char)*c->p) || *c->p == '_') c->p++;
  *len = (size_t)(c->p - w);
  return w;
}

static int fail(const cursor *c, const char *at, const char *fmt, const char *what) {
  return gpar__errorf(GPAR_EINVAL, "%s: signature, column %d: %s%s", c->fn, col(c, at), fmt, what ? what : "");
}

/* Direction keyword, or scalar. */
static int dir_of(const char *w, size_t len) {
  if (len == 2 && !strncmp(w, "in", 2)) return GPAR__KDIR_IN;
  if (len == 3 && !strncmp(w, "out", 3)) return GPAR__KDIR_OUT;
  if (len == 5 && !strncmp(w, "inout", 5)) return GPAR__KDIR_INOUT;
  return GPAR__KDIR_SCALAR;
}

/* One parameter: [in|out|inout] TYPE [*] NAME, then ',' or the end. */
static int parse_param(cursor *c, gpar__kparam *prm) {
  size_t len;
  char *w = word(c, &len);
  if (!len) return fail(c, c->p, *c->p ? "expected a parameter, found '" : "expected a parameter after ','",
                        *c->p ? (char[]){*c->p, '\'', 0} : NULL);
  int dir = dir_of(w, len), type;
  char *tw = w;
  if (dir != GPAR__KDIR_SCALAR) tw = word(c, &len);
  if ((type = type_of(tw, len)) < 0) {
    char bad[80];
    snprintf(bad, sizeof bad, "%.*s' (i8 u8 i16 u16 i32 u32 i64 u64 f16 bf16 f32 f64)", (int)(len < 40 ? len : 40), tw);
    return fail(c, tw, len ? "unknown type '" : "expected a type", len ? bad : NULL);
  }
  skip_space(c);
  int star = *c->p == '*';
  if (star) c->p++;
  char *nw = word(c, &len);
  if (!len) return fail(c, c->p, "expected a parameter name", NULL);
  if (star && dir == GPAR__KDIR_SCALAR) return fail(c, w, "a buffer parameter needs in, out or inout before its type", NULL);
  if (!star && dir != GPAR__KDIR_SCALAR) return fail(c, nw, "a buffer parameter is a pointer: '*' before its name", NULL);
  if (!star && !types[type].arg) return fail(c, tw, "scalars are i32 u32 i64 u64 f32 or f64, not ", types[type].name);
  const char *why = gpar__kname_why(nw, len);
  if (why) {
    char msg[96];
    snprintf(msg, sizeof msg, "parameter name '%.*s' ", (int)(len < 64 ? len : 64), nw);
    return fail(c, nw, msg, why);
  }
  skip_space(c);
  if (*c->p && *c->p != ',') return fail(c, c->p, "unexpected '", (char[]){*c->p, '\'', 0});
  prm->name = nw;
  prm->type = type;
  prm->dir = star ? dir : GPAR__KDIR_SCALAR;
  prm->ctype = types[type].ctype;
  return GPAR_OK;
}

int gpar__ksig_parse(char *text, const char *fn, gpar__kparam **out, int *n) {
  cursor c = {text, text, fn};
  gpar__kparam prm[GPAR__KMAX_PARAMS];
  char *ends[GPAR__KMAX_PARAMS]; /* where each name ends, cut once the whole signature parsed */
  int np = 0, st = GPAR_OK;
  skip_space(&c);
  while (*c.p && st == GPAR_OK) {
    if (np == GPAR__KMAX_PARAMS) return fail(&c, c.p, "more than 64 parameters", NULL);
    if ((st = parse_param(&c, &prm[np])) != GPAR_OK) break;
    ends[np] = (char *)prm[np].name;
    while (isalnum((unsigned char)*ends[np]) || *ends[np] == '_') ends[np]++;
    size_t len = (size_t)(ends[np] - prm[np].name);
    for (int j = 0; j < np && st == GPAR_OK; j++)
      if ((size_t)(ends[j] - prm[j].name) == len && !strncmp(prm[j].name, prm[np].name, len)) {
        char nm[72];
        snprintf(nm, sizeof nm, "%.*s", (int)len, prm[np].name);
        st = fail(&c, prm[np].name, "a parameter name repeats: ", nm);
      }
    np++;
    if (st == GPAR_OK && *c.p == ',') {
      c.p++;
      skip_space(&c);
      if (!*c.p) st = fail(&c, c.p, "expected a parameter after ','", NULL);
    }
  }
  if (st != GPAR_OK) return st;
  gpar__kparam *v = malloc(sizeof *v * (size_t)(np ? np : 1));
  if (!v) return gpar__errorf(GPAR_ENOMEM, "%s: out of host memory", fn);
  for (int i = 0; i < np; i++) *ends[i] = 0; /* the names become strings */
  memcpy(v, prm, sizeof *v * (size_t)np);
  *out = v;
  *n = np;
  return GPAR_OK;
}

/* ---------------------------------------------------------------- group memory */

/* Past a number at p (a preprocessing number: C23's and C++'s digit separators, exponents'
 * signs), or p itself when none starts there. */
static const char *past_number(const char *p) {
  if (!(isdigit((unsigned char)p[0]) || (p[0] == '.' && isdigit((unsigned char)p[1])))) return p;
  for (p++;;)
    if (strchr("eEpP", *p) && *p && (p[1] == '+' || p[1] == '-'))
      p += 2;
    else if (isalnum((unsigned char)*p) || *p == '_' || *p == '.')
      p++;
    else if (*p == '\'' && (isalnum((unsigned char)p[1]) || p[1] == '_'))
      p += 2;
    else
      return p;
}

/* Past a comment, string or character literal, or number at p (p itself when none starts
 * there). A literal ends at the end of its line at the latest, as in every compiler (one that
 * does not end there, a lone quote in a skipped group, hides nothing on the lines after it). */
static const char *skip_literal(const char *p) {
  if (p[0] == '/' && p[1] == '/') {
    while (*p && *p != '\n') p++;
  } else if (p[0] == '/' && p[1] == '*') {
    const char *e = strstr(p + 2, "*/");
    p = e ? e + 2 : p + strlen(p);
  } else if (*p == '"' || *p == '\'') {
    char q = *p++;
    while (*p && *p != q && *p != '\n') p += (*p == '\\' && p[1]) ? 2 : 1;
    if (*p == q) p++;
  } else {
    p = past_number(p);
  }
  return p;
}

int gpar__kuses_group_memory(const char *code) {
  for (const char *p = code; p && *p;) {
    const char *q = skip_literal(p);
    if (q != p) {
      p = q;
      continue;
    }
    if (!(isalpha((unsigned char)*p) || *p == '_')) {
      p++;
      continue;
    }
    const char *w = p;
    while (isalnum((unsigned char)*p) || *p == '_') p++;
    size_t len = (size_t)(p - w);
    if ((len == 12 && !strncmp(w, "GPAR_BARRIER", 12)) || (len == 10 && !strncmp(w, "GPAR_LOCAL", 10))) return 1;
  }
  return 0;
}

/* ---------------------------------------------------------------- directives that read files */

/* code as translation phases 1 and 2 leave it, in one of the ways compilers differ (how & 1:
 * trigraphs replaced, as PoCL's OpenCL C does; how & 2: a backslash, blanks, then a newline is a
 * splice too, as gcc and clang take it), every line ending (CR LF, a lone CR) a newline and the
 * line splices removed; at[i]: where its character i lies in code. malloc'ed; NULL without memory. */
static char *flatten(const char *code, int how, size_t **at) {
  static const char tri_from[] = "=(/)'<!>-", tri_to[] = "#[\\]^{|}~";
  size_t n = strlen(code), k = 0, w = 0;
  char *out = malloc(n + 1);
  size_t *map = malloc(sizeof *map * (n + 1));
  if (!out || !map) {
    free(out);
    free(map);
    return NULL;
  }
  for (size_t i = 0; i < n; k++) { /* phase 1: trigraphs, line endings */
    int tri = (how & 1) && code[i] == '?' && code[i + 1] == '?' && code[i + 2];
    const char *t = tri ? strchr(tri_from, code[i + 2]) : NULL;
    map[k] = i;
    out[k] = t ? tri_to[t - tri_from] : code[i] == '\r' ? '\n' : code[i];
    i += t ? 3 : code[i] == '\r' && code[i + 1] == '\n' ? 2 : 1;
  }
  out[k] = 0;
  for (size_t r = 0; r < k;) { /* phase 2: splices */
    size_t e = r + 1;
    while ((how & 2) && out[r] == '\\' && (out[e] == ' ' || out[e] == '\t' || out[e] == '\f' || out[e] == '\v')) e++;
    if (out[r] == '\\' && out[e] == '\n') {
      r = e + 1;
      continue;
    }
    map[w] = map[r];
    out[w++] = out[r++];
  }
  out[w] = 0;
  map[w] = n;
  *at = map;
  return out;
}

/* Past a `#` (or %:) at p; NULL when none starts there. */
static const char *past_hash(const char *p) {
  if (*p == '#') return p + 1;
  return p[0] == '%' && p[1] == ':' ? p + 2 : NULL;
}

/* The identifier at p into w (cut at cap); returns past it. */
static const char *ident(const char *p, char *w, size_t cap) {
  size_t n = 0;
  for (; isalnum((unsigned char)*p) || *p == '_'; p++)
    if (n + 1 < cap) w[n++] = *p;
  w[n] = 0;
  return p;
}

/* GPAR_EINVAL naming the line and column of at in code. */
static int reads_files(const char *code, const char *at, const char *what, const char *fn, const char *hash,
                       const char *word) {
  int line = 1;
  const char *bol = code;
  for (const char *p = code; p < at; p++)
    if (*p == '\n' || (*p == '\r' && p[1] != '\n')) line++, bol = p + 1;
  if (strstr(word, "asm")) /* asm, __asm, __asm__ */
    return gpar__errorf(GPAR_EINVAL,
                        "%s: %s, line %d, column %d: %s: inline assembly is not part of the dialect (it is no "
                        "backend's but one's, and its .incbin reads a file the kernel caches' keys cannot hold)",
                        fn, what, line, (int)(at - bol) + 1, word);
  return gpar__errorf(GPAR_EINVAL,
                      "%s: %s, line %d, column %d: %s%s reads a file, which the kernel caches' keys cannot "
                      "hold: put its text in the preamble instead",
                      fn, what, line, (int)(at - bol) + 1, hash, word);
}

/* The first directive that reads a file in flat (flatten's), or inline assembly (whose .incbin
 * does), or NULL; its word in w. */
static const char *find_file_read(const char *flat, char *w, size_t cap, const char **hash) {
  static const char *const bad[] = {"include", "include_next", "embed", "import"};
  int first = 1; /* at the first token of a line */
  for (const char *p = flat, *h; *p;) {
    const char *q = skip_literal(p);
    if (q != p || (*p != '\n' && isspace((unsigned char)*p))) { /* a comment, a literal, a number, a blank */
      p = q != p ? q : p + 1;
      continue;
    }
    if (*p == '\n') {
      first = 1;
      p++;
    } else if (first && (h = past_hash(p))) {
      while (*h == ' ' || *h == '\t' || (h[0] == '/' && h[1] == '*')) h = *h == '/' ? skip_literal(h) : h + 1;
      const char *end = ident(h, w, cap);
      for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (!strcmp(w, bad[i])) return *hash = "#", p;
      first = 0;
      p = end > h ? end : h;
    } else if (isalpha((unsigned char)*p) || *p == '_') {
      const char *at = p;
      first = 0;
      p = ident(p, w, cap);
      if (!strcmp(w, "__has_include") || !strcmp(w, "__has_include_next")) return *hash = "", at;
      if (!strcmp(w, "asm") || !strcmp(w, "__asm") || !strcmp(w, "__asm__")) return *hash = "", at; /* .incbin */
    } else {
      first = 0;
      p++;
    }
  }
  return NULL;
}

int gpar__kfiles_check(const char *code, const char *what, const char *fn) {
  int st = GPAR_OK;
  for (int how = 0; code && how < 4 && st == GPAR_OK; how++) { /* refused when any way of reading it reads a file */
    size_t *at = NULL;
    char *flat = flatten(code, how, &at), w[24];
    const char *hash = "", *p = flat ? find_file_read(flat, w, sizeof w, &hash) : NULL;
    if (!flat) st = gpar__errorf(GPAR_ENOMEM, "%s: out of host memory", fn);
    if (p) st = reads_files(code, code + at[p - flat], what, fn, hash, w);
    free(flat);
    free(at);
  }
  return st;
}
