/* api_fuzz.c: a libFuzzer target for the public API. Input bytes decode into a program of calls
 * on one or two engines over every device (GPAR_BACKENDS picks the backend set): creates of all
 * sizes, releases, copies, writes, reads, fills, GEMMs with wrapping offsets and bad leading
 * dimensions, submits with stale/forged/foreign handle lists, user functions that sleep, fail or
 * call back into the API, waits, fault injection and shutdown mid-program.
 * The oracle: a shadow model of the handles predicts which calls must be refused, and with
 * which statuses (a refusal must be one of them, an accepted call must have none); every other
 * status is one gpar.h documents for that call; after the drain the counters are back to zero.
 * The sanitizers (ASan, UBSan, LSan) and libFuzzer's -timeout do the rest. */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpar.h"

#define MAXH 48   /* handle slots of the shadow model */
#define MAXOPS 96 /* calls per program */
#define MAXARGS 64 /* user functions per program */

enum { H_NONE, H_LIVE, H_RELEASED, H_DEAD, H_FORGED };

typedef struct shadow_buf {
  gpar_buffer h;
  int state, eng, dev; /* dev: device index or GPAR_HOST */
  size_t bytes;
} shadow_buf;

typedef struct shadow_eng {
  gpar_engine *e;
  int started, live, ndev, may_fail, nested;
  gpar_device_props info[16];
  gpar_stats base;
} shadow_eng;

/* A user function's argument: lives in a static pool until the program's engines are shut down. */
typedef struct ufn_arg {
  int mode; /* 0 noop, 1 sleep, 2 fail, 3 call back into the API, 4 nested submit that sleeps */
  int sleep_us;
  gpar_engine *eng;
  gpar_buffer target;
  atomic_int ran;
} ufn_arg;

static shadow_buf hs[MAXH];
static int nh;
static shadow_eng es[2];
static ufn_arg args[MAXARGS * 2];
static int nargs;
static const uint8_t *in_p;
static size_t in_n;
/* Drain ops submitted from inside ops before gpar_shutdown (env GPAR_FUZZ_SAFE_SHUTDOWN=1): off
 * by default since gpar_shutdown drains them itself (issue 16, finding 1). */
#ifndef FUZZ_SAFE_SHUTDOWN_DEFAULT
#define FUZZ_SAFE_SHUTDOWN_DEFAULT 0
#endif
static int safe_shutdown = -1;

static void fail(const char *what, int got, const char *why) {
  fprintf(stderr, "api_fuzz: oracle violation: %s returned %s (%d): %s; last error: %s\n", what,
          gpar_status_name(got), got, why, gpar_last_error());
  abort();
}

static unsigned u8(void) {
  if (!in_n) return 0;
  in_n--;
  return *in_p++;
}
static unsigned u16(void) { return u8() | u8() << 8; }

static void sleep_us(long us) {
  struct timespec ts = {0, us * 1000};
  nanosleep(&ts, NULL);
}

/* ------------------------------------------------------------------ allowed status sets */

typedef unsigned smask; /* bit -status set: that status is allowed */
#define S(x) (1u << (unsigned)(-(x)))
#define S_BADH (S(GPAR_EBADBUF) | S(GPAR_EENGINE) | S(GPAR_ESHUTDOWN))
/* async failures a wait, read or later op may report once the engine had a fault or failing op */
#define S_ASYNC (S(GPAR_EFAULT) | S(GPAR_EDEPFAILED) | S(GPAR_EBACKEND))

/* Check a call's status: `must` is the set of errors the model says apply (non-empty: the call
 * must be refused with one of them); `may` adds statuses allowed in any case. */
static void check(const char *what, int got, smask must, smask may) {
  if (got > 0) fail(what, got, "positive status");
  if (got == GPAR_OK) {
    if (must) fail(what, got, "accepted a call the model says must be refused");
    return;
  }
  if (-got >= 32 || !((must | may) & S(got))) fail(what, got, must ? "not one of the predicted errors" : "unexpected error");
}

