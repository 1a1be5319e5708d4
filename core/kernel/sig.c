/* sig.c: kernel signatures: the parameter types, the parser of "u64 n, f32 a, in f32 *x, inout
 * f32 *y" (each mistake GPAR_EINVAL with its 1-based column; names by names.c), and the scans of
 * a text for group barriers and group-local memory (which the host device cannot run) and for
 * what reads files (which no cache key holds). */
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
static int parse_param(cursor *c, int lib, gpar__kparam *prm) {
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
  const char *why = gpar__kname_why(nw, len, lib);
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

int gpar__ksig_parse(char *text, const char *fn, int lib, gpar__kparam **out, int *n) {
  cursor c = {text, text, fn};
  gpar__kparam prm[GPAR__KMAX_PARAMS];
  char *ends[GPAR__KMAX_PARAMS]; /* where each name ends, cut once the whole signature parsed */
  int np = 0, st = GPAR_OK;
  skip_space(&c);
  while (*c.p && st == GPAR_OK) {
    if (np == GPAR__KMAX_PARAMS) return fail(&c, c.p, "more than 64 parameters", NULL);
    if ((st = parse_param(&c, lib, &prm[np])) != GPAR_OK) break;
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

/* ---------------------------------------------------------------- lexing, as compilers differ */

/* How a text is read (bits): trigraphs replaced (PoCL's OpenCL C), a backslash, blanks, then a
 * newline a splice too (gcc, clang), C23's and C++'s digit separators (1'000; gnu17 and OpenCL C
 * 1.2 read 0'1' as 0 and a character literal), C++'s raw strings (R"x(...)x": NVRTC; gcc takes
 * them in GNU C too). A scan that must see what every compiler sees reads the text every way. */
enum { LEX_TRIGRAPHS = 1, LEX_BLANK_SPLICES = 2, LEX_DIGIT_SEPARATORS = 4, LEX_RAW_STRINGS = 8, LEX_WAYS = 16 };

/* Past a number at p (a preprocessing number: exponents' signs, digit separators when the way
 * has them), or p itself when none starts there. */
static const char *past_number(const char *p, int how) {
  if (!(isdigit((unsigned char)p[0]) || (p[0] == '.' && isdigit((unsigned char)p[1])))) return p;
  for (p++;;)
    if (strchr("eEpP", *p) && *p && (p[1] == '+' || p[1] == '-'))
      p += 2;
    else if (isalnum((unsigned char)*p) || *p == '_' || *p == '.')
      p++;
    else if ((how & LEX_DIGIT_SEPARATORS) && *p == '\'' && (isalnum((unsigned char)p[1]) || p[1] == '_'))
      p += 2;
    else
      return p;
}

/* Past a raw string at p (R"d(...)d", also u8R uR UR LR), or p when none starts there. */
static const char *past_raw_string(const char *p) {
  const char *r = p;
  if (*r == 'u' && r[1] == '8')
    r += 2;
  else if (*r == 'u' || *r == 'U' || *r == 'L')
    r++;
  if (r[0] != 'R' || r[1] != '"') return p;
  const char *d = r + 2, *open = d;
  while (*open && *open != '(' && open - d <= 16 && !strchr(" )\\\t\v\f\n", *open)) open++;
  if (*open != '(') return p; /* not a raw string's opening: the compiler reads it otherwise */
  size_t dl = (size_t)(open - d);
  for (const char *q = open + 1; *q; q++)
    if (*q == ')' && !strncmp(q + 1, d, dl) && q[1 + dl] == '"') return q + dl + 2;
  return p + strlen(p); /* unterminated: to the end */
}

/* Past a comment, string or character literal, raw string or number at p (p itself when none
 * starts there). A literal ends at the end of its line at the latest, as in every compiler (one
 * that does not end there, a lone quote in a skipped group, hides nothing on the lines after). */
static const char *skip_literal(const char *p, int how) {
  if (p[0] == '/' && p[1] == '/') {
    while (*p && *p != '\n') p++;
  } else if (p[0] == '/' && p[1] == '*') {
    const char *e = strstr(p + 2, "*/");
    p = e ? e + 2 : p + strlen(p);
  } else if (*p == '"' || *p == '\'') {
    char q = *p++;
    while (*p && *p != q && *p != '\n') p += (*p == '\\' && p[1]) ? 2 : 1;
    if (*p == q) p++;
  } else if ((how & LEX_RAW_STRINGS) && strchr("uULR", *p) && *p) {
    p = past_raw_string(p);
  } else {
    p = past_number(p, how);
  }
  return p;
}

/* ---------------------------------------------------------------- group memory */

int gpar__kuses_group_memory(const char *code) {
  for (const char *p = code; p && *p;) {
    const char *q = skip_literal(p, LEX_DIGIT_SEPARATORS);
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

/* ---------------------------------------------------------------- what reads files */

/* code as translation phases 1 and 2 leave it, read the way how says (trigraphs, blank splices),
 * every line ending (CR LF, a lone CR) a newline and the line splices removed; at[i]: where its
 * character i lies in code. malloc'ed; NULL without memory. */
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
    int tri = (how & LEX_TRIGRAPHS) && code[i] == '?' && code[i + 1] == '?' && code[i + 2];
    const char *t = tri ? strchr(tri_from, code[i + 2]) : NULL;
    map[k] = i;
    out[k] = t ? tri_to[t - tri_from] : code[i] == '\r' ? '\n' : code[i];
    i += t ? 3 : code[i] == '\r' && code[i + 1] == '\n' ? 2 : 1;
  }
  out[k] = 0;
  for (size_t r = 0; r < k;) { /* phase 2: splices */
    size_t e = r + 1;
    while ((how & LEX_BLANK_SPLICES) && out[r] == '\\' && strchr(" \t\f\v", out[e]) && out[e]) e++;
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

/* What a scan found: a directive that reads a file, __has_include, inline assembly (its
 * assembler's .incbin reads one), or token pasting that could build one of the last two. */
enum { FOUND_NONE, FOUND_DIRECTIVE, FOUND_HAS_INCLUDE, FOUND_ASM, FOUND_PASTE };
typedef struct found {
  int what;
  const char *at; /* in the flattened text */
  char word[24];
} found;

/* Words no build may see however they are spelled; a name that begins one and is not one could
 * become one by token pasting (`a##b`), which no scan can follow: refused beside a ##. asm's
 * beginnings (a, as) are ordinary names: what builds asm by pasting is refused by the host's and
 * clang's builds themselves (#pragma GCC poison), and NVRTC's and NVIDIA's asm is PTX, which
 * reads no file. */
static const char *const guarded[] = {"__has_include", "__has_include_next", "__has_embed", "__asm__", "__asm", NULL};

static int begins_guarded(const char *w) {
  size_t n = strlen(w);
  for (int i = 0; guarded[i]; i++)
    if (n < strlen(guarded[i]) && !strncmp(guarded[i], w, n)) return 1;
  return 0;
}

/* A directive's word after the # at h: the blanks (space, tab, vertical tab, form feed) and
 * comments compilers skip there first. */
static const char *directive_word(const char *h, int how, char *w, size_t cap) {
  while (*h == ' ' || *h == '\t' || *h == '\v' || *h == '\f' || (h[0] == '/' && h[1] == '*'))
    h = *h == '/' ? skip_literal(h, how) : h + 1;
  ident(h, w, cap);
  return h;
}

static void set_found(found *f, int what, const char *at, const char *hash, const char *word) {
  f->what = what;
  f->at = at;
  snprintf(f->word, sizeof f->word, "%s%.20s", hash, word);
}

/* The first thing in flat (flatten's, read the way how) that reads a file, into *f. */
static void find_file_read(const char *flat, int how, found *f) {
  static const char *const bad[] = {"include", "include_next", "embed", "import", NULL};
  const char *paste = NULL, *begins = NULL;
  char w[24], bw[24] = "";
  int first = 1; /* at the first token of a line */
  f->what = FOUND_NONE;
  for (const char *p = flat, *h; *p && f->what == FOUND_NONE;) {
    const char *q = skip_literal(p, how);
    if (q != p || (*p != '\n' && isspace((unsigned char)*p))) { /* a comment, a literal, a number, a blank */
      p = q != p ? q : p + 1;
      continue;
    }
    if (*p == '\n') {
      first = 1;
      p++;
      continue;
    }
    if ((p[0] == '#' && p[1] == '#') || (!strncmp(p, "%:%:", 4))) {
      paste = paste ? paste : p;
      p += p[0] == '#' ? 2 : 4;
    } else if (first && (h = past_hash(p))) {
      const char *at = directive_word(h, how, w, sizeof w);
      for (int i = 0; bad[i]; i++)
        if (!strcmp(w, bad[i])) set_found(f, FOUND_DIRECTIVE, p, "#", w);
      p = at;
    } else if (isalpha((unsigned char)*p) || *p == '_') {
      const char *at = p;
      p = ident(p, w, sizeof w);
      if (!strcmp(w, "__has_include") || !strcmp(w, "__has_include_next") || !strcmp(w, "__has_embed"))
        set_found(f, FOUND_HAS_INCLUDE, at, "", w);
      if (!strcmp(w, "asm") || !strcmp(w, "__asm") || !strcmp(w, "__asm__")) set_found(f, FOUND_ASM, at, "", w);
      if (!begins && (size_t)(p - at) < sizeof w && begins_guarded(w)) begins = at, snprintf(bw, sizeof bw, "%s", w);
    } else {
      p++;
    }
    first = 0;
  }
  if (f->what == FOUND_NONE && paste && begins) set_found(f, FOUND_PASTE, begins, "", bw);
}

/* GPAR_EINVAL naming the line and column of at in code. */
static int reads_files(const char *code, const char *at, const char *what, const char *fn, const found *f) {
  int line = 1;
  const char *bol = code;
  for (const char *p = code; p < at; p++)
    if (*p == '\n' || (*p == '\r' && p[1] != '\n')) line++, bol = p + 1;
  int col = (int)(at - bol) + 1;
  if (f->what == FOUND_ASM)
    return gpar__errorf(GPAR_EINVAL,
                        "%s: %s, line %d, column %d: %s: inline assembly is not part of the dialect (it is no "
                        "backend's but one's, and its .incbin reads a file the kernel caches' keys cannot hold)",
                        fn, what, line, col, f->word);
  if (f->what == FOUND_PASTE)
    return gpar__errorf(GPAR_EINVAL,
                        "%s: %s, line %d, column %d: '%s' beside token pasting (##) could be pasted into "
                        "__has_include or __asm__, which read files the kernel caches' keys cannot hold: rename it",
                        fn, what, line, col, f->word);
  return gpar__errorf(GPAR_EINVAL,
                      "%s: %s, line %d, column %d: %s reads a file, which the kernel caches' keys cannot hold: put "
                      "its text in the preamble instead",
                      fn, what, line, col, f->word);
}

/* The ways worth reading code: a way that turns on a feature the text has no sign of reads it
 * as the way without it does. */
static int way_matters(const char *code, int how) {
  if ((how & LEX_TRIGRAPHS) && !strstr(code, "??")) return 0;
  if ((how & LEX_BLANK_SPLICES) && !strchr(code, '\\')) return 0;
  if ((how & LEX_DIGIT_SEPARATORS) && !strchr(code, '\'')) return 0;
  return !(how & LEX_RAW_STRINGS) || strstr(code, "R\"");
}

int gpar__kfiles_check(const char *code, const char *what, const char *fn) {
  int st = GPAR_OK;
  for (int how = 0; code && how < LEX_WAYS && st == GPAR_OK; how++) { /* refused when any way reads a file */
    if (!way_matters(code, how)) continue;
    size_t *at = NULL;
    char *flat = flatten(code, how, &at);
    found f = {FOUND_NONE, NULL, ""};
    if (!flat) st = gpar__errorf(GPAR_ENOMEM, "%s: out of host memory", fn);
    if (flat) find_file_read(flat, how, &f);
    if (f.what != FOUND_NONE) st = reads_files(code, code + at[f.at - flat], what, fn, &f);
    free(flat);
    free(at);
  }
  return st;
}
