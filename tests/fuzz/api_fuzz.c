/* api_fuzz.c: a libFuzzer target for the public API. Input bytes decode into a program of calls
 * on one or two engines over every device (GPAR_BACKENDS picks the backend set): creates of all
 * sizes, releases, copies, writes, reads, fills, GEMMs with wrapping offsets and bad leading
 * dimensions (plain, strided-batched with bad strides and batch counts, f16/bf16 with bad type
 * pairs), GEMV, AXPY, SCAL and DOT with bad increments and overlapping operands, submits with stale/forged/foreign handle lists, user functions that sleep, fail,
 * call back into the API or destroy a communicator, waits, fault injection (every kind, "register"
 * and "capture" included), gpar_config_get, graphs (begin/end/launch/destroy, ops recorded
 * between, waits while recording, stale and forged graph handles), communicators (create over
 * valid, missing and repeated devices, info, destroy, stale and forged handles) and the four
 * collectives (valid and invalid arguments, members sharing a buffer), kernels (create with good
 * and bad signatures and names, launches with wrong counts, kinds, buffers, offsets, devices and
 * grids, builds, info, logs, sources, releases, stale and forged handles), the array ops (unary,
 * binary, broadcast, reductions, softmax cross-entropy, argmax: bad ops, types, shapes, ranges,
 * overlaps, devices; accepted ones on host memory) and elementwise maps (create from valid and
 * invalid parameter lists, launch with wrong counts, kinds and offsets, release, stale and forged
 * handles), array ops, a map and BLAS-1 calls with all their operands in one buffer (equal,
 * overlapping and disjoint ranges) on any device, and shutdown mid-program, with a thread racing
 * it (fills, submits, an allreduce).
 * The oracle: a shadow model of the buffers, graphs and communicators predicts which calls must
 * be refused, and with which statuses (a refusal must be one of them, an accepted call must have
 * none); every other status is one gpar.h documents for that call; a collective on known data
 * (written just before, read just after) has the exact result; after the drain the counters are
 * back to zero; a one-buffer call accepted on a device other than the host's computes what the
 * host device computes over an identical copy (do_onebuf). The sanitizers (ASan, UBSan, LSan) and
 * libFuzzer's -timeout do the rest.
 * Env: GPAR_FUZZ_TRACE=1 logs every checked call with its predicted statuses (to read a finding);
 * GPAR_FUZZ_KNOWN lists known defects to call into rather than step around (see below);
 * GPAR_FUZZ_SAFE_SHUTDOWN=1 drains ops submitted from inside ops before a shutdown. */
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpar.h"

#define MAXH 48   /* handle slots of the shadow model */
#define MAXOPS 96 /* calls per program */
#define MAXARGS 64 /* user functions per program */
#define MAXG 8    /* graph slots */
#define MAXC 6    /* communicator slots */
#define MAXM 4    /* members of a communicator the harness builds (more are refused as repeats) */

enum { H_NONE, H_LIVE, H_RELEASED, H_DEAD, H_FORGED };
/* Graphs: G_STALE once destroyed or its engine shut down (the handle must then be refused). */
enum { G_NONE, G_LIVE, G_STALE };
/* Communicators: C_ORPHAN when its engine shut down while it was live (today: refused with
 * GPAR_ESHUTDOWN once, then GPAR_EINVAL; once shutdown reclaims communicators: GPAR_EINVAL);
 * C_DOOMED when an accepted op will destroy it from inside (it may be gone at any moment). */
enum { C_NONE, C_LIVE, C_DESTROYED, C_ORPHAN, C_DOOMED };

typedef struct shadow_buf {
  gpar_buffer h;
  int state, eng, dev; /* dev: device index or GPAR_HOST */
  size_t bytes;
} shadow_buf;

typedef struct shadow_eng {
  gpar_engine *e;
  int started, live, ndev, may_fail, nested;
  int build_fault; /* fault kind "build" armed: a build (so a launch) may be refused with GPAR_EFAULT */
  int arr_kernels; /* an array op ran on a GPU: the engine keeps its array kernels until shutdown */
  gpar_device_props info[16];
  gpar_stats base;
  gpar_config cfg; /* what gpar_init was given */
} shadow_eng;

typedef struct shadow_graph {
  gpar_graph *g;
  int state, eng;
} shadow_graph;

typedef struct shadow_comm {
  gpar_comm c;
  int state, eng, n;
  int devs[MAXM];
} shadow_comm;

/* A user function's argument: lives in a static pool until the program's engines are shut down. */
typedef struct ufn_arg {
  int mode; /* 0 noop, 1 sleep, 2 fail, 3 call back into the API, 4 nested submit that sleeps,
               5 destroy a communicator */
  int sleep_us;
  gpar_engine *eng;
  gpar_buffer target;
  gpar_graph *graph; /* mode 3: gpar_graph_destroy must refuse it inside an op (NULL: EINVAL) */
  gpar_comm comm;    /* mode 5 */
  atomic_int ran;
} ufn_arg;

/* Kernels: K_STALE once released or its engine shut down (the handle must then be refused). */
enum { K_NONE, K_LIVE, K_STALE };
#define MAXK 8
typedef struct shadow_kernel {
  gpar_kernel k;
  int state, eng, text; /* text: its index in ktexts */
} shadow_kernel;

static shadow_buf hs[MAXH];
static shadow_kernel kk[MAXK];
static int nk;
static int nh;
static shadow_eng es[2];
static shadow_graph gs[MAXG];
static int ng;
static shadow_comm cs[MAXC];
static int nc;
static int rec_eng = -1; /* the engine this (the main) thread records a graph on, or -1 */
static ufn_arg args[MAXARGS * 2];
static int nargs;
static const uint8_t *in_p;
static size_t in_n;
/* Drain ops submitted from inside ops before gpar_shutdown (env GPAR_FUZZ_SAFE_SHUTDOWN=1): off
 * by default since gpar_shutdown drains them itself (the fuzzer's first finding). */
#ifndef FUZZ_SAFE_SHUTDOWN_DEFAULT
#define FUZZ_SAFE_SHUTDOWN_DEFAULT 0
#endif
static int safe_shutdown = -1;
/* Known defects of today's core (tests/fuzz/found/README), stepped around while they are open;
 * env GPAR_FUZZ_KNOWN names those to call into, to check their fixes: "all", or a comma-separated
 * list of the names below (FUZZ_KNOWN_DEFAULT: the same, at build time).
 * - graph-alias: a destroyed graph's handle is a heap address, which a new graph can reuse; a
 *   launch or destroy of the stale handle then acts on the new graph (gpar.h: GPAR_EINVAL).
 *   Stepped around: no launch or destroy of a stale handle that equals a live graph's.
 * - graph-end-null: gpar_graph_end on a shut-down engine leaves *graph as it was (gpar.h: NULL on
 *   failure). Stepped around: *graph is checked only when the engine is live.
 * - coll-record-sync: a collective recorded into a graph on a synchronous engine waited forever
 *   for its recorded (never submitted) op. Fixed: collectives are refused while recording
 *   (GPAR_ERECORDING), which the model now predicts.
 * - array-gpu-alias: on GPU paths (OpenCL, CUDA) an elementwise call (unary, binary, broadcast)
 *   whose output and an input lay in disjoint ranges of one buffer ran the in-place kernel
 *   (core/array/gpu.c compared buffers, not ranges): a wrong result. Fixed: the variant is chosen
 *   by range (gpar__arr_same); the one-buffer host oracle checks it.
 * Each call left out is counted (known_skips). */
#ifndef FUZZ_KNOWN_DEFAULT /* every one above is fixed: all are called into */
#define FUZZ_KNOWN_DEFAULT "all"
#endif
static const char *call_known_list;
static int call_known(const char *name) {
  if (!call_known_list) {
    const char *s = getenv("GPAR_FUZZ_KNOWN");
    call_known_list = s ? s : FUZZ_KNOWN_DEFAULT;
  }
  if (!strcmp(call_known_list, "all") || !strcmp(call_known_list, "1")) return 1;
  size_t n = strlen(name);
  for (const char *p = call_known_list; (p = strstr(p, name)); p += n)
    if ((p == call_known_list || p[-1] == ',') && (p[n] == ',' || !p[n])) return 1;
  return 0;
}

/* The input running, for fail(): libFuzzer's own crash report (and the unit it writes) is lost
 * when a vendor library has put its signal handlers in front of libFuzzer's (PoCL's LLVM does),
 * so the input is printed here, and written to $GPAR_FUZZ_DUMP<pid> when that is set. */
static const uint8_t *cur_data;
static size_t cur_size;
static void ring_print(void);