/* ------------------------------------------------------------------ handles */

static int same(gpar_buffer a, gpar_buffer b) { return !memcmp(&a, &b, sizeof a); }
static int is_null(gpar_buffer a) { return same(a, (gpar_buffer){0}); }

static shadow_buf *pick(void) {
  unsigned v = u8();
  if (v % 16 == 15 || !nh) { /* forged: the null handle, garbage, or a known handle with one bit off */
    static shadow_buf f;
    memset(&f, 0, sizeof f);
    f.state = H_FORGED;
    unsigned w = u8() % 4, bit = u8();
    if (w == 1) {
      f.h.id = (uint64_t)u16() << 48 | (uint64_t)u16() << 16 | u16();
      f.h.serial = u16();
    } else if (w >= 2 && nh) {
      f.h = hs[u8() % nh].h;
      if (w == 2) f.h.id ^= 1ull << (bit % 64);
      else f.h.serial ^= 1ull << (bit % 64);
    }
    for (int i = 0; i < nh; i++) /* a forged handle may hit a real one */
      if (same(hs[i].h, f.h)) return &hs[i];
    return &f;
  }
  return &hs[v % (unsigned)nh];
}

static smask handle_err(const shadow_buf *b) { return b->state == H_LIVE ? 0 : S_BADH; }

static int eng_of(const shadow_buf *b) { return b->state == H_LIVE ? b->eng : -1; }

/* Host memory: pinned host buffers and CPU-device buffers. */
static int hostmem(const shadow_buf *b) {
  return b->dev == GPAR_HOST || es[b->eng].info[b->dev].backend_id == GPAR_BACKEND_HOST;
}

static smask async_may(int e) { return e >= 0 && es[e].may_fail ? S_ASYNC : 0; }

/* ------------------------------------------------------------------ engines */

/* An engine index for the next call: 0 or 1, or -1 when engine 1 never started. */
static int pick_eng(void) {
  int e = (int)(u8() % 2);
  return es[e].started ? e : -1;
}

static void eng_init(int i) {
  gpar_config cfg;
  gpar_config_init(&cfg);
  cfg.quiet = 1;
  cfg.host_threads = 1 + (int)(u8() % 3);
  cfg.synchronous = u8() % 8 == 0;
  int st = gpar_init(&es[i].e, &cfg);
  if (st != GPAR_OK) fail("gpar_init", st, "an engine must start");
  es[i].live = es[i].started = 1;
  es[i].may_fail = es[i].nested = 0;
  es[i].ndev = gpar_device_count(es[i].e);
  if (es[i].ndev < 1 || es[i].ndev > 16) fail("gpar_device_count", es[i].ndev, "1..16 devices");
  for (int d = 0; d < es[i].ndev; d++)
    if ((st = gpar_device_info(es[i].e, d, &es[i].info[d])) != GPAR_OK) fail("gpar_device_info", st, "valid device");
  gpar_stats_get(es[i].e, &es[i].base);
}

/* Wait until nothing is in flight (ops submitted from inside ops included). */
static void drain(int i) {
  gpar_stats s;
  for (int round = 0;; round++) {
    int st = gpar_wait_all(es[i].e);
    check("gpar_wait_all (drain)", st, 0, async_may(i));
    if (gpar_stats_get(es[i].e, &s) != GPAR_OK) fail("gpar_stats_get", -1, "live engine");
    if (s.ops_in_flight == 0) break;
    if (round > 100000) fail("drain", 0, "ops stay in flight");
  }
}

static int ufn(const gpar_native *nat, void *p);

/* A second thread that submits fills and user functions into one buffer while the main thread
 * shuts the engine down: each call is accepted (and drained) or refused with GPAR_ESHUTDOWN /
 * GPAR_EBADBUF; never a crash. */
