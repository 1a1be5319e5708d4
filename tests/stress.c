/* stress.c: concurrency stress: 8 threads submit, wait and release at random on private and shared
 * buffers of every device; final contents must equal a sequential replay of each thread's log. */
#include <pthread.h>
#include "testutil.h"

#define NTHREADS 8
#define ITERS 50000 /* ops per thread; times GPAR_STRESS_SCALE */
#define PSZ 2048  /* bytes of a private buffer */
#define SSL 256   /* bytes of one thread's slice of a shared device buffer */
#define NCNT 16   /* counters in each shared counter buffer */

/* Log entries: everything a thread did, enough to replay it. */
enum {
  OP_CREATE,  /* slot a (re)created on device index b (nsel: GPAR_HOST), filled with gen(seed) */
  OP_WRITE,   /* slot a [off, +len) = gen(seed) */
  OP_FILL,    /* slot a [off, +len) = val */
  OP_COPY,    /* slot a [off, +len) = slot b [off2, +len) */
  OP_MIX,     /* CPU user fn, slot a words [off/4, +len/4): w = w * 31 + seed */
  OP_NOOP,    /* user fn on the slot's device, slot a read-write: orders only */
  OP_ADD,     /* CPU user fn: counter a += seed in SC, counter b += seed << 7 in SC2 (commutative) */
  OP_SWRITE,  /* shared buffer of device a, own slice [off2, +len) = gen(seed) */
  OP_SFILL,   /* ... = val */
  OP_S2P,     /* slot b [off, +len) = shared a, own slice [off2, +len) */
  OP_P2S,     /* shared a, own slice [off2, +len) = slot b [off, +len) */
  OP_K2P,     /* slot a [off, +len) = K [off2, +len) (K: read-only, shared by all) */
  OP_READ,    /* check: gpar_read of slot a [off, +len) equals the replay so far */
  OP_WAIT,    /* check: gpar_wait(slot a); host memory equals the replay so far */
  OP_WAITS,   /* gpar_wait on a shared buffer (many threads at once) */
  OP_RELEASE, /* slot a released with its ops still pending (an OP_CREATE follows) */
  OP_WAITALL,
  NOPS
};
static const char *const opname[NOPS] = {"create", "write", "fill", "copy", "mix", "noop", "add", "swrite", "sfill",
                                         "s2p", "p2s", "k2p", "read", "wait", "waits", "release", "waitall"};

typedef struct logent {
  uint8_t op, a, b, val;
  uint16_t off, off2, len;
  uint32_t seed;
} logent;

/* What a thread's log says its buffers hold. */
typedef struct state {
  unsigned char (*slot)[PSZ];
  int *slotdev; /* index into sel[], nsel: GPAR_HOST */
  unsigned char (*slice)[SSL];
  uint64_t cnt[NCNT], cnt2[NCNT];
} state;

typedef struct oparg {
  unsigned char *p;
  uint32_t w0, nw, c;
  int k, k2;
} oparg;

typedef struct tctx {
  int t, iters;
  uint64_t seed;
  gpar_buffer *slot;
  logent *log;
  int nlog;
  oparg *args;
  state st;
  int fails, counts[NOPS];
  char why[240];
} tctx;

static gpar_engine *eng;
static int nsel, nslot, cpu;
static int sel[64];            /* devices under stress */
static tu_devinfo info[64];
static gpar_buffer SC, SC2, K;  /* shared counters (CPU device, GPAR_HOST), shared read-only data */
static gpar_buffer SD[64];     /* per device: NTHREADS slices */
static unsigned char kdata[PSZ];
static uint64_t *sc_mem, *sc2_mem;

static int slot_dev(int devidx) { return devidx == nsel ? GPAR_HOST : sel[devidx]; }
static int dev_hostmem(int devidx) { return devidx == nsel || info[devidx].backend_id == GPAR_BACKEND_HOST; }

static void gen(uint32_t seed, unsigned char *dst, size_t len) {
  for (size_t i = 0; i < len; i++) dst[i] = (unsigned char)tu_mix(((uint64_t)seed << 20) + i);
}

