/* faults.c: the thorough fault-injection test: every gpar_fault_inject kind, at positions 1-3 of
 * a chain of ops, on every device and on copies between device pairs; checks where the status lands. */
#include "testutil.h"

#define SZ 4096 /* bytes per buffer: 1024 floats, a 32x32 matrix */
#define MD 32
#define L 4     /* ops in a faulted chain; the fault hits call n = 1..3 of its kind */
#define NW 64   /* words of the unrelated CPU chain */

enum { K_ALLOC, K_PINNED, K_COPY, K_GEMM, K_FILL, K_USER, K_EVENT, K_COMPLETION, NK };
static const char *const kname[NK] = {"alloc", "pinned", "copy", "gemm", "fill", "user", "event", "completion"};

static gpar_engine *eng;
static int ndev, cpu;
static uint64_t rs;
static tu_devinfo *infos;
static int (*armed)[NK];    /* faults armed, per device and kind */
static int (*observed)[NK]; /* ... and seen where expected */

static gpar_buffer mk(int dev, size_t bytes) { return tu_buffer(eng, dev, bytes); }

static int hostmem(int dev) { return dev == GPAR_HOST || infos[dev].backend_id == GPAR_BACKEND_HOST; }

static void randfill(unsigned char *p, size_t n) {
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)tu_rand(&rs);
}


/* Direct copy from device a to b (else it goes through pinned staging: two copy calls). */
static int copy_legs(int a, int b) {
  if (a == b || hostmem(a) || hostmem(b)) return 1;
  return infos[a].backend_id == infos[b].backend_id && (infos[a].peer_mask >> b & 1) ? 1 : 2;
}

/* Counters that must come back to their baseline after every case. */
typedef struct base {
  gpar_stats st;
} base;
static void base_get(base *b) { gpar_stats_get(eng, &b->st); }
static int base_back(const base *b, const char *name) {
  gpar_stats now;
  int wst = gpar_wait_all(eng);
  gpar_stats_get(eng, &now);
  int r = ok(wst == GPAR_OK && now.buffers_live == b->st.buffers_live && now.events_live == b->st.events_live &&
                 now.ops_in_flight == 0 && now.ops_completed == now.ops_submitted,
             "%s: no leak (buffers live %llu, base %llu; events live %llu, base %llu; in flight %llu)", name,
             (unsigned long long)now.buffers_live, (unsigned long long)b->st.buffers_live,
             (unsigned long long)now.events_live, (unsigned long long)b->st.events_live,
             (unsigned long long)now.ops_in_flight);
  if (!r && wst != GPAR_OK) diag("  final wait_all: %s (%s)", gpar_status_name(wst), gpar_last_error());
  return r;
}

/* ------------------------------------------------------------ the unrelated CPU chain */

/* Three ops on CPU-device buffers, submitted between the faulted ops; none uses the armed kind:
 * user functions, or (when user functions are armed) a fill and two sgemms. */
typedef struct unrel {
  int user_armed;
  gpar_buffer u[4];
  uint32_t want[4][NW];
  struct uarg {
    uint32_t *in, *out;
    int i;
  } args[4];
} unrel;

static int unrel_fn(const gpar_native *nat, void *arg) {
  struct uarg *a = arg;
  (void)nat;
  for (int j = 0; j < NW; j++) a->out[j] = a->in[j] * 3u + 1u + (uint32_t)a->i;
  return GPAR_OK;
}

static void unrel_setup(unrel *x, int user_armed) {
  memset(x, 0, sizeof *x);
  x->user_armed = user_armed;
  for (int i = 0; i < 4; i++) x->u[i] = mk(cpu, NW * 4);
  if (user_armed) { /* u0 = 2 I (8x8 floats); u1 = fill 0x3f; u2 = u1 u0; u3 = u2 u0 */
    float *m = (float *)x->want[0];
    memset(m, 0, sizeof x->want[0]);
    for (int i = 0; i < 8; i++) m[i * 9] = 2.f;
    float f;
    uint32_t bits = 0x3f3f3f3fu;
    memcpy(&f, &bits, 4);
    for (int j = 0; j < NW; j++) ((float *)x->want[1])[j] = f, ((float *)x->want[2])[j] = 2 * f,
                                 ((float *)x->want[3])[j] = 4 * f;
  } else {
    for (int j = 0; j < NW; j++) x->want[0][j] = (uint32_t)tu_rand(&rs);
    for (int i = 1; i < 4; i++)
      for (int j = 0; j < NW; j++) x->want[i][j] = x->want[i - 1][j] * 3u + 1u + (uint32_t)i;
  }
  gpar_write(x->u[0], 0, x->want[0], NW * 4);
  for (int i = 1; i < 4; i++) gpar_fill(x->u[i], 0, NW * 4, 0x99);
}

