/* map.c: elementwise maps (gpar_map_*), in the spirit of CuPy's ElementwiseKernel: a typed
 * parameter list ("in f32 x, in f32 y, f32 a, out f32 z") and an expression ("z = a * x + y")
 * become one portable kernel (core/kernel/), built once per device target and cached like any
 * kernel. Each array parameter is one element per index i < n in the expression (f16 and bf16
 * read and written as f32), each scalar its value. A launch checks every argument (types, the
 * n elements of each array inside its buffer, devices, overlap: an output may be an input
 * exactly) before it launches. Maps are handles of the one rule (engine/handle.c). */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array/kernels.h"
#include "kernel/kernel.h"

#define MAP_SLOT_BITS 16
#define MAP_SERIAL_MAX ((UINT64_C(1) << (64 - MAP_SLOT_BITS)) - 1)
#define MAP_NAME 64

/* Element and scalar types of a map, by their signature names. */
typedef struct map_type {
  const char *name, *ctype;  /* "f16", what the expression sees: "gpar_f32" */
  size_t size;
  int arg;                   /* the gpar_arg kind a scalar takes (0: arrays only) */
  const char *load, *store;  /* NULL: plain p[i] */
} map_type;
static const map_type types[] = {
    {"i8", "gpar_i8", 1, 0, NULL, NULL},        {"u8", "gpar_u8", 1, 0, NULL, NULL},
    {"i16", "gpar_i16", 2, 0, NULL, NULL},      {"u16", "gpar_u16", 2, 0, NULL, NULL},
    {"i32", "gpar_i32", 4, GPAR_ARG_I32, NULL, NULL}, {"u32", "gpar_u32", 4, GPAR_ARG_U32, NULL, NULL},
    {"i64", "gpar_i64", 8, GPAR_ARG_I64, NULL, NULL}, {"u64", "gpar_u64", 8, GPAR_ARG_U64, NULL, NULL},
    {"f32", "gpar_f32", 4, GPAR_ARG_F32, NULL, NULL}, {"f64", "gpar_f64", 8, GPAR_ARG_F64, NULL, NULL},
    {"f16", "gpar_f32", 2, 0, "gpar_load_f16", "gpar_store_f16"},
    {"bf16", "gpar_f32", 2, 0, "gpar_load_bf16", "gpar_store_bf16"},
};
#define NTYPES ((int)(sizeof types / sizeof types[0]))

enum { MAP_SCALAR = 0, MAP_IN = 1, MAP_OUT = 2, MAP_INOUT = 3 };
typedef struct map_param {
  char name[MAP_NAME];
  int type; /* index in types[] */
  int dir;  /* MAP_* */
} map_param;

typedef struct gpar__map {
  uint32_t slot;
  uint64_t serial;
  gpar_engine *token;
  gpar_kernel k;
  int ndev;
  _Atomic uint32_t *group; /* per device: group size once known (0: not yet) */
  _Atomic uint32_t *max_groups; /* per device */
  int nparams;
  map_param p[];
} gpar__map;

static gpar__handle_table *map_table;
static pthread_once_t map_table_once = PTHREAD_ONCE_INIT;
static void map_table_make(void) { map_table = gpar__handle_table_new(1u << MAP_SLOT_BITS, MAP_SERIAL_MAX); }
static gpar__handle_table *table(void) {
  pthread_once(&map_table_once, map_table_make);
  return map_table;
}

/* ---------------------------------------------------------------- parameter lists */

/* The next identifier of s at *pos (skipping blanks) into w; 0 when there is none. */
static int word(const char *s, size_t *pos, char *w, size_t cap) {
  while (s[*pos] == ' ' || s[*pos] == '\t' || s[*pos] == '\n') (*pos)++;
  size_t n = 0;
  while (isalnum((unsigned char)s[*pos]) || s[*pos] == '_') {
    if (n + 1 < cap) w[n++] = s[*pos];
    (*pos)++;
  }
  w[n] = 0;
  return n > 0;
}

static int type_of(const char *w) {
  for (int t = 0; t < NTYPES; t++)
    if (!strcmp(w, types[t].name)) return t;
  return -1;
}

