/* lifetime_races.c: calls racing a destroy or gpar_shutdown (and shutdown waiting for a call
 * still inside). gpar_comm_destroy in one thread while another is
 * inside gpar_allreduce on that communicator: the transport's context outlives the collective and
 * its ops. The check-only calls (gpar_backend_status, gpar_pinned_status, gpar_comm_create) racing
 * gpar_shutdown read nothing that shutdown frees. gpar_shutdown returns only after a call still
 * inside the engine (a long gpar_read) has left it. Meant for TSan and ASan (.ci/run's TSan list);
 * the first case of each is ordered so that a defect shows on every run, the rest race freely. */
#include <pthread.h>

#include "comm_transport.h"

static int host_dev(gpar_engine *eng) { return gpar_device_find(eng, GPAR_BACKEND_HOST, -1, 0); }

/* ---------------------------------------------------------------- destroy vs a collective inside */

typedef struct coll_thread {
  gpar_comm comm;
  gpar_buffer x;
  int max_calls;
  atomic_int accepted;  /* collectives that returned GPAR_OK */
  atomic_int finished;  /* the loop has ended */
  int last;             /* the status that ended the loop (GPAR_OK when max_calls were made) */
} coll_thread;

static void *coll_main(void *arg) {
  coll_thread *t = arg;
  t->last = GPAR_OK;
  for (int i = 0; i < t->max_calls; i++) {
    int st = tt_allreduce(t->comm, t->x, 4);
    if (st != GPAR_OK) {
      t->last = st;
      break;
    }
    atomic_fetch_add(&t->accepted, 1);
  }
  atomic_store(&t->finished, 1);
  return NULL;
}

/* Ordered: the collective is inside the transport when destroy begins, and touches the context
 * again once destroy has returned (or after 300 ms, for a destroy that waits for it). */
static void test_destroy_inside_collective(int round) {
  tt_reset();
  atomic_store(&tt.hold, 1);
  tt.hold_us = 300000;
  gpar_engine *eng = tu_engine(GPAR_BACKEND_HOST, 2, 0);
  static coll_thread t;
  memset(&t, 0, sizeof t);
  t.max_calls = 1;
  t.x = tu_buffer(eng, GPAR_HOST, 4 * sizeof(float));
  if (tu_fill_value(t.x, 4, 1.0f) || gpar_wait(t.x) || tt_create(eng, host_dev(eng), &t.comm)) bail_out("set-up");
  pthread_t th;
  if (pthread_create(&th, NULL, coll_main, &t)) bail_out("pthread_create");
  int inside = tu_wait_flag(&tt.inside, 10);
  atomic_store(&tt.destroy_started, 1);
  int d = gpar_comm_destroy(t.comm);
  atomic_store(&tt.destroy_returned, 1);
  pthread_join(th, NULL);
  atomic_store(&tt.hold, 0);
  ok(inside && d == GPAR_OK, "round %d: gpar_comm_destroy while a collective is inside the transport: %s", round,
     gpar_status_name(d));
  is_status(t.last, GPAR_OK, "  the collective that was inside completes its call");
  float got[4] = {0};
  int w = gpar_wait_all(eng);
  int r = gpar_read(t.x, 0, got, sizeof got);
  ok(w == GPAR_OK && r == GPAR_OK && got[0] == 11.0f && got[3] == 11.0f,
     "  and its op ran with the context intact (%g, want 11; %d uses of a destroyed context)", got[0],
     atomic_load(&tt.bad_ctx));
  is_status(tt_allreduce(t.comm, t.x, 4), GPAR_EINVAL, "  a collective after the destroy: GPAR_EINVAL");
  gpar_buffer_release(t.x);
  is_status(gpar_shutdown(eng), GPAR_OK, "  shutdown");
  ok(atomic_load(&tt.destroy_calls) == 1 && atomic_load(&tt.early) == 0 && atomic_load(&tt.bad_ctx) == 0,
     "  the transport was destroyed once, after its op (%d calls, %d early, %d bad)", atomic_load(&tt.destroy_calls),
     atomic_load(&tt.early), atomic_load(&tt.bad_ctx));
}

