/* soak.c: a soak of 1M+ ops of random small DAGs on the CPU device (buffers created and released
 * as it goes), asserting flat RSS and no growth in pools, events or buffers; smaller soaks per GPU/OpenCL device. */
#include "testutil.h"

#define MIB (1024.0 * 1024.0)

static uint64_t rs;

/* Resident set size in bytes (/proc/self/statm); 0 when unknown. */
static size_t rss_bytes(void) {
  long pages = 0, res = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f) return 0;
  if (fscanf(f, "%ld %ld", &pages, &res) != 2) res = 0;
  fclose(f);
  return (size_t)res * (size_t)sysconf(_SC_PAGESIZE);
}

/* Under ASan/TSan/LSan freed memory sits in the allocator's quarantine, so RSS grows by design;
 * there the sanitizer runtime's count of live heap bytes is asserted instead (RSS still printed). */
extern size_t __sanitizer_get_current_allocated_bytes(void) __attribute__((weak));
static size_t mem_metric(const char **what) {
  if (__sanitizer_get_current_allocated_bytes) {
    *what = "live heap (sanitizer allocator)";
    return __sanitizer_get_current_allocated_bytes();
  }
  *what = "resident memory";
  return rss_bytes();
}

static unsigned long env_count(const char *name, unsigned long def) {
  const char *e = getenv(name);
  return e && strtoul(e, NULL, 0) > 0 ? strtoul(e, NULL, 0) : def;
}

/* A gate: a CPU op that holds its output until opened, so ops queued behind it pile up. */
static atomic_int gate_open;
static int gate_fn(const gpar_native *nat, void *arg) {
  (void)nat, (void)arg;
  while (!atomic_load(&gate_open)) tu_sleep_us(100);
  return GPAR_OK;
}

/* Queue n small writes behind a gate, then open it: the pinned pool and the engine's free
 * lists reach the high-water mark that the soak's bounded window can never exceed. */
static int high_water(gpar_engine *eng, int cpu, int n) {
  gpar_buffer g;
  unsigned char v[64] = {1};
  int st = gpar_buffer_create(eng, cpu, 64, &g), bad = 0;
  if (st) return st;
  atomic_store(&gate_open, 0);
  bad += gpar_submit(eng, cpu, gate_fn, NULL, NULL, 0, &g, 1) != GPAR_OK;
  for (int i = 0; i < n; i++) bad += gpar_write(g, 0, v, sizeof v) != GPAR_OK;
  atomic_store(&gate_open, 1);
  st = gpar_wait_all(eng);
  gpar_buffer_release(g);
  return bad ? GPAR_EINVAL : st;
}

/* ------------------------------------------------------------ the CPU soak */

#define NBUF 48
#define BSZ 256
#define WINDOW 2048 /* ops between gpar_wait_all: bounds what is in flight */

typedef struct fnarg {
  const unsigned char *in1, *in2;
  unsigned char *out;
  unsigned char c;
} fnarg;

/* out[j] = out[j] * 3 + in1[j] + 7 in2[j] + c: element-wise, so in place is fine. */
static void tiny(unsigned char *out, const unsigned char *in1, const unsigned char *in2, unsigned char c) {
  for (int j = 0; j < BSZ; j++)
    out[j] = (unsigned char)(out[j] * 3 + (in1 ? in1[j] : 0) + 7 * (in2 ? in2[j] : 0) + c);
}
static int tiny_fn(const gpar_native *nat, void *arg) {
  fnarg *a = arg;
  (void)nat;
  tiny(a->out, a->in1, a->in2, a->c);
  return GPAR_OK;
}

typedef struct cpu_soak {
  gpar_engine *eng;
  int cpu;
  gpar_buffer b[NBUF];
  unsigned char shadow[NBUF][BSZ];
  fnarg args[WINDOW];
  unsigned long ops, creates, releases, checks;
  int nargs, fails;
  char why[200];
} cpu_soak;