static void state_init(state *s) {
  s->slot = calloc((size_t)nslot, PSZ);
  s->slotdev = calloc((size_t)nslot, sizeof *s->slotdev);
  s->slice = calloc((size_t)nsel, SSL);
  memset(s->cnt, 0, sizeof s->cnt);
  memset(s->cnt2, 0, sizeof s->cnt2);
}
static void state_free(state *s) {
  free(s->slot), free(s->slotdev), free(s->slice);
}

static void mix(unsigned char *p, uint32_t w0, uint32_t nw, uint32_t c) {
  for (uint32_t i = w0; i < w0 + nw; i++) {
    uint32_t w;
    memcpy(&w, p + 4 * i, 4);
    w = w * 31u + c;
    memcpy(p + 4 * i, &w, 4);
  }
}

/* The sequential semantics of one log entry. */
static void apply(state *s, const logent *e) {
  switch (e->op) {
  case OP_CREATE: s->slotdev[e->a] = e->b; gen(e->seed, s->slot[e->a], PSZ); break;
  case OP_WRITE: gen(e->seed, s->slot[e->a] + e->off, e->len); break;
  case OP_FILL: memset(s->slot[e->a] + e->off, e->val, e->len); break;
  case OP_COPY: memcpy(s->slot[e->a] + e->off, s->slot[e->b] + e->off2, e->len); break;
  case OP_MIX: mix(s->slot[e->a], e->off / 4u, e->len / 4u, e->seed); break;
  case OP_ADD: s->cnt[e->a] += e->seed; s->cnt2[e->b] += (uint64_t)e->seed << 7; break;
  case OP_SWRITE: gen(e->seed, s->slice[e->a] + e->off2, e->len); break;
  case OP_SFILL: memset(s->slice[e->a] + e->off2, e->val, e->len); break;
  case OP_S2P: memcpy(s->slot[e->b] + e->off, s->slice[e->a] + e->off2, e->len); break;
  case OP_P2S: memcpy(s->slice[e->a] + e->off2, s->slot[e->b] + e->off, e->len); break;
  case OP_K2P: memcpy(s->slot[e->a] + e->off, kdata + e->off2, e->len); break;
  default: break;
  }
}

static int mix_fn(const gpar_native *nat, void *arg) {
  oparg *a = arg;
  (void)nat;
  mix(a->p, a->w0, a->nw, a->c);
  return GPAR_OK;
}

static int noop_fn(const gpar_native *nat, void *arg) {
  (void)nat, (void)arg;
  return GPAR_OK;
}

/* A deliberately non-atomic read-modify-write: only the engine's ordering keeps it exact. */
static int add_fn(const gpar_native *nat, void *arg) {
  oparg *a = arg;
  (void)nat;
  volatile uint64_t *c = sc_mem, *c2 = sc2_mem;
  uint64_t x = c[a->k], y = c2[a->k2];
  for (volatile int spin = 0; spin < 50; spin++) {
  }
  c[a->k] = x + a->c;
  c2[a->k2] = y + ((uint64_t)a->c << 7);
  return GPAR_OK;
}

static void describe(const logent *e, char *out, size_t n) {
  snprintf(out, n, "%s a=%d b=%d off=%d off2=%d len=%d val=%d seed=%u", opname[e->op], e->a, e->b, e->off, e->off2,
           e->len, e->val, e->seed);
}

/* Random range [off, off+len) inside n bytes, mostly short; multiple of `align`. */
static void range(uint64_t *rs, int n, int align, uint16_t *off, uint16_t *len) {
  int l = tu_range(rs, 0, 3) ? tu_range(rs, 1, 96) : tu_range(rs, 1, n);
  l = (l + align - 1) / align * align;
  if (l > n) l = n;
  *len = (uint16_t)l;
  *off = (uint16_t)(tu_range(rs, 0, (n - l) / align) * align);
}

