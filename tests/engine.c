/* engine.c: engine semantics on the CPU device through gpar_submit with host functions:
 * RAW/WAR/WAW order, concurrency of readers and of independent ops, deferred release, error
 * propagation, waits inside ops, shutdown with pending work, synchronous mode and counters. */
#include "testutil.h"

/* One host op: optionally sleeps, reads src[0] into `seen`, stores `value` into dst[0], records
 * its start and end in a global sequence, and returns `ret`. */
typedef struct op {
  long sleep_us;
  const volatile uint64_t *src;
  volatile uint64_t *dst;
  uint64_t value, seen;
  int start, end, ret;
  atomic_int ran;
} op;

static atomic_int seq;

static int op_fn(const gpar_native *nat, void *arg) {
  op *o = arg;
  (void)nat;
  o->start = atomic_fetch_add(&seq, 1);
  if (o->sleep_us) tu_sleep_us(o->sleep_us);
  if (o->src) o->seen = o->src[0];
  if (o->dst) o->dst[0] = o->value;
  o->end = atomic_fetch_add(&seq, 1);
  atomic_store(&o->ran, 1);
  return o->ret;
}

static void op_init(op *o, long sleep_us, gpar_buffer src, gpar_buffer dst, uint64_t value) {
  memset(o, 0, sizeof *o);
  o->sleep_us = sleep_us;
  o->src = src.id ? gpar_buffer_native(src) : NULL;
  o->dst = dst.id ? gpar_buffer_native(dst) : NULL;
  o->value = value;
  o->start = o->end = -1;
}

static const gpar_buffer nobuf = {0};

/* Submit o with read set {r} (if r.id) and write set {w} (if w.id). */
static int sub(gpar_engine *eng, int dev, op *o, gpar_buffer r, gpar_buffer w) {
  return gpar_submit(eng, dev, op_fn, o, &r, r.id ? 1 : 0, &w, w.id ? 1 : 0);
}

static gpar_buffer mkbuf(gpar_engine *eng, int dev, uint64_t v0) {
  gpar_buffer b = {0};
  uint64_t init[8] = {v0, 0, 0, 0, 0, 0, 0, 0};
  if (gpar_buffer_create(eng, dev, sizeof init, &b) != GPAR_OK) bail_out("gpar_buffer_create");
  if (gpar_write(b, 0, init, sizeof init) != GPAR_OK) bail_out("gpar_write");
  return b;
}

static uint64_t rd0(gpar_buffer b) {
  uint64_t v = 0xdeadbeef;
  int st = gpar_read(b, 0, &v, sizeof v);
  if (st != GPAR_OK) { /* a failed read is a failed test, not a note */
    is_status(st, GPAR_OK, "gpar_read of the value");
    return UINT64_MAX;
  }
  return v;
}