typedef struct racer {
  pthread_t t;
  gpar_engine *e;
  gpar_buffer h;
  size_t bytes;
  smask may;
  int bad, calls;
} racer;

static void *race_fn(void *p) {
  static ufn_arg noop; /* mode 0: counts its runs only */
  racer *r = p;
  for (int i = 0; i < 400; i++) {
    int st = i & 1 ? gpar_fill(r->h, 0, r->bytes, (unsigned char)i)
                   : gpar_submit(r->e, GPAR_HOST, ufn, &noop, NULL, 0, &r->h, 1);
    r->calls++;
    if (st == GPAR_ESHUTDOWN || st == GPAR_EBADBUF) break;
    if (st != GPAR_OK && !(r->may & S(st))) {
      r->bad = st;
      break;
    }
  }
  return NULL;
}

static void eng_shutdown(int i, int clean) {
  gpar_stats s;
  if (clean) { /* release everything, drain: the counters must be back to zero */
    for (int j = 0; j < nh; j++)
      if (hs[j].state == H_LIVE && hs[j].eng == i) {
        int st = gpar_buffer_release(hs[j].h);
        check("gpar_buffer_release (end)", st, 0, 0);
        hs[j].state = H_RELEASED;
      }
    drain(i);
    gpar_stats_get(es[i].e, &s);
    if (s.ops_in_flight || s.buffers_live || s.events_live || s.ops_completed != s.ops_submitted) {
      fprintf(stderr, "api_fuzz: after the drain: in flight %llu, buffers %llu, events %llu, %llu/%llu completed\n",
              (unsigned long long)s.ops_in_flight, (unsigned long long)s.buffers_live,
              (unsigned long long)s.events_live, (unsigned long long)s.ops_completed,
              (unsigned long long)s.ops_submitted);
      abort();
    }
  } else if (es[i].nested && safe_shutdown) {
    drain(i); /* ops from inside ops: only with the shutdown fix may they still be pending */
  }
  racer r;
  int race = -1;
  if (!clean && u8() % 2) /* a thread submits into one of this engine's buffers meanwhile */
    for (int j = 0; j < nh && race < 0; j++)
      if (hs[j].state == H_LIVE && hs[j].eng == i) race = j;
  if (race >= 0) {
    r = (racer){.e = es[i].e, .h = hs[race].h, .bytes = hs[race].bytes, .may = async_may(i)};
    if (pthread_create(&r.t, NULL, race_fn, &r) != 0) race = -1;
    else sleep_us((long)(u8() % 4) * 100);
  }
  int st = gpar_shutdown(es[i].e);
  check("gpar_shutdown", st, 0, async_may(i));
  if (race >= 0) {
    pthread_join(r.t, NULL);
    if (r.bad) fail("gpar_fill/gpar_submit racing gpar_shutdown", r.bad, "not accepted, ESHUTDOWN or EBADBUF");
  }
  es[i].live = 0;
  for (int j = 0; j < nh; j++)
    if (hs[j].eng == i && (hs[j].state == H_LIVE || hs[j].state == H_RELEASED)) hs[j].state = H_DEAD;
  st = gpar_wait_all(es[i].e);
  check("gpar_wait_all after shutdown", st, S(GPAR_ESHUTDOWN), 0);
}

/* ------------------------------------------------------------------ user functions */