static void *worker(void *arg) {
  tctx *x = arg;
  uint64_t rs = x->seed;
  unsigned char tmp[PSZ];
#define TFAIL(...) do { if (!x->fails++) snprintf(x->why, sizeof x->why, __VA_ARGS__); } while (0)
  for (int i = 0; i < x->iters + nslot; i++) {
    logent e;
    memset(&e, 0, sizeof e);
    e.seed = (uint32_t)tu_rand(&rs);
    int st = GPAR_OK, p = tu_range(&rs, 0, 999);
    e.a = (uint8_t)tu_range(&rs, 0, nslot - 1);
    do e.b = (uint8_t)tu_range(&rs, 0, nslot - 1); while (e.b == e.a);
    if (i < nslot) { /* the slots, first: slot i on device i / 2 (the last two in GPAR_HOST) */
      e.op = OP_CREATE, e.a = (uint8_t)i, e.b = (uint8_t)(i / 2 < nsel ? i / 2 : nsel);
    } else if (p < 130) e.op = OP_WRITE;
    else if (p < 220) e.op = OP_FILL;
    else if (p < 380) e.op = OP_COPY;
    else if (p < 460) e.op = OP_MIX;
    else if (p < 500) e.op = OP_NOOP;
    else if (p < 640) e.op = OP_ADD;
    else if (p < 690) e.op = OP_SWRITE;
    else if (p < 720) e.op = OP_SFILL;
    else if (p < 770) e.op = OP_S2P;
    else if (p < 820) e.op = OP_P2S;
    else if (p < 850) e.op = OP_K2P;
    else if (p < 900) e.op = OP_READ;
    else if (p < 940) e.op = OP_WAIT;
    else if (p < 965) e.op = OP_WAITS;
    else if (p < 997) e.op = OP_RELEASE;
    else e.op = OP_WAITALL;
    if (e.op == OP_MIX && !dev_hostmem(x->st.slotdev[e.a])) { /* needs host memory: find a slot */
      int h = -1;
      for (int j = 0; j < nslot && h < 0; j++)
        if (dev_hostmem(x->st.slotdev[(e.a + j) % nslot])) h = (e.a + j) % nslot;
      if (h < 0) e.op = OP_NOOP;
      else e.a = (uint8_t)h;
    }
    oparg *oa = &x->args[i];
    switch (e.op) {
    case OP_CREATE: {
      gen(e.seed, tmp, PSZ);
      st = gpar_buffer_create(eng, slot_dev(e.b), PSZ, &x->slot[e.a]);
      if (st == GPAR_OK) st = gpar_write(x->slot[e.a], 0, tmp, PSZ);
      break;
    }
    case OP_WRITE:
      range(&rs, PSZ, 1, &e.off, &e.len);
      gen(e.seed, tmp, e.len);
      st = gpar_write(x->slot[e.a], e.off, tmp, e.len);
      break;
    case OP_FILL:
      range(&rs, PSZ, 1, &e.off, &e.len);
      e.val = (uint8_t)e.seed;
      st = gpar_fill(x->slot[e.a], e.off, e.len, e.val);
      break;
    case OP_COPY:
      range(&rs, PSZ, 1, &e.off, &e.len);
      e.off2 = (uint16_t)tu_range(&rs, 0, PSZ - e.len);
      st = gpar_copy(x->slot[e.a], e.off, x->slot[e.b], e.off2, e.len);
      break;
    case OP_MIX:
      range(&rs, PSZ, 4, &e.off, &e.len);
      oa->p = gpar_buffer_host_ptr(x->slot[e.a]);
      oa->w0 = e.off / 4u, oa->nw = e.len / 4u, oa->c = e.seed;
      st = oa->p ? gpar_submit(eng, cpu, mix_fn, oa, NULL, 0, &x->slot[e.a], 1) : GPAR_EINVAL;
      break;
    case OP_NOOP:
      st = gpar_submit(eng, slot_dev(x->st.slotdev[e.a]), noop_fn, NULL, &x->slot[e.a], 1, &x->slot[e.a], 1);
      break;
    case OP_ADD: {
      gpar_buffer both[2] = {SC, SC2};
      e.a = (uint8_t)tu_range(&rs, 0, NCNT - 1), e.b = (uint8_t)tu_range(&rs, 0, NCNT - 1);
      oa->k = e.a, oa->k2 = e.b, oa->c = e.seed;
      st = gpar_submit(eng, cpu, add_fn, oa, NULL, 0, both, 2);
      break;
    }
    case OP_SWRITE:
    case OP_SFILL:
      e.a = (uint8_t)tu_range(&rs, 0, nsel - 1);
      range(&rs, SSL, 1, &e.off2, &e.len);
      e.val = (uint8_t)e.seed;
      gen(e.seed, tmp, e.len);
      st = e.op == OP_SWRITE ? gpar_write(SD[e.a], (size_t)x->t * SSL + e.off2, tmp, e.len)
                             : gpar_fill(SD[e.a], (size_t)x->t * SSL + e.off2, e.len, e.val);
      break;
    case OP_S2P:
    case OP_P2S:
      e.a = (uint8_t)tu_range(&rs, 0, nsel - 1);
      range(&rs, SSL, 1, &e.off2, &e.len);
      e.off = (uint16_t)tu_range(&rs, 0, PSZ - e.len);
      st = e.op == OP_S2P ? gpar_copy(x->slot[e.b], e.off, SD[e.a], (size_t)x->t * SSL + e.off2, e.len)
                          : gpar_copy(SD[e.a], (size_t)x->t * SSL + e.off2, x->slot[e.b], e.off, e.len);
      break;
    case OP_K2P:
      range(&rs, PSZ, 1, &e.off, &e.len);
      e.off2 = (uint16_t)tu_range(&rs, 0, PSZ - e.len);
      st = gpar_copy(x->slot[e.a], e.off, K, e.off2, e.len);
      break;
    case OP_READ:
      range(&rs, PSZ, 1, &e.off, &e.len);
      st = gpar_read(x->slot[e.a], e.off, tmp, e.len);
      if (st == GPAR_OK && memcmp(tmp, x->st.slot[e.a] + e.off, e.len))
        TFAIL("op %d: gpar_read of slot %d [%d, +%d) differs from the replay", i, e.a, e.off, e.len);
      break;
    case OP_WAIT:
      st = gpar_wait(x->slot[e.a]);
      if (st == GPAR_OK && dev_hostmem(x->st.slotdev[e.a]) &&
          memcmp(gpar_buffer_host_ptr(x->slot[e.a]), x->st.slot[e.a], PSZ))
        TFAIL("op %d: slot %d after gpar_wait differs from the replay", i, e.a);
      break;
    case OP_WAITS:
      e.a = (uint8_t)tu_range(&rs, 0, nsel);
      st = gpar_wait(e.a == nsel ? SC : SD[e.a]);
      break;
    case OP_RELEASE:
      st = gpar_buffer_release(x->slot[e.a]);
      if (st == GPAR_OK && gpar_wait(x->slot[e.a]) != GPAR_EBADBUF) TFAIL("op %d: released handle still valid", i);
      break;
    case OP_WAITALL:
      st = gpar_wait_all(eng);
      break;
    }
    if (st != GPAR_OK) {
      char d[160];
      describe(&e, d, sizeof d);
      TFAIL("op %d (%s): %s (%s)", i, d, gpar_status_name(st), gpar_last_error());
    }
    x->log[x->nlog++] = e;
    x->counts[e.op]++;
    apply(&x->st, &e);
    if (e.op == OP_RELEASE) { /* re-create at once, on a random device */
      memset(&e, 0, sizeof e);
      e.op = OP_CREATE;
      e.a = x->log[x->nlog - 1].a;
      e.b = (uint8_t)tu_range(&rs, 0, nsel);
      e.seed = (uint32_t)tu_rand(&rs);
      gen(e.seed, tmp, PSZ);
      st = gpar_buffer_create(eng, slot_dev(e.b), PSZ, &x->slot[e.a]);
      if (st == GPAR_OK) st = gpar_write(x->slot[e.a], 0, tmp, PSZ);
      if (st != GPAR_OK) TFAIL("op %d: re-create: %s (%s)", i, gpar_status_name(st), gpar_last_error());
      x->log[x->nlog++] = e;
      x->counts[OP_CREATE]++;
      apply(&x->st, &e);
    }
  }
  return NULL;
#undef TFAIL
}