static void test_order(gpar_engine *eng, int cpu) {
  gpar_buffer b = mkbuf(eng, cpu, 7);
  op w, r, w2, w3;

  /* RAW: a fast reader submitted after a slow writer sees the written value. */
  op_init(&w, 30000, nobuf, b, 11);
  op_init(&r, 0, b, nobuf, 0);
  is_status(sub(eng, cpu, &w, nobuf, b), GPAR_OK, "RAW: submit writer");
  is_status(sub(eng, cpu, &r, b, nobuf), GPAR_OK, "RAW: submit reader");
  is_status(gpar_wait_all(eng), GPAR_OK, "RAW: wait_all");
  ok(r.seen == 11 && r.start > w.end, "RAW: reader ran after writer (seen %llu, start %d, writer end %d)",
     (unsigned long long)r.seen, r.start, w.end);

  /* WAR: a fast writer submitted after a slow reader does not overtake it. */
  op_init(&r, 30000, b, nobuf, 0);
  op_init(&w, 0, nobuf, b, 12);
  sub(eng, cpu, &r, b, nobuf);
  sub(eng, cpu, &w, nobuf, b);
  is_status(gpar_wait(b), GPAR_OK, "WAR: wait");
  is_status(gpar_wait_all(eng), GPAR_OK, "WAR: wait_all");
  ok(r.seen == 11 && w.start > r.end, "WAR: writer waited for the reader (seen %llu, want 11)",
     (unsigned long long)r.seen);

  /* WAW: a slow writer then a fast one: the last submitted wins. */
  op_init(&w, 30000, nobuf, b, 13);
  op_init(&w2, 0, nobuf, b, 14);
  sub(eng, cpu, &w, nobuf, b);
  sub(eng, cpu, &w2, nobuf, b);
  is_int((long long)rd0(b), 14, "WAW: final value is the last writer's");
  ok(w2.start > w.end, "WAW: second writer started after the first ended");

  /* RW chain: three read-modify-write ops see each other in order. */
  op_init(&w, 20000, b, b, 21);
  op_init(&w2, 0, b, b, 22);
  op_init(&w3, 10000, b, b, 23);
  gpar_buffer rw[2] = {b, b}; /* listed twice in the write set is fine */
  gpar_submit(eng, cpu, op_fn, &w, &b, 1, rw, 2);
  gpar_submit(eng, cpu, op_fn, &w2, rw, 2, &b, 1);
  gpar_submit(eng, cpu, op_fn, &w3, &b, 1, &b, 1);
  is_status(gpar_wait(b), GPAR_OK, "RW chain: wait");
  ok(w.seen == 14 && w2.seen == 21 && w3.seen == 22 && rd0(b) == 23,
     "RW chain: each op saw its predecessor (%llu %llu %llu)", (unsigned long long)w.seen,
     (unsigned long long)w2.seen, (unsigned long long)w3.seen);
  gpar_buffer_release(b);
}

/* Two ops that each wait (up to 5 s) for the other to have started. */
typedef struct meet {
  atomic_int *mine, *other;
  int saw;
  const volatile uint64_t *src;
  uint64_t seen;
  int end;
} meet;

static int meet_fn(const gpar_native *nat, void *arg) {
  meet *m = arg;
  (void)nat;
  atomic_store(m->mine, 1);
  m->saw = tu_wait_flag(m->other, 5.0);
  tu_sleep_us(5000);
  if (m->src) m->seen = m->src[0];
  m->end = atomic_fetch_add(&seq, 1);
  return GPAR_OK;
}