/* One parameter ("[in|out|inout] TYPE name") at *pos; GPAR_EINVAL with the 1-based column. */
static int parse_param(const char *s, size_t *pos, map_param *p) {
  char w[3][MAP_NAME];
  size_t start = *pos, col[3];
  int nw = 0;
  for (; nw < 3; nw++) {
    while (s[*pos] == ' ' || s[*pos] == '\t' || s[*pos] == '\n') (*pos)++;
    col[nw] = *pos + 1;
    if (!word(s, pos, w[nw], sizeof w[nw])) break;
  }
  while (s[*pos] == ' ' || s[*pos] == '\t' || s[*pos] == '\n') (*pos)++;
  if (s[*pos] && s[*pos] != ',')
    return gpar__errorf(GPAR_EINVAL, "gpar_map_create: column %zu: unexpected '%c' (a parameter is "
                        "[in|out|inout] TYPE name)", *pos + 1, s[*pos]);
  if (nw < 2) return gpar__errorf(GPAR_EINVAL, "gpar_map_create: column %zu: a parameter needs a type and a name", start + 1);
  int d = nw == 2 ? MAP_SCALAR : !strcmp(w[0], "in") ? MAP_IN : !strcmp(w[0], "out") ? MAP_OUT
                                : !strcmp(w[0], "inout") ? MAP_INOUT : -1;
  if (d < 0) return gpar__errorf(GPAR_EINVAL, "gpar_map_create: column %zu: '%s' is not in, out or inout", col[0], w[0]);
  int t = type_of(w[nw - 2]);
  if (t < 0 || (d == MAP_SCALAR && !types[t].arg))
    return gpar__errorf(GPAR_EINVAL, "gpar_map_create: column %zu: '%s' is not a %s type", col[nw - 2], w[nw - 2],
                        d == MAP_SCALAR ? "scalar (i32 u32 i64 u64 f32 f64)" : "element");
  if (strlen(w[nw - 1]) >= MAP_NAME - 3 || isdigit((unsigned char)w[nw - 1][0]) || !strcmp(w[nw - 1], "i") ||
      !strcmp(w[nw - 1], "n"))
    return gpar__errorf(GPAR_EINVAL, "gpar_map_create: column %zu: '%s' cannot name a parameter (i and n are the "
                        "index and the count)", col[nw - 1], w[nw - 1]);
  const char *why = gpar__kname_why(w[nw - 1], strlen(w[nw - 1]), 0); /* the kernels' own check */
  if (why)
    return gpar__errorf(GPAR_EINVAL, "gpar_map_create: column %zu: parameter name '%s' %s", col[nw - 1], w[nw - 1],
                        why);
  snprintf(p->name, sizeof p->name, "%s", w[nw - 1]);
  p->type = t, p->dir = d;
  return GPAR_OK;
}

/* The whole list: at most GPAR__KMAX_PARAMS - 1 parameters, names distinct, at least one
 * output. */
static int parse_params(const char *s, map_param *p, int *n) {
  size_t pos = 0;
  int st = GPAR_OK, outs = 0;
  *n = 0;
  while (st == GPAR_OK && s[pos]) {
    if (*n == GPAR__KMAX_PARAMS - 1) return gpar__errorf(GPAR_EINVAL, "gpar_map_create: more than %d parameters", *n);
    if ((st = parse_param(s, &pos, &p[*n])) != GPAR_OK) break;
    outs += (p[*n].dir & MAP_OUT) != 0;
    (*n)++;
    if (s[pos] == ',') pos++;
  }
  for (int i = 0; i < *n && st == GPAR_OK; i++)
    for (int j = i + 1; j < *n && st == GPAR_OK; j++)
      if (!strcmp(p[i].name, p[j].name))
        st = gpar__errorf(GPAR_EINVAL, "gpar_map_create: parameter '%s' is listed twice", p[i].name);
  if (st == GPAR_OK && !outs) st = gpar__errorf(GPAR_EINVAL, "gpar_map_create: no out or inout parameter");
  return st;
}

/* ---------------------------------------------------------------- the kernel */

/* Append printf-style text to the growing string *b (size *len, capacity *cap). */
static int append(char **b, size_t *len, size_t *cap, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int append(char **b, size_t *len, size_t *cap, const char *fmt, ...) {
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(*b + *len, *cap - *len, fmt, ap);
    va_end(ap);
    if (n < 0) return GPAR_ENOMEM;
    if ((size_t)n < *cap - *len) {
      *len += (size_t)n;
      return GPAR_OK;
    }
    char *nb = realloc(*b, *cap * 2 + (size_t)n);
    if (!nb) return GPAR_ENOMEM;
    *b = nb, *cap = *cap * 2 + (size_t)n;
  }
}