/* Free races: a thread issues collectives until refused while the main thread destroys. */
static void test_destroy_races(void) {
  enum { ROUNDS = 200, CALLS = 100 };
  tt_reset();
  gpar_engine *eng = tu_engine(GPAR_BACKEND_HOST, 2, 0);
  static coll_thread t;
  memset(&t, 0, sizeof t);
  t.x = tu_buffer(eng, GPAR_HOST, 4 * sizeof(float));
  if (tu_fill_value(t.x, 4, 0.0f) || gpar_wait(t.x)) bail_out("set-up");
  long accepted = 0;
  int other = 0, created = 0;
  for (int i = 0; i < ROUNDS; i++) {
    atomic_store(&t.accepted, 0);
    atomic_store(&t.finished, 0);
    t.max_calls = CALLS;
    if (tt_create(eng, host_dev(eng), &t.comm) != GPAR_OK) bail_out("transport communicator");
    created++;
    pthread_t th;
    if (pthread_create(&th, NULL, coll_main, &t)) bail_out("pthread_create");
    if (i % 2) /* half the rounds: destroy once the first collective is accepted */
      while (!atomic_load(&t.accepted) && !atomic_load(&t.finished)) sched_yield();
    int d = gpar_comm_destroy(t.comm);
    pthread_join(th, NULL);
    accepted += atomic_load(&t.accepted);
    other += d != GPAR_OK || (t.last != GPAR_EINVAL && !(t.last == GPAR_OK && atomic_load(&t.accepted) == CALLS));
  }
  is_int(other, 0, "200 rounds of destroy racing collectives: destroy succeeds, the collectives end refused (GPAR_EINVAL)");
  float got = 0;
  int w = gpar_wait_all(eng), r = gpar_read(t.x, 0, &got, sizeof got);
  ok(w == GPAR_OK && r == GPAR_OK && got == tt_remote * (float)accepted,
     "  every accepted collective ran exactly once (%g, want %g from %ld)", got, tt_remote * (float)accepted, accepted);
  gpar_buffer_release(t.x);
  is_status(gpar_shutdown(eng), GPAR_OK, "  shutdown");
  ok(atomic_load(&tt.destroy_calls) == created && atomic_load(&tt.early) == 0 && atomic_load(&tt.bad_ctx) == 0,
     "  each transport destroyed once, after its ops (%d of %d; %d early, %d uses of a destroyed context)",
     atomic_load(&tt.destroy_calls), created, atomic_load(&tt.early), atomic_load(&tt.bad_ctx));
}

/* ---------------------------------------------------------------- check-only calls vs shutdown */

static const char *const check_names[3] = {"gpar_backend_status", "gpar_pinned_status", "gpar_comm_create"};

typedef struct checker {
  gpar_engine *eng;
  int which;            /* 0, 1, 2: check_names */
  int once;             /* one call, then announce it without synchronising (see test_check_ordered) */
  atomic_int done;      /* once: the call returned (relaxed) */
  atomic_int good;      /* loop: calls that returned GPAR_OK */
  atomic_int finished;  /* loop: ended */
  int st;               /* once: its status; loop: the status that ended it */
  int other;            /* loop: statuses other than GPAR_OK and GPAR_ESHUTDOWN */
} checker;

static int check_call(checker *c, int which, int *ncomm) {
  int n = 0, prov = 0, dev = 0;
  unsigned reg = 0;
  const char *why = NULL;
  gpar_comm comm;
  switch (which) {
  case 0: return gpar_backend_status(c->eng, GPAR_BACKEND_HOST, &n, &why);
  case 1: return gpar_pinned_status(c->eng, &prov, &reg, c->once ? NULL : &why);
  default:
    if (*ncomm >= 8) return gpar_backend_status(c->eng, GPAR_BACKEND_OPENCL, &n, NULL);
    ++*ncomm; /* left to gpar_shutdown, which destroys them */
    return gpar_comm_create(c->eng, &dev, 1, &comm);
  }
}