static int unrel_step(unrel *x, int i) {
  if (i < 1 || i > 3) return GPAR_OK;
  if (x->user_armed) {
    if (i == 1) return gpar_fill(x->u[1], 0, NW * 4, 0x3f);
    return gpar_sgemm(GPAR_NO_TRANS, GPAR_NO_TRANS, 8, 8, 8, 1.f, x->u[i - 1], 0, 8, x->u[0], 0, 8, 0.f, x->u[i],
                      0, 8);
  }
  struct uarg *a = &x->args[i];
  a->in = gpar_buffer_host_ptr(x->u[i - 1]);
  a->out = gpar_buffer_host_ptr(x->u[i]);
  a->i = i;
  return gpar_submit(eng, cpu, unrel_fn, a, &x->u[i - 1], 1, &x->u[i], 1);
}

/* Wait for the chain, compare, release. 1 when every step completed with the right data. */
static int unrel_check(unrel *x, char *why, size_t whylen) {
  int good = 1;
  for (int i = 1; i < 4 && good; i++) {
    int st = gpar_wait(x->u[i]);
    const uint32_t *p = gpar_buffer_host_ptr(x->u[i]);
    if (st != GPAR_OK) {
      snprintf(why, whylen, "unrelated step %d: %s", i, gpar_status_name(st));
      good = 0;
    } else if (!p || memcmp(p, x->want[i], NW * 4)) {
      snprintf(why, whylen, "unrelated step %d: wrong data", i);
      good = 0;
    }
  }
  for (int i = 0; i < 4; i++) gpar_buffer_release(x->u[i]);
  return good;
}

/* ------------------------------------------------------------ a chain of ops of one kind */

typedef struct rarg {
  unsigned char *out;
  atomic_int ran;
} rarg;

/* Reader of X[i] on the CPU: marks G[i] and counts its runs. */
static int reader_fn(const gpar_native *nat, void *arg) {
  rarg *a = arg;
  (void)nat;
  memset(a->out, 0x11, SZ);
  atomic_fetch_add(&a->ran, 1);
  return GPAR_OK;
}

typedef struct carg {
  const unsigned char *in;
  unsigned char *out; /* NULL on a GPU: the function enqueues nothing */
  atomic_int ran;
} carg;

/* Chain step of kind "user": X[i] = X[i-1] + 1 (bytewise) on the CPU; nothing on a GPU. */
static int chain_fn(const gpar_native *nat, void *arg) {
  carg *a = arg;
  (void)nat;
  if (a->out)
    for (int j = 0; j < SZ; j++) a->out[j] = (unsigned char)(a->in[j] + 1);
  atomic_fetch_add(&a->ran, 1);
  return GPAR_OK;
}

/* Step i reads X[i-1] and writes X[i] with one op of `kind` (copy, gemm, user; event and
 * completion use copies). X[i] lives on d (even i) or e (odd i; e != d only for copies).
 * Each X[i] has a reader writing G[i] on the CPU: a user function, or a copy when user
 * functions are armed. An unrelated CPU chain and (except for event/completion) an unrelated op
 * on d run meanwhile. The fault hits call n of the kind, i.e. step s of the chain. */