static void fail(const char *what, int got, const char *why) {
  static atomic_flag once = ATOMIC_FLAG_INIT;
  fprintf(stderr, "api_fuzz: oracle violation: %s returned %s (%d): %s; last error: %s\n", what,
          gpar_status_name(got), got, why, gpar_last_error());
  if (!atomic_flag_test_and_set(&once)) {
    ring_print();
    fprintf(stderr, "api_fuzz: the input (%zu bytes, hex): ", cur_size);
    for (size_t i = 0; i < cur_size; i++) fprintf(stderr, "%02x", cur_data[i]);
    fprintf(stderr, "\n");
    const char *dump = getenv("GPAR_FUZZ_DUMP");
    if (dump && *dump) {
      char path[4096];
      snprintf(path, sizeof path, "%s%ld", dump, (long)getpid());
      FILE *f = fopen(path, "wb");
      if (f) {
        fwrite(cur_data, 1, cur_size, f);
        fclose(f);
        fprintf(stderr, "api_fuzz: the input is in %s\n", path);
      }
    }
  }
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

static int trace = 0; /* env GPAR_FUZZ_TRACE=1: every checked call on stderr (to read a finding) */

/* The input's last calls, printed by fail(): a finding that depends on timing may not come back
 * when its input is run again. Filled from any thread (user functions check their calls too). */
#define NRING 64
static struct ring {
  const char *what;
  int got;
  smask must, may;
  uint64_t id; /* a communicator's or graph's handle, when the call names one */
} ring[NRING];
static atomic_uint nring;

static void ring_print(void) {
  unsigned n = atomic_load(&nring), from = n > NRING ? n - NRING : 0;
  fprintf(stderr, "api_fuzz: the input's last %u checked calls (of %u):\n", n - from, n);
  for (unsigned i = from; i < n; i++) {
    const struct ring *r = &ring[i % NRING];
    fprintf(stderr, "api_fuzz:   %s -> %s (must %#x, may %#x)", r->what ? r->what : "?", gpar_status_name(r->got), r->must, r->may);
    if (r->id) fprintf(stderr, " [%#llx]", (unsigned long long)r->id);
    fprintf(stderr, "\n");
  }
}

/* Check a call's status: `must` is the set of errors the model says apply (non-empty: the call
 * must be refused with one of them); `may` adds statuses allowed in any case. id: the handle the
 * call names (communicator, graph), for the record. */
static void check_id(const char *what, int got, smask must, smask may, uint64_t id) {
  if (trace > 0) fprintf(stderr, "api_fuzz: %s -> %s (must %#x, may %#x) [%#llx]\n", what, gpar_status_name(got), must, may,
                         (unsigned long long)id);
  unsigned k = atomic_fetch_add(&nring, 1);
  ring[k % NRING] = (struct ring){what, got, must, may, id};
  if (got > 0) fail(what, got, "positive status");
  if (got == GPAR_OK) {
    if (must) fail(what, got, "accepted a call the model says must be refused");
    return;
  }
  if (-got >= 32 || !((must | may) & S(got))) fail(what, got, must ? "not one of the predicted errors" : "unexpected error");
}

static void check(const char *what, int got, smask must, smask may) { check_id(what, got, must, may, 0); }

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
    /* or one the library made for itself (a staging buffer of a transfer in flight): out of the
     * model. Tokens (graph fences, communicator member tokens) are refused by every call, query
     * included, so a handle that names one stays in and must be refused. */
    size_t bytes;
    int dev;
    if (gpar_buffer_query(f.h, &bytes, &dev) == GPAR_OK) f.h = (gpar_buffer){0};
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
  static const double timeouts[] = {0, 0, 0, 0, -1, 0.25, 1e6, NAN}; /* <= 0 and NaN: the default */
  cfg.comm_timeout = timeouts[u8() % 8];
  es[i].cfg = cfg;
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

/* A doomed communicator's op has run once a wait_all on its engine returned: it is destroyed. */
static void settle_doomed(int e) {
  if (es[e].may_fail) return; /* a failed or skipped op may not have run it */
  for (int k = 0; k < nc; k++)
    if (cs[k].state == C_DOOMED && cs[k].eng == e) cs[k].state = C_DESTROYED;
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
  settle_doomed(i);
}

/* ------------------------------------------------------------------ graph and communicator slots */

/* A new graph from gpar_graph_end: no live graph may have its handle; a full model evicts one
 * (destroyed when live). */
static void graph_add(gpar_graph *g, int e) {
  for (int k = 0; k < ng; k++)
    if (gs[k].state == G_LIVE && gs[k].g == g) fail("gpar_graph_end", 0, "the handle of a live graph came back");
  int slot = ng < MAXG ? ng++ : (int)(u8() % MAXG);
  if (gs[slot].state == G_LIVE) check_id("gpar_graph_destroy (evict)", gpar_graph_destroy(gs[slot].g), 0, 0, (uintptr_t)gs[slot].g);
  gs[slot] = (shadow_graph){g, G_LIVE, e};
}

/* End this thread's recording on engine i (it must be accepted) and keep the graph. */
static void end_recording(int i) {
  static char not_a_graph;
  gpar_graph *g = (gpar_graph *)(void *)&not_a_graph;
  int st = gpar_graph_end(es[i].e, &g);
  check_id("gpar_graph_end (end of recording)", st, 0, 0, (uintptr_t)g);
  rec_eng = -1;
  if (!g) fail("gpar_graph_end", st, "NULL graph on success");
  graph_add(g, i);
}

/* Destroy a communicator the model holds: accepted when live; a doomed or orphaned one may be
 * gone already (GPAR_EINVAL). */
static void comm_drop(shadow_comm *c, const char *what) {
  if (c->state == C_NONE || c->state == C_DESTROYED) return;
  int st = gpar_comm_destroy(c->c);
  check_id(what, st, 0, c->state == C_LIVE ? 0 : S(GPAR_EINVAL), c->c.id);
  c->state = C_DESTROYED;
}

/* A communicator member on device dev accepts a buffer of that device, and a GPAR_HOST buffer
 * when dev is the host backend's CPU. */
static int member_fits(int e, int dev, const shadow_buf *b) {
  return b->dev == dev || (b->dev == GPAR_HOST && es[e].info[dev].backend_id == GPAR_BACKEND_HOST);
}

/* A live buffer of engine e that member device dev accepts, of at least `bytes`; -1 if none. */
static int fit_buf(int e, int dev, size_t bytes, unsigned start) {
  for (int j = 0; j < nh; j++) {
    int k = (int)((start + (unsigned)j) % (unsigned)nh);
    if (hs[k].state == H_LIVE && hs[k].eng == e && hs[k].bytes >= bytes && member_fits(e, dev, &hs[k])) return k;
  }
  return -1;
}

static int ufn(const gpar_native *nat, void *p);

/* A second thread that submits fills, user functions and (when the engine has a communicator
 * whose members all have a buffer) allreduces into its buffers while the main thread shuts the
 * engine down: each call is accepted (and drained) or refused with GPAR_ESHUTDOWN / GPAR_EBADBUF,
 * or GPAR_EINVAL for the communicator (reclaimed by the shutdown); never a crash. */
typedef struct racer {
  pthread_t t;
  gpar_engine *e;
  gpar_buffer h;
  size_t bytes;
  smask may;
  int bad, calls, coll;
  gpar_comm comm;
  gpar_buffer mb[MAXM];
} racer;

static void *race_fn(void *p) {
  static ufn_arg noop; /* mode 0: counts its runs only */
  racer *r = p;
  for (int i = 0; i < 400; i++) {
    int k = i % 3, st;
    if (k == 2 && r->coll)
      st = gpar_allreduce(r->comm, r->mb, NULL, 1, GPAR_FLOAT, GPAR_SUM);
    else if (k == 1)
      st = gpar_fill(r->h, 0, r->bytes, (unsigned char)i);
    else
      st = gpar_submit(r->e, GPAR_HOST, ufn, &noop, NULL, 0, &r->h, 1);
    r->calls++;
    if (st == GPAR_ESHUTDOWN || st == GPAR_EBADBUF || (k == 2 && r->coll && st == GPAR_EINVAL)) break;
    if (st != GPAR_OK && !(r->may & S(st))) {
      r->bad = st;
      break;
    }
  }
  return NULL;
}

static void maps_shutdown(int i, int clean);

static void eng_shutdown(int i, int clean) {
  gpar_stats s;
  maps_shutdown(i, clean);
  if (clean) { /* end the recording, destroy graphs and communicators, release everything,
                  drain: the counters must be back to zero */
    if (rec_eng == i) end_recording(i);
    for (int k = 0; k < ng; k++)
      if (gs[k].state == G_LIVE && gs[k].eng == i) {
        check_id("gpar_graph_destroy (end)", gpar_graph_destroy(gs[k].g), 0, 0, (uintptr_t)gs[k].g);
        gs[k].state = G_STALE;
      }
    for (int k = 0; k < nc; k++)
      if (cs[k].eng == i && (cs[k].state == C_LIVE || cs[k].state == C_DOOMED)) comm_drop(&cs[k], "gpar_comm_destroy (end)");
    for (int j = 0; j < nh; j++)
      if (hs[j].state == H_LIVE && hs[j].eng == i) {
        int st = gpar_buffer_release(hs[j].h);
        check("gpar_buffer_release (end)", st, 0, 0);
        hs[j].state = H_RELEASED;
      }
    for (int k = 0; k < nk; k++)
      if (kk[k].state == K_LIVE && kk[k].eng == i) {
        check_id("gpar_kernel_release (end)", gpar_kernel_release(kk[k].k), 0, 0, kk[k].k.id);
        kk[k].state = K_STALE;
      }
    drain(i);
    gpar_stats_get(es[i].e, &s);
    if (s.ops_in_flight || s.buffers_live || s.events_live || (s.kernels_live && !es[i].arr_kernels) ||
        s.ops_completed != s.ops_submitted) {
      fprintf(stderr, "api_fuzz: after the drain: in flight %llu, buffers %llu, events %llu, kernels %llu, %llu/%llu completed\n",
              (unsigned long long)s.ops_in_flight, (unsigned long long)s.buffers_live,
              (unsigned long long)s.events_live, (unsigned long long)s.kernels_live, (unsigned long long)s.ops_completed,
              (unsigned long long)s.ops_submitted);
      fail("gpar_stats_get after the drain", 0, "counters not back to zero");
    }
  } else if (es[i].nested && safe_shutdown) {
    if (rec_eng == i) end_recording(i); /* (a wait_all while recording is refused) */
    drain(i); /* ops from inside ops: only with the shutdown fix may they still be pending */
  }
  racer r;
  int race = -1;
  if (!clean && u8() % 2) /* a thread submits into one of this engine's buffers meanwhile */
    for (int j = 0; j < nh && race < 0; j++)
      if (hs[j].state == H_LIVE && hs[j].eng == i) race = j;
  if (race >= 0) {
    r = (racer){.e = es[i].e, .h = hs[race].h, .bytes = hs[race].bytes, .may = async_may(i)};
    for (int k = 0; k < nc && !r.coll; k++) { /* a communicator of this engine whose members have buffers */
      if (cs[k].state != C_LIVE || cs[k].eng != i) continue;
      int all = 1;
      for (int m = 0; m < cs[k].n && all; m++) {
        int j = fit_buf(i, cs[k].devs[m], 4, 0);
        if (j < 0) all = 0;
        else r.mb[m] = hs[j].h;
      }
      if (all) r.coll = 1, r.comm = cs[k].c;
    }
    if (pthread_create(&r.t, NULL, race_fn, &r) != 0) race = -1;
    else sleep_us((long)(u8() % 4) * 100);
  }
  int st = gpar_shutdown(es[i].e);
  check("gpar_shutdown", st, 0, async_may(i));
  if (race >= 0) {
    pthread_join(r.t, NULL);
    if (r.bad) fail("gpar_fill/gpar_submit/gpar_allreduce racing gpar_shutdown", r.bad, "not accepted, ESHUTDOWN or EBADBUF");
  }
  es[i].live = 0;
  for (int j = 0; j < nh; j++)
    if (hs[j].eng == i && (hs[j].state == H_LIVE || hs[j].state == H_RELEASED)) hs[j].state = H_DEAD;
  for (int k = 0; k < ng; k++) /* gpar_shutdown destroys the engine's graphs (and this thread's recording) */
    if (gs[k].eng == i) gs[k].state = gs[k].state == G_NONE ? G_NONE : G_STALE;
  for (int k = 0; k < nk; k++) /* and its kernels */
    if (kk[k].eng == i && kk[k].state == K_LIVE) kk[k].state = K_STALE;
  if (rec_eng == i) rec_eng = -1;
  for (int k = 0; k < nc; k++)
    if (cs[k].eng == i && (cs[k].state == C_LIVE || cs[k].state == C_DOOMED)) cs[k].state = C_ORPHAN;
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
    if ((st = gpar_graph_begin(a->eng)) != GPAR_EDEADLK) fail("gpar_graph_begin inside an op", st, "EDEADLK");
    gpar_graph *g = a->graph;
    if ((st = gpar_graph_end(a->eng, &g)) != GPAR_EINVAL) fail("gpar_graph_end inside an op", st, "EINVAL: no recording");
    if (g) fail("gpar_graph_end inside an op", st, "*graph not NULL after a failure");
    st = gpar_graph_destroy(a->graph);
    if (st != (a->graph ? GPAR_EDEADLK : GPAR_EINVAL)) fail("gpar_graph_destroy inside an op", st, "EDEADLK (EINVAL for NULL)");
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
  case 5: { /* refused: it would wait for its own op (GPAR_EINVAL: the main thread destroyed it) */
    int st = gpar_comm_destroy(a->comm);
    check_id("gpar_comm_destroy inside an op", st, S(GPAR_EDEADLK) | S(GPAR_EINVAL), 0, a->comm.id);
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

static int buf_add(gpar_buffer b, int e, int dev, size_t bytes);

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
  buf_add(b, e, dev, bytes);
}

/* A created buffer into the model (slot index returned); a full model evicts one (released). */
static int buf_add(gpar_buffer b, int e, int dev, size_t bytes) {
  if (b.id == 0) fail("gpar_buffer_create", 0, "null handle on success");
  for (int i = 0; i < nh; i++) /* serials are never reused: no handle comes back */
    if (same(hs[i].h, b) && (hs[i].state == H_LIVE || hs[i].state == H_RELEASED || hs[i].state == H_DEAD))
      fail("gpar_buffer_create", 0, "a handle value came back");
  int slot = nh < MAXH ? nh++ : (int)(u8() % MAXH);
  if (hs[slot].state == H_LIVE) { /* evicted from the model: release it */
    check("gpar_buffer_release (evict)", gpar_buffer_release(hs[slot].h), 0, 0);
  }
  hs[slot] = (shadow_buf){b, H_LIVE, e, dev, bytes};
  return slot;
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
    int rec = !must && e == rec_eng; /* refused while this thread records on its engine */
    st = gpar_read(b->h, off, data, len);
    check("gpar_read", st, rec ? S(GPAR_ERECORDING) : must, rec ? 0 : async_may(e));
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

static void do_blas(unsigned sel);

static void do_gemm(void) {
  static const int dims[] = {0, 1, 2, 3, 7, 16, -1, INT_MIN};
  unsigned sel = u8();
  if (sel & 2) { /* the BLAS calls beyond sgemm/dgemm */
    do_blas(sel >> 2);
    return;
  }
  int dbl = sel & 1;
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

/* ------------------------------------------------------------------ more BLAS */

/* One operand of a BLAS call as the model sees it: a batch of rows x cols matrices (a vector:
 * one row, its increment as ld) of es-byte elements; out: the call writes it. */
typedef struct fz_opnd {
  const shadow_buf *b;
  size_t off, es;
  int rows, cols, ld;
  long long stride;
  int batch, out;
} fz_opnd;

/* The statuses the call must return, given the argument errors already found (must): handle
 * errors of every operand, then ranges over every batch entry (empty operands: the offset of
 * their last entry), then overlaps of an output with any other operand or of its own entries
 * (by byte range), and operands off the output's device. o[0] is the output. */
static smask blas_predict(const fz_opnd *o, int n, smask must) {
  unsigned __int128 end[4];
  int live = 1;
  for (int i = 0; i < n; i++) must |= handle_err(o[i].b), live &= o[i].b->state == H_LIVE;
  for (int i = 1; i < n && live; i++)
    if (o[i].b->eng != o[0].b->eng) must |= S(GPAR_EENGINE);
  if (must) return must;
  for (int i = 0; i < n; i++) {
    const unsigned __int128 last = o[i].batch > 1 ? (unsigned __int128)(o[i].batch - 1) * (unsigned long long)o[i].stride : 0;
    if (!o[i].rows || !o[i].cols || !o[i].batch) {
      end[i] = o[i].off;
      if (o[i].off + last > o[i].b->bytes / o[i].es) must |= S(GPAR_ERANGE);
      continue;
    }
    end[i] = o[i].off + last + (unsigned __int128)(o[i].cols - 1) * (unsigned)o[i].ld + (unsigned)o[i].rows;
    if (end[i] > o[i].b->bytes / o[i].es) must |= S(GPAR_ERANGE);
  }
  if (must) return must;
  for (int i = 0; i < n; i++) {
    if (!o[i].out) continue;
    for (int j = 0; j < n; j++)
      if (j != i && same(o[i].b->h, o[j].b->h) && end[i] > o[i].off && end[j] > o[j].off &&
          o[i].off * o[i].es < end[j] * o[j].es && o[j].off * o[j].es < end[i] * o[i].es)
        must |= S(GPAR_EALIAS);
    if (o[i].batch > 1 && end[i] > o[i].off &&
        (unsigned long long)o[i].stride < (unsigned long long)(o[i].cols - 1) * (unsigned)o[i].ld + (unsigned)o[i].rows)
      must |= S(GPAR_EALIAS);
  }
  for (int i = 1; i < n; i++)
    if (hostmem(o[i].b) != hostmem(o[0].b) || (!hostmem(o[0].b) && o[i].b->dev != o[0].b->dev)) must |= S(GPAR_EINVAL);
  return must;
}

static int pick_ld(int rows) {
  unsigned v = u8() % 8;
  int want = rows > 1 ? rows : 1;
  return v == 0 ? want - 1 : v == 1 ? 0 : v == 2 ? INT_MAX : v == 3 ? -3 : want + (int)(v - 4);
}

static size_t pick_eoff(size_t es) {
  unsigned v = u8() % 8;
  return v == 0 ? SIZE_MAX : v == 1 ? SIZE_MAX / es : v == 2 ? (size_t)u16() : v == 3 ? (size_t)(u8() % 64) : 0;
}

static long long pick_stride(void) {
  static const long long v[] = {0, 1, 16, 64, 300, -1, LLONG_MAX, 4096};
  return v[u8() % 8];
}

/* Strided-batched S/DGEMM (v 0) or gpar_gemm_ex (v 1). */
static void do_blas_gemm(int ex) {
  static const int dims[] = {0, 1, 2, 3, 7, 16, -1};
  static const int types[] = {GPAR_HALF, GPAR_BFLOAT16, GPAR_FLOAT, GPAR_DOUBLE, GPAR_INT32, 9};
  /* half the calls are sane: valid types, transposes and sizes, a batch of 2 or 3, operands that fit with C's stride
   * at or one below its extent (below: C's entries overlap) */
  const int sane = u8() % 2;
  int dbl = u8() & 1, ab = ex ? types[u8() % (sane ? 3 : 6)] : dbl ? GPAR_DOUBLE : GPAR_FLOAT;
  int ct = ex ? (u8() % 2 ? GPAR_FLOAT : u8() % 4 || sane ? ab : GPAR_DOUBLE) : ab;
  int ta = (int)(u8() % (sane ? 2 : 3)), tb = (int)(u8() % (sane ? 2 : 3)); /* 2: invalid */
  int m = dims[u8() % 7], n = dims[u8() % 7], k = dims[u8() % 7], batch = (int)(u8() % 5) - 1;
  if (sane) m = 1 + (int)(u8() % 4), n = 1 + (int)(u8() % 4), k = (int)(u8() % 4), batch = 2 + (int)(u8() % 2);
  smask must = 0, may = 0;
  const int half = ab == GPAR_HALF || ab == GPAR_BFLOAT16;
  if (ex && (!(half || ab == GPAR_FLOAT) || !(ct == ab || (half && ct == GPAR_FLOAT)))) must |= S(GPAR_EINVAL);
  if (ta > 1 || tb > 1 || m < 0 || n < 0 || k < 0 || batch < 0) must |= S(GPAR_EINVAL);
  const int ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
  const size_t es = gpar_dtype_size((gpar_dtype)ab) ? gpar_dtype_size((gpar_dtype)ab) : 4;
  const size_t cs = gpar_dtype_size((gpar_dtype)ct) ? gpar_dtype_size((gpar_dtype)ct) : 4;
  fz_opnd o[3];
  shadow_buf av = *pick(), bv = *pick(), *cp = pick();
  const shadow_buf *bufs[3] = {cp, &av, &bv};
  const int rows[3] = {m, ar, br}, cols[3] = {n, ac, bc};
  for (int i = 0; i < 3; i++) {
    o[i] = (fz_opnd){bufs[i], pick_eoff(i ? es : cs), i ? es : cs, rows[i], cols[i], pick_ld(rows[i]), pick_stride(),
                     batch, i == 0};
    if (sane) {
      const long long ext = rows[i] > 0 && cols[i] > 0 ? (long long)(cols[i] - 1) * (rows[i] > 1 ? rows[i] : 1) + rows[i] : 0;
      o[i].off = u8() % 4;
      o[i].ld = rows[i] > 1 ? rows[i] : 1;
      o[i].stride = i == 0 ? ext - (long long)(u8() % 2) : u8() % 2 ? ext : 0;
      if (o[i].stride < 0) o[i].stride = 0;
    }
    if (o[i].ld < (rows[i] > 1 ? rows[i] : 1) || o[i].stride < 0) must |= S(GPAR_EINVAL);
  }
  if (!must) must = blas_predict(o, 3, 0); /* argument errors come first: nothing else is looked at */
  if (!must && !hostmem(cp) && ab == GPAR_DOUBLE) may |= S(GPAR_ENOTSUP);
  may |= async_may(eng_of(cp));
  const float beta = u8() & 1 ? 0.f : 0.5f, alpha = u8() % 4 ? 1.f : 0.f;
  int st;
  if (ex)
    st = gpar_gemm_ex((gpar_trans)ta, (gpar_trans)tb, m, n, k, alpha, (gpar_dtype)ab, av.h, o[1].off, o[1].ld,
                      o[1].stride, bv.h, o[2].off, o[2].ld, o[2].stride, beta, (gpar_dtype)ct, cp->h, o[0].off, o[0].ld,
                      o[0].stride, batch);
  else if (dbl)
    st = gpar_dgemm_strided_batched((gpar_trans)ta, (gpar_trans)tb, m, n, k, alpha, av.h, o[1].off, o[1].ld, o[1].stride,
                                    bv.h, o[2].off, o[2].ld, o[2].stride, beta, cp->h, o[0].off, o[0].ld, o[0].stride,
                                    batch);
  else
    st = gpar_sgemm_strided_batched((gpar_trans)ta, (gpar_trans)tb, m, n, k, alpha, av.h, o[1].off, o[1].ld, o[1].stride,
                                    bv.h, o[2].off, o[2].ld, o[2].stride, beta, cp->h, o[0].off, o[0].ld, o[0].stride,
                                    batch);
  check(ex ? "gpar_gemm_ex" : dbl ? "gpar_dgemm_strided_batched" : "gpar_sgemm_strided_batched", st, must, may);
}

/* GEMV (kind 0), AXPY (1), SCAL (2), DOT (3). */
static void do_blas_vec(int kind) {
  static const int dims[] = {0, 1, 2, 5, 33, -1};
  static const int incs[] = {1, 1, 2, 3, 0, -1};
  int dbl = u8() & 1, t = (int)(u8() % 3), m = dims[u8() % 6], n = dims[u8() % 6];
  const size_t es = dbl ? 8 : 4;
  int inc[3] = {incs[u8() % 6], incs[u8() % 6], incs[u8() % 6]};
  smask must = 0, may = 0;
  fz_opnd o[3];
  shadow_buf p0 = *pick(), p1 = *pick(), *p2 = pick();
  int nop = kind == 2 ? 1 : kind == 1 ? 2 : 3, lda = pick_ld(m);
  /* the increments each call takes: gemv y inc[0], x inc[2]; axpy y inc[0], x inc[1]; scal x inc[0]; dot x inc[1], y inc[2] */
  const int used[4][3] = {{1, 0, 1}, {1, 1, 0}, {1, 0, 0}, {0, 1, 1}};
  for (int i = 0; i < 3; i++)
    if (used[kind][i] && inc[i] < 1) must |= S(GPAR_EINVAL);
  if (n < 0 || (kind == 0 && (m < 0 || t > 1 || lda < (m > 1 ? m : 1)))) must |= S(GPAR_EINVAL);
  if (kind == 0) { /* y = A x: y op[0], A op[1], x op[2] */
    int lx = t ? m : n, ly = t ? n : m;
    o[0] = (fz_opnd){&p0, pick_eoff(es), es, 1, ly, inc[0], 0, 1, 1};
    o[1] = (fz_opnd){&p1, pick_eoff(es), es, m, n, lda, 0, 1, 0};
    o[2] = (fz_opnd){p2, pick_eoff(es), es, 1, lx, inc[2], 0, 1, 0};
  } else { /* axpy: y, x; scal: x; dot: result, x, y */
    o[0] = (fz_opnd){&p0, pick_eoff(es), es, 1, kind == 3 ? 1 : n, kind == 3 ? 1 : inc[0], 0, 1, 1};
    o[1] = (fz_opnd){&p1, pick_eoff(es), es, 1, n, inc[1], 0, 1, 0};
    o[2] = (fz_opnd){p2, pick_eoff(es), es, 1, n, inc[2], 0, 1, 0};
  }
  if (!must) must = blas_predict(o, nop, 0);
  if (!must && !hostmem(&p0) && dbl) may |= S(GPAR_ENOTSUP);
  may |= async_may(eng_of(&p0));
  const double alpha = u8() % 4 ? 1.5 : 0.0, beta = u8() & 1 ? 0.0 : 0.5;
  const gpar_trans tr = (gpar_trans)t;
  int st;
  switch (kind) {
  case 0:
    st = dbl ? gpar_dgemv(tr, m, n, alpha, p1.h, o[1].off, lda, p2->h, o[2].off, inc[2], beta, p0.h, o[0].off, inc[0])
             : gpar_sgemv(tr, m, n, (float)alpha, p1.h, o[1].off, lda, p2->h, o[2].off, inc[2], (float)beta, p0.h,
                          o[0].off, inc[0]);
    break;
  case 1:
    st = dbl ? gpar_daxpy(n, alpha, p1.h, o[1].off, inc[1], p0.h, o[0].off, inc[0])
             : gpar_saxpy(n, (float)alpha, p1.h, o[1].off, inc[1], p0.h, o[0].off, inc[0]);
    break;
  case 2:
    st = dbl ? gpar_dscal(n, alpha, p0.h, o[0].off, inc[0]) : gpar_sscal(n, (float)alpha, p0.h, o[0].off, inc[0]);
    break;
  default:
    st = dbl ? gpar_ddot(n, p1.h, o[1].off, inc[1], p2->h, o[2].off, inc[2], p0.h, o[0].off)
             : gpar_sdot(n, p1.h, o[1].off, inc[1], p2->h, o[2].off, inc[2], p0.h, o[0].off);
  }
  static const char *const names[2][4] = {{"gpar_sgemv", "gpar_saxpy", "gpar_sscal", "gpar_sdot"},
                                          {"gpar_dgemv", "gpar_daxpy", "gpar_dscal", "gpar_ddot"}};
  check(names[dbl][kind], st, must, may);
}

static void do_blas(unsigned sel) {
  switch (sel % 6) {
  case 0: do_blas_gemm(0); break;
  case 1: do_blas_gemm(1); break;
  default: do_blas_vec((int)(sel % 6) - 2);
  }
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
  a->mode = (int)(u8() % 6);
  a->sleep_us = (int)(u8() % 8) * 250;
  a->eng = es[e].e;
  a->target = tgt ? tgt->h : (gpar_buffer){0};
  if (a->mode == 3 && ng && u8() % 2) a->graph = gs[u8() % ng].g; /* any state: never dereferenced */
  shadow_comm *doom = NULL;
  if (a->mode == 5) { /* a graph would destroy it at every launch: not recorded */
    if (e == rec_eng) a->mode = 0;
    else if (nc) doom = &cs[u8() % nc], a->comm = doom->c;
    /* another engine's communicator: its tokens would be released while that engine's counters
     * are checked; left out of the model (and of the alphabet) */
    if (doom && doom->eng != e) a->mode = 0, doom = NULL;
  }
  if (a->mode == 2 && es[e].live) es[e].may_fail = 1;
  if ((a->mode == 3 || a->mode == 4) && es[e].live) es[e].nested = 1;
  int st = gpar_submit(es[e].e, dev, ufn, a, nullr ? NULL : rl, nr, wl, nw);
  check_id("gpar_submit", st, must, es[e].live ? async_may(e) : 0, a->mode == 5 ? a->comm.id : 0);
  (void)doom; /* a destroy from inside an op is refused (GPAR_EDEADLK): the communicator stays live */
}

static void do_wait(void) {
  shadow_buf *b = pick();
  int rec = b->state == H_LIVE && b->eng == rec_eng;
  int st = gpar_wait(b->h);
  check("gpar_wait", st, rec ? S(GPAR_ERECORDING) : handle_err(b), rec ? 0 : async_may(eng_of(b)));
}

static void do_wait_all(void) {
  int e = pick_eng();
  if (e < 0) return;
  int rec = es[e].live && e == rec_eng;
  int st = gpar_wait_all(es[e].e);
  check("gpar_wait_all", st, !es[e].live ? S(GPAR_ESHUTDOWN) : rec ? S(GPAR_ERECORDING) : 0,
        es[e].live && !rec ? async_may(e) : 0);
  if (es[e].live && !rec) settle_doomed(e);
}

static void do_fault(void) {
  /* "register" and "capture" fail nothing the caller sees (gpar.h): they leave may_fail alone */
  static const char *const kinds[] = {"alloc", "pinned",   "copy",    "gemm",  "fill", "user", "event", "completion",
                                      "build", "register", "capture", "bogus", "",     NULL};
  enum { NKINDS = sizeof kinds / sizeof kinds[0], SILENT = 9, VALID = 11 };
  int e = pick_eng();
  if (e < 0) return;
  unsigned k = u8() % NKINDS;
  unsigned long n = u8() % 6;
  int st = gpar_fault_inject(es[e].e, kinds[k], n);
  smask must = !es[e].live ? S(GPAR_ESHUTDOWN) : k >= VALID ? S(GPAR_EINVAL) : 0;
  check("gpar_fault_inject", st, must, es[e].live ? 0 : S(GPAR_EINVAL));
  if (st == GPAR_OK && n && k < SILENT) es[e].may_fail = 1;
  if (st == GPAR_OK && n && !strcmp(kinds[k], "build")) es[e].build_fault = 1;
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

/* ------------------------------------------------------------------ configuration */

static void do_config(void) {
  int e = pick_eng();
  if (e < 0) return;
  int null = u8() % 16 == 0;
  gpar_config c;
  memset(&c, 0xa5, sizeof c);
  int st = gpar_config_get(es[e].e, null ? NULL : &c);
  check("gpar_config_get", st, !es[e].live ? S(GPAR_ESHUTDOWN) : null ? S(GPAR_EINVAL) : 0, 0);
  if (st != GPAR_OK) return;
  const gpar_config *w = &es[e].cfg; /* as given, with the documented defaults filled in */
  if (c.synchronous != w->synchronous || c.host_threads != w->host_threads || c.tf32 != w->tf32 ||
      c.pinned_limit != w->pinned_limit || c.quiet != w->quiet || c.cublaslt != w->cublaslt ||
      c.trace_path != w->trace_path)
    fail("gpar_config_get", st, "a field differs from what gpar_init was given");
  if (c.comm_timeout != (w->comm_timeout > 0 ? w->comm_timeout : 300.0))
    fail("gpar_config_get", st, "comm_timeout is neither the one given nor the default 300");
  if (!(c.backends & GPAR_BACKEND_HOST) || (w->backends && c.backends != (w->backends | GPAR_BACKEND_HOST)))
    fail("gpar_config_get", st, "backends: not the mask given (with the host)");
  for (int d = 0; d < es[e].ndev; d++)
    if (!(c.backends & (unsigned)es[e].info[d].backend_id)) fail("gpar_config_get", st, "backends lacks a device's backend");
}

/* ------------------------------------------------------------------ array ops and maps */

/* Array calls: the model walks the operands in the order the library checks them (handles and
 * ranges one by one, then devices, then overlap) and predicts the first refusal; the checks of
 * ops, types and shapes come before and are all GPAR_EINVAL. An accepted call whose output is
 * not in host memory is left out: it would build GPU kernels (PoCL: hundreds of ms each) inside
 * libFuzzer's per-input timeout; tests/array runs them. */
typedef struct fz_aopnd {
  const shadow_buf *b;
  size_t off, rows, cols, ld, es;
  int tag, out, inplace, optional;
} fz_aopnd;

static size_t fz_es(int dt) { return dt == GPAR_DOUBLE ? 8 : dt == GPAR_FLOAT || dt == GPAR_INT32 ? 4 : dt == GPAR_HALF || dt == GPAR_BFLOAT16 ? 2 : 0; }
static int fz_float(int dt) { return dt >= GPAR_FLOAT && dt <= GPAR_BFLOAT16; }
static int fz_shape_bad(int m, int n, int ld) { return m < 0 || n < 0 || ld < (m > 1 ? m : 1); }
static fz_aopnd fz_range(const shadow_buf *b, size_t off, size_t count, int dt, int out) {
  return (fz_aopnd){b, off, count, 1, count ? count : 1, fz_es(dt), dt, out, 0, 0};
}
static fz_aopnd fz_matrix(const shadow_buf *b, size_t off, int m, int n, int ld, int dt, int out) {
  return (fz_aopnd){b, off, (size_t)m, (size_t)n, (size_t)ld, fz_es(dt), dt, out, 0, 0};
}
static unsigned __int128 fz_end(const fz_aopnd *o) {
  if (!o->rows || !o->cols) return o->off;
  return (unsigned __int128)o->off + (unsigned __int128)(o->cols - 1) * o->ld + o->rows;
}

/* The first refusal the library makes for operands o[0..n) (0: accepted); *home: the output
 * whose device runs it. */
static smask fz_operands(const fz_aopnd *o, int n, int *home) {
  int first = -1;
  *home = -1;
  for (int i = 0; i < n; i++) {
    if (!o[i].b->h.id && !o[i].optional) return S(GPAR_EBADBUF);
    if (o[i].b->h.id && first < 0) first = i;
    if (o[i].b->h.id && o[i].out && *home < 0) *home = i;
  }
  if (*home < 0) return S(GPAR_EINVAL);
  if (o[first].b->state != H_LIVE) return S_BADH;
  int e = o[first].b->eng;
  for (int i = 0; i < n; i++) {
    const shadow_buf *b = o[i].b;
    if (!b->h.id) continue;
    if (b->state != H_LIVE) return S_BADH;
    if (b->eng != e) return S(GPAR_EENGINE);
    size_t have = b->bytes / o[i].es;
    if (fz_end(&o[i]) > have || o[i].off > have) return S(GPAR_ERANGE);
  }
  const shadow_buf *h = o[*home].b;
  for (int i = 0; i < n; i++)
    if (o[i].b->h.id && (hostmem(o[i].b) != hostmem(h) || (!hostmem(h) && o[i].b->dev != h->dev))) return S(GPAR_EINVAL);
  for (int i = 0; i < n; i++) {
    if (!o[i].b->h.id || !o[i].out) continue;
    for (int j = 0; j < n; j++) {
      const fz_aopnd *p = &o[j], *q = &o[i];
      if (j == i || !same(p->b->h, q->b->h) || (p->out && j < i)) continue;
      unsigned __int128 ei = fz_end(q), ej = fz_end(p);
      if (ei == q->off || ej == p->off) continue;
      if (q->off * q->es >= ej * p->es || p->off * p->es >= ei * q->es) continue;
      int exact = !p->out && p->inplace && q->inplace && p->tag == q->tag && p->off == q->off && p->rows == q->rows &&
                  p->cols == q->cols && (p->cols <= 1 || p->ld == q->ld);
      if (!exact) return S(GPAR_EALIAS);
    }
  }
  return 0;
}

static size_t fz_count(void) {
  static const size_t c[] = {0, 1, 3, 64, 1000, SIZE_MAX, SIZE_MAX / 2 + 1, 17};
  return c[u8() % 8];
}
static int fz_dim(void) {
  static const int d[] = {0, 1, 2, 3, 7, 16, -1, INT_MIN};
  return d[u8() % 8];
}
static int fz_ld(int rows) {
  unsigned v = u8() % 8;
  int want = rows > 1 ? rows : 1;
  return v == 0 ? want - 1 : v == 1 ? 0 : v == 2 ? INT_MAX : v == 3 ? -3 : want + (int)(v - 4);
}
static size_t fz_off(void) {
  unsigned v = u8() % 8;
  return v == 0 ? SIZE_MAX : v == 1 ? SIZE_MAX / 8 : v >= 5 ? 0 : (size_t)(u16() % 512);
}

/* The call's operands as the library sees them, its pre-checks (must: GPAR_EINVAL) and the
 * call itself; k picks the call. */
#define OB_SEL 240 /* do_array's first byte from here on: operands in one buffer (do_onebuf) */
static void do_onebuf(unsigned sel);
static void do_array(void) {
  static const int dts[] = {GPAR_FLOAT, GPAR_DOUBLE, GPAR_HALF, GPAR_BFLOAT16, GPAR_FLOAT, GPAR_INT32, 9, -1};
  const unsigned sel = u8();
  if (sel >= OB_SEL) { /* operands in one buffer, with a host oracle */
    do_onebuf(sel - OB_SEL);
    return;
  }
  int k = (int)(sel % 7), dt = dts[u8() % 8], op = (int)(u8() % 10) - 1, axis = (int)(u8() % 3);
  shadow_buf b0 = *pick(), b1 = *pick(), b2 = *pick(), b3 = *pick(); /* (pick's forged slot: copies) */
  fz_aopnd o[4];
  int n = 0, home, empty = 0, bad = !fz_float(dt), m = fz_dim(), c = fz_dim(), ld0 = fz_ld(m), ld1 = fz_ld(m);
  size_t cnt = fz_count(), off[4] = {fz_off(), fz_off(), fz_off(), fz_off()};
  double scale = u8() % 8 ? 0.5 : NAN;
  if (k == 0) { /* unary */
    bad |= op < 0 || op > 7, empty = cnt == 0;
    o[n++] = fz_range(&b0, off[0], cnt, dt, 0), o[n++] = fz_range(&b1, off[1], cnt, dt, 1);
    o[0].inplace = o[1].inplace = 1;
  } else if (k == 1) { /* binary */
    bad |= op < 0 || op > 5, empty = cnt == 0;
    o[n++] = fz_range(&b0, off[0], cnt, dt, 0), o[n++] = fz_range(&b1, off[1], cnt, dt, 0);
    o[n++] = fz_range(&b2, off[2], cnt, dt, 1);
    o[0].inplace = o[1].inplace = o[2].inplace = 1;
  } else if (k == 2) { /* broadcast */
    bad |= op < 0 || op > 5 || axis > 1 || fz_shape_bad(m, c, ld0) || fz_shape_bad(m, c, ld1), empty = m == 0 || c == 0;
    o[n++] = fz_matrix(&b0, off[0], m, c, ld0, dt, 0);
    o[n++] = fz_range(&b1, off[1], (size_t)(axis == GPAR_PER_ROW ? m : c), dt, 0);
    o[n++] = fz_matrix(&b2, off[2], m, c, ld1, dt, 1);
    o[0].inplace = o[2].inplace = 1;
  } else if (k == 3 || k == 4) { /* reductions */
    bad |= op < 0 || op > 2 || (k == 4 && (axis > 1 || fz_shape_bad(m, c, ld0)));
    int nout = axis == GPAR_PER_ROW ? m : c;
    empty = k == 4 && nout == 0;
    o[n++] = k == 3 ? fz_range(&b0, off[0], cnt, dt, 0) : fz_matrix(&b0, off[0], m, c, ld0, dt, 0);
    o[n++] = fz_range(&b1, off[1], k == 3 ? 1 : (size_t)nout, dt, 1);
  } else if (k == 5) { /* softmax cross-entropy; loss and G optional */
    if (u8() % 4 == 0) b2.h = (gpar_buffer){0, 0};
    if (u8() % 4 == 0) b3.h = (gpar_buffer){0, 0};
    bad |= fz_shape_bad(m, c, ld0) || (b3.h.id && fz_shape_bad(m, c, ld1)) || scale != scale || (!b2.h.id && !b3.h.id);
    empty = c == 0;
    o[n++] = fz_matrix(&b0, off[0], m, c, ld0, dt, 0), o[n++] = fz_range(&b1, off[1], (size_t)c, GPAR_INT32, 0);
    o[n++] = fz_range(&b2, off[2], (size_t)c, dt, 1), o[n++] = fz_matrix(&b3, off[3], m, c, b3.h.id ? ld1 : 1, dt, 1);
    o[2].optional = o[3].optional = 1;
  } else { /* argmax */
    bad |= fz_shape_bad(m, c, ld0), empty = c == 0;
    o[n++] = fz_matrix(&b0, off[0], m, c, ld0, dt, 0), o[n++] = fz_range(&b1, off[1], (size_t)c, GPAR_INT32, 1);
  }
  smask must = bad ? S(GPAR_EINVAL) : fz_operands(o, n, &home);
  if (!must && !empty && !hostmem(o[home].b)) return; /* a GPU run: see above */
  int e = must ? -1 : eng_of(o[home].b), st;
  switch (k) {
  case 0: st = gpar_unary((gpar_unop)op, (gpar_dtype)dt, cnt, b0.h, off[0], b1.h, off[1]); break;
  case 1: st = gpar_binary((gpar_binop)op, (gpar_dtype)dt, cnt, b0.h, off[0], b1.h, off[1], b2.h, off[2]); break;
  case 2:
    st = gpar_binary_bcast((gpar_binop)op, (gpar_dtype)dt, m, c, b0.h, off[0], ld0, b1.h, off[1], (gpar_axis)axis, b2.h,
                           off[2], ld1);
    break;
  case 3: st = gpar_reduce_range((gpar_redop)op, (gpar_dtype)dt, cnt, b0.h, off[0], b1.h, off[1]); break;
  case 4:
    st = gpar_reduce_matrix((gpar_redop)op, (gpar_dtype)dt, m, c, b0.h, off[0], ld0, (gpar_axis)axis, b1.h, off[1]);
    break;
  case 5:
    st = gpar_softmax_xent((gpar_dtype)dt, m, c, b0.h, off[0], ld0, b1.h, off[1], scale, b2.h, off[2], b3.h, off[3], ld1);
    break;
  default: st = gpar_argmax((gpar_dtype)dt, m, c, b0.h, off[0], ld0, b1.h, off[1]);
  }
  static const char *const names[7] = {"gpar_unary", "gpar_binary", "gpar_binary_bcast", "gpar_reduce_range",
                                       "gpar_reduce_matrix", "gpar_softmax_xent", "gpar_argmax"};
  check(names[k], st, must, async_may(e));
}

/* Maps: a fixed set of texts (the valid ones build once per process and target), created on
 * either engine, launched with arguments of the right and wrong kinds over picked buffers. */
#define MAXMAP 4
enum { M_NONE, M_LIVE, M_STALE };
typedef struct shadow_map {
  gpar_map m;
  int state, eng, spec;
} shadow_map;
static shadow_map maps[MAXMAP];
static int nmaps;
static const struct map_spec {
  const char *params, *expr;
  int ok;        /* gpar_map_create accepts it */
  int builds;    /* its kernel compiles */
  int np;        /* parameters: array element size, 0 for a scalar */
  /* per parameter: element size (0: a scalar), written, the scalar's gpar_arg kind, the element
   * type (an output is exactly in place over an input of its own type only) */
  int es[3], out[3], arg[3], type[3];
} specs[] = {
    {"f32 a, in f32 x, inout f32 y", "y = a * x + y", 1, 1, 3, {0, 4, 4}, {0, 0, 1}, {GPAR_ARG_F32, 0, 0}, {0, 1, 1}},
    {"out f32 z, in f64 w", "z = (gpar_f32)w", 1, 1, 2, {4, 8, 0}, {1, 0, 0}, {0, 0, 0}, {1, 2, 0}},
    {"in f16 h, out bf16 b, u32 k", "b = h * (gpar_f32)k", 1, 1, 3, {2, 2, 0}, {0, 1, 0}, {0, 0, GPAR_ARG_U32}, {3, 4, 0}},
    {"in f32 x, out f32 y", "y = x +", 1, 0, 2, {4, 4, 0}, {0, 1, 0}, {0, 0, 0}, {1, 1, 0}},
    {"in f32 x", "x", 0, 0, 0, {0}, {0}, {0}, {0}},
    {"foo f32 x, out f32 y", "y = 1", 0, 0, 0, {0}, {0}, {0}, {0}},
    {"in f32 i, out f32 y", "y = i", 0, 0, 0, {0}, {0}, {0}, {0}},
    {"inout f32 x, out f32 x", "x = 1", 0, 0, 0, {0}, {0}, {0}, {0}},
};

static shadow_map *pick_map(void) {
  static shadow_map forged;
  if (!nmaps || u8() % 8 == 0) { /* a never-made handle, or a live one with a bit off */
    forged = (shadow_map){{nmaps ? maps[u8() % nmaps].m.id ^ (1ull << (u8() % 64)) : (uint64_t)u16()}, M_STALE, 0, 0};
    for (int k = 0; k < nmaps; k++)
      if (maps[k].m.id == forged.m.id) return &maps[k];
    return &forged;
  }
  return &maps[u8() % nmaps];
}

/* Engine i shuts down: a clean shutdown releases its live maps first; its maps are gone after. */
static void maps_shutdown(int i, int clean) {
  for (int k = 0; k < nmaps; k++) {
    if (maps[k].eng != i || maps[k].state != M_LIVE) continue;
    if (clean) check_id("gpar_map_release (end)", gpar_map_release(maps[k].m), 0, 0, maps[k].m.id);
    maps[k].state = M_STALE;
  }
}

static void do_map_create_release(void) {
  if (u8() % 4 == 0) { /* release */
    shadow_map *m = pick_map();
    check_id("gpar_map_release", gpar_map_release(m->m), m->state == M_LIVE ? 0 : S(GPAR_EINVAL), 0, m->m.id);
    m->state = m->state == M_NONE ? M_NONE : M_STALE;
    return;
  }
  int e = pick_eng(), spec = (int)(u8() % (sizeof specs / sizeof specs[0]));
  if (e < 0) return;
  gpar_map m = {0x77};
  int st = gpar_map_create(es[e].e, "fz_map", specs[spec].params, specs[spec].expr, &m);
  check("gpar_map_create", st, !es[e].live ? S(GPAR_ESHUTDOWN) : specs[spec].ok ? 0 : S(GPAR_EINVAL), 0);
  if (st != GPAR_OK) {
    if (m.id) fail("gpar_map_create", st, "*map not the null handle after a failure");
    return;
  }
  int slot = nmaps < MAXMAP ? nmaps++ : (int)(u8() % MAXMAP);
  if (maps[slot].state == M_LIVE) check_id("gpar_map_release (evict)", gpar_map_release(maps[slot].m), 0, 0, maps[slot].m.id);
  maps[slot] = (shadow_map){m, M_LIVE, e, spec};
}

static void do_map_launch(void) {
  shadow_map *m = pick_map();
  const struct map_spec *sp = &specs[m->spec];
  size_t n = fz_count() % 2048;
  int na = sp->np + (u8() % 8 == 0 ? 1 : 0), wrong = -1, home = -1;
  shadow_buf b[4];
  gpar_arg a[4];
  fz_aopnd o[3];
  int no = 0;
  for (int j = 0; j < na && j < 4; j++) {
    if (j >= sp->np || !sp->es[j]) { /* a scalar, sometimes of the wrong kind */
      int kind = u8() % 6 == 0 ? GPAR_ARG_F64 : j < sp->np ? sp->arg[j] : GPAR_ARG_I32;
      if (j < sp->np && kind != sp->arg[j] && wrong < 0) wrong = j;
      a[j] = kind == GPAR_ARG_F32 ? gpar_arg_f32(0.5f) : kind == GPAR_ARG_U32 ? gpar_arg_u32(3) : kind == GPAR_ARG_I32 ? gpar_arg_i32(1) : gpar_arg_f64(2);
      continue;
    }
    b[j] = *pick();
    size_t off = u8() % 4 == 0 ? (size_t)u16() % 64 : (size_t)(u16() % 256) * (size_t)sp->es[j];
    a[j] = gpar_arg_buffer(b[j].h, off);
    if (off % (size_t)sp->es[j] && wrong < 0) wrong = j;
    o[no] = (fz_aopnd){&b[j], off / (size_t)sp->es[j], n, 1, n ? n : 1, (size_t)sp->es[j], 100 + sp->type[j], sp->out[j], 1, 0};
    no++;
  }
  smask must = m->state != M_LIVE ? S(GPAR_EINVAL) : na != sp->np || wrong >= 0 ? S(GPAR_EINVAL) : fz_operands(o, no, &home);
  if (!must && o[home].b->eng != m->eng) must = S(GPAR_EENGINE);
  if (!must && n && !hostmem(o[home].b)) return; /* a GPU run: see do_array */
  smask may = must ? 0 : async_may(m->eng) | S(GPAR_ENOTSUP) | (sp->builds ? 0 : S(GPAR_EBUILD));
  check_id("gpar_map_launch", gpar_map_launch(m->m, n, a, na), must, may, m->m.id);
}

/* ------------------------------------------------------------------ graphs */

static long known_skips; /* calls left out for a known defect */

/* A destroyed graph's address is a live graph's now (heap addresses are handles today). */
static int graph_aliased(const shadow_graph *g) {
  if (g->state == G_LIVE) return 0;
  for (int k = 0; k < ng; k++)
    if (gs[k].state == G_LIVE && gs[k].g == g->g) return 1;
  return 0;
}

/* A graph handle for the next call: a model slot (live or stale), NULL, or an address that was
 * never a graph's (the library must not dereference it). */
static shadow_graph *pick_graph(void) {
  static shadow_graph f;
  static char not_a_graph[16];
  unsigned v = u8();
  if (v % 8 != 7 && ng) return &gs[v % (unsigned)ng];
  f = (shadow_graph){NULL, G_STALE, -1};
  unsigned w = u8() % 3;
  if (w == 1 || (w == 2 && !ng)) f.g = (gpar_graph *)(void *)not_a_graph;
  else if (w == 2) f.g = (gpar_graph *)(uintptr_t)((uintptr_t)gs[u8() % (unsigned)ng].g + 8);
  return &f;
}

static void do_graph_begin(void) {
  int e = pick_eng();
  if (e < 0) return;
  int st = gpar_graph_begin(es[e].e);
  check("gpar_graph_begin", st, !es[e].live ? S(GPAR_ESHUTDOWN) : rec_eng >= 0 ? S(GPAR_ERECORDING) : 0, 0);
  if (st == GPAR_OK) rec_eng = e;
}

static void do_graph_end(void) {
  int e = pick_eng();
  if (e < 0) return;
  int null = u8() % 16 == 0;
  static char not_a_graph;
  gpar_graph *g = (gpar_graph *)(void *)&not_a_graph;
  int st = gpar_graph_end(es[e].e, null ? NULL : &g);
  check("gpar_graph_end", st, !es[e].live ? S(GPAR_ESHUTDOWN) : null || rec_eng != e ? S(GPAR_EINVAL) : 0, 0);
  /* "*graph receives the graph (NULL on failure)"; today a shut-down engine leaves it alone */
  if (st != GPAR_OK && !null && g && (es[e].live || call_known("graph-end-null")))
    fail("gpar_graph_end", st, "*graph not NULL after a failure");
  if (st != GPAR_OK) return;
  rec_eng = -1;
  if (!g) fail("gpar_graph_end", st, "NULL graph on success");
  graph_add(g, e);
}

/* gpar_graph_launch or gpar_graph_destroy: a stale, forged or NULL handle is GPAR_EINVAL; a
 * launch while this thread records on the graph's engine is GPAR_ERECORDING. */
static void do_graph_call(int destroy) {
  shadow_graph *g = pick_graph();
  if (graph_aliased(g) && !call_known("graph-alias")) { /* known defect: it would name the live graph */
    known_skips++;
    return;
  }
  int e = g->state == G_LIVE ? g->eng : -1;
  smask must = e < 0 ? S(GPAR_EINVAL) : !destroy && e == rec_eng ? S(GPAR_ERECORDING) : 0;
  smask may = !must && !destroy && es[e].cfg.synchronous ? async_may(e) : 0; /* synchronous: its status */
  int st = destroy ? gpar_graph_destroy(g->g) : gpar_graph_launch(g->g);
  check_id(destroy ? "gpar_graph_destroy" : "gpar_graph_launch", st, must, may, (uintptr_t)g->g);
  if (destroy && st == GPAR_OK) g->state = G_STALE;
}

/* ------------------------------------------------------------------ communicators */

/* A communicator handle for the next call: a model slot, or a forged id (0, garbage, a known id
 * with one bit off or of the slot's next generation), which may hit a real one. */
static shadow_comm *pick_comm(void) {
  static shadow_comm f;
  unsigned v = u8();
  if (v % 8 != 7 && nc) return &cs[v % (unsigned)nc];
  memset(&f, 0, sizeof f);
  f.state = C_DESTROYED;
  f.eng = -1;
  f.n = 1 + (int)(u8() % MAXM);
  unsigned w = u8() % 4;
  uint64_t id = w == 1 ? (uint64_t)u16() << 32 | u16() : w >= 2 && nc ? cs[u8() % (unsigned)nc].c.id : w >= 2;
  if (w == 2) id ^= 1ull << (u8() % 64);
  if (w == 3) id += 1ull << 32;
  f.c.id = id;
  for (int k = 0; k < nc; k++)
    if (cs[k].state != C_NONE && cs[k].c.id == id) return &cs[k];
  return &f;
}

static void do_comm_create(void) {
  int e = pick_eng();
  if (e < 0) return;
  int nd = (int)(u8() % (MAXM + 2)) - 1, ndev = es[e].ndev; /* -1 .. MAXM */
  int devs[MAXM] = {0};
  unsigned base = u8();
  smask loop = 0;
  for (int i = 0; i < nd; i++) {
    unsigned v = u8() % 16;
    if (v == 15) {
      static const int bad[] = {-1, INT_MIN, INT_MAX, 0};
      devs[i] = bad[u8() % 4];
      if (!devs[i]) devs[i] = ndev;
    } else if (v == 14 && i) {
      devs[i] = devs[u8() % (unsigned)i];
    } else {
      devs[i] = (int)((base + (unsigned)i) % (unsigned)ndev);
    }
    if (devs[i] < 0 || devs[i] >= ndev) loop |= S(GPAR_ENODEV);
    for (int j = 0; j < i; j++)
      if (devs[j] == devs[i]) loop |= S(GPAR_EINVAL); /* listed twice */
  }
  int null_devs = u8() % 16 == 0, null_out = u8() % 16 == 0;
  smask must = !es[e].live ? S(GPAR_ESHUTDOWN) : null_out || null_devs || nd < 1 ? S(GPAR_EINVAL) : loop;
  gpar_comm c = {0x5555};
  int st = gpar_comm_create(es[e].e, null_devs ? NULL : devs, nd, null_out ? NULL : &c);
  check_id("gpar_comm_create", st, must, !must && es[e].may_fail ? S(GPAR_EFAULT) : 0, st == GPAR_OK ? c.id : 0);
  if (st != GPAR_OK) return;
  if (c.id == 0) fail("gpar_comm_create", st, "handle 0 on success");
  for (int k = 0; k < nc; k++)
    if (cs[k].state != C_NONE && cs[k].c.id == c.id) fail("gpar_comm_create", st, "a communicator handle came back");
  int slot = nc < MAXC ? nc++ : (int)(u8() % MAXC);
  comm_drop(&cs[slot], "gpar_comm_destroy (evict)");
  cs[slot] = (shadow_comm){.c = c, .state = C_LIVE, .eng = e, .n = nd};
  memcpy(cs[slot].devs, devs, sizeof devs);
}

static void do_comm_info_destroy(int destroy) {
  shadow_comm *c = pick_comm();
  if (destroy) {
    int st = gpar_comm_destroy(c->c);
    /* live: accepted; destroyed or forged: GPAR_EINVAL; orphaned or doomed: gone already or not */
    check_id("gpar_comm_destroy", st, c->state == C_DESTROYED ? S(GPAR_EINVAL) : 0,
             c->state == C_ORPHAN || c->state == C_DOOMED ? S(GPAR_EINVAL) : 0, c->c.id);
    if (c->state != C_NONE) c->state = C_DESTROYED;
    return;
  }
  int nm = -1, fl = -1, nl = -1, nulls = u8() % 4 == 0;
  int st = gpar_comm_info(c->c, nulls ? NULL : &nm, &fl, nulls ? NULL : &nl);
  smask must = c->state == C_DESTROYED ? S(GPAR_EINVAL) : c->state == C_ORPHAN ? S(GPAR_EINVAL) | S(GPAR_ESHUTDOWN) : 0;
  check_id("gpar_comm_info", st, must, c->state == C_DOOMED ? S(GPAR_EINVAL) : 0, c->c.id);
  if (st != GPAR_OK) {
    if (c->state == C_ORPHAN || c->state == C_DOOMED) c->state = C_DESTROYED; /* (today's ESHUTDOWN destroys it) */
    return;
  }
  if (fl != 0 || (!nulls && (nm != c->n || nl != c->n))) fail("gpar_comm_info", st, "not the members it was made with");
}

/* Element k of member i's data in a checked collective: small integers, exact in any order. */
static double coll_val(unsigned seed, int i, size_t k) { return (double)((seed + 7u * (unsigned)i + 3u * (unsigned)k) % 9) - 4; }

static void coll_put(void *p, size_t k, int dbl, double v) {
  if (dbl) ((double *)p)[k] = v;
  else ((float *)p)[k] = (float)v;
}

static double coll_get(const void *p, size_t k, int dbl) { return dbl ? ((const double *)p)[k] : ((const float *)p)[k]; }

static double coll_red(int op, double a, double b) { return op == GPAR_SUM ? a + b : op == GPAR_MAX ? (b > a ? b : a) : (b < a ? b : a); }

/* The four collectives: arguments valid or not, member buffers that fit (found or made), random
 * or shared; a valid call on known data may be checked element by element. */
static void do_coll(void) {
  static const char *const names[] = {"gpar_allreduce", "gpar_broadcast", "gpar_reduce_scatter", "gpar_all_gather"};
  enum { AR, BC, RS, AG };
  int kind = (int)(u8() % 4);
  shadow_comm *cm = pick_comm();
  int n = cm->n, e = cm->eng, live = cm->state == C_LIVE || cm->state == C_DOOMED;
  unsigned v = u8() % 8;
  static const gpar_dtype more[3] = {GPAR_HALF, GPAR_BFLOAT16, GPAR_INT32}; /* every path of one process takes them */
  gpar_dtype dt = v < 4 ? GPAR_FLOAT : v < 6 ? GPAR_DOUBLE : v == 6 ? more[u8() % 3] : (gpar_dtype)(u8() % 2 ? 5 : -1);
  size_t esz = dt == GPAR_FLOAT ? 4 : dt == GPAR_DOUBLE ? 8 : dt == GPAR_INT32 ? 4 : dt == GPAR_HALF || dt == GPAR_BFLOAT16 ? 2 : 0;
  v = u8() % 8;
  gpar_redop op = v < 3 ? GPAR_SUM : v < 5 ? GPAR_MAX : v < 7 ? GPAR_MIN : (gpar_redop)(u8() % 2 ? 3 : -1);
  int root = (int)(u8() % (unsigned)(n + 2)) - 1;
  v = u8() % 8;
  size_t count = v == 0 ? 0 : v == 1 ? SIZE_MAX : v == 2 ? SIZE_MAX / 8 + 1 : 1 + u8() % 32;
  size_t blocks = kind == RS || kind == AG ? (size_t)n : 1;
  unsigned __int128 total = (unsigned __int128)count * blocks * (esz ? esz : 4); /* bytes per member */
  int null_bufs = u8() % 32 == 0, use_offs = u8() % 2;
  shadow_buf mb[MAXM];
  int idx[MAXM];
  gpar_buffer bufs[MAXM];
  size_t offs[MAXM] = {0};
  for (int i = 0; i < n; i++) {
    unsigned o = use_offs ? u8() % 8 : 7;
    offs[i] = o == 0 ? SIZE_MAX : o == 1 ? SIZE_MAX / 8 + 1 : o == 2 ? u8() : o < 5 ? 1 : 0;
    v = u8() % 8;
    shadow_buf *p = NULL;
    if (v < 5 && cm->state == C_LIVE && total <= 1 << 16 && offs[i] < 256) { /* one that fits */
      size_t need = (size_t)total + offs[i] * (esz ? esz : 4);
      int dev = cm->devs[i], j = v < 4 ? fit_buf(e, dev, need, u8()) : -1;
      if (j < 0) { /* make one: on the member's device, or GPAR_HOST for the host CPU */
        int hdev = es[e].info[dev].backend_id == GPAR_BACKEND_HOST && u8() % 2 ? GPAR_HOST : dev;
        size_t bytes = (need ? need : 1) + u8() % 16;
        gpar_buffer nb = {0};
        int st = gpar_buffer_create(es[e].e, hdev, bytes, &nb);
        check("gpar_buffer_create (member)", st, 0, es[e].may_fail ? S(GPAR_EFAULT) : 0);
        if (st == GPAR_OK) j = buf_add(nb, e, hdev, bytes);
      }
      p = j >= 0 ? &hs[j] : pick();
    } else if (v == 5 && i) { /* shares an earlier member's buffer */
      p = NULL;
      int k = (int)(u8() % (unsigned)i);
      mb[i] = mb[k];
      idx[i] = idx[k];
    } else {
      p = pick();
    }
    if (p) {
      mb[i] = *p;
      uintptr_t at = (uintptr_t)p, lo = (uintptr_t)hs; /* a model slot, or pick()'s forged one */
      idx[i] = at >= lo && at < lo + sizeof hs ? (int)((at - lo) / sizeof hs[0]) : -1;
    }
    bufs[i] = mb[i].h;
  }
  for (int i = 0; i < n; i++) /* a later member's buffer may have evicted (released) this one */
    if (idx[i] >= 0) {
      if (same(hs[idx[i]].h, mb[i].h)) mb[i] = hs[idx[i]];
      else if (mb[i].state == H_LIVE) mb[i].state = H_RELEASED;
    }
  smask must = 0, may = 0;
  if (!live) {
    must = cm->state == C_ORPHAN ? S(GPAR_EINVAL) | S(GPAR_ESHUTDOWN) : S(GPAR_EINVAL);
  } else if (null_bufs || count == 0 || !esz || ((kind == AR || kind == RS) && op != GPAR_SUM && op != GPAR_MAX && op != GPAR_MIN) ||
             (kind == BC && (root < 0 || root >= n))) {
    must = S(GPAR_EINVAL);
  } else if (total > SIZE_MAX) {
    must = S(GPAR_ERANGE);
  } else {
    for (int i = 0; i < n; i++) {
      const shadow_buf *b = &mb[i];
      smask me = 0;
      if (b->state != H_LIVE) me = S_BADH;
      else if (b->eng != e) me = S(GPAR_EENGINE);
      else if (!member_fits(e, cm->devs[i], b)) me = S(GPAR_ENODEV);
      else if ((unsigned __int128)offs[i] * esz + total > b->bytes) me = S(GPAR_ERANGE);
      for (int j = 0; j < i; j++) /* one buffer for two members: GPAR_EALIAS, or the wrong device for one */
        if (same(mb[j].h, b->h)) me |= S(GPAR_EALIAS) | S(GPAR_ENODEV);
      must |= me;
    }
  }
  if (live) {
    if (cm->state == C_DOOMED) may |= S(GPAR_EINVAL) | S_BADH; /* gone before or during the call */
    if (!must) may |= async_may(e);
  }
  if (live && e == rec_eng) { /* collectives are not recorded: refused before their arguments */
    must = S(GPAR_ERECORDING);
    may = 0;
  }
  /* Known data: written just before, read back just after (nothing else may touch it). */
  static unsigned char data[MAXM][4096];
  int verify = !must && cm->state == C_LIVE && e != rec_eng && !es[e].may_fail && !es[e].nested &&
               total <= sizeof data[0] && u8() % 4 == 0 && (dt == GPAR_FLOAT || dt == GPAR_DOUBLE);
  unsigned seed = verify ? u8() : 0;
  size_t nel = (size_t)count * blocks;
  for (int i = 0; i < n && verify; i++) {
    for (size_t k = 0; k < nel; k++) coll_put(data[i], k, esz == 8, coll_val(seed, i, k));
    check("gpar_write (collective data)", gpar_write(bufs[i], offs[i] * esz, data[i], (size_t)total), 0, 0);
  }
  const size_t *po = use_offs ? offs : NULL;
  const gpar_buffer *pb = null_bufs ? NULL : bufs;
  int st = kind == AR ? gpar_allreduce(cm->c, pb, po, count, dt, op)
           : kind == BC ? gpar_broadcast(cm->c, pb, po, count, dt, root)
           : kind == RS ? gpar_reduce_scatter(cm->c, pb, po, count, dt, op)
                        : gpar_all_gather(cm->c, pb, po, count, dt);
  check_id(names[kind], st, must, may, cm->c.id);
  /* gone: an orphan after any call (today's GPAR_ESHUTDOWN destroys it), a doomed one refused
   * with GPAR_EINVAL for valid arguments */
  if (st != GPAR_OK && (cm->state == C_ORPHAN || (cm->state == C_DOOMED && !must && st == GPAR_EINVAL))) cm->state = C_DESTROYED;
  if (st != GPAR_OK || !verify) return;
  static unsigned char got[4096];
  for (int i = 0; i < n; i++) {
    check("gpar_read (collective result)", gpar_read(bufs[i], offs[i] * esz, got, (size_t)total), 0, 0);
    for (size_t k = 0; k < nel; k++) {
      size_t blk = k / count, at = k % count;
      double want;
      if (kind == AR || (kind == RS && blk == (size_t)i)) {
        want = coll_val(seed, 0, k);
        for (int j = 1; j < n; j++) want = coll_red(op, want, coll_val(seed, j, k));
      } else if (kind == BC) {
        want = coll_val(seed, root, k);
      } else if (kind == AG) {
        want = coll_val(seed, (int)blk, k);
      } else {
        continue; /* reduce_scatter: other members' blocks are unspecified */
      }
      if (coll_get(got, k, esz == 8) != want) {
        fprintf(stderr, "api_fuzz: %s over %d members, %zu x %zu elements: member %d element %zu (block %zu, %zu) is %g, not %g\n",
                names[kind], n, blocks, count, i, k, blk, at, coll_get(got, k, esz == 8), want);
        fail(names[kind], st, "wrong result");
      }
    }
  }
}

/* ------------------------------------------------------------------ kernels */

/* Kernel texts: args gives each parameter, 's' a u32 scalar, a digit a buffer of elements of that
 * many bytes; every launch the model accepts keeps its work-items inside their buffers (n is
 * at most what each buffer holds past its offset). The last ones do not parse (GPAR_EINVAL). */
static const struct ktext {
  const char *name, *params, *body, *args;
  int group; /* a barrier and group-local memory: the host device refuses it (GPAR_ENOTSUP) */
} ktexts[] = {
    {"fz_fill", "u32 n, out u32 *y", "gpar_u64 i = GPAR_GLOBAL_ID(0); if (i < n) y[i] = (gpar_u32)i * 3u;", "s4", 0},
    {"fz_xor", "u32 n, in u8 *x, inout u8 *y", "gpar_u64 i = GPAR_GLOBAL_ID(0); if (i < n) y[i] ^= x[i];", "s11", 0},
    {"fz_group", "u32 n, inout u32 *y",
     "GPAR_LOCAL(gpar_u32, t, 64);\ngpar_u32 l = GPAR_LOCAL_ID(0);\nif (l < 64) t[l] = l;\nGPAR_BARRIER();\n"
     "if (l == 0 && GPAR_GROUP_ID(0) + GPAR_GROUP_ID(1) + GPAR_GROUP_ID(2) == 0 && n > 0) y[0] += t[0] + 1u;",
     "s4", 1},
    {"fz_none", "", "", "", 0},
    {"fz_bad", "u32 n, f32", "", NULL, 0},
    {"fz_bad2", "in f32 x", "", NULL, 0},
    {"2bad", "", "", NULL, 0},
    {"fz_kw", "u32 int", "", NULL, 0},
};
#define NKTEXTS (int)(sizeof ktexts / sizeof ktexts[0])

static void do_kernel_create(void) {
  int e = pick_eng();
  if (e < 0) return;
  int t = (int)(u8() % NKTEXTS);
  gpar_kernel k = {0x5555};
  int st = gpar_kernel_create(es[e].e, ktexts[t].name, ktexts[t].params, ktexts[t].body, NULL, &k);
  check("gpar_kernel_create", st, !es[e].live ? S(GPAR_ESHUTDOWN) : !ktexts[t].args ? S(GPAR_EINVAL) : 0, 0);
  if (st != GPAR_OK) {
    if (k.id) fail("gpar_kernel_create", st, "*kernel not the null handle after a failure");
    return;
  }
  for (int i = 0; i < nk; i++)
    if (kk[i].state != K_NONE && kk[i].k.id == k.id) fail("gpar_kernel_create", st, "a kernel handle came back");
  int slot = nk < MAXK ? nk++ : (int)(u8() % MAXK);
  if (kk[slot].state == K_LIVE) check_id("gpar_kernel_release (evict)", gpar_kernel_release(kk[slot].k), 0, 0, kk[slot].k.id);
  kk[slot] = (shadow_kernel){k, K_LIVE, e, t};
}

/* A kernel handle: a model slot (live or stale), or forged (0, garbage, a known one with a bit
 * off or of its slot's next serial), which may hit a live one. */
static shadow_kernel *pick_kernel(void) {
  static shadow_kernel f;
  unsigned v = u8();
  if (v % 8 != 7 && nk) return &kk[v % (unsigned)nk];
  f = (shadow_kernel){{0}, K_STALE, -1, 0};
  unsigned w = u8() % 4;
  f.k.id = w == 1 ? (uint64_t)u16() << 24 | u16() : w >= 2 && nk ? kk[u8() % (unsigned)nk].k.id : 0;
  if (w == 2) f.k.id ^= 1ull << (u8() % 64);
  if (w == 3) f.k.id += 1ull << 20;
  for (int i = 0; i < nk; i++)
    if (kk[i].state != K_NONE && kk[i].k.id == f.k.id) return &kk[i];
  return &f;
}

/* The host device's index in engine e. */
static int host_index(int e) {
  for (int d = 0; d < es[e].ndev; d++)
    if (es[e].info[d].backend_id == GPAR_BACKEND_HOST) return d;
  return 0;
}

/* A launch on flat device dev takes buffer b: b is on dev, or GPAR_HOST memory on the host or CUDA. */
static int launch_takes(int e, int dev, const shadow_buf *b) {
  int be = es[e].info[dev].backend_id;
  return b->dev == dev || (b->dev == GPAR_HOST && (be == GPAR_BACKEND_HOST || be == GPAR_BACKEND_CUDA));
}

/* The arguments of a launch of t on dev (flat; -1: no such device): each buffer from the model
 * with an offset that may be past its end or misaligned, n at most what every buffer holds (when
 * the model accepts them), sometimes a wrong kind or a missing one. Errors into *must. */
static int kernel_args(const struct ktext *t, int e, int dev, gpar_arg *a, smask *must, smask *may) {
  int na = (int)strlen(t->args);
  uint64_t room = UINT32_MAX;
  for (int i = 1; i < na; i++) {
    shadow_buf *b = pick();
    size_t esz = (size_t)(t->args[i] - '0'), v = u8() % 8;
    size_t off = v == 0 ? b->bytes : v == 1 ? b->bytes + esz : v == 2 ? 1 : v == 3 ? esz : 0;
    a[i] = gpar_arg_buffer(b->h, off);
    if (b->state != H_LIVE) *must |= S_BADH;
    else if (b->eng != e) *must |= S(GPAR_EENGINE);
    else if (off > b->bytes) *must |= S(GPAR_ERANGE);
    else if (off % esz) *must |= S(GPAR_EINVAL);
    else if (dev >= 0 && !launch_takes(e, dev, b)) *must |= S(GPAR_EINVAL);
    else if ((b->bytes - off) / esz < room) room = (b->bytes - off) / esz;
    if (b->state == H_LIVE && b->dev == GPAR_HOST && dev >= 0 && es[e].info[dev].backend_id == GPAR_BACKEND_CUDA)
      *may |= S(GPAR_EINVAL); /* CUDA may not reach this pinned block (its registration refused) */
  }
  if (na) {
    unsigned v = u8() % 4;
    a[0] = gpar_arg_u32(v == 0 ? 0 : v == 1 ? (uint32_t)room : (uint32_t)(room ? u8() % (room + 1) : 0));
  }
  unsigned m = u8() % 16;
  if (m == 0 && na) { /* one argument of the wrong kind */
    int i = (int)(u8() % (unsigned)na);
    a[i] = i == 0 && u8() % 2 ? gpar_arg_f64(1.0) : i == 0 ? gpar_arg_u64(1) : gpar_arg_u32(1);
    *must |= S(GPAR_EINVAL);
  } else if (m == 1) { /* one too many, or one short */
    na += na && u8() % 2 ? -1 : 1;
    a[na > 0 ? na - 1 : 0] = gpar_arg_u32(0);
    *must |= S(GPAR_EINVAL);
  }
  return na;
}

/* Launch a kernel of the model: statuses predicted from the handle, the device, the grid, the
 * arguments and (when all those are right) the kernel's limits there, which gpar_kernel_info
 * reports (it builds the kernel first: the host refuses a group-memory kernel). */
static void do_kernel_launch(void) {
  static const uint32_t sizes[] = {0, 1, 8, 32, 64, 256, 1024, 2048}, groups[] = {0, 1, 2, 5};
  shadow_kernel *k = pick_kernel();
  int e = k->state == K_LIVE ? k->eng : -1;
  int dev = (int)(u8() % (unsigned)(es[e < 0 ? 0 : e].ndev + 2)) - 1; /* GPAR_HOST .. one past the end */
  int ldev = e < 0 ? -1 : dev == GPAR_HOST ? host_index(e) : dev < es[e].ndev ? dev : -1;
  gpar_grid g = {{groups[u8() % 4], u8() % 3, u8() % 3}, {sizes[u8() % 8], u8() % 3, u8() % 3}};
  int null_grid = u8() % 16 == 0;
  gpar_arg a[8];
  smask must = e < 0 ? S(GPAR_EINVAL) : 0, may = e >= 0 ? async_may(e) : 0;
  if (!must && ldev < 0) must |= S(GPAR_ENODEV);
  if (!must && (null_grid || !g.group_size[0])) must |= S(GPAR_EINVAL);
  const struct ktext *t = &ktexts[k->state == K_NONE ? 0 : k->text];
  int na = kernel_args(t, e, ldev, a, &must, &may);
  if (e >= 0 && es[e].build_fault) may |= S(GPAR_EFAULT);
  if (!must && g.groups[0]) {
    gpar_kernel_props p;
    int st = gpar_kernel_info(k->k, dev, &p);
    int host = es[e].info[ldev].backend_id == GPAR_BACKEND_HOST;
    check_id("gpar_kernel_info (before a launch)", st, host && t->group ? S(GPAR_ENOTSUP) : 0, may, k->k.id);
    uint64_t items = (uint64_t)g.group_size[0] * (g.group_size[1] ? g.group_size[1] : 1) * (g.group_size[2] ? g.group_size[2] : 1);
    if (st == GPAR_ENOTSUP) must |= S(GPAR_ENOTSUP);
    else if (st == GPAR_OK && (items > p.max_group_size || g.group_size[0] > p.max_group_dims[0] ||
                               g.group_size[1] > p.max_group_dims[1] || g.group_size[2] > p.max_group_dims[2]))
      must |= S(GPAR_EINVAL);
  }
  int st = gpar_kernel_launch(k->k, dev, null_grid ? NULL : &g, a, na);
  check_id("gpar_kernel_launch", st, must, may, k->k.id);
  if (st == GPAR_OK && ldev >= 0 && es[e].info[ldev].backend_id == GPAR_BACKEND_HOST) es[e].nested = 1; /* helper ops */
}

/* Build, describe, read the log or source of, or release a kernel of the model. */
static void do_kernel_call(void) {
  shadow_kernel *k = pick_kernel();
  int e = k->state == K_LIVE ? k->eng : -1, what = (int)(u8() % 5);
  int dev = (int)(u8() % (unsigned)(es[e < 0 ? 0 : e].ndev + 2)) - 1;
  int ldev = e < 0 ? -1 : dev == GPAR_HOST ? host_index(e) : dev < es[e].ndev ? dev : -1;
  smask must = e < 0 ? S(GPAR_EINVAL) : what < 4 && ldev < 0 ? S(GPAR_ENODEV) : 0;
  smask may = e >= 0 && es[e].build_fault ? S(GPAR_EFAULT) : 0;
  if (!must && what != 2 && what != 4 && es[e].info[ldev].backend_id == GPAR_BACKEND_HOST && ktexts[k->text].group)
    must |= S(GPAR_ENOTSUP); /* build, info and source: the host cannot run it */
  char buf[256];
  size_t len = 7;
  gpar_kernel_props p;
  int st;
  switch (what) {
  case 0: st = gpar_kernel_build(k->k, dev); break;
  case 1: st = gpar_kernel_info(k->k, dev, &p); break;
  case 2: st = gpar_kernel_log(k->k, dev, buf, u8() % 2 ? sizeof buf : 0, u8() % 2 ? &len : NULL); break;
  case 3: st = gpar_kernel_source(k->k, dev, buf, sizeof buf, &len), may = 0; break;
  default: st = gpar_kernel_release(k->k), may = 0; break;
  }
  static const char *const names[] = {"gpar_kernel_build", "gpar_kernel_info", "gpar_kernel_log", "gpar_kernel_source",
                                      "gpar_kernel_release"};
  check_id(names[what], st, must, may, k->k.id);
  if (what == 4 && st == GPAR_OK) k->state = K_STALE;
}

/* ------------------------------------------------------------------ one buffer, with a host oracle */

/* Array ops (unary, binary, broadcast, range and matrix reductions), a map and BLAS-1 (AXPY,
 * DOT, SCAL) with all their operands in ONE fresh buffer, at offsets that make them equal (in
 * place), overlapping or disjoint. The model (fz_operands, blas_predict) predicts the status: an
 * overlap the call does not allow is refused with GPAR_EALIAS, the buffer as written and nothing
 * enqueued (ops_submitted unchanged). The oracle: a call accepted on a device that is not the
 * host's runs again on the host device over an identical copy (the host backend's plain C,
 * OpenBLAS), and after a wait both buffers must hold the same elements, all of them (ob_same):
 * bitwise but for NaN payloads, the sign of a zero out of max or min (unspecified, gpar.h) and
 * OB_ULPS for exp, log, tanh and sigmoid (OpenCL's exp and log are within 3 ulps, tanh 5, not
 * correctly rounded; glibc within 1). The data are multiples of 1/2 in [-8, 8] (some inputs add
 * NaN, infinities and -0), so sums, products, quotients of the basic ops and axpy are exact or
 * correctly rounded in any order: reductions and BLAS compare bitwise too. do_array's first byte
 * from OB_SEL on picks this; at most OB_DEV_MAX device runs per input (each may build kernels).
 * It found array-gpu-alias (the list at the top), fixed since. */
#define OB_DEV_MAX 4
#ifndef OB_ULPS
#define OB_ULPS 8
#endif
#define OB_MAXEL (1 << 16)
enum { OB_UNARY, OB_BINARY, OB_BCAST, OB_RANGE, OB_MATRIX, OB_MAP, OB_AXPY, OB_DOT, OB_SCAL, OB_KINDS };
static const char *const ob_names[OB_KINDS] = {
    "gpar_unary (one buffer)",        "gpar_binary (one buffer)",        "gpar_binary_bcast (one buffer)",
    "gpar_reduce_range (one buffer)", "gpar_reduce_matrix (one buffer)", "gpar_map_launch (one buffer)",
    "gpar_saxpy/daxpy (one buffer)",  "gpar_sdot/ddot (one buffer)",     "gpar_sscal/dscal (one buffer)"};

/* A call: m the count (rows), n the columns; off and len each operand's element offset and
 * extent, in the order of the call's arguments; out: which of them it writes. */
typedef struct ob_call {
  int kind, dt, op, axis, m, n, ld[2], inc[2], nop, out[3], specials;
  size_t off[3], len[3], nel;
  unsigned seed;
} ob_call;
static int ob_dev_runs; /* device runs of this input */

static int ob_blas(const ob_call *c) { return c->kind >= OB_AXPY; }

/* Operand extents of c's kind and sizes. */
static void ob_extents(ob_call *c) {
  size_t mat0 = (size_t)(c->n - 1) * (size_t)c->ld[0] + (size_t)c->m, m = (size_t)c->m;
  size_t vec0 = (m - 1) * (size_t)c->inc[0] + 1, vec1 = (m - 1) * (size_t)c->inc[1] + 1;
  memset(c->out, 0, sizeof c->out);
  switch (c->kind) {
  case OB_UNARY:
  case OB_MAP: c->nop = 2, c->len[0] = c->len[1] = m; break;
  case OB_BINARY: c->nop = 3, c->len[0] = c->len[1] = c->len[2] = m; break;
  case OB_BCAST:
    c->nop = 3, c->len[0] = mat0, c->len[1] = c->axis == GPAR_PER_ROW ? m : (size_t)c->n;
    c->len[2] = (size_t)(c->n - 1) * (size_t)c->ld[1] + m;
    break;
  case OB_RANGE: c->nop = 2, c->len[0] = m, c->len[1] = 1; break;
  case OB_MATRIX: c->nop = 2, c->len[0] = mat0, c->len[1] = c->axis == GPAR_PER_ROW ? m : (size_t)c->n; break;
  case OB_AXPY: c->nop = 2, c->len[0] = vec0, c->len[1] = vec1; break;
  case OB_DOT: c->nop = 3, c->len[0] = vec0, c->len[1] = vec1, c->len[2] = 1; break;
  default: c->nop = 1, c->len[0] = vec0;
  }
  c->out[c->kind == OB_SCAL ? 0 : c->nop - 1] = 1;
}

/* Offsets: the first operand a few elements in; each next one at the first's offset (equal), a
 * shift into it (overlapping when shorter than its extent), just after the one before, or after
 * all so far (disjoint). The buffer ends a few elements after the last. */
static void ob_layout(ob_call *c) {
  size_t top = 0;
  c->off[0] = u8() % 4;
  for (int i = 0; i < c->nop; i++) {
    if (i) {
      unsigned r = u8() % 4;
      size_t shift = 1 + u16() % (c->len[0] > 1 ? c->len[0] - 1 : 1);
      c->off[i] = r == 0   ? c->off[0]
                  : r == 1 ? c->off[0] + shift
                  : r == 2 ? c->off[i - 1] + c->len[i - 1]
                           : top + u8() % 4;
    }
    if (c->off[i] + c->len[i] > top) top = c->off[i] + c->len[i];
  }
  c->nel = top + 1 + u8() % 4;
}

/* Decode a call of kind sel % OB_KINDS: types, ops, sizes, then the layout. */
static void ob_pick(ob_call *c, unsigned sel) {
  static const int dts[] = {GPAR_FLOAT,  GPAR_FLOAT, GPAR_FLOAT,    GPAR_FLOAT,
                            GPAR_DOUBLE, GPAR_HALF,  GPAR_BFLOAT16, GPAR_FLOAT};
  static const int counts[] = {1, 2, 7, 64, 255, 1000, 9000, 33}, rows[] = {1, 2, 3, 7, 16, 33}, cols[] = {1, 2, 5, 40};
  memset(c, 0, sizeof *c);
  c->kind = (int)(sel % OB_KINDS);
  unsigned t = u8();
  c->dt = c->kind == OB_MAP ? GPAR_FLOAT : ob_blas(c) ? (t % 4 ? GPAR_FLOAT : GPAR_DOUBLE) : dts[t % 8];
  c->op = (int)(u8() % (c->kind == OB_UNARY ? 8 : c->kind <= OB_BCAST ? 6 : 3));
  c->axis = (int)(u8() % 2);
  c->inc[0] = u8() % 4 ? 1 : 2, c->inc[1] = u8() % 4 ? 1 : 2;
  c->seed = u16();
  c->specials = u8() % 4 == 0;
  if (c->kind == OB_BCAST || c->kind == OB_MATRIX) {
    c->m = rows[u8() % 6], c->n = cols[u8() % 4];
    c->ld[0] = c->m + (int)(u8() % 3), c->ld[1] = c->kind == OB_BCAST && u8() % 2 ? c->ld[0] + 1 : c->ld[0];
  } else {
    c->m = counts[u8() % 8], c->n = 1, c->ld[0] = c->ld[1] = c->m;
  }
  ob_extents(c);
  ob_layout(c);
}

/* The statuses the call must return (the model's, operand by operand); b is the one buffer. */
static smask ob_predict(const ob_call *c, const shadow_buf *b) {
  fz_aopnd o[3];
  int home, dt = c->dt;
  const size_t es = fz_es(dt);
  if (ob_blas(c)) { /* blas_predict's order: the output first */
    fz_opnd p[3];
    const int y = c->kind == OB_SCAL ? 0 : c->nop - 1;
    p[0] = (fz_opnd){b, c->off[y], es, 1, c->kind == OB_DOT ? 1 : c->m, c->kind == OB_DOT ? 1 : c->inc[y], 0, 1, 1};
    for (int i = 0, k = 1; i < c->nop; i++)
      if (i != y) p[k++] = (fz_opnd){b, c->off[i], es, 1, c->m, c->inc[i], 0, 1, 0};
    return blas_predict(p, c->nop, 0);
  }
  for (int i = 0; i < c->nop; i++) {
    o[i] = fz_range(b, c->off[i], c->len[i], dt, c->out[i]);
    o[i].inplace = c->kind <= OB_BCAST || c->kind == OB_MAP;
  }
  if (c->kind == OB_BCAST || c->kind == OB_MATRIX) o[0] = fz_matrix(b, c->off[0], c->m, c->n, c->ld[0], dt, 0);
  if (c->kind == OB_BCAST) {
    o[1].inplace = 0;
    o[2] = fz_matrix(b, c->off[2], c->m, c->n, c->ld[1], dt, 1);
    o[0].inplace = o[2].inplace = 1;
  }
  if (c->kind == OB_MAP) o[0].tag = o[1].tag = 101; /* (do_map_launch's tags: 100 + the element type) */
  return fz_operands(o, c->nop, &home);
}

/* Issue c over buffer h (map: the one-buffer map, for OB_MAP). */
static int ob_issue(const ob_call *c, gpar_buffer h, gpar_map map) {
  const size_t *o = c->off;
  const int dbl = c->dt == GPAR_DOUBLE, *inc = c->inc;
  const gpar_dtype dt = (gpar_dtype)c->dt;
  switch (c->kind) {
  case OB_UNARY: return gpar_unary((gpar_unop)c->op, dt, (size_t)c->m, h, o[0], h, o[1]);
  case OB_BINARY: return gpar_binary((gpar_binop)c->op, dt, (size_t)c->m, h, o[0], h, o[1], h, o[2]);
  case OB_BCAST:
    return gpar_binary_bcast((gpar_binop)c->op, dt, c->m, c->n, h, o[0], c->ld[0], h, o[1], (gpar_axis)c->axis, h, o[2],
                             c->ld[1]);
  case OB_RANGE: return gpar_reduce_range((gpar_redop)c->op, dt, (size_t)c->m, h, o[0], h, o[1]);
  case OB_MATRIX:
    return gpar_reduce_matrix((gpar_redop)c->op, dt, c->m, c->n, h, o[0], c->ld[0], (gpar_axis)c->axis, h, o[1]);
  case OB_MAP: {
    gpar_arg a[3] = {gpar_arg_f32(0.5f), gpar_arg_buffer(h, o[0] * 4), gpar_arg_buffer(h, o[1] * 4)};
    return gpar_map_launch(map, (size_t)c->m, a, 3);
  }
  case OB_AXPY:
    return dbl ? gpar_daxpy(c->m, 1.5, h, o[0], inc[0], h, o[1], inc[1])
               : gpar_saxpy(c->m, 1.5f, h, o[0], inc[0], h, o[1], inc[1]);
  case OB_DOT:
    return dbl ? gpar_ddot(c->m, h, o[0], inc[0], h, o[1], inc[1], h, o[2])
               : gpar_sdot(c->m, h, o[0], inc[0], h, o[1], inc[1], h, o[2]);
  default: return dbl ? gpar_dscal(c->m, 0.5, h, o[0], inc[0]) : gpar_sscal(c->m, 0.5f, h, o[0], inc[0]);
  }
}

/* The buffer's data: multiples of 1/2 in [-8, 8], with c->specials some NaN, infinities, -0. */
static void ob_fill(const ob_call *c, unsigned char *p) {
  uint32_t x = c->seed * 2654435761u + 1;
  for (size_t i = 0; i < c->nel; i++) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    float v = (float)((int)(x % 33) - 16) / 2;
    if (c->specials && (x >> 8) % 16 == 0)
      v = (x >> 12) % 4 == 0 ? NAN : (x >> 12) % 4 == 1 ? INFINITY : (x >> 12) % 4 == 2 ? -INFINITY : -0.f;
    if (c->dt == GPAR_DOUBLE)
      ((double *)(void *)p)[i] = v;
    else if (c->dt == GPAR_FLOAT)
      ((float *)(void *)p)[i] = v;
    else
      ((uint16_t *)(void *)p)[i] = c->dt == GPAR_HALF ? gpar_half_from_float(v) : gpar_bfloat16_from_float(v);
  }
}

/* Element i's bits, and whether they are a NaN or a zero, for c's type. */
static uint64_t ob_bits(const ob_call *c, const unsigned char *p, size_t i, int *nan, int *zero) {
  static const int mant[] = {[GPAR_FLOAT] = 23, [GPAR_DOUBLE] = 52, [GPAR_HALF] = 10, [GPAR_BFLOAT16] = 7};
  const size_t es = fz_es(c->dt);
  uint64_t v = 0;
  memcpy(&v, p + i * es, es); /* (little endian) */
  const int bits = (int)es * 8, mb = mant[c->dt];
  const uint64_t mag = v & ((~0ull >> (64 - bits)) >> 1), inf = ((1ull << (bits - 1 - mb)) - 1) << mb;
  *nan = mag > inf, *zero = mag == 0;
  return v;
}

/* Distance in ulps of two non-NaN elements of es bytes (sign and magnitude mapped to a line). */
static uint64_t ob_ulps(uint64_t a, uint64_t b, size_t es) {
  const int bits = (int)es * 8;
  const uint64_t sign = 1ull << (bits - 1);
  int64_t ka = (int64_t)(a & (sign - 1)), kb = (int64_t)(b & (sign - 1));
  if (a & sign) ka = -ka;
  if (b & sign) kb = -kb;
  return ka > kb ? (uint64_t)(ka - kb) : (uint64_t)(kb - ka);
}

/* The device's elements (got) against the host's (want): fail on the first that differs. */
static void ob_same(const ob_call *c, const unsigned char *got, const unsigned char *want, int dev) {
  const int approx = c->kind == OB_UNARY && c->op >= GPAR_UN_EXP && c->op <= GPAR_UN_SIGMOID;
  const int maxmin = (c->kind == OB_BINARY || c->kind == OB_BCAST)
                         ? c->op >= GPAR_BIN_MAX
                         : (c->kind == OB_RANGE || c->kind == OB_MATRIX) && c->op != GPAR_SUM;
  for (size_t i = 0; i < c->nel; i++) {
    int gn, gz, wn, wz;
    uint64_t g = ob_bits(c, got, i, &gn, &gz), w = ob_bits(c, want, i, &wn, &wz);
    if (g == w || (gn && wn) || (maxmin && gz && wz)) continue;
    if (approx && !gn && !wn && ob_ulps(g, w, fz_es(c->dt)) <= OB_ULPS) continue;
    fprintf(stderr,
            "api_fuzz: %s on device %d (%s): type %d op %d axis %d, m %d n %d ld %d %d inc %d %d, %zu elements,"
            " specials %d, operands at",
            ob_names[c->kind], dev, approx ? "within ulps" : "exact", c->dt, c->op, c->axis, c->m, c->n, c->ld[0],
            c->ld[1], c->inc[0], c->inc[1], c->nel, c->specials);
    for (int k = 0; k < c->nop; k++) fprintf(stderr, " %zu+%zu%s", c->off[k], c->len[k], c->out[k] ? " (out)" : "");
    fprintf(stderr, ": element %zu is %#llx on the device, %#llx on the host\n", i, (unsigned long long)g,
            (unsigned long long)w);
    fail(ob_names[c->kind], GPAR_OK, "the device's result differs from the host's over an identical copy");
  }
}

/* A refused call: the buffer still holds what was written, and no op was submitted. */
static void ob_refused(const ob_call *c, int e, gpar_buffer h, const unsigned char *data, uint64_t before) {
  static unsigned char got[OB_MAXEL * 8];
  gpar_stats s;
  const size_t bytes = c->nel * fz_es(c->dt);
  if (!es[e].nested && gpar_stats_get(es[e].e, &s) == GPAR_OK && s.ops_submitted != before)
    fail(ob_names[c->kind], GPAR_OK, "a refused call submitted an op");
  int st = gpar_read(h, 0, got, bytes);
  check("gpar_read (one buffer, refused)", st, 0, async_may(e));
  if (st == GPAR_OK && !es[e].may_fail && memcmp(got, data, bytes))
    fail(ob_names[c->kind], GPAR_OK, "a refused call changed its buffer");
}

/* An accepted call on device dev (not the host's) over h: the same call on the host device over
 * a copy, a wait on both, then their elements compared. */
static void ob_oracle(const ob_call *c, int e, int dev, gpar_buffer h, gpar_map map, const unsigned char *data) {
  static unsigned char got[OB_MAXEL * 8], want[OB_MAXEL * 8];
  const size_t bytes = c->nel * fz_es(c->dt);
  gpar_buffer r = {0};
  int st = gpar_buffer_create(es[e].e, host_index(e), bytes, &r);
  check("gpar_buffer_create (one buffer, host copy)", st, 0, async_may(e));
  if (st != GPAR_OK) return;
  check("gpar_write (one buffer, host copy)", gpar_write(r, 0, data, bytes), 0, async_may(e));
  check(ob_names[c->kind], ob_issue(c, r, map), 0, async_may(e)); /* (the host device: no ENOTSUP) */
  int ok = !es[e].may_fail;
  st = gpar_wait(h);
  check("gpar_wait (one buffer)", st, 0, async_may(e));
  ok &= st == GPAR_OK;
  st = gpar_wait(r);
  check("gpar_wait (one buffer, host copy)", st, 0, async_may(e));
  ok &= st == GPAR_OK;
  ok &= gpar_read(h, 0, got, bytes) == GPAR_OK && gpar_read(r, 0, want, bytes) == GPAR_OK;
  if (ok) ob_same(c, got, want, dev);
  check("gpar_buffer_release (one buffer, host copy)", gpar_buffer_release(r), 0, 0);
}

/* One call with its operands in one fresh buffer on a device of an engine: see above. */
static void do_onebuf(unsigned sel) {
  static unsigned char data[OB_MAXEL * 8];
  int e = pick_eng();
  ob_call c;
  ob_pick(&c, sel);
  if (e < 0 || !es[e].live || e == rec_eng || c.nel > OB_MAXEL) return;
  int dev = (int)(u8() % (unsigned)es[e].ndev);
  shadow_buf b = {{1, 1}, H_LIVE, e, dev, c.nel * fz_es(c.dt)}; /* (the handle: any, for the model) */
  const smask must = ob_predict(&c, &b);
  const int gpu = !hostmem(&b);
  if (!must && gpu && ob_dev_runs >= OB_DEV_MAX) return;
  int st = gpar_buffer_create(es[e].e, dev, b.bytes, &b.h);
  check("gpar_buffer_create (one buffer)", st, 0, async_may(e));
  if (st != GPAR_OK) return;
  ob_fill(&c, data);
  check("gpar_write (one buffer)", gpar_write(b.h, 0, data, b.bytes), 0, async_may(e));
  gpar_map map = {0};
  if (c.kind == OB_MAP)
    check("gpar_map_create (one buffer)",
          gpar_map_create(es[e].e, "fz_onebuf", "f32 a, in f32 x, inout f32 y", "y = a * x + y", &map), 0, 0);
  gpar_stats s = {0};
  gpar_stats_get(es[e].e, &s);
  st = ob_issue(&c, b.h, map);
  smask may = async_may(e) | (gpu && c.dt == GPAR_DOUBLE ? S(GPAR_ENOTSUP) | S(GPAR_EBUILD) : 0);
  check(ob_names[c.kind], st, must, may | (c.kind == OB_MAP && gpu ? S(GPAR_ENOTSUP) : 0));
  if (st != GPAR_OK && must) ob_refused(&c, e, b.h, data, s.ops_submitted);
  if (st == GPAR_OK && gpu)
    ob_dev_runs++, es[e].arr_kernels |= c.kind <= OB_MATRIX, ob_oracle(&c, e, dev, b.h, map, data);
  if (map.id) check("gpar_map_release (one buffer)", gpar_map_release(map), 0, 0);
  check("gpar_buffer_release (one buffer)", gpar_buffer_release(b.h), 0, 0);
}

static void report_skips(void) {
  if (known_skips) fprintf(stderr, "api_fuzz: %ld calls left out for known defects (GPAR_FUZZ_KNOWN)\n", known_skips);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (safe_shutdown < 0) {
    const char *s = getenv("GPAR_FUZZ_SAFE_SHUTDOWN");
    safe_shutdown = s && *s ? *s != '0' : FUZZ_SAFE_SHUTDOWN_DEFAULT;
  }
  if (trace == 0) {
    atexit(report_skips);
    trace = getenv("GPAR_FUZZ_TRACE") && atoi(getenv("GPAR_FUZZ_TRACE")) ? 1 : -1;
  }
  atomic_store(&nring, 0);
  in_p = cur_data = data;
  in_n = cur_size = size;
  nh = ng = nc = 0;
  nargs = 0;
  rec_eng = -1;
  memset(hs, 0, sizeof hs);
  memset(es, 0, sizeof es);
  memset(gs, 0, sizeof gs);
  memset(cs, 0, sizeof cs);
  memset(kk, 0, sizeof kk);
  nk = 0;
  memset(maps, 0, sizeof maps);
  nmaps = 0;
  ob_dev_runs = 0;
  eng_init(0);
  if (u8() % 4 == 0) eng_init(1);
  for (int op = 0; op < MAXOPS && in_n; op++) {
    switch (u8() % 40) {
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
    case 16: case 17: do_graph_begin(); break;
    case 18: case 19: do_graph_end(); break;
    case 20: case 21: do_graph_call(0); break;
    case 22: do_graph_call(1); break;
    case 23: case 24: do_comm_create(); break;
    case 25: do_comm_info_destroy(1); break;
    case 26: do_comm_info_destroy(0); break;
    case 27: case 28: case 29: case 30: do_coll(); break;
    case 31: do_config(); break;
    case 32: do_kernel_create(); break;
    case 33: case 34: do_kernel_launch(); break;
    case 35: do_kernel_call(); break;
    case 36: case 37: do_array(); break;
    case 38: do_map_create_release(); break;
    case 39: do_map_launch(); break;
    }
  }
  for (int e = 0; e < 2; e++) {
    if (!es[e].live) continue;
    for (const char *const *k = (const char *const[]){"alloc", "pinned", "copy", "gemm", "fill", "user", "event", "completion",
                                                     "register", "capture", "build", NULL};
         *k; k++)
      gpar_fault_inject(es[e].e, *k, 0);
    eng_shutdown(e, 1);
  }
  for (int k = 0; k < nc; k++) comm_drop(&cs[k], "gpar_comm_destroy (after shutdown)"); /* orphans */
  for (int k = 0; k < nc; k++) /* and every communicator the model holds is gone: none outlives the input */
    check_id("gpar_comm_info (destroyed, at the end)", gpar_comm_info(cs[k].c, NULL, NULL, NULL), S(GPAR_EINVAL), 0, cs[k].c.id);
  return 0;
}