/* The kernel's signature ("u64 n, in f32 *gpar_p_x, f32 a, ...") and body: a grid-stride loop over
 * i < n that loads each array's element i into a variable of its name, runs the expression and
 * stores the outputs. An array's pointer is gpar_p_NAME: the library's prefix, which no
 * parameter the map accepted can have. */
static int generate(const map_param *p, int np, const char *expr, char **sig, char **body) {
  size_t sl = 0, sc = 256, bl = 0, bc = 1024;
  int st = (*sig = malloc(sc)) && (*body = malloc(bc)) ? GPAR_OK : GPAR_ENOMEM;
  if (st == GPAR_OK) st = append(sig, &sl, &sc, "u64 n");
  if (st == GPAR_OK) st = append(body, &bl, &bc, "for (gpar_u64 i = GPAR_GLOBAL_ID(0); i < n; i += GPAR_GLOBAL_SIZE(0)) {\n");
  static const char *const dirs[4] = {"", "in", "out", "inout"};
  for (int j = 0; j < np && st == GPAR_OK; j++) {
    const map_type *t = &types[p[j].type];
    if (p[j].dir == MAP_SCALAR) {
      st = append(sig, &sl, &sc, ", %s %s", t->name, p[j].name);
      continue;
    }
    st = append(sig, &sl, &sc, ", %s %s *gpar_p_%s", dirs[p[j].dir], t->name, p[j].name);
    if (st == GPAR_OK && p[j].dir == MAP_OUT) st = append(body, &bl, &bc, "  %s %s = 0;\n", t->ctype, p[j].name);
    else if (st == GPAR_OK)
      st = t->load ? append(body, &bl, &bc, "  %s%s %s = %s(gpar_p_%s, i);\n", p[j].dir == MAP_IN ? "const " : "",
                            t->ctype, p[j].name, t->load, p[j].name)
                   : append(body, &bl, &bc, "  %s%s %s = gpar_p_%s[i];\n", p[j].dir == MAP_IN ? "const " : "", t->ctype,
                            p[j].name, p[j].name);
  }
  if (st == GPAR_OK) st = append(body, &bl, &bc, "  {\n%s\n;\n  }\n", expr);
  for (int j = 0; j < np && st == GPAR_OK; j++)
    if (p[j].dir & MAP_OUT)
      st = types[p[j].type].store
               ? append(body, &bl, &bc, "  %s(gpar_p_%s, i, %s);\n", types[p[j].type].store, p[j].name, p[j].name)
               : append(body, &bl, &bc, "  gpar_p_%s[i] = %s;\n", p[j].name, p[j].name);
  if (st == GPAR_OK) st = append(body, &bl, &bc, "}\n");
  if (st != GPAR_OK) {
    free(*sig), free(*body);
    *sig = *body = NULL;
    return gpar__errorf(GPAR_ENOMEM, "gpar_map_create: out of host memory");
  }
  return GPAR_OK;
}

static void map_free(gpar__map *m) {
  free((void *)m->group);
  free((void *)m->max_groups);
  free(m);
}

/* A live map with a table reference (map_put), or NULL with GPAR_EINVAL's message. */
static gpar__map *map_get(gpar_map h, const char *fn) {
  gpar__handle_table *t = table();
  gpar__map *m = t ? gpar__handle_get(t, (uint32_t)(h.id & ((1u << MAP_SLOT_BITS) - 1)), h.id >> MAP_SLOT_BITS) : NULL;
  if (!m) gpar__errorf(GPAR_EINVAL, "%s: map %#llx is released or invalid", fn, (unsigned long long)h.id);
  return m;
}
static void map_put(gpar__map *m) { gpar__handle_put(table(), m->slot); }