static void chain_case(int d, int e, int kind, int n) {
  static unsigned char expect[L + 1][SZ], got[SZ];
  static rarg ra[L + 1];
  static carg ca[L + 1];
  char name[160], why[200] = "";
  int devs[L + 1], legs[L + 1];
  gpar_buffer X[L + 1], G[L + 1], B = {0}, V = {0};
  base b0;
  unrel un;
  int user_armed = kind == K_USER, on_d = kind != K_EVENT && kind != K_COMPLETION;
  if (e != d)
    snprintf(name, sizeof name, "dev %d <-> dev %d: 'copy' fault at call %d of a chain of %d copies", d, e, n, L);
  else
    snprintf(name, sizeof name, "dev %d: '%s' fault at call %d of a chain of %d", d, kname[kind], n, L);
  base_get(&b0);
  for (int i = 0; i <= L; i++) {
    devs[i] = (i & 1) ? e : d;
    legs[i] = i ? (kind == K_COPY ? copy_legs(devs[i - 1], devs[i]) : 1) : 0;
    X[i] = mk(devs[i], SZ);
    G[i] = mk(cpu, SZ);
    atomic_store(&ra[i].ran, 0);
    atomic_store(&ca[i].ran, 0);
  }
  /* contents before arming: X0 known, the rest sentinels; G all 0x77 */
  if (kind == K_GEMM) {
    float *f = (float *)expect[0];
    for (int j = 0; j < MD * MD; j++) f[j] = (float)((int)(tu_rand(&rs) % 9) - 4);
    float two[MD * MD];
    memset(two, 0, sizeof two);
    for (int j = 0; j < MD; j++) two[j * (MD + 1)] = 2.f;
    B = mk(d, SZ);
    gpar_write(B, 0, two, SZ);
  } else {
    randfill(expect[0], SZ);
  }
  gpar_write(X[0], 0, expect[0], SZ);
  for (int i = 1; i <= L; i++) {
    gpar_fill(X[i], 0, SZ, (unsigned char)(0xa0 + i));
    gpar_fill(G[i], 0, SZ, 0x77);
    if (kind == K_COPY || kind == K_EVENT || kind == K_COMPLETION) {
      memcpy(expect[i], expect[i - 1], SZ);
    } else if (kind == K_GEMM) {
      for (int j = 0; j < MD * MD; j++) ((float *)expect[i])[j] = 2.f * ((float *)expect[i - 1])[j];
    } else if (hostmem(d)) { /* user, on the CPU */
      for (int j = 0; j < SZ; j++) expect[i][j] = (unsigned char)(expect[i - 1][j] + 1);
    } else { /* user, on a GPU: the function changes nothing */
      memset(expect[i], 0xa0 + i, SZ);
    }
  }
  if (on_d) {
    V = mk(d, SZ);
    gpar_fill(V, 0, SZ, 0);
  }
  unrel_setup(&un, user_armed);
  int st0 = gpar_wait_all(eng);
  /* where the fault lands: call n of the kind, counting the legs of staged copies */
  int s = 0, sstatus = GPAR_EFAULT;
  for (int i = 1, calls = 0; i <= L && !s; i++)
    for (int leg = 1; leg <= legs[i] && !s; leg++)
      if (++calls == n) {
        s = i;
        sstatus = leg == legs[i] ? GPAR_EFAULT : GPAR_EDEPFAILED; /* first leg: its staging slot fails */
      }

  armed[d][kind]++;
  int sta = gpar_fault_inject(eng, kname[kind], (unsigned long)n), bad_submit = 0;
  for (int i = 1; i <= L; i++) {
    int st;
    if (kind == K_GEMM)
      st = gpar_sgemm(GPAR_NO_TRANS, GPAR_NO_TRANS, MD, MD, MD, 1.f, X[i - 1], 0, MD, B, 0, MD, 0.f, X[i], 0, MD);
    else if (kind == K_USER) {
      ca[i].in = gpar_buffer_host_ptr(X[i - 1]);
      ca[i].out = hostmem(d) ? gpar_buffer_host_ptr(X[i]) : NULL;
      st = gpar_submit(eng, d, chain_fn, &ca[i], &X[i - 1], 1, &X[i], 1);
    } else
      st = gpar_copy(X[i], 0, X[i - 1], 0, SZ);
    if (st != GPAR_OK) bad_submit++;
    /* The engine records an event only where one is needed (after an op another lane waits on,
     * after a lane's run of ops when its dispatcher runs out of work): waiting for each step
     * makes each step's run end with its own event, so event call n is step n's. */
    if (kind == K_EVENT) (void)gpar_wait(X[i]);
    if (user_armed) {
      st = gpar_copy(G[i], 0, X[i], 0, SZ);
    } else {
      ra[i].out = gpar_buffer_host_ptr(G[i]);
      st = gpar_submit(eng, cpu, reader_fn, &ra[i], &X[i], 1, &G[i], 1);
    }
    if (st != GPAR_OK) bad_submit++;
    if (unrel_step(&un, i) != GPAR_OK) bad_submit++;
    if (i == 1 && on_d) /* unrelated work on the faulting device itself */
      bad_submit += (kind == K_FILL ? gpar_copy(V, 0, X[0], 0, SZ) : gpar_fill(V, 0, SZ, 0x5c)) != GPAR_OK;
  }
  int ws[L + 1], gs[L + 1];
  for (int i = 1; i <= L; i++) ws[i] = gpar_wait(X[i]), gs[i] = gpar_wait(G[i]);
  int wa = gpar_wait_all(eng);
  gpar_fault_inject(eng, kname[kind], 0); /* in case it never fired */

  /* (a) the status arrives at exactly the affected buffers */
  int good = st0 == GPAR_OK && sta == GPAR_OK && !bad_submit && s > 0;
  for (int i = 1; i <= L && good; i++) {
    int want = i < s ? GPAR_OK : i == s ? sstatus : GPAR_EDEPFAILED;
    int gwant = i < s ? GPAR_OK : GPAR_EDEPFAILED;
    if (ws[i] != want || gs[i] != gwant) {
      snprintf(why, sizeof why, "step %d: output %s (want %s), its reader %s (want %s)", i, gpar_status_name(ws[i]),
               gpar_status_name(want), gpar_status_name(gs[i]), gpar_status_name(gwant));
      good = 0;
    }
  }
  if (good && wa != GPAR_EFAULT) snprintf(why, sizeof why, "wait_all %s, want GPAR_EFAULT", gpar_status_name(wa)), good = 0;
  if (!good && !why[0])
    snprintf(why, sizeof why, "setup %s, inject %s, %d submits refused", gpar_status_name(st0), gpar_status_name(sta),
             bad_submit);
  ok(good, "%s: lands on step %d (%s), dependents skipped", name, s, gpar_status_name(sstatus));
  if (!good) diag("  %s", why);
  if (good) observed[d][kind]++;

  /* (b) skipped ops did not run; their outputs are untouched */
  why[0] = 0;
  for (int i = 1; i <= L && !why[0]; i++) {
    const unsigned char *g = gpar_buffer_host_ptr(G[i]);
    int ran = user_armed ? atomic_load(&ca[i].ran) : atomic_load(&ra[i].ran);
    if (i < s) {
      if (ran != 1) snprintf(why, sizeof why, "step %d ran %d times, want once", i, ran);
      else if (user_armed ? memcmp(g, expect[i], SZ) : !tu_all_bytes(g, SZ, 0x11))
        snprintf(why, sizeof why, "reader of step %d: wrong output", i);
    } else {
      if (ran) snprintf(why, sizeof why, "step %d ran although it failed or its input did", i);
      else if (!tu_all_bytes(g, SZ, 0x77)) snprintf(why, sizeof why, "skipped reader %d touched its output", i);
      else if (!user_armed && atomic_load(&ra[i].ran)) snprintf(why, sizeof why, "skipped reader %d ran", i);
      /* a fault before the vendor call (not event/completion) leaves a host-memory output alone */
      else if (on_d && hostmem(devs[i]) && !tu_all_bytes(gpar_buffer_host_ptr(X[i]), SZ, (unsigned char)(0xa0 + i)))
        snprintf(why, sizeof why, "failed or skipped step %d wrote its output", i);
    }
  }
  ok(!why[0], "%s: skipped ops did not run, outputs untouched", name);
  if (why[0]) diag("  %s", why);

  /* (c) completed steps hold the right data; failed ones refuse gpar_read with GPAR_EDEPFAILED
   * (gpar.h) and copy nothing */
  why[0] = 0;
  for (int i = 1; i <= L && !why[0]; i++) {
    memset(got, 0xee, SZ);
    int st = gpar_read(X[i], 0, got, SZ);
    if (i < s && (st != GPAR_OK || memcmp(got, expect[i], SZ)))
      snprintf(why, sizeof why, "step %d: read %s, data %s", i, gpar_status_name(st),
               memcmp(got, expect[i], SZ) ? "wrong" : "right");
    else if (i >= s && (st != GPAR_EDEPFAILED || !tu_all_bytes(got, SZ, 0xee)))
      snprintf(why, sizeof why, "failed step %d: read returned %s and %s", i, gpar_status_name(st),
               tu_all_bytes(got, SZ, 0xee) ? "copied nothing" : "copied data");
  }
  int ug = unrel_check(&un, why + strlen(why), sizeof why - strlen(why));
  if (on_d) {
    int st = gpar_read(V, 0, got, SZ);
    if (st != GPAR_OK || (kind == K_FILL ? memcmp(got, expect[0], SZ) : !tu_all_bytes(got, SZ, 0x5c)))
      snprintf(why + strlen(why), sizeof why - strlen(why), " unrelated op on dev %d: %s", d, gpar_status_name(st));
  }
  ok(!why[0] && ug, "%s: completed steps and unrelated work correct", name);
  if (why[0]) diag("  %s", why);

  /* (d) the engine goes on: an op that only writes the failed buffer clears it */
  randfill(expect[0], SZ);
  int w1 = s ? gpar_write(X[s], 0, expect[0], SZ) : GPAR_EINVAL, r1 = s ? gpar_read(X[s], 0, got, SZ) : GPAR_EINVAL;
  int w2 = s ? gpar_wait(X[s]) : GPAR_EINVAL;
  ok(w1 == GPAR_OK && r1 == GPAR_OK && w2 == GPAR_OK && !memcmp(got, expect[0], SZ),
     "%s: rewriting the failed buffer works (write %s, read %s, wait %s)", name, gpar_status_name(w1),
     gpar_status_name(r1), gpar_status_name(w2));

  /* (e) nothing leaks */
  for (int i = 0; i <= L; i++) gpar_buffer_release(X[i]), gpar_buffer_release(G[i]);
  if (B.id) gpar_buffer_release(B);
  if (V.id) gpar_buffer_release(V);
  base_back(&b0, name);
}