static void cs_fail(cpu_soak *s, const char *what, int st) {
  if (!s->fails++)
    snprintf(s->why, sizeof s->why, "op %lu: %s: %s (%s)", s->ops, what, gpar_status_name(st), gpar_last_error());
}

static void cs_create(cpu_soak *s, int i) {
  int dev = tu_range(&rs, 0, 1) ? s->cpu : GPAR_HOST;
  int st = gpar_buffer_create(s->eng, dev, BSZ, &s->b[i]);
  if (st) return cs_fail(s, "create", st);
  for (int j = 0; j < BSZ; j++) s->shadow[i][j] = (unsigned char)tu_rand(&rs);
  if ((st = gpar_write(s->b[i], 0, s->shadow[i], BSZ))) cs_fail(s, "write after create", st);
  s->creates++;
}

/* Compare buffer i (after a wait) with its shadow. */
static void cs_check(cpu_soak *s, int i) {
  int st = gpar_wait(s->b[i]);
  const unsigned char *p = gpar_buffer_host_ptr(s->b[i]);
  if (st != GPAR_OK) return cs_fail(s, "wait", st);
  if (!p || memcmp(p, s->shadow[i], BSZ)) {
    if (!s->fails++) snprintf(s->why, sizeof s->why, "op %lu: buffer %d differs from its shadow", s->ops, i);
  }
  s->checks++;
}

/* One random op of a small DAG over the rotating buffers. */
static void cs_step(cpu_soak *s) {
  int p = tu_range(&rs, 0, 999), d = tu_range(&rs, 0, NBUF - 1), st;
  if (s->nargs >= WINDOW - 2) { /* the window is full: everything in flight retires, args are free */
    if ((st = gpar_wait_all(s->eng))) cs_fail(s, "wait_all", st);
    s->nargs = 0;
    cs_check(s, tu_range(&rs, 0, NBUF - 1));
  }
  if (p < 400) { /* a user fn: 0-2 inputs, one output */
    int n = tu_range(&rs, 0, 2), i1 = tu_range(&rs, 0, NBUF - 1), i2 = tu_range(&rs, 0, NBUF - 1);
    gpar_buffer in[2] = {s->b[i1], s->b[i2]};
    fnarg *a = &s->args[s->nargs++];
    a->out = gpar_buffer_host_ptr(s->b[d]);
    a->in1 = n >= 1 ? gpar_buffer_host_ptr(s->b[i1]) : NULL;
    a->in2 = n >= 2 ? gpar_buffer_host_ptr(s->b[i2]) : NULL;
    a->c = (unsigned char)p;
    st = gpar_submit(s->eng, s->cpu, tiny_fn, a, in, n, &s->b[d], 1);
    if (st) return cs_fail(s, "submit", st);
    tiny(s->shadow[d], a->in1 ? s->shadow[i1] : NULL, a->in2 ? s->shadow[i2] : NULL, a->c);
  } else if (p < 650) { /* copy between two buffers */
    int src = tu_range(&rs, 0, NBUF - 1), len = tu_range(&rs, 1, BSZ);
    int so = tu_range(&rs, 0, BSZ - len), dof = tu_range(&rs, 0, BSZ - len);
    if (src == d) src = (d + 1) % NBUF;
    if ((st = gpar_copy(s->b[d], (size_t)dof, s->b[src], (size_t)so, (size_t)len))) return cs_fail(s, "copy", st);
    memcpy(s->shadow[d] + dof, s->shadow[src] + so, (size_t)len);
    s->nargs++; /* counts towards the window */
  } else if (p < 800) { /* fill */
    int len = tu_range(&rs, 1, BSZ), off = tu_range(&rs, 0, BSZ - len);
    if ((st = gpar_fill(s->b[d], (size_t)off, (size_t)len, (unsigned char)p))) return cs_fail(s, "fill", st);
    memset(s->shadow[d] + off, (unsigned char)p, (size_t)len);
    s->nargs++;
  } else if (p < 995) { /* a small write */
    unsigned char v[64];
    int len = tu_range(&rs, 1, 64), off = tu_range(&rs, 0, BSZ - len);
    for (int j = 0; j < len; j++) v[j] = (unsigned char)tu_rand(&rs);
    if ((st = gpar_write(s->b[d], (size_t)off, v, (size_t)len))) return cs_fail(s, "write", st);
    memcpy(s->shadow[d] + off, v, (size_t)len);
    s->nargs++;
  } else { /* release with ops pending, and a new buffer in its place */
    if ((st = gpar_buffer_release(s->b[d]))) return cs_fail(s, "release", st);
    s->releases++;
    cs_create(s, d);
    s->nargs += 2;
  }
  s->ops++;
}