static void test_concurrency(gpar_engine *eng, int cpu) {
  gpar_buffer b = mkbuf(eng, cpu, 5), o1 = mkbuf(eng, cpu, 0), o2 = mkbuf(eng, cpu, 0);
  atomic_int f1 = 0, f2 = 0;
  op w, w2;
  meet m1 = {&f1, &f2, 0, gpar_buffer_native(b), 0, 0};
  meet m2 = {&f2, &f1, 0, gpar_buffer_native(b), 0, 0};

  /* A slow writer, then two readers of its output (each with its own output buffer): they
   * must both wait for the writer and then run at the same time. Then a writer of b must wait
   * for both readers. */
  op_init(&w, 20000, nobuf, b, 31);
  sub(eng, cpu, &w, nobuf, b);
  gpar_submit(eng, cpu, meet_fn, &m1, &b, 1, &o1, 1);
  gpar_submit(eng, cpu, meet_fn, &m2, &b, 1, &o2, 1);
  op_init(&w2, 0, nobuf, b, 32);
  sub(eng, cpu, &w2, nobuf, b);
  is_status(gpar_wait_all(eng), GPAR_OK, "readers: wait_all");
  ok(m1.saw && m2.saw, "two readers of one buffer ran concurrently (saw %d %d)", m1.saw, m2.saw);
  ok(m1.seen == 31 && m2.seen == 31, "both readers saw the earlier writer's value");
  ok(w2.start > m1.end && w2.start > m2.end && rd0(b) == 32,
     "a writer after two readers waited for both");

  /* Ops with no buffer in common run at the same time. */
  atomic_store(&f1, 0);
  atomic_store(&f2, 0);
  meet x1 = {&f1, &f2, 0, NULL, 0, 0}, x2 = {&f2, &f1, 0, NULL, 0, 0};
  gpar_submit(eng, cpu, meet_fn, &x1, NULL, 0, &o1, 1);
  gpar_submit(eng, cpu, meet_fn, &x2, &b, 1, &o2, 1);
  is_status(gpar_wait_all(eng), GPAR_OK, "independent: wait_all");
  ok(x1.saw && x2.saw, "ops on disjoint buffers ran concurrently (saw %d %d)", x1.saw, x2.saw);

  /* An op with empty read and write sets runs too. */
  op e;
  op_init(&e, 0, nobuf, nobuf, 0);
  is_status(gpar_submit(eng, cpu, op_fn, &e, NULL, 0, NULL, 0), GPAR_OK, "op with no buffers: submit");
  gpar_wait_all(eng);
  ok(atomic_load(&e.ran), "op with no buffers ran by wait_all");

  /* GPAR_HOST as the device of gpar_submit means the CPU. */
  op h;
  op_init(&h, 0, nobuf, o1, 77);
  is_status(sub(eng, GPAR_HOST, &h, nobuf, o1), GPAR_OK, "submit on GPAR_HOST");
  is_int((long long)rd0(o1), 77, "op submitted on GPAR_HOST ran");

  gpar_buffer_release(b);
  gpar_buffer_release(o1);
  gpar_buffer_release(o2);
}

/* Deferred release: writes 64 words after a sleep, then checks them. */
typedef struct slowfill {
  uint64_t *mem;
  long sleep_us;
  int good;
  atomic_int ran;
} slowfill;

static int slowfill_fn(const gpar_native *nat, void *arg) {
  slowfill *s = arg;
  (void)nat;
  tu_sleep_us(s->sleep_us);
  for (int i = 0; i < 64; i++) s->mem[i] = 0x5a5a0000u + (unsigned)i;
  s->good = 1;
  for (int i = 0; i < 64; i++) s->good &= s->mem[i] == 0x5a5a0000u + (unsigned)i;
  atomic_store(&s->ran, 1);
  return GPAR_OK;
}

static int sumcheck_fn(const gpar_native *nat, void *arg) {
  slowfill *s = arg; /* reader: checks the words the slow writer left */
  (void)nat;
  s->good = 1;
  for (int i = 0; i < 64; i++) s->good &= s->mem[i] == 0x5a5a0000u + (unsigned)i;
  atomic_store(&s->ran, 1);
  return GPAR_OK;
}

static void test_release(gpar_engine *eng, int cpu) {
  gpar_stats s0, s1, s2;
  gpar_buffer d = {0}, out = mkbuf(eng, cpu, 0);
  gpar_wait_all(eng);
  gpar_stats_get(eng, &s0);
  is_status(gpar_buffer_create(eng, cpu, 64 * sizeof(uint64_t), &d), GPAR_OK, "release: create");
  slowfill w = {gpar_buffer_native(d), 60000, 0, 0};
  slowfill r = {gpar_buffer_native(d), 0, 0, 0};
  ok(w.mem != NULL, "release: native pointer of a CPU buffer");
  gpar_submit(eng, cpu, slowfill_fn, &w, NULL, 0, &d, 1);
  gpar_submit(eng, cpu, sumcheck_fn, &r, &d, 1, &out, 1);
  is_status(gpar_buffer_release(d), GPAR_OK, "release while a slow op writes the buffer");
  ok(!atomic_load(&w.ran), "release returned without waiting for the op");
  gpar_stats_get(eng, &s1);
  is_int((long long)s1.buffers_live, (long long)s0.buffers_live + 1,
         "released buffer with pending ops still counted in buffers_live");
  is_status(gpar_wait(d), GPAR_EBADBUF, "wait on the released handle: EBADBUF");
  ok(gpar_buffer_native(d) == NULL && gpar_buffer_host_ptr(d) == NULL,
     "native/host_ptr of the released handle: NULL");
  uint64_t tmp[2];
  is_status(gpar_write(d, 0, tmp, 8), GPAR_EBADBUF, "write to the released handle: EBADBUF");
  is_status(gpar_buffer_release(d), GPAR_EBADBUF, "second release: EBADBUF");
  is_status(gpar_wait_all(eng), GPAR_OK, "release: wait_all");
  ok(atomic_load(&w.ran) && w.good, "the pending writer ran on valid memory");
  ok(atomic_load(&r.ran) && r.good, "the pending reader saw the writer's data");
  gpar_stats_get(eng, &s2);
  is_int((long long)s2.buffers_live, (long long)s0.buffers_live, "freed after its ops were done");
  gpar_buffer_release(out);
}