static void *checker_main(void *arg) {
  checker *c = arg;
  int ncomm = 0;
  if (c->once) {
    c->st = check_call(c, c->which, &ncomm);
    atomic_store_explicit(&c->done, 1, memory_order_relaxed);
    return NULL;
  }
  for (int i = 0;; i++) {
    int st = check_call(c, (c->which + i) % 3, &ncomm);
    if (st == GPAR_OK) {
      atomic_fetch_add(&c->good, 1);
      continue;
    }
    c->st = st;
    c->other += st != GPAR_ESHUTDOWN;
    break;
  }
  atomic_store(&c->finished, 1);
  return NULL;
}

/* Ordered: the call has returned before gpar_shutdown starts, but the thread announces it with a
 * relaxed store, which orders nothing. A call that held the engine across its reads left it
 * with a release that shutdown's wait for callers acquires; one that read engine state after
 * leaving is unordered with shutdown's frees, which TSan reports as a race on every run. */
static void test_check_ordered(int which) {
  static checker c;
  memset(&c, 0, sizeof c);
  c.eng = tu_engine(GPAR_BACKEND_HOST, 2, 0);
  c.which = which;
  c.once = 1;
  pthread_t th;
  if (pthread_create(&th, NULL, checker_main, &c)) bail_out("pthread_create");
  double end = gpar_now() + 10;
  while (!atomic_load_explicit(&c.done, memory_order_relaxed) && gpar_now() < end) tu_sleep_us(50);
  int sd = gpar_shutdown(c.eng);
  pthread_join(th, NULL);
  ok(c.st == GPAR_OK && sd == GPAR_OK, "%s, then gpar_shutdown: %s, %s", check_names[which], gpar_status_name(c.st),
     gpar_status_name(sd));
}

/* Free races: a thread makes check-only calls until refused while the main thread shuts down. */
static void test_check_races(void) {
  enum { ROUNDS = 30 };
  int bad = 0, last_bad = GPAR_OK;
  long good = 0;
  for (int i = 0; i < ROUNDS; i++) {
    static checker c;
    memset(&c, 0, sizeof c);
    c.eng = tu_engine(GPAR_BACKEND_HOST, 2, 0);
    c.which = i % 3;
    pthread_t th;
    if (pthread_create(&th, NULL, checker_main, &c)) bail_out("pthread_create");
    while (atomic_load(&c.good) < 1 + i % 4 && !atomic_load(&c.finished)) sched_yield();
    int sd = gpar_shutdown(c.eng);
    pthread_join(th, NULL);
    good += atomic_load(&c.good);
    if (sd != GPAR_OK || c.other || c.st != GPAR_ESHUTDOWN) bad++, last_bad = c.st;
  }
  ok(bad == 0, "30 shutdowns racing check-only calls: they see GPAR_OK, then GPAR_ESHUTDOWN (%ld calls; %d bad, %s)",
     good, bad, gpar_status_name(last_bad));
}

/* ---------------------------------------------------------------- shutdown waits for a call inside */

typedef struct reader {
  gpar_engine *eng;
  gpar_buffer d;
  unsigned char *dst;
  size_t bytes;
  int st;
  atomic_int release;
} reader;

static int gate_fn(const gpar_native *nat, void *arg) {
  reader *r = arg;
  (void)nat;
  tu_wait_flag(&r->release, 10);
  return GPAR_OK;
}

static void *reader_main(void *arg) {
  reader *r = arg;
  r->st = gpar_read(r->d, 0, r->dst, r->bytes);
  return NULL;
}