static int ufn(const gpar_native *nat, void *p) {
  ufn_arg *a = p;
  (void)nat;
  atomic_fetch_add(&a->ran, 1);
  switch (a->mode) {
  case 1:
    sleep_us(a->sleep_us);
    return GPAR_OK;
  case 2:
    return GPAR_EBACKEND;
  case 3: {
    char buf[8];
    int st = gpar_wait(a->target);
    if (st != GPAR_EDEADLK && st != GPAR_EBADBUF) fail("gpar_wait inside an op", st, "EDEADLK");
    st = gpar_read(a->target, 0, buf, 1);
    if (st != GPAR_EDEADLK && st != GPAR_EBADBUF) fail("gpar_read inside an op", st, "EDEADLK");
    if ((st = gpar_wait_all(a->eng)) != GPAR_EDEADLK) fail("gpar_wait_all inside an op", st, "EDEADLK");
    if ((st = gpar_shutdown(a->eng)) != GPAR_EDEADLK) fail("gpar_shutdown inside an op", st, "EDEADLK");
    size_t bytes = 0;
    int dev = 0;
    st = gpar_buffer_query(a->target, &bytes, &dev);
    if (st == GPAR_OK) { /* submitting from inside an op is allowed */
      st = gpar_fill(a->target, 0, bytes, 0x3c);
      check("gpar_fill inside an op", st, 0, S_BADH | S(GPAR_EFAULT));
    }
    return GPAR_OK;
  }
  case 4: {
    ufn_arg *inner = a + MAXARGS; /* the nested op's argument: its own slot */
    inner->mode = 1;
    inner->sleep_us = a->sleep_us;
    int st = gpar_submit(a->eng, GPAR_HOST, ufn, inner, NULL, 0, &a->target, 1);
    check("gpar_submit inside an op", st, 0, S_BADH | S(GPAR_EFAULT));
    return GPAR_OK;
  }
  }
  return GPAR_OK;
}

/* ------------------------------------------------------------------ calls */

static size_t pick_size(int e, int dev) {
  switch (u8() % 10) {
  case 0: return 0;
  case 1: return SIZE_MAX;
  case 2: return SIZE_MAX / 2 + 1;
  case 3: return (size_t)-4096;
  case 4: return dev >= 0 && es[e].info[dev].memory_bytes ? (size_t)es[e].info[dev].memory_bytes * 4 : (size_t)1 << 62;
  default: return 1 + u16() % 8192;
  }
}

static size_t pick_off(size_t bytes) {
  switch (u8() % 8) {
  case 0: return SIZE_MAX;
  case 1: return SIZE_MAX - 3;
  case 2: return bytes;
  case 3: return bytes ? bytes - 1 : 0;
  default: return bytes ? u16() % bytes : 0;
  }
}

static size_t pick_len(size_t bytes, size_t off) {
  switch (u8() % 8) {
  case 0: return 0;
  case 1: return SIZE_MAX;
  case 2: return SIZE_MAX - off + 2; /* wraps */
  case 3: return bytes - off + 1;
  default: return off < bytes ? 1 + u16() % (bytes - off) : 1;
  }
}

/* Errors of a (off, len) range on a buffer of `bytes`. */
static smask range_err(const shadow_buf *b, size_t off, size_t len) {
  if (len == 0) return S(GPAR_EINVAL);
  if (b->state != H_LIVE) return 0;
  if (off > b->bytes || len > b->bytes - off) return S(GPAR_ERANGE);
  return 0;
}