static void cpu_soak_run(unsigned long total) {
  static cpu_soak s;
  memset(&s, 0, sizeof s);
  s.eng = tu_engine(GPAR_BACKEND_HOST, 0, 0);
  s.cpu = gpar_device_find(s.eng, GPAR_BACKEND_HOST, GPAR_DEVICE_CPU, 0);
  for (int i = 0; i < NBUF; i++) cs_create(&s, i);
  unsigned long warm = total / 20 > 20000 ? total / 20 : 20000;
  if (warm > total) warm = total;
  double t0 = gpar_now();
  is_status(high_water(s.eng, s.cpu, 2 * WINDOW + 2 * NBUF), GPAR_OK, "cpu soak: high-water burst behind a gate");
  while (s.ops < warm) cs_step(&s);
  is_status(gpar_wait_all(s.eng), GPAR_OK, "cpu soak: warm-up");
  gpar_stats a, b;
  gpar_stats_get(s.eng, &a);
  const char *what;
  size_t rss0 = rss_bytes(), m0 = mem_metric(&what);
  double t1 = gpar_now();
  diag("cpu soak: RSS at start (after %lu warm-up ops): %.1f MiB; pinned pool %.2f MiB, events %llu, buffers %llu",
       warm, rss0 / MIB, a.pinned_bytes_pool / MIB, (unsigned long long)a.events_live,
       (unsigned long long)a.buffers_live);
  while (s.ops < total && s.fails < 1) cs_step(&s);
  is_status(gpar_wait_all(s.eng), GPAR_OK, "cpu soak: final wait_all");
  double t2 = gpar_now();
  for (int i = 0; i < NBUF; i++) cs_check(&s, i);
  ok(s.fails == 0, "cpu soak: %lu ops (%lu creates, %lu releases), every call succeeded, %lu content checks exact",
     s.ops, s.creates, s.releases, s.checks);
  if (s.fails) diag("  seed-dependent failure (%d): %s", s.fails, s.why);
  gpar_stats_get(s.eng, &b);
  size_t rss1 = rss_bytes(), m1 = mem_metric(&what);
  diag("cpu soak: RSS at end: %.1f MiB (%+.2f MiB); pinned pool %.2f MiB, events %llu, buffers %llu", rss1 / MIB,
       ((double)rss1 - (double)rss0) / MIB, b.pinned_bytes_pool / MIB, (unsigned long long)b.events_live,
       (unsigned long long)b.buffers_live);
  if (m0 != rss0) diag("cpu soak: live heap %.2f MiB -> %.2f MiB (%+.3f MiB)", m0 / MIB, m1 / MIB,
                       ((double)m1 - (double)m0) / MIB);
  /* 1 MiB over ~950k ops: a leak of one byte per op fails (measured: +0.02 MiB) */
  ok(m0 && m1 <= m0 + ((size_t)1 << 20), "cpu soak: %s flat (end <= start + 1 MiB)", what);
  ok(b.pinned_bytes_pool <= a.pinned_bytes_pool && b.events_live <= a.events_live &&
         b.buffers_live == a.buffers_live && b.buffers_live == NBUF,
     "cpu soak: no growth in pinned pool (%llu -> %llu), events (%llu -> %llu), buffers (%llu -> %llu)",
     (unsigned long long)a.pinned_bytes_pool, (unsigned long long)b.pinned_bytes_pool,
     (unsigned long long)a.events_live, (unsigned long long)b.events_live, (unsigned long long)a.buffers_live,
     (unsigned long long)b.buffers_live);
  ok(b.ops_in_flight == 0 && b.ops_completed == b.ops_submitted && b.ops_failed == 0,
     "cpu soak: %llu ops submitted, all completed, none failed", (unsigned long long)b.ops_submitted);
  for (int i = 0; i < NBUF; i++) gpar_buffer_release(s.b[i]);
  is_status(gpar_shutdown(s.eng), GPAR_OK, "cpu soak: shutdown");
  diag("cpu soak: %lu ops in %.2f s (%.2f us per op; warm-up %.2f s)", s.ops, t2 - t0,
       (t2 - t1) * 1e6 / (double)(s.ops - warm ? s.ops - warm : 1), t1 - t0);
}