static void *releaser_main(void *arg) {
  reader *r = arg;
  double end = gpar_now() + 10;
  while (gpar_device_count(r->eng) != GPAR_ESHUTDOWN && gpar_now() < end) tu_sleep_us(50);
  atomic_store(&r->release, 1);
  return NULL;
}

/* A thread is inside gpar_read (its chunks queued behind a gate) when gpar_shutdown begins; the
 * gate opens once the engine refuses outside calls. When shutdown returns, the read must have
 * left the engine, so its data is all in place. On an OpenCL device the read copies staged
 * chunks out after their ops retired, so it is still inside after the drain; on the host alone
 * it is inside only while it wakes up. */
static void test_shutdown_waits_reader(void) {
  static reader r;
  memset(&r, 0, sizeof r);
  r.eng = tu_engine(0, 1, 0); /* one host thread: the reading thread copies out the chunks itself */
  int dev = gpar_device_find(r.eng, GPAR_BACKEND_OPENCL, -1, 0);
  const char *where = dev >= 0 ? "an OpenCL buffer" : "a host buffer (no OpenCL device)";
  /* A device read: three staging chunks, queued at once (at most four are); on the host the
   * read is one op, and a small one keeps the case quick under TSan. */
  r.bytes = dev >= 0 ? (size_t)40 << 20 : (size_t)4 << 20;
  if (dev < 0) dev = host_dev(r.eng);
  r.dst = calloc(1, r.bytes);
  if (!r.dst) bail_out("malloc");
  r.d = tu_buffer(r.eng, dev, r.bytes);
  gpar_stats s0, s1;
  int st = gpar_fill(r.d, 0, r.bytes, 0x5a);
  if (st == GPAR_OK) st = gpar_submit(r.eng, GPAR_HOST, gate_fn, &r, NULL, 0, &r.d, 1);
  if (st == GPAR_OK) st = gpar_stats_get(r.eng, &s0);
  if (st != GPAR_OK) bail_out("set-up");
  pthread_t rt, lt;
  if (pthread_create(&rt, NULL, reader_main, &r)) bail_out("pthread_create");
  double end = gpar_now() + 10; /* inside: its first chunk is submitted */
  while (gpar_stats_get(r.eng, &s1) == GPAR_OK && s1.ops_submitted == s0.ops_submitted && gpar_now() < end) tu_sleep_us(50);
  if (pthread_create(&lt, NULL, releaser_main, &r)) bail_out("pthread_create");
  int sd = gpar_shutdown(r.eng);
  int whole = tu_all_bytes(r.dst, r.bytes, 0x5a); /* before the reader is joined */
  pthread_join(rt, NULL);
  pthread_join(lt, NULL);
  ok(s1.ops_submitted > s0.ops_submitted, "%s: the reader was inside gpar_read when shutdown began", where);
  ok(sd == GPAR_OK && whole, "%s: gpar_shutdown returned after the read had copied all %zu MiB (%s, %s)", where,
     r.bytes >> 20, gpar_status_name(sd), whole ? "complete" : "incomplete");
  is_status(r.st, GPAR_OK, "  the read itself succeeded");
  free(r.dst);
}

/* Which cases run: all, or those named on the command line (e.g. to see one fail alone). */

int main(int argc, char **argv) {
  tap_start();
  if (tu_want(argc, argv, "destroy_inside_collective"))
    for (int i = 0; i < 2; i++) test_destroy_inside_collective(i);
  if (tu_want(argc, argv, "destroy_races")) test_destroy_races();
  for (int w = 0; w < 3; w++)
    if (tu_want(argc, argv, "check_ordered") || tu_want(argc, argv, check_names[w])) test_check_ordered(w);
  if (tu_want(argc, argv, "check_races")) test_check_races();
  if (tu_want(argc, argv, "shutdown_reader")) test_shutdown_waits_reader();
  return done_testing();
}
