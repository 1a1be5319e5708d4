/* dag.c: random-DAG property test. Random ops (host functions with random read/write sets,
 * copies, fills, writes, mid-stream reads) on a few CPU/pinned buffers must leave every buffer
 * exactly as a sequential replay in submit order does, in threaded and in synchronous mode, and
 * (cross-device mode) with buffers spread over every device of every backend. */
#include "testutil.h"

#define WORDS 16
#define BYTES (WORDS * 8)
#define MAXB 8
#define MAXR 4
#define MAXW 3
#define MAXOPS 40

enum { K_USER, K_COPY, K_FILL, K_WRITE, K_READ, K_PEEK };

typedef struct dag_op {
  int kind, id;
  int nr, nw, r[MAXR], w[MAXW]; /* buffer indices (K_USER) */
  long delay_us;
  int dst, src;                 /* K_COPY / K_FILL / K_WRITE / K_READ / K_PEEK */
  size_t doff, soff, bytes;
  unsigned char val, data[BYTES];
  uint64_t *const *mem;         /* the DAG's native pointers (for the user fn) */
} dag_op;

typedef struct dag {
  uint64_t seed;
  int nb, nops, dev[MAXB], hostmem[MAXB], early_release;
  dag_op ops[MAXOPS];
  unsigned char init[MAXB][BYTES];
} dag;

/* The user op's work: the written words depend on the op id, every word read and, for a
 * buffer both read and written, its old word. Duplicated entries are harmless. */
static void compute(const dag_op *o, uint64_t *const *mem) {
  uint64_t snap[MAXR][WORDS];
  uint64_t s = tu_mix((uint64_t)o->id + 1);
  for (int j = 0; j < o->nr; j++) memcpy(snap[j], mem[o->r[j]], BYTES);
  for (int j = 0; j < o->nr; j++)
    for (int i = 0; i < WORDS; i++) s = tu_mix(s ^ snap[j][i]);
  for (int j = 0; j < o->nw; j++) {
    int b = o->w[j], rj = -1;
    for (int q = 0; q < o->nr; q++)
      if (o->r[q] == b) rj = q;
    for (int i = 0; i < WORDS; i++)
      mem[b][i] = tu_mix(s ^ ((uint64_t)b << 40) ^ ((uint64_t)i << 32) ^ (rj >= 0 ? tu_mix(snap[rj][i]) : 0));
  }
}

static int user_fn(const gpar_native *nat, void *arg) {
  const dag_op *o = arg;
  (void)nat;
  if (o->delay_us) tu_sleep_us(o->delay_us);
  compute(o, o->mem);
  return GPAR_OK;
}

/* Pick one of the n buffers whose memory the host can touch. */
static int pick_host(uint64_t *s, const dag *d) {
  int idx[MAXB], n = 0;
  for (int b = 0; b < d->nb; b++)
    if (d->hostmem[b]) idx[n++] = b;
  return idx[tu_range(s, 0, n - 1)];
}

/* ndev 0: every buffer on the CPU device or GPAR_HOST. ndev > 0: buffers on any device of the
 * flat list (0 .. ndev-1) or GPAR_HOST; user ops and peeks use only host-memory buffers. */