/* Make the map object, its kernel and its handle (eng entered, parameters parsed). */
static int map_make(gpar_engine *eng, const char *name, const map_param *p, int np, const char *expr, gpar_map *out) {
  gpar__handle_table *t = table();
  gpar__map *m = t ? calloc(1, sizeof *m + sizeof *p * (size_t)np) : NULL;
  if (m) m->group = calloc((size_t)eng->ndev, sizeof *m->group), m->max_groups = calloc((size_t)eng->ndev, sizeof *m->max_groups);
  if (!m || !m->group || !m->max_groups) {
    if (m) map_free(m);
    return gpar__errorf(GPAR_ENOMEM, "gpar_map_create: out of host memory");
  }
  memcpy(m->p, p, sizeof *p * (size_t)np);
  m->nparams = np, m->ndev = eng->ndev, m->token = gpar__engine_token(eng);
  char *sig = NULL, *body = NULL;
  int st = generate(p, np, expr, &sig, &body);
  gpar__kernel_owned(1);
  if (st == GPAR_OK) st = gpar_kernel_create(m->token, name, sig, body, NULL, &m->k);
  free(sig), free(body);
  if (st == GPAR_OK && (st = gpar__handle_add(t, m, &m->slot, &m->serial)) != GPAR_OK) gpar_kernel_release(m->k);
  gpar__kernel_owned(-1);
  if (st != GPAR_OK) {
    map_free(m);
    return st;
  }
  out->id = m->serial << MAP_SLOT_BITS | m->slot;
  return GPAR_OK;
}

GPAR_API int gpar_map_create(gpar_engine *e, const char *name, const char *params, const char *expr, gpar_map *map) {
  int st;
  if (map) map->id = 0;
  gpar_engine *eng = gpar__engine_enter(e, &st);
  if (!eng) return st;
  map_param *p = malloc(sizeof *p * GPAR__KMAX_PARAMS);
  int np = 0;
  if (!map || !name || !params || !expr)
    st = gpar__errorf(GPAR_EINVAL, "gpar_map_create: %s is NULL", !map ? "map" : !name ? "name" : !params ? "params" : "expr");
  else if (!p)
    st = gpar__errorf(GPAR_ENOMEM, "gpar_map_create: out of host memory");
  else if ((st = parse_params(params, p, &np)) == GPAR_OK)
    st = map_make(eng, name, p, np, expr, map);
  free(p);
  gpar__engine_leave(eng);
  return st;
}

GPAR_API int gpar_map_release(gpar_map h) {
  gpar__map *m = map_get(h, "gpar_map_release");
  if (!m) return GPAR_EINVAL;
  gpar__map *mine = gpar__handle_kill(table(), m->slot, m->serial);
  map_put(m);
  if (!mine) return gpar__errorf(GPAR_EINVAL, "gpar_map_release: map %#llx is released already", (unsigned long long)h.id);
  gpar__handle_recycle(table(), m->slot); /* no call holds it any more */
  gpar__kernel_owned(1);
  gpar_kernel_release(m->k); /* its launches in flight keep the kernel */
  gpar__kernel_owned(-1);
  map_free(m);
  return GPAR_OK;
}

GPAR_API int gpar_map_kernel(gpar_map h, gpar_kernel *kernel) {
  gpar__map *m = map_get(h, "gpar_map_kernel");
  if (kernel) kernel->id = 0;
  if (!m) return GPAR_EINVAL;
  int st = kernel ? GPAR_OK : gpar__errorf(GPAR_EINVAL, "gpar_map_kernel: kernel is NULL");
  if (kernel) *kernel = m->k;
  map_put(m);
  return st;
}

/* The launch's arguments against the map's parameters; each array as an operand of n elements
 * from its byte offset (o[], its index in a[] in which[]). */
static int check_args(const gpar__map *m, size_t n, const gpar_arg *a, int na, gpar__arr_operand *o, int *no) {
  if (na != m->nparams || (na && !a))
    return gpar__errorf(GPAR_EINVAL, "gpar_map_launch: %d arguments for %d parameters", na, m->nparams);
  *no = 0;
  for (int j = 0; j < na; j++) {
    const map_param *p = &m->p[j];
    const map_type *t = &types[p->type];
    if (p->dir == MAP_SCALAR) {
      if ((int)a[j].kind != t->arg)
        return gpar__errorf(GPAR_EINVAL, "gpar_map_launch: argument %d (%s) is not a %s scalar (make it with "
                            "gpar_arg_%s)", j, p->name, t->name, t->name);
      continue;
    }
    if (a[j].kind != GPAR_ARG_BUFFER)
      return gpar__errorf(GPAR_EINVAL, "gpar_map_launch: argument %d (%s) is not a buffer", j, p->name);
    if (a[j].v.buffer.offset % t->size)
      return gpar__errorf(GPAR_EINVAL, "gpar_map_launch: argument %d (%s): offset %zu is not a multiple of %zu bytes",
                          j, p->name, a[j].v.buffer.offset, t->size);
    gpar__arr_operand *q = &o[(*no)++];
    *q = (gpar__arr_operand){a[j].v.buffer.buf, a[j].v.buffer.offset / t->size, n, 1, n ? n : 1, 100 + p->type,
                             t->size, (p->dir & MAP_OUT) != 0, 0, 1, p->name, NULL};
  }
  return GPAR_OK;
}

