/* races.c: the engine without its global lock, where threads meet: an op's status written by its
 * retirement while another thread links a consumer behind it (a data race TSan sees: run this
 * test under TSan), readers leaving a buffer in O(1) however many readers a later write took
 * off, a consumer that takes a blocking op from a queue that holds more wakes the next sleeper
 * (ready ops past the ready ring's 4096 cells included), and handle slots recycled while other
 * threads look them up. Each test can be named on the command line. */
#include <pthread.h>

#include "testutil.h"

/* Test hook (exported, not in gpar.h; core/engine/deps.h). */
uint64_t gpar__test_reader_probes(gpar_buffer h);

static atomic_int go;

static int wait_go(const gpar_native *nat, void *arg) {
  (void)nat;
  (void)arg;
  tu_wait_flag(&go, 30);
  return GPAR_OK;
}

static int nothing(const gpar_native *nat, void *arg) {
  (void)nat;
  (void)arg;
  return GPAR_OK;
}

/* ------------------------------------------------------------ statuses under the op's lock */

/* Links host consumers of y (each a reader of y) while the main thread's rounds run. */
typedef struct linker {
  gpar_engine *eng;
  gpar_buffer y;
  atomic_int stop;
  long linked;
} linker;

static void *linker_main(void *arg) {
  linker *l = arg;
  while (!atomic_load(&l->stop)) {
    if (gpar_submit(l->eng, GPAR_HOST, nothing, NULL, &l->y, 1, NULL, 0) == GPAR_OK) l->linked++;
    if (l->linked % 64 == 0) tu_sleep_us(20);
  }
  return NULL;
}

/* A fill of x on an event-backend device that fails only when its event completes (fault
 * "completion"), and a copy x -> y dispatched behind it on the device before that: the copy
 * learns that its input failed when the fill retires, after its own dispatch, and retires with
 * GPAR_EDEPFAILED; meanwhile another thread links readers of y, which read the copy's status.
 * The status must be written under the rule engine/op.h states (under the op's lock once
 * consumers may read it): TSan reports the race otherwise. */
static void test_status_race(gpar_engine *eng, int dev, const char *name) {
  enum { ROUNDS = 40 };
  linker l = {eng, tu_buffer(eng, dev, 1024), 0, 0};
  gpar_buffer x = tu_buffer(eng, dev, 1024);
  pthread_t th;
  if (pthread_create(&th, NULL, linker_main, &l)) bail_out("pthread_create");
  int bad = 0;
  for (int r = 0; r < ROUNDS; r++) {
    gpar_fault_inject(eng, "completion", 1);
    int f = gpar_fill(x, 0, 1024, (int)r);
    int c = gpar_copy(l.y, 0, x, 0, 1024);
    int wy = gpar_wait(l.y), wx = gpar_wait(x);
    if (f != GPAR_OK || c != GPAR_OK || wx != GPAR_EFAULT || wy != GPAR_EDEPFAILED) {
      if (!bad) diag("  round %d: fill %s, copy %s, wait x %s, wait y %s", r, gpar_status_name(f), gpar_status_name(c),
                     gpar_status_name(wx), gpar_status_name(wy));
      bad++;
    }
    gpar_fault_inject(eng, "completion", 0);
    gpar_fill(l.y, 0, 1024, 0); /* y good again for the next round, done before the next fault is armed */
    gpar_wait(l.y);
  }
  atomic_store(&l.stop, 1);
  pthread_join(th, NULL);
  gpar_wait_all(eng);
  ok(bad == 0, "%s: %d rounds of a copy that learns after its dispatch that its input failed, with readers of its "
     "output linked meanwhile (%ld): it retires with GPAR_EDEPFAILED (%d bad rounds)", name, ROUNDS, l.linked, bad);
  gpar_buffer_release(x);
  gpar_buffer_release(l.y);
}

/* ------------------------------------------------------------ leaving a buffer's readers */