static void gen(dag *d, uint64_t seed, int cpu, int ndev) {
  uint64_t s = seed;
  memset(d, 0, sizeof *d);
  d->seed = seed;
  d->nb = tu_range(&s, 3, MAXB);
  for (int b = 0; b < d->nb; b++) {
    if (!ndev) d->dev[b] = tu_range(&s, 0, 3) == 0 ? GPAR_HOST : cpu;
    else d->dev[b] = b == 0 ? GPAR_HOST : b == 1 ? cpu : tu_range(&s, -1, ndev - 1);
    d->hostmem[b] = d->dev[b] == GPAR_HOST || d->dev[b] == cpu;
    for (int i = 0; i < BYTES; i++) d->init[b][i] = (unsigned char)tu_rand(&s);
  }
  d->nops = tu_range(&s, 10, MAXOPS);
  for (int n = 0; n < d->nops; n++) {
    dag_op *o = &d->ops[n];
    int p = tu_range(&s, 0, 99);
    o->id = n;
    o->kind = p < 60 ? K_USER : p < 72 ? K_COPY : p < 80 ? K_FILL : p < 88 ? K_WRITE : p < 95 ? K_READ : K_PEEK;
    o->delay_us = tu_range(&s, 0, 9) < 3 ? tu_range(&s, 0, 50) : 0;
    switch (o->kind) {
    case K_USER:
      o->nr = tu_range(&s, 0, MAXR);
      o->nw = tu_range(&s, 1, MAXW);
      for (int j = 0; j < o->nr; j++) o->r[j] = pick_host(&s, d);
      for (int j = 0; j < o->nw; j++) o->w[j] = pick_host(&s, d);
      break;
    case K_COPY:
      o->src = tu_range(&s, 0, d->nb - 1);
      o->dst = tu_range(&s, 0, d->nb - 1);
      o->bytes = (size_t)tu_range(&s, 1, BYTES);
      if (o->dst == o->src && o->bytes > BYTES / 2) o->bytes = BYTES / 2;
      for (;;) { /* a copy within one buffer needs disjoint ranges */
        o->soff = (size_t)tu_range(&s, 0, (int)(BYTES - o->bytes));
        o->doff = (size_t)tu_range(&s, 0, (int)(BYTES - o->bytes));
        if (o->dst != o->src || o->soff + o->bytes <= o->doff || o->doff + o->bytes <= o->soff) break;
      }
      break;
    case K_FILL:
    case K_WRITE:
    case K_READ:
    case K_PEEK:
      o->dst = tu_range(&s, 0, d->nb - 1);
      o->bytes = (size_t)tu_range(&s, 1, BYTES);
      o->doff = (size_t)tu_range(&s, 0, (int)(BYTES - o->bytes));
      o->val = (unsigned char)tu_rand(&s);
      for (size_t i = 0; i < o->bytes; i++) o->data[i] = (unsigned char)tu_rand(&s);
      if (o->kind == K_PEEK) o->doff = 0, o->bytes = BYTES, o->dst = pick_host(&s, d);
      break;
    }
  }
  d->early_release = tu_range(&s, 0, 9) < 3 ? tu_range(&s, 0, d->nb - 1) : -1;
}

/* The DAG as diagnostics (printed for the first failure of a batch). */
static void dump(const dag *d) {
  char line[256];
  int off = snprintf(line, sizeof line, "  buffers:");
  for (int b = 0; b < d->nb; b++) {
    if (d->dev[b] == GPAR_HOST) off += snprintf(line + off, sizeof line - (size_t)off, " b%d@HOST", b);
    else off += snprintf(line + off, sizeof line - (size_t)off, " b%d@dev%d", b, d->dev[b]);
  }
  if (d->early_release >= 0) snprintf(line + off, sizeof line - (size_t)off, " (b%d released early)", d->early_release);
  diag("%s", line);
  for (int i = 0; i < d->nops; i++) {
    const dag_op *o = &d->ops[i];
    int k = snprintf(line, sizeof line, "  op %d: ", i);
    switch (o->kind) {
    case K_USER:
      k += snprintf(line + k, sizeof line - (size_t)k, "user reads");
      for (int j = 0; j < o->nr; j++) k += snprintf(line + k, sizeof line - (size_t)k, " b%d", o->r[j]);
      k += snprintf(line + k, sizeof line - (size_t)k, " writes");
      for (int j = 0; j < o->nw; j++) k += snprintf(line + k, sizeof line - (size_t)k, " b%d", o->w[j]);
      snprintf(line + k, sizeof line - (size_t)k, " delay %ld us", o->delay_us);
      break;
    case K_COPY:
      snprintf(line + k, sizeof line - (size_t)k, "copy b%d+%zu <- b%d+%zu, %zu bytes", o->dst, o->doff, o->src,
               o->soff, o->bytes);
      break;
    case K_FILL:
      snprintf(line + k, sizeof line - (size_t)k, "fill b%d+%zu, %zu bytes", o->dst, o->doff, o->bytes);
      break;
    case K_WRITE:
      snprintf(line + k, sizeof line - (size_t)k, "write b%d+%zu, %zu bytes", o->dst, o->doff, o->bytes);
      break;
    case K_READ:
      snprintf(line + k, sizeof line - (size_t)k, "read b%d+%zu, %zu bytes", o->dst, o->doff, o->bytes);
      break;
    case K_PEEK:
      snprintf(line + k, sizeof line - (size_t)k, "wait b%d and look at its memory", o->dst);
      break;
    }
    diag("%s", line);
  }
}