static void test_errors(gpar_engine *eng, int cpu) {
  gpar_buffer x = mkbuf(eng, cpu, 1), f = mkbuf(eng, cpu, 2), g = mkbuf(eng, cpu, 3);
  gpar_buffer k = mkbuf(eng, cpu, 4), h = mkbuf(eng, cpu, 5), z = mkbuf(eng, cpu, 6);
  gpar_stats s0, s1;
  gpar_wait_all(eng);
  gpar_stats_get(eng, &s0);
  op a, r, r2, s, u;
  op_init(&a, 20000, x, f, 100);
  a.ret = GPAR_EBACKEND;
  op_init(&r, 0, f, g, 101);  /* reads the failed output: skipped */
  op_init(&r2, 0, g, k, 102); /* reads the skipped output: skipped */
  op_init(&s, 0, nobuf, x, 103); /* WAR successor of the failed op: runs */
  op_init(&u, 5000, nobuf, h, 104); /* unrelated */
  sub(eng, cpu, &a, x, f);
  sub(eng, cpu, &r, f, g);
  sub(eng, cpu, &r2, g, k);
  sub(eng, cpu, &s, nobuf, x);
  sub(eng, cpu, &u, nobuf, h);
  is_status(gpar_wait_all(eng), GPAR_EBACKEND, "wait_all returns the first error");
  is_status(gpar_wait_all(eng), GPAR_OK, "next wait_all: OK");
  ok(atomic_load(&a.ran) && !atomic_load(&r.ran) && !atomic_load(&r2.ran),
     "readers of a failed op's output were skipped (ran: %d %d)", atomic_load(&r.ran),
     atomic_load(&r2.ran));
  is_status(gpar_wait(f), GPAR_EBACKEND, "wait on the failed op's output: its error");
  is_status(gpar_wait(g), GPAR_EDEPFAILED, "wait on a skipped op's output: EDEPFAILED");
  is_status(gpar_wait(k), GPAR_EDEPFAILED, "skips propagate transitively");
  ok(atomic_load(&s.ran) && s.start > a.end, "WAR successor of the failed op ran, after it");
  is_status(gpar_wait(x), GPAR_OK, "its output: OK");
  ok(atomic_load(&u.ran), "unrelated op ran");
  is_status(gpar_wait(h), GPAR_OK, "unrelated output: OK");
  gpar_stats_get(eng, &s1);
  is_int((long long)(s1.ops_failed - s0.ops_failed), 3, "ops_failed counts the failure and two skips");
  is_int((long long)rd0(h), 104, "unrelated output value");
  /* (gpar_read of a failed buffer may fail: look at the memory directly, nothing writes it) */
  is_int((long long)*(uint64_t *)gpar_buffer_host_ptr(k), 4, "skipped op's output left untouched");

  /* The mark stays on the buffer after the failed op retired: a reader submitted now is
   * skipped too, a user op as well as a built-in copy. */
  op late;
  op_init(&late, 0, f, g, 108);
  sub(eng, cpu, &late, f, g);
  is_status(gpar_wait(g), GPAR_EDEPFAILED, "reader submitted after the failed op retired: EDEPFAILED");
  ok(!atomic_load(&late.ran), "... and its fn did not run");
  is_status(gpar_wait_all(eng), GPAR_EDEPFAILED, "wait_all reports the late skip");
  /* Built-in ops propagate too: a copy from the failed buffer is skipped. */
  is_status(gpar_copy(z, 0, f, 0, 8), GPAR_OK, "copy from a failed buffer: accepted");
  is_status(gpar_wait(z), GPAR_EDEPFAILED, "copy from a failed buffer: EDEPFAILED");
  is_int((long long)*(uint64_t *)gpar_buffer_host_ptr(z), 6, "skipped copy left its destination untouched");
  is_status(gpar_wait_all(eng), GPAR_EDEPFAILED, "wait_all reports the skipped copy");
  {
    uint64_t v = 0;
    int st = gpar_read(f, 0, &v, sizeof v);
    is_status(st, GPAR_EDEPFAILED, "gpar_read of a failed buffer: EDEPFAILED (gpar.h)");
    is_int((long long)v, 0, "... and copies nothing");
  }
  /* A write-only op on the failed buffer does not read it: it runs and clears the error. */
  is_status(gpar_fill(f, 0, 64, 0), GPAR_OK, "fill of the failed buffer: accepted");
  is_status(gpar_wait(f), GPAR_OK, "a later pure writer of the failed buffer ran: OK");
  is_int((long long)rd0(f), 0, "its value");
  op r3;
  op_init(&r3, 0, f, g, 105);
  sub(eng, cpu, &r3, f, g);
  is_status(gpar_wait(g), GPAR_OK, "a reader after the overwrite runs again");
  is_status(gpar_wait_all(eng), GPAR_OK, "wait_all after recovery: OK");

  /* Fault injection of user functions: the nth later one fails with EFAULT. */
  op fa;
  op_init(&fa, 0, nobuf, h, 106);
  if (gpar_fault_inject(eng, "user", 1) == GPAR_OK) {
    sub(eng, cpu, &fa, nobuf, h);
    is_status(gpar_wait(h), GPAR_EFAULT, "injected user fault: EFAULT");
    is_status(gpar_wait_all(eng), GPAR_EFAULT, "injected user fault: wait_all");
    op_init(&fa, 0, nobuf, h, 107);
    sub(eng, cpu, &fa, nobuf, h);
    is_status(gpar_wait(h), GPAR_OK, "fault fires once");
  } else {
    skip(3, "gpar_fault_inject(\"user\") not available");
  }
  gpar_buffer all[6] = {x, f, g, k, h, z};
  for (int i = 0; i < 6; i++) gpar_buffer_release(all[i]);
}

