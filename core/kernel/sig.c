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

/* Words a parameter or kernel may not be called: C99, C++ (CUDA) and OpenCL C keywords and
 * type names that would break one backend's build. */
static const char *const reserved[] = {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum", "extern",
    "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return", "short", "signed",
    "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile", "while", "bool",
    "true", "false", "class", "new", "delete", "this", "template", "typename", "namespace", "operator", "private",
    "public", "protected", "virtual", "friend", "try", "catch", "throw", "half", "uchar", "ushort", "uint",
    "ulong", "kernel", "global", "local", "constant", "read_only", "write_only", "read_write", "in", "out",
    "inout", "main", NULL};

/* Why name is not a usable identifier, or NULL. */
static const char *bad_name(const char *name, size_t len) {
  if (len == 0) return "is empty";
  if (len > 64) return "is longer than 64 characters";
  if (!(isalpha((unsigned char)name[0]) || name[0] == '_')) return "is not a C identifier";
  for (size_t i = 1; i < len; i++)
    if (!(isalnum((unsigned char)name[i]) || name[i] == '_')) return "is not a C identifier";
  if (len >= 4 && (!strncmp(name, "gpar", 4) || !strncmp(name, "GPAR", 4))) return "starts with gpar (reserved)";
  if (len >= 2 && name[0] == '_' && (name[1] == '_' || isupper((unsigned char)name[1]))) return "is reserved (__ or _X)";
  for (int i = 0; reserved[i]; i++)
    if (strlen(reserved[i]) == len && !strncmp(name, reserved[i], len)) return "is a keyword of C, CUDA or OpenCL C";
  return NULL;
}

int gpar__kname_check(const char *name, const char *fn) {
  if (!name) return gpar__errorf(GPAR_EINVAL, "%s: kernel name is NULL", fn);
  const char *why = bad_name(name, strlen(name));
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
  const char *why = bad_name(nw, len);
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

/* Past a comment, string or character literal at p (p itself when none starts there). */
static const char *skip_literal(const char *p) {
  if (p[0] == '/' && p[1] == '/') {
    while (*p && *p != '\n') p++;
  } else if (p[0] == '/' && p[1] == '*') {
    const char *e = strstr(p + 2, "*/");
    p = e ? e + 2 : p + strlen(p);
  } else if (*p == '"' || *p == '\'') {
    char q = *p++;
    while (*p && *p != q) p += (*p == '\\' && p[1]) ? 2 : 1;
    if (*p) p++;
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

/* Past the line splices (a backslash, or the trigraph ??/, then a newline) at p. */
static const char *past_splices(const char *p) {
  for (;;)
    if (p[0] == '\\' && (p[1] == '\n' || (p[1] == '\r' && p[2] == '\n')))
      p += p[1] == '\n' ? 2 : 3;
    else if (!strncmp(p, "?\?/\n", 4))
      p += 4;
    else
      return p;
}

/* Past a `#` (or %: or ??=) at p; NULL when none starts there. */
static const char *past_hash(const char *p) {
  if (*p == '#') return p + 1;
  if (!strncmp(p, "?\?=", 3)) return p + 3;
  const char *q = *p == '%' ? past_splices(p + 1) : p;
  return *p == '%' && *q == ':' ? q + 1 : NULL;
}

/* The identifier at p (splices skipped) into w (cut at cap); returns past it. */
static const char *splice_word(const char *p, char *w, size_t cap) {
  size_t n = 0;
  for (p = past_splices(p); isalnum((unsigned char)*p) || *p == '_'; p = past_splices(p + 1))
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
    if (*p == '\n') line++, bol = p + 1;
  return gpar__errorf(GPAR_EINVAL,
                      "%s: %s, line %d, column %d: %s%s reads a file, which the kernel caches' keys cannot "
                      "hold: put its text in the preamble instead",
                      fn, what, line, (int)(at - bol) + 1, hash, word);
}

int gpar__kfiles_check(const char *code, const char *what, const char *fn) {
  static const char *const bad[] = {"include", "include_next", "embed", "import"};
  int first = 1; /* at the first token of a line */
  char w[24];
  for (const char *p = code; p && *p;) {
    const char *q = skip_literal(p), *h;
    if (q == p) q = past_splices(p);
    if (q != p || (*p != '\n' && isspace((unsigned char)*p))) { /* a comment, a literal, a splice, a blank */
      p = q != p ? q : p + 1;
      continue;
    }
    if (*p == '\n') {
      first = 1;
      p++;
    } else if (first && (h = past_hash(p))) {
      while (*(h = past_splices(h)) == ' ' || *h == '\t' || (h[0] == '/' && h[1] == '*'))
        h = *h == '/' ? skip_literal(h) : h + 1;
      const char *end = splice_word(h, w, sizeof w);
      for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (!strcmp(w, bad[i])) return reads_files(code, p, what, fn, "#", bad[i]);
      first = 0;
      p = end > h ? end : h;
    } else if (isalpha((unsigned char)*p) || *p == '_') {
      const char *at = p;
      first = 0;
      p = splice_word(p, w, sizeof w);
      if (!strcmp(w, "__has_include") || !strcmp(w, "__has_include_next"))
        return reads_files(code, at, what, fn, "", w);
    } else {
      first = 0;
      p++;
    }
  }
  return GPAR_OK;
}