/* The last log entry before `upto` that wrote slot `a` (or slice) at byte `at`. */
static int last_writer(const tctx *x, int is_slice, int a, int at) {
  for (int i = x->nlog - 1; i >= 0; i--) {
    const logent *e = &x->log[i];
    int hit = 0;
    if (!is_slice) {
      if (e->op == OP_CREATE && e->a == a) return i;
      if ((e->op == OP_WRITE || e->op == OP_FILL || e->op == OP_COPY || e->op == OP_MIX || e->op == OP_K2P) &&
          e->a == a && at >= e->off && at < e->off + e->len)
        hit = 1;
      if (e->op == OP_S2P && e->b == a && at >= e->off && at < e->off + e->len) hit = 1;
    } else if ((e->op == OP_SWRITE || e->op == OP_SFILL || e->op == OP_P2S) && e->a == a && at >= e->off2 &&
               at < e->off2 + e->len) {
      hit = 1;
    }
    if (hit) return i;
  }
  return -1;
}

static void report_diff(const tctx *x, int is_slice, int a, int at, unsigned char got, unsigned char want, uint64_t seed) {
  int w = last_writer(x, is_slice, a, at);
  char d[160] = "(none: initial contents)";
  if (w >= 0) describe(&x->log[w], d, sizeof d);
  diag("  seed %llu thread %d %s %d byte %d: %02x, replay says %02x; last op writing it: #%d %s",
       (unsigned long long)seed, x->t, is_slice ? "shared slice of device index" : "slot", a, at, got, want, w, d);
}