/* Calls waits from inside an op. */
typedef struct waiter {
  gpar_engine *eng;
  gpar_buffer b;
  int st_wait, st_all, st_read;
  atomic_int ran;
} waiter;

static int waiter_fn(const gpar_native *nat, void *arg) {
  waiter *w = arg;
  uint64_t v;
  (void)nat;
  w->st_wait = gpar_wait(w->b);
  w->st_all = gpar_wait_all(w->eng);
  w->st_read = gpar_read(w->b, 0, &v, sizeof v);
  atomic_store(&w->ran, 1);
  return GPAR_OK;
}

static void test_wait_inside(gpar_engine *eng, int cpu, const char *mode) {
  gpar_buffer b = mkbuf(eng, cpu, 1), o = mkbuf(eng, cpu, 0);
  waiter w = {eng, b, 99, 99, 99, 0};
  gpar_submit(eng, cpu, waiter_fn, &w, &b, 1, &o, 1);
  is_status(gpar_wait_all(eng), GPAR_OK, "wait-inside op: outer wait_all OK");
  ok(atomic_load(&w.ran) && w.st_wait == GPAR_EDEADLK && w.st_all == GPAR_EDEADLK &&
         w.st_read == GPAR_EDEADLK,
     "%s: gpar_wait/gpar_wait_all/gpar_read inside an op return EDEADLK (%s %s %s)", mode,
     gpar_status_name(w.st_wait), gpar_status_name(w.st_all), gpar_status_name(w.st_read));
  gpar_buffer_release(b);
  gpar_buffer_release(o);
}