/* OLD readers of a held back, then a write of a, then NEW readers of it: the old readers retire
 * (the write took them off the readers long before) while the new ones are the buffer's
 * readers. Each leaving reader looks at one slot, not at every newer reader. */
static void test_readers(gpar_engine *eng) {
  enum { OLD = 3000, NEW = 3000 };
  gpar_buffer a = tu_buffer(eng, GPAR_HOST, 64), t = tu_buffer(eng, GPAR_HOST, 64);
  atomic_store(&go, 0);
  int st = gpar_submit(eng, GPAR_HOST, wait_go, NULL, NULL, 0, &t, 1);
  gpar_buffer rd[2] = {a, t};
  for (int i = 0; i < OLD && st == GPAR_OK; i++) st = gpar_submit(eng, GPAR_HOST, nothing, NULL, rd, 2, NULL, 0);
  if (st == GPAR_OK) st = gpar_fill(a, 0, 64, 7);
  for (int i = 0; i < NEW && st == GPAR_OK; i++) st = gpar_submit(eng, GPAR_HOST, nothing, NULL, &a, 1, NULL, 0);
  uint64_t before = gpar__test_reader_probes(a);
  double t0 = gpar_now();
  atomic_store(&go, 1);
  int wa = gpar_wait_all(eng);
  double dt = gpar_now() - t0;
  uint64_t probes = gpar__test_reader_probes(a) - before;
  ok(st == GPAR_OK && wa == GPAR_OK && probes <= OLD + NEW,
     "%d readers taken off by a write, then %d readers after it: the %d leaving readers looked at %llu slots (at "
     "most one each; %.3f s)", OLD, NEW, OLD + NEW, (unsigned long long)probes, dt);
  gpar_buffer_release(a);
  gpar_buffer_release(t);
}

/* ------------------------------------------------------------ wake-ups */

/* x waits (bounded) until y has run: with y queued behind x and the other worker asleep, the
 * worker that takes x must wake it for y. */
typedef struct pair {
  atomic_int y_ran;
  int x_saw;
} pair;

static int x_fn(const gpar_native *nat, void *arg) {
  pair *p = arg;
  (void)nat;
  p->x_saw = tu_wait_flag(&p->y_ran, 3);
  return p->x_saw ? GPAR_OK : GPAR_ETIMEDOUT;
}

static int y_fn(const gpar_native *nat, void *arg) {
  pair *p = arg;
  (void)nat;
  atomic_store(&p->y_ran, 1);
  return GPAR_OK;
}

/* A consumer that takes an op from a queue that still holds more wakes the next sleeper (the
 * push of y found a wake-up already on its way, for x): an op that blocks until another queued
 * op has run (libgpar_mpi's polling ops do) never waits for a worker that sleeps. fill: that
 * many ready ops first, held back by a gate on each worker, so x and y wait past the ready
 * ring's cells. */
static void test_cascade(gpar_engine *eng, int rounds, int fill) {
  int bad = 0;
  for (int r = 0; r < rounds && !bad; r++) {
    pair p = {0, 0};
    int st = GPAR_OK;
    atomic_store(&go, 0);
    if (fill) {
      for (int w = 0; w < 2 && st == GPAR_OK; w++) st = gpar_submit(eng, GPAR_HOST, wait_go, NULL, NULL, 0, NULL, 0);
      for (int i = 0; i < fill && st == GPAR_OK; i++) st = gpar_submit(eng, GPAR_HOST, nothing, NULL, NULL, 0, NULL, 0);
    } else {
      tu_sleep_us(2000); /* both workers asleep */
    }
    if (st == GPAR_OK) st = gpar_submit(eng, GPAR_HOST, x_fn, &p, NULL, 0, NULL, 0);
    if (st == GPAR_OK) st = gpar_submit(eng, GPAR_HOST, y_fn, &p, NULL, 0, NULL, 0);
    atomic_store(&go, 1);
    int wa = gpar_wait_all(eng);
    if (st != GPAR_OK || wa != GPAR_OK || !p.x_saw) bad++;
  }
  ok(bad == 0, "%d rounds: an op that waits for the op queued behind it%s: the other worker is woken (%d bad rounds)",
     rounds, fill ? " past 4096 ready ops (the ring's overflow)" : "", bad);
}