int main(void) {
  static tctx ctx[NTHREADS];
  pthread_t th[NTHREADS];
  tap_start();
  uint64_t seed = tu_seed(2024);
  const char *sc = getenv("GPAR_STRESS_SCALE");
  double scale = sc && atof(sc) > 0 ? atof(sc) : 1.0;
  int iters = (int)(ITERS * scale);
  if (iters < 1) iters = 1;
  eng = tu_engine(0, 0, 0);
  cpu = gpar_device_find(eng, GPAR_BACKEND_HOST, GPAR_DEVICE_CPU, 0);
  if (cpu < 0) bail_out("no CPU device");
  gpar_stats s0;
  gpar_stats_get(eng, &s0);
  int ndev = gpar_device_count(eng);
  for (int d = 0; d < ndev && nsel < 16; d++) { /* every device: the ops are small enough for PoCL */
    tu_device_info(eng, d, &info[nsel]);
    sel[nsel++] = d;
    diag("device %d: %s %s", d, info[nsel - 1].backend, info[nsel - 1].name);
  }
  nslot = 2 * nsel + 2;
  diag("%d threads x %d ops, %d private buffers each on %d devices + GPAR_HOST", NTHREADS, iters, nslot, nsel);

  /* shared buffers */
  uint64_t ks = seed;
  for (int i = 0; i < PSZ; i++) kdata[i] = (unsigned char)tu_rand(&ks);
  if (gpar_buffer_create(eng, cpu, NCNT * 8, &SC) || gpar_buffer_create(eng, GPAR_HOST, NCNT * 8, &SC2) ||
      gpar_buffer_create(eng, GPAR_HOST, PSZ, &K))
    bail_out("shared buffers");
  gpar_fill(SC, 0, NCNT * 8, 0);
  gpar_fill(SC2, 0, NCNT * 8, 0);
  gpar_write(K, 0, kdata, PSZ);
  for (int i = 0; i < nsel; i++) {
    if (gpar_buffer_create(eng, sel[i], NTHREADS * SSL, &SD[i])) bail_out("shared device buffer");
    gpar_fill(SD[i], 0, NTHREADS * SSL, 0);
  }
  sc_mem = gpar_buffer_host_ptr(SC);
  sc2_mem = gpar_buffer_host_ptr(SC2);
  is_status(gpar_wait_all(eng), GPAR_OK, "shared buffers set up");

  double t0 = gpar_now();
  for (int t = 0; t < NTHREADS; t++) {
    tctx *x = &ctx[t];
    x->t = t;
    x->iters = iters;
    x->seed = tu_mix(seed * 131 + (uint64_t)t);
    x->slot = calloc((size_t)nslot, sizeof *x->slot);
    x->log = calloc((size_t)(2 * (iters + nslot)), sizeof *x->log);
    x->args = calloc((size_t)(iters + nslot), sizeof *x->args);
    state_init(&x->st);
    if (pthread_create(&th[t], NULL, worker, x)) bail_out("pthread_create");
  }
  for (int t = 0; t < NTHREADS; t++) pthread_join(th[t], NULL);
  double t1 = gpar_now();
  is_status(gpar_wait_all(eng), GPAR_OK, "wait_all after the threads");

  /* every thread: its calls succeeded, and its buffers equal the replay of its log */
  uint64_t want_cnt[NCNT] = {0}, want_cnt2[NCNT] = {0};
  int totals[NOPS] = {0}, total = 0;
  for (int t = 0; t < NTHREADS; t++) {
    tctx *x = &ctx[t];
    state r;
    state_init(&r);
    for (int i = 0; i < x->nlog; i++) apply(&r, &x->log[i]);
    ok(x->fails == 0, "thread %d: %d ops, every call and mid-run check passed", t, x->nlog);
    if (x->fails) diag("  seed %llu thread %d: %d failures, first: %s", (unsigned long long)seed, t, x->fails, x->why);
    int good = 1;
    unsigned char got[PSZ];
    for (int a = 0; a < nslot && good; a++) {
      int st = gpar_read(x->slot[a], 0, got, PSZ);
      if (st != GPAR_OK) {
        diag("  thread %d slot %d: gpar_read %s", t, a, gpar_status_name(st));
        good = 0;
      }
      for (int i = 0; i < PSZ && good; i++)
        if (got[i] != r.slot[a][i]) report_diff(x, 0, a, i, got[i], r.slot[a][i], seed), good = 0;
    }
    ok(good, "thread %d: its %d private buffers equal the sequential replay of its log", t, nslot);
    good = 1;
    for (int d = 0; d < nsel && good; d++) {
      int st = gpar_read(SD[d], (size_t)t * SSL, got, SSL);
      if (st != GPAR_OK) diag("  thread %d slice of dev %d: gpar_read %s", t, sel[d], gpar_status_name(st)), good = 0;
      for (int i = 0; i < SSL && good; i++)
        if (got[i] != r.slice[d][i]) report_diff(x, 1, d, i, got[i], r.slice[d][i], seed), good = 0;
    }
    ok(good, "thread %d: its slices of the %d shared device buffers equal the replay", t, nsel);
    for (int k = 0; k < NCNT; k++) want_cnt[k] += r.cnt[k], want_cnt2[k] += r.cnt2[k];
    for (int o = 0; o < NOPS; o++) totals[o] += x->counts[o];
    total += x->nlog;
    state_free(&r);
  }
  uint64_t got_cnt[NCNT], got_cnt2[NCNT];
  int r1 = gpar_read(SC, 0, got_cnt, sizeof got_cnt), r2 = gpar_read(SC2, 0, got_cnt2, sizeof got_cnt2);
  ok(r1 == GPAR_OK && r2 == GPAR_OK && !memcmp(got_cnt, want_cnt, sizeof got_cnt) &&
         !memcmp(got_cnt2, want_cnt2, sizeof got_cnt2),
     "shared counters (two buffers, non-atomic read-modify-writes from 8 threads) equal the sum of all logs");
  gpar_stats s1;
  gpar_stats_get(eng, &s1);
  ok(s1.ops_in_flight == 0 && s1.ops_completed == s1.ops_submitted && s1.ops_failed == s0.ops_failed,
     "counters: %llu submitted, %llu completed, %llu failed, %llu in flight",
     (unsigned long long)s1.ops_submitted, (unsigned long long)s1.ops_completed, (unsigned long long)s1.ops_failed,
     (unsigned long long)s1.ops_in_flight);
  for (int t = 0; t < NTHREADS; t++) {
    for (int a = 0; a < nslot; a++) gpar_buffer_release(ctx[t].slot[a]);
    free(ctx[t].slot), free(ctx[t].log), free(ctx[t].args);
    state_free(&ctx[t].st);
  }
  gpar_buffer_release(SC), gpar_buffer_release(SC2), gpar_buffer_release(K);
  for (int i = 0; i < nsel; i++) gpar_buffer_release(SD[i]);
  is_status(gpar_wait_all(eng), GPAR_OK, "wait_all after the releases");
  gpar_stats_get(eng, &s1);
  ok(s1.buffers_live == s0.buffers_live && s1.events_live == s0.events_live,
     "buffers live %llu (start %llu), events live %llu (start %llu)", (unsigned long long)s1.buffers_live,
     (unsigned long long)s0.buffers_live, (unsigned long long)s1.events_live, (unsigned long long)s0.events_live);
  is_status(gpar_shutdown(eng), GPAR_OK, "shutdown");
  char line[512];
  int p = 0;
  for (int o = 0; o < NOPS; o++) p += snprintf(line + p, sizeof line - (size_t)p, " %s %d", opname[o], totals[o]);
  diag("%d logged ops in %.2f s (%.0f ops/s):%s", total, t1 - t0, total / (t1 - t0), line);
  return done_testing();
}