static void do_create(void) {
  int e = pick_eng();
  if (e < 0 || !es[e].live) return;
  int dev = (int)(u8() % (unsigned)(es[e].ndev + 3)) - 1; /* GPAR_HOST, devices, one past the end */
  size_t bytes = pick_size(e, dev >= 0 && dev < es[e].ndev ? dev : -1);
  gpar_buffer b = {0x5555, 0x5555};
  int st = gpar_buffer_create(es[e].e, dev, bytes, &b);
  smask must = 0, may = S(GPAR_EFAULT);
  if (dev != GPAR_HOST && (dev < 0 || dev >= es[e].ndev)) must |= S(GPAR_ENODEV);
  if (bytes == 0) must |= S(GPAR_EINVAL);
  uint64_t mem = dev >= 0 && dev < es[e].ndev ? es[e].info[dev].memory_bytes : 0;
  if (bytes > ((size_t)1 << 40) || (mem && bytes > mem)) must |= S(GPAR_ENOMEM) | S(GPAR_EDEVMEM);
  if (!must && st == GPAR_EFAULT && !es[e].may_fail) fail("gpar_buffer_create", st, "no fault armed");
  check("gpar_buffer_create", st, must, may);
  if (st != GPAR_OK) {
    if (!is_null(b)) fail("gpar_buffer_create", st, "*buf not the null handle after a failure");
    return;
  }
  if (b.id == 0) fail("gpar_buffer_create", st, "null handle on success");
  for (int i = 0; i < nh; i++) /* serials are never reused: no handle comes back */
    if (same(hs[i].h, b) && (hs[i].state == H_LIVE || hs[i].state == H_RELEASED || hs[i].state == H_DEAD))
      fail("gpar_buffer_create", st, "a handle value came back");
  int slot = nh < MAXH ? nh++ : (int)(u8() % MAXH);
  if (hs[slot].state == H_LIVE) { /* evicted from the model: release it */
    check("gpar_buffer_release (evict)", gpar_buffer_release(hs[slot].h), 0, 0);
  }
  hs[slot] = (shadow_buf){b, H_LIVE, e, dev, bytes};
}

static void do_release(void) {
  shadow_buf *b = pick();
  int st = gpar_buffer_release(b->h);
  check("gpar_buffer_release", st, handle_err(b), 0);
  if (b->state == H_LIVE) b->state = H_RELEASED;
}

static void do_query(void) {
  shadow_buf *b = pick();
  size_t bytes = 0;
  int dev = -7;
  int st = gpar_buffer_query(b->h, &bytes, &dev);
  check("gpar_buffer_query", st, handle_err(b), 0);
  if (st == GPAR_OK && (bytes != b->bytes || dev != b->dev)) fail("gpar_buffer_query", st, "wrong size or device");
  void *p = gpar_buffer_host_ptr(b->h), *n = gpar_buffer_native(b->h);
  if (b->state != H_LIVE && (p || n)) fail("gpar_buffer_host_ptr/native", 0, "pointer for a bad handle");
  if (b->state == H_LIVE && (!n || (hostmem(b) && !p))) fail("gpar_buffer_host_ptr/native", 0, "NULL for a live handle");
}

static void do_write_read_fill(int kind) {
  shadow_buf *b = pick();
  size_t off = pick_off(b->bytes), len = pick_len(b->bytes, off);
  static unsigned char data[8192 + 16];
  int e = eng_of(b), st;
  smask must = handle_err(b) | range_err(b, off, len);
  if (!must && len > sizeof data) fail("model", 0, "length beyond the scratch buffer");
  if (kind == 0) {
    st = gpar_write(b->h, off, data, len);
    check("gpar_write", st, must, async_may(e));
  } else if (kind == 1) {
    st = gpar_read(b->h, off, data, len);
    check("gpar_read", st, must, async_may(e));
  } else {
    st = gpar_fill(b->h, off, len, (unsigned char)u8());
    check("gpar_fill", st, must, async_may(e));
  }
}

static void do_copy(void) {
  shadow_buf dd = *pick(), *s = pick(); /* (a forged handle lives in one static slot: copy it) */
  size_t doff = pick_off(dd.bytes), soff = pick_off(s->bytes), len = pick_len(s->bytes, soff);
  smask must = handle_err(&dd) | handle_err(s) | (len == 0 ? S(GPAR_EINVAL) : 0);
  if (dd.state == H_LIVE && s->state == H_LIVE && dd.eng != s->eng) must |= S(GPAR_EENGINE);
  if (!must) {
    must |= range_err(&dd, doff, len) | range_err(s, soff, len);
    if (same(dd.h, s->h) && doff < soff + len && soff < doff + len && !must) must |= S(GPAR_EALIAS);
  }
  int st = gpar_copy(dd.h, doff, s->h, soff, len);
  check("gpar_copy", st, must, async_may(eng_of(s)));
}