/* Run one DAG on the engine against the replay; 1 when everything matched. */
static int run_dag(gpar_engine *eng, int cpu, dag *d, int idx, uint64_t base, int *reported) {
  uint64_t ref[MAXB][WORDS], *refp[MAXB], *mem[MAXB];
  gpar_buffer buf[MAXB];
  char why[200] = "";
  int st, good = 1;
#define FAIL(...) do { if (good) snprintf(why, sizeof why, __VA_ARGS__); good = 0; } while (0)
  for (int b = 0; b < d->nb; b++) {
    if ((st = gpar_buffer_create(eng, d->dev[b], BYTES, &buf[b])) != GPAR_OK)
      bail_out("gpar_buffer_create failed");
    mem[b] = gpar_buffer_native(buf[b]);
    if (!mem[b]) FAIL("buffer %d: native NULL", b);
    if (d->hostmem[b] && mem[b] != gpar_buffer_host_ptr(buf[b])) FAIL("buffer %d: native != host_ptr", b);
    memcpy(ref[b], d->init[b], BYTES);
    refp[b] = ref[b];
    if ((st = gpar_write(buf[b], 0, d->init[b], BYTES)) != GPAR_OK) FAIL("init write: %s", gpar_status_name(st));
  }
  if (!good) goto out;
  for (int n = 0; n < d->nops && good; n++) {
    dag_op *o = &d->ops[n];
    unsigned char tmp[BYTES];
    o->mem = mem;
    switch (o->kind) {
    case K_USER: {
      gpar_buffer rs[MAXR], ws[MAXW];
      for (int j = 0; j < o->nr; j++) rs[j] = buf[o->r[j]];
      for (int j = 0; j < o->nw; j++) ws[j] = buf[o->w[j]];
      st = gpar_submit(eng, (n & 1) ? cpu : GPAR_HOST, user_fn, o, rs, o->nr, ws, o->nw);
      if (st != GPAR_OK) FAIL("op %d: submit %s", n, gpar_status_name(st));
      compute(o, refp);
      break;
    }
    case K_COPY:
      st = gpar_copy(buf[o->dst], o->doff, buf[o->src], o->soff, o->bytes);
      if (st != GPAR_OK) FAIL("op %d: copy %s", n, gpar_status_name(st));
      memcpy((unsigned char *)ref[o->dst] + o->doff, (unsigned char *)ref[o->src] + o->soff, o->bytes);
      break;
    case K_FILL:
      st = gpar_fill(buf[o->dst], o->doff, o->bytes, o->val);
      if (st != GPAR_OK) FAIL("op %d: fill %s", n, gpar_status_name(st));
      memset((unsigned char *)ref[o->dst] + o->doff, o->val, o->bytes);
      break;
    case K_WRITE:
      memcpy(tmp, o->data, o->bytes);
      st = gpar_write(buf[o->dst], o->doff, tmp, o->bytes);
      memset(tmp, 0xee, sizeof tmp); /* the data must have been staged */
      if (st != GPAR_OK) FAIL("op %d: write %s", n, gpar_status_name(st));
      memcpy((unsigned char *)ref[o->dst] + o->doff, o->data, o->bytes);
      break;
    case K_READ:
      st = gpar_read(buf[o->dst], o->doff, tmp, o->bytes);
      if (st != GPAR_OK) FAIL("op %d: read %s", n, gpar_status_name(st));
      else if (memcmp(tmp, (unsigned char *)ref[o->dst] + o->doff, o->bytes))
        FAIL("op %d: mid-stream gpar_read of buffer %d differs from the replay", n, o->dst);
      break;
    case K_PEEK: /* after gpar_wait no op writes it: its memory may be read directly */
      st = gpar_wait(buf[o->dst]);
      if (st != GPAR_OK) FAIL("op %d: wait %s", n, gpar_status_name(st));
      else if (memcmp(mem[o->dst], ref[o->dst], BYTES))
        FAIL("op %d: buffer %d after gpar_wait differs from the replay", n, o->dst);
      break;
    }
  }
  if (d->early_release >= 0) {
    st = gpar_buffer_release(buf[d->early_release]);
    if (st != GPAR_OK) FAIL("early release: %s", gpar_status_name(st));
  }
  for (int b = 0; b < d->nb && good; b++) {
    uint64_t got[WORDS];
    if (b == d->early_release) continue;
    st = gpar_read(buf[b], 0, got, BYTES);
    if (st != GPAR_OK) FAIL("final read of buffer %d: %s", b, gpar_status_name(st));
    else
      for (int i = 0; i < WORDS; i++)
        if (got[i] != ref[b][i]) {
          FAIL("buffer %d word %d: got %016llx want %016llx", b, i, (unsigned long long)got[i],
               (unsigned long long)ref[b][i]);
          break;
        }
  }
out:
  st = gpar_wait_all(eng);
  if (st != GPAR_OK) FAIL("wait_all: %s", gpar_status_name(st));
  for (int b = 0; b < d->nb; b++)
    if (b != d->early_release) gpar_buffer_release(buf[b]);
  if (!good && (*reported)++ < 3) {
    diag("seed %llu dag %d (dag seed %llu, %d buffers, %d ops): %s", (unsigned long long)base, idx,
         (unsigned long long)d->seed, d->nb, d->nops, why);
    if (*reported == 1) dump(d);
  }
  return good;
#undef FAIL
}