/* Shutdown drains pending work. Each op increments word 0 of its buffer and records what it saw. */
typedef struct incr {
  volatile uint64_t *mem;
  uint64_t seen;
  atomic_int *counter;
} incr;

static int incr_fn(const gpar_native *nat, void *arg) {
  incr *c = arg;
  (void)nat;
  uint64_t v = c->mem[0];
  tu_sleep_us(1000);
  c->mem[0] = v + 1;
  c->seen = v;
  atomic_fetch_add(c->counter, 1);
  return GPAR_OK;
}

static void test_shutdown(void) {
  gpar_engine *e = tu_engine(GPAR_BACKEND_HOST, 4, 0);
  int cpu = gpar_device_find(e, GPAR_BACKEND_HOST, GPAR_DEVICE_CPU, 0);
  gpar_buffer b[4];
  static incr ops[100];
  atomic_int counter = 0;
  for (int i = 0; i < 4; i++) b[i] = mkbuf(e, cpu, 0);
  int bad = 0;
  for (int i = 0; i < 100; i++) {
    ops[i] = (incr){gpar_buffer_native(b[i % 4]), 999, &counter};
    bad += gpar_submit(e, cpu, incr_fn, &ops[i], &b[i % 4], 1, &b[i % 4], 1) != GPAR_OK;
  }
  is_int(bad, 0, "shutdown: 100 submits accepted");
  is_status(gpar_shutdown(e), GPAR_OK, "shutdown with pending work");
  is_int(atomic_load(&counter), 100, "every pending op ran before shutdown returned");
  int order_ok = 1;
  for (int i = 0; i < 100; i++) order_ok &= ops[i].seen == (uint64_t)(i / 4);
  ok(order_ok, "ops on each buffer ran in submit order");
  is_status(gpar_wait_all(e), GPAR_ESHUTDOWN, "wait_all after shutdown: ESHUTDOWN");
  is_status(gpar_wait(b[0]), GPAR_EBADBUF, "wait on a buffer after shutdown: EBADBUF");
}

static void test_sync(void) {
  gpar_engine *e = tu_engine(GPAR_BACKEND_HOST, 2, 1);
  int cpu = gpar_device_find(e, GPAR_BACKEND_HOST, GPAR_DEVICE_CPU, 0);
  gpar_buffer b = mkbuf(e, cpu, 0), c = mkbuf(e, cpu, 0), g = mkbuf(e, cpu, 0);
  uint64_t *pb = gpar_buffer_host_ptr(b), *pc = gpar_buffer_host_ptr(c);
  op w;
  op_init(&w, 10000, nobuf, b, 41);
  is_status(sub(e, cpu, &w, nobuf, b), GPAR_OK, "sync: submit");
  ok(atomic_load(&w.ran) && pb && pb[0] == 41, "sync: the op ran before submit returned");
  uint64_t v = 42;
  gpar_write(b, 8, &v, 8);
  ok(pb && pb[1] == 42, "sync: gpar_write done on return");
  gpar_copy(c, 0, b, 0, 16);
  ok(pc && pc[0] == 41 && pc[1] == 42, "sync: gpar_copy done on return");
  gpar_fill(c, 0, 8, 0xff);
  ok(pc && pc[0] == UINT64_MAX, "sync: gpar_fill done on return");
  test_wait_inside(e, cpu, "sync");
  op a, r;
  op_init(&a, 0, nobuf, b, 1);
  a.ret = GPAR_EBACKEND;
  op_init(&r, 0, b, g, 2);
  int st = sub(e, cpu, &a, nobuf, b);
  /* synchronous mode: the op completes before submit returns, which returns its status */
  is_status(st, GPAR_EBACKEND, "sync: gpar_submit of a failing op returns its error");
  sub(e, cpu, &r, b, g);
  ok(!atomic_load(&r.ran), "sync: reader of a failed output skipped");
  is_status(gpar_wait(g), GPAR_EDEPFAILED, "sync: EDEPFAILED");
  is_status(gpar_wait_all(e), GPAR_EBACKEND, "sync: wait_all reports the failure");
  is_status(gpar_shutdown(e), GPAR_OK, "sync: shutdown");
}