/* ------------------------------------------------------------ fills: write-only ops */

typedef struct farg {
  atomic_int ran;
} farg;
static int flag_fn(const gpar_native *nat, void *arg) {
  (void)nat;
  atomic_fetch_add(&((farg *)arg)->ran, 1);
  return GPAR_OK;
}

/* Three fills of ranges of F on d, each followed by a copy of F to G[i] and a CPU reader of F.
 * Fill n fails: G[n] and its reader are skipped; the later fills only write F, so they succeed
 * and clear its failure (gpar.h), and later copies hold F without range n. */
static void fill_case(int d, int n) {
  enum { STEPS = 3, R = SZ / 4 };
  static unsigned char expect[STEPS + 1][SZ], got[SZ];
  static farg fa[STEPS + 1];
  char name[128], why[200] = "";
  base b0;
  unrel un;
  base_get(&b0);
  snprintf(name, sizeof name, "dev %d: 'fill' fault at fill %d of %d", d, n, STEPS);
  gpar_buffer F = mk(d, SZ), G[STEPS + 1], H[STEPS + 1], V = mk(d, SZ);
  randfill(expect[0], SZ);
  gpar_write(F, 0, expect[0], SZ);
  gpar_write(V, 0, expect[0], SZ);
  for (int i = 1; i <= STEPS; i++) {
    G[i] = mk(cpu, SZ);
    H[i] = mk(cpu, 16);
    gpar_fill(G[i], 0, SZ, 0x77);
    atomic_store(&fa[i].ran, 0);
    memcpy(expect[i], expect[i - 1], SZ);
    if (i != n) memset(expect[i] + i * R, 0x10 + i, R);
  }
  unrel_setup(&un, 0);
  gpar_buffer V2 = mk(d, SZ);
  int st0 = gpar_wait_all(eng), bad = 0;
  armed[d][K_FILL]++;
  int sta = gpar_fault_inject(eng, "fill", (unsigned long)n);
  for (int i = 1; i <= STEPS; i++) {
    bad += gpar_fill(F, (size_t)i * R, R, (unsigned char)(0x10 + i)) != GPAR_OK;
    bad += gpar_copy(G[i], 0, F, 0, SZ) != GPAR_OK;
    bad += gpar_submit(eng, cpu, flag_fn, &fa[i], &F, 1, &H[i], 1) != GPAR_OK;
    bad += unrel_step(&un, i) != GPAR_OK;
    if (i == 1) bad += gpar_copy(V2, 0, V, 0, SZ) != GPAR_OK; /* unrelated, on d */
  }
  int gs[STEPS + 1], hs[STEPS + 1];
  for (int i = 1; i <= STEPS; i++) gs[i] = gpar_wait(G[i]), hs[i] = gpar_wait(H[i]);
  int fs = gpar_wait(F), wa = gpar_wait_all(eng);
  gpar_fault_inject(eng, "fill", 0);
  int good = st0 == GPAR_OK && sta == GPAR_OK && !bad && wa == GPAR_EFAULT &&
             fs == (n == STEPS ? GPAR_EFAULT : GPAR_OK);
  for (int i = 1; i <= STEPS; i++) {
    int want = i == n ? GPAR_EDEPFAILED : GPAR_OK;
    if (gs[i] != want || hs[i] != want) {
      snprintf(why, sizeof why, "step %d: copy %s, reader %s, want %s", i, gpar_status_name(gs[i]),
               gpar_status_name(hs[i]), gpar_status_name(want));
      good = 0;
    }
  }
  if (good) observed[d][K_FILL]++;
  ok(good, "%s: copy and reader of that fill get EDEPFAILED, others OK; F %s, wait_all %s", name,
     gpar_status_name(fs), gpar_status_name(wa));
  if (why[0]) diag("  %s", why);
  why[0] = 0;
  for (int i = 1; i <= STEPS && !why[0]; i++) {
    const unsigned char *g = gpar_buffer_host_ptr(G[i]);
    int ran = atomic_load(&fa[i].ran);
    if (i == n ? (ran || !tu_all_bytes(g, SZ, 0x77)) : (ran != 1 || memcmp(g, expect[i], SZ)))
      snprintf(why, sizeof why, "step %d: reader ran %d times, copy %s", i, ran,
               tu_all_bytes(g, SZ, 0x77) ? "untouched" : memcmp(g, expect[i], SZ) ? "wrong" : "right");
  }
  memset(got, 0xee, SZ);
  int rs_ = gpar_read(F, 0, got, SZ);
  if (n == STEPS ? (rs_ != GPAR_EDEPFAILED || !tu_all_bytes(got, SZ, 0xee))
                : (rs_ != GPAR_OK || memcmp(got, expect[STEPS], SZ)))
    snprintf(why + strlen(why), sizeof why - strlen(why), " final read of F: %s", gpar_status_name(rs_));
  int r2 = gpar_read(V2, 0, got, SZ);
  if (r2 != GPAR_OK || memcmp(got, expect[0], SZ)) snprintf(why + strlen(why), sizeof why - strlen(why), " unrelated copy on dev %d", d);
  int ug = unrel_check(&un, why + strlen(why), sizeof why - strlen(why));
  ok(!why[0] && ug, "%s: contents exact (the failed range never written), unrelated work correct", name);
  if (why[0]) diag("  %s", why);
  int w = gpar_fill(F, 0, SZ, 1), r = gpar_read(F, 0, got, SZ);
  ok(w == GPAR_OK && r == GPAR_OK && tu_all_bytes(got, SZ, 1), "%s: a fill afterwards works (%s, %s)", name,
     gpar_status_name(w), gpar_status_name(r));
  gpar_buffer_release(F), gpar_buffer_release(V), gpar_buffer_release(V2);
  for (int i = 1; i <= STEPS; i++) gpar_buffer_release(G[i]), gpar_buffer_release(H[i]);
  base_back(&b0, name);
}