/* ------------------------------------------------------------ a device soak */

#define DNB 12   /* device buffers */
#define DNH 4    /* GPAR_HOST buffers (never released: their pool class stays constant) */
#define DSZ 4096
#define DWIN 512
#define MM 16

typedef struct dev_soak {
  gpar_engine *eng;
  int dev, cpu, fails;
  gpar_buffer b[DNB], h[DNH], A, B, C;
  unsigned char sb[DNB][DSZ], sh[DNH][DSZ];
  float a[MM * MM], bm[MM * MM], c[MM * MM];
  unsigned long ops, gemms, creates;
  char why[200];
} dev_soak;

static void ds_fail(dev_soak *s, const char *what, int st) {
  if (!s->fails++)
    snprintf(s->why, sizeof s->why, "op %lu: %s: %s (%s)", s->ops, what, gpar_status_name(st), gpar_last_error());
}

static void ds_create(dev_soak *s, int i) {
  int st = gpar_buffer_create(s->eng, s->dev, DSZ, &s->b[i]);
  if (st) return ds_fail(s, "create", st);
  unsigned char v = (unsigned char)tu_rand(&rs);
  if ((st = gpar_fill(s->b[i], 0, DSZ, v))) ds_fail(s, "fill after create", st);
  memset(s->sb[i], v, DSZ);
  s->creates++;
}

static void ds_step(dev_soak *s) {
  int p = tu_range(&rs, 0, 999), d = tu_range(&rs, 0, DNB - 1), st;
  int len = tu_range(&rs, 1, 3840), o1 = tu_range(&rs, 0, DSZ - len), o2 = tu_range(&rs, 0, DSZ - len);
  if (p < 200) { /* fill */
    if ((st = gpar_fill(s->b[d], (size_t)o1, (size_t)len, (unsigned char)p))) return ds_fail(s, "fill", st);
    memset(s->sb[d] + o1, (unsigned char)p, (size_t)len);
  } else if (p < 350) { /* device to device */
    int src = (d + tu_range(&rs, 1, DNB - 1)) % DNB;
    if ((st = gpar_copy(s->b[d], (size_t)o1, s->b[src], (size_t)o2, (size_t)len))) return ds_fail(s, "copy d2d", st);
    memmove(s->sb[d] + o1, s->sb[src] + o2, (size_t)len);
  } else if (p < 500) { /* host to device */
    int h = tu_range(&rs, 0, DNH - 1);
    if ((st = gpar_copy(s->b[d], (size_t)o1, s->h[h], (size_t)o2, (size_t)len))) return ds_fail(s, "copy h2d", st);
    memcpy(s->sb[d] + o1, s->sh[h] + o2, (size_t)len);
  } else if (p < 650) { /* device to host */
    int h = tu_range(&rs, 0, DNH - 1);
    if ((st = gpar_copy(s->h[h], (size_t)o1, s->b[d], (size_t)o2, (size_t)len))) return ds_fail(s, "copy d2h", st);
    memcpy(s->sh[h] + o1, s->sb[d] + o2, (size_t)len);
  } else if (p < 750) { /* a small write */
    unsigned char v[256];
    int l = len > 256 ? 256 : len;
    for (int j = 0; j < l; j++) v[j] = (unsigned char)tu_rand(&rs);
    if ((st = gpar_write(s->b[d], (size_t)o1, v, (size_t)l))) return ds_fail(s, "write", st);
    memcpy(s->sb[d] + o1, v, (size_t)l);
  } else if (p < 980) { /* C = alpha A B + beta C, small integers: exact */
    float alpha = tu_range(&rs, 0, 1) ? 1.f : -1.f, beta = tu_range(&rs, 0, 9) ? 1.f : 0.f;
    st = gpar_sgemm(GPAR_NO_TRANS, GPAR_NO_TRANS, MM, MM, MM, alpha, s->A, 0, MM, s->B, 0, MM, beta, s->C, 0, MM);
    if (st) return ds_fail(s, "sgemm", st);
    for (int j = 0; j < MM; j++)
      for (int i = 0; i < MM; i++) {
        float acc = 0;
        for (int k = 0; k < MM; k++) acc += s->a[i + k * MM] * s->bm[k + j * MM];
        s->c[i + j * MM] = alpha * acc + beta * s->c[i + j * MM];
      }
    s->gemms++;
  } else { /* release a device buffer with ops pending; a new one in its place */
    if ((st = gpar_buffer_release(s->b[d]))) return ds_fail(s, "release", st);
    ds_create(s, d);
  }
  s->ops++;
  if (s->ops % DWIN == 0 && (st = gpar_wait_all(s->eng))) ds_fail(s, "wait_all", st);
}