/* ------------------------------------------------------------ handle slots */

typedef struct looker {
  atomic_uint_fast64_t id; /* the communicator to look up (changes under it) */
  atomic_int stop;
  atomic_long looked;
} looker;

static void *looker_main(void *arg) {
  looker *l = arg;
  while (!atomic_load(&l->stop)) {
    gpar_comm c = {(uint64_t)atomic_load(&l->id)};
    int n;
    gpar_comm_info(c, &n, NULL, NULL); /* live, destroyed or recycled: any answer, never a broken count */
    atomic_fetch_add(&l->looked, 1);
  }
  return NULL;
}

/* Communicators created and destroyed in one slot while two threads look handles up in it:
 * every communicator answers while it lives and is refused once destroyed; a lookup racing the
 * slot's recycling never leaves the next object's count wrong. */
static void test_handle_recycle(gpar_engine *eng, int rounds) {
  looker l;
  memset(&l, 0, sizeof l);
  pthread_t th[2];
  for (int i = 0; i < 2; i++)
    if (pthread_create(&th[i], NULL, looker_main, &l)) bail_out("pthread_create");
  int host = gpar_device_find(eng, GPAR_BACKEND_HOST, -1, 0), bad = 0;
  for (int r = 0; r < rounds; r++) {
    if (r % 100 == 0) /* the lookers run through the rounds, not after them */
      for (long seen = atomic_load(&l.looked); atomic_load(&l.looked) == seen;) tu_sleep_us(50);
    gpar_comm c;
    int n = 0;
    if (gpar_comm_create(eng, &host, 1, &c) != GPAR_OK) {
      bad++;
      break;
    }
    atomic_store(&l.id, c.id);
    for (int k = 0; k < 3; k++) bad += gpar_comm_info(c, &n, NULL, NULL) != GPAR_OK || n != 1;
    bad += gpar_comm_destroy(c) != GPAR_OK;
    bad += gpar_comm_info(c, &n, NULL, NULL) != GPAR_EINVAL;
  }
  atomic_store(&l.stop, 1);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  ok(bad == 0, "%d communicators made and destroyed under two threads looking them up (%ld lookups): each answers "
     "while it lives and is refused after (%d bad)", rounds, atomic_load(&l.looked), bad);
}

int main(int argc, char **argv) {
  tap_start();
  gpar_engine *eng = tu_engine(GPAR_BACKEND_HOST, 2, 0);
  if (tu_want(argc, argv, "readers")) test_readers(eng);
  if (tu_want(argc, argv, "cascade")) test_cascade(eng, 20, 0);
  if (tu_want(argc, argv, "overflow")) test_cascade(eng, 3, 6000);
  if (tu_want(argc, argv, "handles")) test_handle_recycle(eng, 2000);
  gpar_shutdown(eng);
  if (tu_want(argc, argv, "status")) {
    eng = tu_engine(0, 2, 0);
    int n = gpar_device_count(eng), tested = 0;
    for (int d = 0; d < n && !tested; d++) {
      tu_devinfo p;
      if (tu_device_info(eng, d, &p) != GPAR_OK || p.backend_id == GPAR_BACKEND_HOST) continue;
      char name[320];
      snprintf(name, sizeof name, "device %d (%s %s)", d, p.backend, p.name);
      test_status_race(eng, d, name);
      tested++;
    }
    if (!tested) skip(1, "status: no device of an event backend (CUDA, OpenCL)");
    gpar_shutdown(eng);
  }
  return done_testing();
}