/* ------------------------------------------------------------ allocations */

/* Buffer creations on d: the nth device allocation fails at the call, with the null handle;
 * pinned (GPAR_HOST) creations in between do not count. */
static void alloc_case(int d, int n) {
  char name[128], why[200] = "";
  unsigned char v[SZ], got[SZ];
  base b0;
  unrel un;
  base_get(&b0);
  snprintf(name, sizeof name, "dev %d: 'alloc' fault at device allocation %d", d, n);
  unrel_setup(&un, 0);
  int st0 = gpar_wait_all(eng);
  gpar_buffer Y[4] = {{0}}, H = {0};
  int cs[4], hs;
  armed[d][K_ALLOC]++;
  int sta = gpar_fault_inject(eng, "alloc", (unsigned long)n);
  char msg[256] = "";
  for (int i = 1; i <= 3; i++) {
    cs[i] = gpar_buffer_create(eng, d, SZ, &Y[i]);
    if (cs[i] != GPAR_OK) snprintf(msg, sizeof msg, "%s", gpar_last_error());
    if (i == 1) hs = gpar_buffer_create(eng, GPAR_HOST, SZ, &H);
    unrel_step(&un, i);
  }
  int msg_ok = strstr(msg, "alloc") != NULL;
  gpar_fault_inject(eng, "alloc", 0);
  int good = st0 == GPAR_OK && sta == GPAR_OK && hs == GPAR_OK && msg_ok;
  for (int i = 1; i <= 3; i++)
    if (cs[i] != (i == n ? GPAR_EFAULT : GPAR_OK) || (i == n) != (Y[i].id == 0)) {
      snprintf(why, sizeof why, "create %d: %s, handle %s", i, gpar_status_name(cs[i]), Y[i].id ? "set" : "null");
      good = 0;
    }
  if (good) observed[d][K_ALLOC]++;
  ok(good, "%s: that create returns GPAR_EFAULT and the null handle, the others and GPAR_HOST succeed%s", name,
     msg_ok ? "" : " (message does not name the fault)");
  if (why[0]) diag("  %s", why);
  why[0] = 0;
  randfill(v, SZ);
  is_status(gpar_write(Y[n], 0, v, 16), GPAR_EBADBUF, "the null handle is refused");
  for (int i = 1; i <= 3 && !why[0]; i++) {
    if (i == n) continue;
    randfill(v, SZ);
    int w = gpar_write(Y[i], 0, v, SZ), r = gpar_read(Y[i], 0, got, SZ);
    if (w || r || memcmp(v, got, SZ)) snprintf(why, sizeof why, "buffer %d: write %s read %s", i, gpar_status_name(w), gpar_status_name(r));
  }
  int ug = unrel_check(&un, why + strlen(why), sizeof why - strlen(why));
  ok(!why[0] && ug, "%s: the created buffers and the unrelated work are fine", name);
  if (why[0]) diag("  %s", why);
  for (int i = 1; i <= 3; i++)
    if (Y[i].id) gpar_buffer_release(Y[i]);
  if (H.id) gpar_buffer_release(H);
  base_back(&b0, name);
}