/* Extent of a column-major rows x cols matrix in elements; 0 on overflow (as the model sees it). */
static int extent(size_t off, int rows, int cols, int ld, unsigned __int128 *end) {
  *end = (unsigned __int128)off + (unsigned __int128)(cols - 1) * (unsigned)ld + (unsigned)rows;
  return 1;
}

static void do_gemm(void) {
  static const int dims[] = {0, 1, 2, 3, 7, 16, -1, INT_MIN};
  int dbl = u8() & 1;
  size_t es_ = dbl ? 8 : 4;
  int ta = (int)(u8() % 5) - 1, tb = (int)(u8() % 5) - 1; /* -1, 0, 1, 2, 3: some invalid */
  if (ta > 1) ta = ta == 2 ? GPAR_NO_TRANS : GPAR_TRANS;
  if (tb > 1) tb = tb == 2 ? GPAR_NO_TRANS : GPAR_TRANS;
  int m = dims[u8() % 8], n = dims[u8() % 8], k = dims[u8() % 8];
  shadow_buf av = *pick(), bv = *pick(), *c = pick();
  int ar = ta == GPAR_NO_TRANS ? m : k, ac = ta == GPAR_NO_TRANS ? k : m;
  int br = tb == GPAR_NO_TRANS ? k : n, bc = tb == GPAR_NO_TRANS ? n : k;
  const int rows[3] = {m, ar, br}, cols[3] = {n, ac, bc};
  int ld[3];
  size_t off[3];
  for (int i = 0; i < 3; i++) {
    unsigned v = u8() % 8;
    int want = rows[i] > 1 ? rows[i] : 1;
    ld[i] = v == 0 ? want - 1 : v == 1 ? 0 : v == 2 ? INT_MAX : v == 3 ? -3 : want + (int)(v - 4);
    v = u8() % 8;
    off[i] = v == 0 ? SIZE_MAX : v == 1 ? SIZE_MAX / es_ : v == 2 ? (size_t)u16() : 0;
  }
  const shadow_buf *buf[3] = {c, &av, &bv};
  smask must = 0, may = 0;
  if (ta < 0 || ta > 1 || tb < 0 || tb > 1 || m < 0 || n < 0 || k < 0) must |= S(GPAR_EINVAL);
  for (int i = 0; i < 3; i++)
    if (ld[i] < (rows[i] > 1 ? rows[i] : 1)) must |= S(GPAR_EINVAL);
  for (int i = 0; i < 3; i++) must |= handle_err(buf[i]);
  int all_live = buf[0]->state == H_LIVE && buf[1]->state == H_LIVE && buf[2]->state == H_LIVE;
  if (all_live && (buf[1]->eng != c->eng || buf[2]->eng != c->eng)) must |= S(GPAR_EENGINE);
  if (!must) {
    unsigned __int128 end[3];
    int empty_any = 0;
    for (int i = 0; i < 3; i++) {
      if (rows[i] == 0 || cols[i] == 0) {
        end[i] = off[i];
        empty_any = 1;
        /* an empty operand is range-checked too: its offset at most the buffer's elements */
        if (off[i] > buf[i]->bytes / es_) must |= S(GPAR_ERANGE);
        continue;
      }
      extent(off[i], rows[i], cols[i], ld[i], &end[i]);
      if (end[i] > buf[i]->bytes / es_) must |= S(GPAR_ERANGE);
    }
    (void)empty_any;
    if (!must) {
      for (int i = 1; i < 3; i++)
        if (same(buf[i]->h, c->h) && end[i] > off[i] && end[0] > off[0] && off[i] < end[0] && off[0] < end[i]) must |= S(GPAR_EALIAS);
      for (int i = 1; i < 3; i++)
        if (hostmem(buf[i]) != hostmem(c) || (!hostmem(c) && buf[i]->dev != c->dev)) must |= S(GPAR_EINVAL);
    }
    if (!must && !hostmem(c) && dbl) may |= S(GPAR_ENOTSUP);
  }
  may |= async_may(eng_of(c));
  int st = dbl ? gpar_dgemm((gpar_trans)ta, (gpar_trans)tb, m, n, k, 1.0, av.h, off[1], ld[1], bv.h, off[2], ld[2], 0.5,
                            c->h, off[0], ld[0])
               : gpar_sgemm((gpar_trans)ta, (gpar_trans)tb, m, n, k, 1.f, av.h, off[1], ld[1], bv.h, off[2], ld[2],
                            u8() & 1 ? 0.f : 0.5f, c->h, off[0], ld[0]);
  check(dbl ? "gpar_dgemm" : "gpar_sgemm", st, must, may);
}