static void test_stats(void) {
  gpar_engine *e = tu_engine(GPAR_BACKEND_HOST, 4, 0);
  int cpu = gpar_device_find(e, GPAR_BACKEND_HOST, GPAR_DEVICE_CPU, 0);
  gpar_stats s;
  is_status(gpar_stats_get(e, &s), GPAR_OK, "stats: get");
  ok(s.ops_submitted == 0 && s.ops_completed == 0 && s.ops_in_flight == 0 && s.buffers_live == 0,
     "stats: a fresh engine counts nothing");
  gpar_buffer b[3];
  for (int i = 0; i < 3; i++) gpar_buffer_create(e, cpu, 64, &b[i]);
  gpar_stats_get(e, &s);
  is_int((long long)s.buffers_live, 3, "stats: buffers_live after three creates");
  static op ops[20];
  for (int i = 0; i < 20; i++) {
    op_init(&ops[i], i % 5 == 0 ? 2000 : 0, b[i % 3], b[(i + 1) % 3], (uint64_t)i);
    sub(e, cpu, &ops[i], b[i % 3], b[(i + 1) % 3]);
  }
  gpar_stats_get(e, &s);
  ok(s.ops_submitted >= 20 && s.ops_in_flight <= s.ops_submitted &&
         s.ops_completed + s.ops_in_flight == s.ops_submitted,
     "stats: submitted = completed + in flight while running (%llu = %llu + %llu)",
     (unsigned long long)s.ops_submitted, (unsigned long long)s.ops_completed,
     (unsigned long long)s.ops_in_flight);
  gpar_wait_all(e);
  gpar_stats_get(e, &s);
  ok(s.ops_in_flight == 0 && s.ops_completed == s.ops_submitted && s.ops_failed == 0,
     "stats: after wait_all: nothing in flight, all completed, none failed");
  uint64_t before = s.ops_submitted;
  op one;
  op_init(&one, 0, nobuf, b[0], 1);
  sub(e, cpu, &one, nobuf, b[0]);
  gpar_wait_all(e);
  gpar_stats_get(e, &s);
  is_int((long long)(s.ops_submitted - before), 1, "stats: one submit counts one op");
  for (int i = 0; i < 3; i++) gpar_buffer_release(b[i]);
  gpar_stats_get(e, &s);
  is_int((long long)s.buffers_live, 0, "stats: buffers_live 0 after releasing idle buffers");
  gpar_shutdown(e);
}

int main(void) {
  tap_start();
  gpar_engine *eng = tu_engine(GPAR_BACKEND_HOST, 4, 0);
  int cpu = gpar_device_find(eng, GPAR_BACKEND_HOST, GPAR_DEVICE_CPU, 0);
  ok(cpu >= 0, "CPU device found (%d)", cpu);
  if (cpu < 0) bail_out("no CPU device");
  test_order(eng, cpu);
  test_concurrency(eng, cpu);
  test_release(eng, cpu);
  test_errors(eng, cpu);
  test_wait_inside(eng, cpu, "threaded");
  is_status(gpar_shutdown(eng), GPAR_OK, "shutdown");
  test_shutdown();
  test_sync();
  test_stats();
  return done_testing();
}