/* The map's group size and most groups on device d (index in the flat list), from the built
 * kernel's limits, noted once. */
static int map_grid(gpar__map *m, int d, uint32_t *group, uint32_t *maxg) {
  uint32_t g = atomic_load_explicit(&m->group[d], memory_order_acquire);
  if (!g) {
    gpar_kernel_props p;
    int st = gpar_kernel_info(m->k, d, &p);
    if (st) return st;
    uint32_t lim = p.max_group_size < p.max_group_dims[0] ? p.max_group_size : p.max_group_dims[0];
    for (g = 256; g > 1 && g > lim; g /= 2) {
    }
    atomic_store(&m->max_groups[d], p.max_groups[0]); /* the same value from any racing thread */
    atomic_store_explicit(&m->group[d], g, memory_order_release);
  }
  *group = g;
  *maxg = atomic_load(&m->max_groups[d]);
  return GPAR_OK;
}

/* Launch a checked map (eng entered, operands looked up: home is the first output). */
static int map_run(gpar__map *m, gpar_engine *eng, const gpar__buf *home, size_t n, const gpar_arg *a, int na) {
  gpar__device *dev = home->host_memory ? eng->host_dev : home->dev; /* host memory: the CPU */
  uint32_t g, maxg;
  int st = map_grid(m, dev->index, &g, &maxg);
  if (st) return st;
  gpar_arg *all = malloc(sizeof *all * (size_t)(na + 1));
  if (!all) return gpar__errorf(GPAR_ENOMEM, "gpar_map_launch: out of host memory");
  all[0] = gpar_arg_u64(n);
  if (na) memcpy(all + 1, a, sizeof *a * (size_t)na);
  uint64_t groups = (n + g - 1) / g;
  gpar_grid grid = {{groups > maxg ? maxg : (uint32_t)groups, 1, 1}, {g, 1, 1}};
  st = gpar_kernel_launch(m->k, dev->index, &grid, all, na + 1);
  free(all);
  return st;
}

GPAR_API int gpar_map_launch(gpar_map h, size_t n, const gpar_arg *args, int nargs) {
  gpar__map *m = map_get(h, "gpar_map_launch");
  if (!m) return GPAR_EINVAL;
  gpar__arr_operand *o = malloc(sizeof *o * GPAR__KMAX_PARAMS);
  int no = 0, home, st = o ? check_args(m, n, args, nargs, o, &no) : gpar__errorf(GPAR_ENOMEM, "gpar_map_launch: out of host memory");
  gpar_engine *eng = NULL;
  if (st == GPAR_OK) st = gpar__arr_operands("gpar_map_launch", o, no, &eng, &home);
  if (st == GPAR_OK) {
    if (gpar__engine_token(eng) != m->token)
      st = gpar__errorf(GPAR_EENGINE, "gpar_map_launch: the buffers belong to another engine than the map");
    else if (n)
      st = map_run(m, eng, o[home].b, n, args, nargs);
    gpar__arr_operands_done(eng, o, no);
  }
  free(o);
  map_put(m);
  return st;
}

static int map_of(void *obj, void *token) { return ((gpar__map *)obj)->token == token; }
static void map_drop(void *obj, void *token) {
  (void)token;
  map_free(obj); /* the kernel layer frees the engine's kernels at shutdown */
}

void gpar__array_shutdown(gpar_engine *eng) {
  gpar__handle_drain(table(), map_of, map_drop, gpar__engine_token(eng));
  gpar__arr_kernels_drop(eng);
}