static void do_submit(void) {
  int e = pick_eng();
  if (e < 0 || (!es[e].live && u8() % 4) || nargs >= MAXARGS) return;
  int dev = (int)(u8() % (unsigned)(es[e].ndev + 3)) - 1;
  int nr = (int)(u8() % 5) - 1, nw = (int)(u8() % 5) - 1; /* -1: invalid */
  gpar_buffer rl[4], wl[4];
  smask must = 0;
  if (!es[e].live) must |= S(GPAR_ESHUTDOWN);
  if (nr < 0 || nw < 0) must |= S(GPAR_EINVAL);
  if (dev != GPAR_HOST && (dev < 0 || dev >= es[e].ndev)) must |= S(GPAR_ENODEV);
  shadow_buf *tgt = NULL;
  for (int i = 0; i < nr + nw + 1; i++) {
    if (i >= (nr > 0 ? nr : 0) + (nw > 0 ? nw : 0)) break;
    shadow_buf *b = pick();
    if (i < nr) rl[i] = b->h;
    else wl[i - (nr > 0 ? nr : 0)] = b->h;
    if (b->state != H_LIVE) must |= S_BADH;
    else if (b->eng != e) must |= S(GPAR_EENGINE);
    if (b->state == H_LIVE) tgt = b;
  }
  int nullr = nr > 0 && u8() % 16 == 0;
  if (nullr) must |= S(GPAR_EINVAL);
  ufn_arg *a = &args[nargs++];
  memset(a, 0, sizeof *a);
  a->mode = (int)(u8() % 5);
  a->sleep_us = (int)(u8() % 8) * 250;
  a->eng = es[e].e;
  a->target = tgt ? tgt->h : (gpar_buffer){0};
  if (a->mode == 2 && es[e].live) es[e].may_fail = 1;
  if (a->mode >= 3 && es[e].live) es[e].nested = 1;
  int st = gpar_submit(es[e].e, dev, ufn, a, nullr ? NULL : rl, nr, wl, nw);
  check("gpar_submit", st, must, es[e].live ? async_may(e) : 0);
}

static void do_wait(void) {
  shadow_buf *b = pick();
  int st = gpar_wait(b->h);
  check("gpar_wait", st, handle_err(b), async_may(eng_of(b)));
}

static void do_wait_all(void) {
  int e = pick_eng();
  if (e < 0) return;
  int st = gpar_wait_all(es[e].e);
  check("gpar_wait_all", st, es[e].live ? 0 : S(GPAR_ESHUTDOWN), async_may(es[e].live ? e : -1));
}

static void do_fault(void) {
  static const char *const kinds[] = {"alloc", "pinned", "copy", "gemm", "fill", "user", "event", "completion", "bogus", ""};
  int e = pick_eng();
  if (e < 0) return;
  unsigned k = u8() % 10;
  unsigned long n = u8() % 6;
  int st = gpar_fault_inject(es[e].e, kinds[k], n);
  smask must = !es[e].live ? S(GPAR_ESHUTDOWN) : k >= 8 ? S(GPAR_EINVAL) : 0;
  check("gpar_fault_inject", st, must, es[e].live ? 0 : S(GPAR_EINVAL));
  if (st == GPAR_OK && n) es[e].may_fail = 1;
}