/* Pinned allocations: staging of gpar_write, GPAR_HOST buffers, staging of gpar_read. */
static void pinned_case(int d, int n) {
  enum { R = SZ / 4 };
  char name[128], why[200] = "";
  unsigned char v[SZ], expect[SZ], got[SZ];
  base b0;
  unrel un;
  base_get(&b0);
  snprintf(name, sizeof name, "dev %d: 'pinned' fault at pinned allocation %d", d, n);
  gpar_buffer X = mk(d, SZ), H = {0};
  randfill(expect, SZ);
  gpar_write(X, 0, expect, SZ);
  unrel_setup(&un, 0);
  int st0 = gpar_wait_all(eng);
  gpar_stats s1, s2;
  gpar_stats_get(eng, &s1);
  randfill(v, SZ);
  armed[d][K_PINNED]++;
  int sta = gpar_fault_inject(eng, "pinned", (unsigned long)n);
  int c[5]; /* pinned calls 1..4: write range 1, create GPAR_HOST, write range 2, write range 3 */
  c[1] = gpar_write(X, R, v + R, R);
  unrel_step(&un, 1);
  c[2] = gpar_buffer_create(eng, GPAR_HOST, SZ, &H);
  unrel_step(&un, 2);
  c[3] = gpar_write(X, 2 * R, v + 2 * R, R);
  unrel_step(&un, 3);
  c[4] = gpar_write(X, 3 * R, v + 3 * R, R);
  gpar_stats_get(eng, &s2);
  gpar_fault_inject(eng, "pinned", 0);
  int wx = gpar_wait(X), wa = gpar_wait_all(eng);
  int good = st0 == GPAR_OK && sta == GPAR_OK && wx == GPAR_OK && wa == GPAR_OK && (n == 2) == (H.id == 0);
  int nwrites = 0;
  for (int i = 1; i <= 4; i++) {
    if (c[i] != (i == n ? GPAR_EFAULT : GPAR_OK)) good = 0;
    if (i != 2 && c[i] == GPAR_OK) nwrites++;
  }
  /* ops submitted: the successful writes and the three unrelated steps */
  if (s2.ops_submitted - s1.ops_submitted != (uint64_t)nwrites + 3) good = 0;
  if (good) observed[d][K_PINNED]++;
  ok(good, "%s: that call returns GPAR_EFAULT and enqueues nothing (calls %s %s %s %s; X %s; %llu ops)", name,
     gpar_status_name(c[1]), gpar_status_name(c[2]), gpar_status_name(c[3]), gpar_status_name(c[4]),
     gpar_status_name(wx), (unsigned long long)(s2.ops_submitted - s1.ops_submitted));
  for (int i = 1; i <= 4; i++)
    if (i != 2 && i != n) memcpy(expect + (i == 1 ? 1 : i - 1) * R, v + (i == 1 ? 1 : i - 1) * R, R);
  int r = gpar_read(X, 0, got, SZ);
  if (r != GPAR_OK || memcmp(got, expect, SZ)) snprintf(why, sizeof why, "X: read %s, data %s", gpar_status_name(r),
                                                        memcmp(got, expect, SZ) ? "wrong" : "right");
  if (H.id) {
    int w = gpar_write(H, 0, v, SZ), r2 = gpar_read(H, 0, got, SZ);
    if (w || r2 || memcmp(got, v, SZ)) snprintf(why + strlen(why), sizeof why - strlen(why), " GPAR_HOST buffer unusable");
  }
  int ug = unrel_check(&un, why + strlen(why), sizeof why - strlen(why));
  ok(!why[0] && ug, "%s: X holds exactly the writes that were accepted; unrelated work correct", name);
  if (why[0]) diag("  %s", why);
  if (H.id) gpar_buffer_release(H);
  gpar_buffer_release(X);
  base_back(&b0, name);
}