static int ndagsplus(int ndags, int batch);

/* multi: engine with every backend, buffers on every device. */
static void run_mode(const char *mode, int synchronous, int multi, uint64_t base, int ndags, int batch) {
  const char *oe = getenv("GPAR_TEST_DAG_ONLY"); /* run only this DAG index (debugging) */
  int only = oe && *oe ? atoi(oe) : -1;
  static dag d;
  gpar_engine *eng = tu_engine(multi ? 0 : GPAR_BACKEND_HOST, 4, synchronous);
  int cpu = gpar_device_find(eng, GPAR_BACKEND_HOST, GPAR_DEVICE_CPU, 0);
  int total_ok = 0, nops = 0, ndev = multi ? gpar_device_count(eng) : 0;
  double t0 = gpar_now();
  if (cpu < 0) bail_out("no CPU device");
  if (multi && ndev < 2) {
    skip((ndagsplus(ndags, batch)), "one device only: no cross-device DAGs");
    gpar_shutdown(eng);
    return;
  }
  for (int first = 0; first < ndags; first += batch) {
    int good = 0, reported = 0, n = 0;
    for (int i = first; i < first + batch && i < ndags; i++) {
      if (only >= 0 && i != only) continue;
      n++;
      gen(&d, tu_mix(base ^ ((uint64_t)i << 2 | (uint64_t)synchronous | (uint64_t)multi << 1)), cpu, ndev);
      nops += d.nops;
      good += run_dag(eng, cpu, &d, i, base, &reported);
    }
    ok(good == n, "%s: DAGs %d-%d match the sequential replay (%d/%d)", mode, first,
       first + batch - 1 < ndags - 1 ? first + batch - 1 : ndags - 1, good, n);
    total_ok += good;
  }
  gpar_stats s;
  gpar_stats_get(eng, &s);
  ok(s.ops_in_flight == 0 && s.ops_failed == 0 && s.buffers_live == 0,
     "%s: counters at the end: in flight %llu, failed %llu, buffers live %llu", mode,
     (unsigned long long)s.ops_in_flight, (unsigned long long)s.ops_failed,
     (unsigned long long)s.buffers_live);
  is_status(gpar_shutdown(eng), GPAR_OK, "shutdown");
  diag("%s: %d/%d DAGs matched, %d ops, %.2f s%s", mode, total_ok, ndags, nops, gpar_now() - t0,
       multi ? " (buffers on every device)" : "");
}

/* How many oks run_mode prints for ndags. */
static int ndagsplus(int ndags, int batch) {
  return (ndags + batch - 1) / batch + 2;
}

int main(void) {
  tap_start();
  uint64_t base = tu_seed(20261130);
  const char *e = getenv("GPAR_TEST_DAGS");
  int ndags = e && atoi(e) > 0 ? atoi(e) : 1000;
  run_mode("threaded", 0, 0, base, ndags, 100);
  run_mode("synchronous", 1, 0, base, ndags, 100);
  run_mode("cross-device", 0, 1, base, ndags, 100);
  return done_testing();
}