/* The soak on one event-backend device of eng. */
static void dev_soak_run(gpar_engine *eng, int dev, unsigned long total) {
  static dev_soak s;
  tu_devinfo info;
  memset(&s, 0, sizeof s);
  s.eng = eng, s.dev = dev;
  s.cpu = gpar_device_find(eng, GPAR_BACKEND_HOST, GPAR_DEVICE_CPU, 0);
  tu_device_info(eng, dev, &info);
  gpar_stats z, a, b;
  gpar_wait_all(eng);
  gpar_stats_get(eng, &z);
  double t0 = gpar_now();
  for (int i = 0; i < DNB; i++) ds_create(&s, i);
  for (int i = 0; i < DNH; i++) {
    if (gpar_buffer_create(eng, GPAR_HOST, DSZ, &s.h[i])) bail_out("GPAR_HOST buffer");
    for (int j = 0; j < DSZ; j++) s.sh[i][j] = (unsigned char)tu_rand(&rs);
    gpar_write(s.h[i], 0, s.sh[i], DSZ);
  }
  for (int i = 0; i < MM * MM; i++) s.a[i] = (float)tu_range(&rs, -2, 2), s.bm[i] = (float)tu_range(&rs, -2, 2);
  memset(s.c, 0, sizeof s.c);
  if (gpar_buffer_create(eng, dev, sizeof s.a, &s.A) || gpar_buffer_create(eng, dev, sizeof s.bm, &s.B) ||
      gpar_buffer_create(eng, dev, sizeof s.c, &s.C))
    bail_out("GEMM buffers");
  gpar_write(s.A, 0, s.a, sizeof s.a);
  gpar_write(s.B, 0, s.bm, sizeof s.bm);
  gpar_fill(s.C, 0, sizeof s.c, 0);
  int hw = high_water(eng, s.cpu, DWIN + 2 * DNB);
  unsigned long warm = total / 10;
  while (s.ops < warm) ds_step(&s);
  int w0 = gpar_wait_all(eng);
  gpar_stats_get(eng, &a);
  size_t rss0 = rss_bytes();
  while (s.ops < total && s.fails < 1) ds_step(&s);
  int w1 = gpar_wait_all(eng);
  gpar_stats_get(eng, &b);
  size_t rss1 = rss_bytes();
  ok(hw == GPAR_OK && w0 == GPAR_OK && w1 == GPAR_OK && s.fails == 0,
     "dev %d (%s) soak: %lu ops (%lu sgemm, %lu creates), every call succeeded", dev, info.backend, s.ops, s.gemms,
     s.creates);
  if (s.fails) diag("  %s", s.why);
  /* contents */
  int good = 1;
  unsigned char got[DSZ];
  float cg[MM * MM];
  for (int i = 0; i < DNB && good; i++)
    if (gpar_read(s.b[i], 0, got, DSZ) != GPAR_OK || memcmp(got, s.sb[i], DSZ)) {
      diag("  device buffer %d differs from its shadow", i);
      good = 0;
    }
  for (int i = 0; i < DNH && good; i++)
    if (gpar_read(s.h[i], 0, got, DSZ) != GPAR_OK || memcmp(got, s.sh[i], DSZ)) {
      diag("  GPAR_HOST buffer %d differs from its shadow", i);
      good = 0;
    }
  if (good && gpar_read(s.C, 0, cg, sizeof cg) != GPAR_OK) diag("  reading C failed"), good = 0;
  for (int i = 0; i < MM * MM && good; i++)
    if (cg[i] != s.c[i]) { /* compared as numbers: -0 and +0 are equal */
      diag("  C[%d] of the sgemm chain: %g, want %g", i, cg[i], s.c[i]);
      good = 0;
    }
  ok(good, "dev %d soak: every buffer and the sgemm accumulator equal their shadows", dev);
  ok(b.events_live <= a.events_live && b.pinned_bytes_pool <= a.pinned_bytes_pool &&
         b.buffers_live == a.buffers_live,
     "dev %d soak: no growth after warm-up: events %llu -> %llu, pinned pool %llu -> %llu, buffers %llu -> %llu", dev,
     (unsigned long long)a.events_live, (unsigned long long)b.events_live, (unsigned long long)a.pinned_bytes_pool,
     (unsigned long long)b.pinned_bytes_pool, (unsigned long long)a.buffers_live, (unsigned long long)b.buffers_live);
  for (int i = 0; i < DNB; i++) gpar_buffer_release(s.b[i]);
  for (int i = 0; i < DNH; i++) gpar_buffer_release(s.h[i]);
  gpar_buffer_release(s.A), gpar_buffer_release(s.B), gpar_buffer_release(s.C);
  int w2 = gpar_wait_all(eng);
  gpar_stats_get(eng, &b);
  ok(w2 == GPAR_OK && b.events_live == z.events_live && b.buffers_live == z.buffers_live && b.ops_in_flight == 0,
     "dev %d soak: events live back to %llu (now %llu), buffers live back to %llu (now %llu)", dev,
     (unsigned long long)z.events_live, (unsigned long long)b.events_live, (unsigned long long)z.buffers_live,
     (unsigned long long)b.buffers_live);
  diag("dev %d soak: %.2f s; RSS %.1f -> %.1f MiB (%+.2f MiB, not asserted: vendor runtimes cache)", dev,
       gpar_now() - t0, rss0 / MIB, rss1 / MIB, ((double)rss1 - (double)rss0) / MIB);
}

int main(void) {
  tap_start();
  rs = tu_seed(777);
  unsigned long total = env_count("GPAR_SOAK_OPS", 1000000), dtotal = env_count("GPAR_SOAK_DEV_OPS", 20000);
  diag("cpu soak of %lu ops (GPAR_SOAK_OPS), device soaks of %lu ops (GPAR_SOAK_DEV_OPS)", total, dtotal);
  cpu_soak_run(total);
  gpar_engine *eng = tu_engine(0, 0, 0);
  int ndev = gpar_device_count(eng), any = 0;
  for (int d = 0; d < ndev; d++) {
    tu_devinfo info;
    tu_device_info(eng, d, &info);
    if (info.backend_id == GPAR_BACKEND_HOST) continue;
    diag("device %d: %s %s", d, info.backend, info.name);
    dev_soak_run(eng, d, dtotal);
    any = 1;
  }
  if (!any) skip(4, "no GPU or OpenCL device for a device soak");
  is_status(gpar_shutdown(eng), GPAR_OK, "shutdown");
  return done_testing();
}