/* gpar_read of a device buffer stages through pinned chunks: a pinned fault fails the read at
 * once, copies nothing, and leaves the buffer readable. */
static void pinned_read_case(int d) {
  char name[128];
  unsigned char v[SZ], got[SZ];
  base b0;
  base_get(&b0);
  snprintf(name, sizeof name, "dev %d: 'pinned' fault in the staging of gpar_read", d);
  if (hostmem(d)) {
    printf("ok %d # SKIP %s: host memory is read without staging\n", ++tap_count, name);
    return;
  }
  gpar_buffer X = mk(d, SZ);
  randfill(v, SZ);
  gpar_write(X, 0, v, SZ);
  gpar_wait_all(eng);
  armed[d][K_PINNED]++;
  gpar_fault_inject(eng, "pinned", 1);
  memset(got, 0xee, SZ);
  int r1 = gpar_read(X, 0, got, SZ);
  int untouched = tu_all_bytes(got, SZ, 0xee);
  gpar_fault_inject(eng, "pinned", 0);
  int r2 = gpar_read(X, 0, got, SZ);
  int good = r1 == GPAR_EFAULT && untouched && r2 == GPAR_OK && !memcmp(got, v, SZ);
  if (r1 == GPAR_EFAULT) observed[d][K_PINNED]++;
  ok(good, "%s: read %s (%s), then read %s", name, gpar_status_name(r1), untouched ? "nothing copied" : "data copied",
     gpar_status_name(r2));
  gpar_buffer_release(X);
  base_back(&b0, name);
}

/* ------------------------------------------------------------ user functions that fail */

static int fail_fn(const gpar_native *nat, void *arg) {
  (void)nat;
  atomic_fetch_add(&((farg *)arg)->ran, 1);
  return GPAR_EBACKEND;
}

/* Not injected: a user function on d returns an error; it reaches its outputs only. */
static void user_error_case(int d) {
  static farg f1, f2;
  char name[96];
  base b0;
  base_get(&b0);
  snprintf(name, sizeof name, "dev %d: a user function returning GPAR_EBACKEND", d);
  gpar_buffer X = mk(d, 64), Y = mk(d, 64), G = mk(cpu, 64);
  gpar_fill(X, 0, 64, 1);
  gpar_fill(Y, 0, 64, 2);
  gpar_wait_all(eng);
  atomic_store(&f1.ran, 0);
  atomic_store(&f2.ran, 0);
  int s1 = gpar_submit(eng, d, fail_fn, &f1, &X, 1, &Y, 1);
  int s2 = gpar_submit(eng, cpu, flag_fn, &f2, &Y, 1, &G, 1);
  int wy = gpar_wait(Y), wg = gpar_wait(G), wx = gpar_wait(X), wa = gpar_wait_all(eng);
  ok(s1 == GPAR_OK && s2 == GPAR_OK && wy == GPAR_EBACKEND && wg == GPAR_EDEPFAILED && wx == GPAR_OK &&
         wa == GPAR_EBACKEND && atomic_load(&f1.ran) == 1 && atomic_load(&f2.ran) == 0,
     "%s: output %s, dependent %s (ran %d), input %s, wait_all %s", name, gpar_status_name(wy),
     gpar_status_name(wg), atomic_load(&f2.ran), gpar_status_name(wx), gpar_status_name(wa));
  gpar_buffer_release(X), gpar_buffer_release(Y), gpar_buffer_release(G);
  base_back(&b0, name);
}

/* ------------------------------------------------------------ GPAR_FAULT at gpar_init */