static void do_stats(void) {
  int e = pick_eng();
  if (e < 0) return;
  gpar_stats s;
  int st = gpar_stats_get(es[e].e, &s);
  check("gpar_stats_get", st, es[e].live ? 0 : S(GPAR_ESHUTDOWN), 0);
  if (st == GPAR_OK && s.ops_completed + s.ops_in_flight != s.ops_submitted && !es[e].nested)
    fail("gpar_stats_get", st, "submitted != completed + in flight");
  /* device lookups against the list the engine reported at init */
  static const int bids[] = {0, GPAR_BACKEND_HOST, GPAR_BACKEND_CUDA, GPAR_BACKEND_OPENCL, 6, 64};
  int bid = bids[u8() % 6], type = (int)(u8() % 5) - 1, skip = (int)(u8() % 5) - 1, want = GPAR_ENODEV;
  for (int d = 0, left = skip; d < es[e].ndev && want < 0 && skip >= 0; d++)
    if ((!bid || (es[e].info[d].backend_id & bid)) && (type < 0 || (int)es[e].info[d].type == type) && left-- == 0)
      want = d;
  st = gpar_device_find(es[e].e, bid, type, skip);
  if (!es[e].live ? st != GPAR_ESHUTDOWN : st != want) fail("gpar_device_find", st, "not the device the list gives");
  int dev = (int)(u8() % (unsigned)(es[e].ndev + 4)) - 2;
  gpar_device_props p;
  st = gpar_device_info(es[e].e, dev, &p);
  check("gpar_device_info", st, !es[e].live ? S(GPAR_ESHUTDOWN) : dev < 0 || dev >= es[e].ndev ? S(GPAR_ENODEV) : 0, 0);
  if (st == GPAR_OK && memcmp(&p, &es[e].info[dev], sizeof p)) fail("gpar_device_info", st, "changed since init");
  if (!*gpar_strerror(st) || strncmp(gpar_status_name(st), "GPAR_", 5)) fail("gpar_strerror/status_name", st, "no text");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (safe_shutdown < 0) {
    const char *s = getenv("GPAR_FUZZ_SAFE_SHUTDOWN");
    safe_shutdown = s && *s ? *s != '0' : FUZZ_SAFE_SHUTDOWN_DEFAULT;
  }
  in_p = data;
  in_n = size;
  nh = 0;
  nargs = 0;
  memset(hs, 0, sizeof hs);
  memset(es, 0, sizeof es);
  eng_init(0);
  if (u8() % 4 == 0) eng_init(1);
  for (int op = 0; op < MAXOPS && in_n; op++) {
    switch (u8() % 16) {
    case 0: case 1: do_create(); break;
    case 2: do_release(); break;
    case 3: do_query(); break;
    case 4: do_write_read_fill(0); break;
    case 5: do_write_read_fill(1); break;
    case 6: do_write_read_fill(2); break;
    case 7: do_copy(); break;
    case 8: do_gemm(); break;
    case 9: case 10: do_submit(); break;
    case 11: do_wait(); break;
    case 12: do_wait_all(); break;
    case 13: do_fault(); break;
    case 14: do_stats(); break;
    case 15: { /* shutdown mid-program, or start the second engine */
      int e = (int)(u8() % 2);
      if (es[e].live) eng_shutdown(e, 0);
      else if (e == 1 && !es[1].started) eng_init(1);
      break;
    }
    }
  }
  for (int e = 0; e < 2; e++) {
    if (!es[e].live) continue;
    for (const char *const *k = (const char *const[]){"alloc", "pinned", "copy", "gemm", "fill", "user", "event", "completion", NULL}; *k; k++)
      gpar_fault_inject(es[e].e, *k, 0);
    eng_shutdown(e, 1);
  }
  return 0;
}