static void env_case(void) {
  setenv("GPAR_FAULT", "fill:2", 1);
  gpar_engine *e2 = tu_engine(GPAR_BACKEND_HOST, 1, 0); /* one worker: fills run in submit order */
  unsetenv("GPAR_FAULT");
  int c = gpar_device_find(e2, GPAR_BACKEND_HOST, GPAR_DEVICE_CPU, 0);
  gpar_buffer a = {0}, b = {0}, cc = {0};
  gpar_buffer_create(e2, c, 64, &a);
  gpar_buffer_create(e2, c, 64, &b);
  gpar_buffer_create(e2, c, 64, &cc);
  gpar_fill(a, 0, 64, 1);
  gpar_fill(b, 0, 64, 2);
  gpar_fill(cc, 0, 64, 3);
  int wa = gpar_wait(a), wb = gpar_wait(b), wc = gpar_wait(cc);
  ok(wa == GPAR_OK && wb == GPAR_EFAULT && wc == GPAR_OK,
     "GPAR_FAULT=fill:2 at gpar_init: the second fill fails (%s %s %s)", gpar_status_name(wa), gpar_status_name(wb),
     gpar_status_name(wc));
  is_status(gpar_shutdown(e2), GPAR_EFAULT, "that engine's shutdown reports the unclaimed failure");
}

int main(void) {
  tap_start();
  rs = tu_seed(4242);
  eng = tu_engine(0, 0, 0);
  ndev = gpar_device_count(eng);
  cpu = gpar_device_find(eng, GPAR_BACKEND_HOST, GPAR_DEVICE_CPU, 0);
  if (ndev < 1 || cpu < 0) bail_out("no CPU device");
  infos = calloc((size_t)ndev, sizeof *infos);
  armed = calloc((size_t)ndev, sizeof *armed);
  observed = calloc((size_t)ndev, sizeof *observed);
  for (int d = 0; d < ndev; d++) tu_device_info(eng, d, &infos[d]);
  gpar_stats s0;
  gpar_stats_get(eng, &s0);
  is_status(gpar_fault_inject(eng, "nonsense", 1), GPAR_EINVAL, "unknown fault kind refused");
  is_status(gpar_fault_inject(eng, NULL, 1), GPAR_EINVAL, "NULL fault kind refused");
  for (int d = 0; d < ndev; d++) {
    double t0 = gpar_now();
    int events = infos[d].backend_id != GPAR_BACKEND_HOST;
    diag("device %d: %s %s", d, infos[d].backend, infos[d].name);
    for (int n = 1; n <= 3; n++) {
      chain_case(d, d, K_COPY, n);
      chain_case(d, d, K_GEMM, n);
      chain_case(d, d, K_USER, n);
      fill_case(d, n);
      alloc_case(d, n);
      pinned_case(d, n);
      if (events) {
        /* event and completion faults count every event-backend op engine-wide; the chain is the
         * only GPU work in flight, on one lane, so call n is step n */
        chain_case(d, d, K_EVENT, n);
        chain_case(d, d, K_COMPLETION, n);
      }
      for (int e = 0; e < ndev; e++)
        if (e != d) chain_case(d, e, K_COPY, n);
    }
    if (!events) {
      char why[96];
      snprintf(why, sizeof why, "dev %d: 'event' and 'completion' faults: the CPU device records no events", d);
      skip(1, why);
    }
    pinned_read_case(d);
    user_error_case(d);
    diag("device %d done in %.2f s", d, gpar_now() - t0);
  }
  env_case();
  gpar_stats s1;
  gpar_stats_get(eng, &s1);
  ok(s1.buffers_live == s0.buffers_live && s1.events_live == s0.events_live && s1.ops_in_flight == 0,
     "at the end: buffers live %llu, events live %llu, in flight %llu", (unsigned long long)s1.buffers_live,
     (unsigned long long)s1.events_live, (unsigned long long)s1.ops_in_flight);
  is_status(gpar_shutdown(eng), GPAR_OK, "shutdown");
  /* summary */
  int tot[NK] = {0}, all = 0, seen = 0;
  diag("faults injected (armed/seen where expected) per device and kind:");
  char line[512];
  int p = snprintf(line, sizeof line, "  %-22s", "device");
  for (int k = 0; k < NK; k++) p += snprintf(line + p, sizeof line - (size_t)p, " %10s", kname[k]);
  diag("%s", line);
  for (int d = 0; d < ndev; d++) {
    char dn[40];
    snprintf(dn, sizeof dn, "%d %s", d, infos[d].backend);
    p = snprintf(line, sizeof line, "  %-22s", dn);
    for (int k = 0; k < NK; k++) {
      char cell[24];
      snprintf(cell, sizeof cell, "%d/%d", armed[d][k], observed[d][k]);
      p += snprintf(line + p, sizeof line - (size_t)p, " %10s", cell);
      tot[k] += armed[d][k];
      all += armed[d][k];
      seen += observed[d][k];
    }
    diag("%s", line);
  }
  p = snprintf(line, sizeof line, "  %-22s", "total");
  for (int k = 0; k < NK; k++) p += snprintf(line + p, sizeof line - (size_t)p, " %10d", tot[k]);
  diag("%s", line);
  diag("%d faults injected, %d seen exactly where expected (+1 through GPAR_FAULT, + %d user-function errors)", all,
       seen, ndev);
  free(infos), free(armed), free(observed);
  return done_testing();
}
