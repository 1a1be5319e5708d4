/* comm_lifetime.c: communicator lifetimes (destroy, destroy from inside an op, shutdown, and a
 * stale handle naming the next communicator in its slot). The rules tested: a destroyed communicator's
 * handle is refused (GPAR_EINVAL) forever, also once its slot holds another one; gpar_comm_destroy
 * from inside an op is refused with GPAR_EDEADLK and the collectives queued on the communicator
 * still complete; a collective called from outside while gpar_shutdown drains is refused
 * (GPAR_ESHUTDOWN) and frees nothing the draining ops use, one called from inside a draining op
 * is accepted and runs; gpar_shutdown destroys the engine's communicators after the drain (the
 * transport's destroy is called once, after its ops ran) and their handles are refused
 * afterwards, so engine lifetimes that leave communicators behind never use up the process's
 * communicators; a transport context's put is refused unless its thread holds that context.
 * Transport communicators use tests/comm_transport.h, whose context is freed in
 * destroy: under ASan a use of it after that is reported. The engine's own communicators are
 * tested on the host with the OpenCL devices (staged) and, where present, on the CUDA devices
 * (NCCL when built). Run under ASan and TSan too; name cases on the command line to run only
 * those (see main). */
#include <pthread.h>

#include "comm_transport.h"

static gpar_engine *host_engine(int threads) { return tu_engine(GPAR_BACKEND_HOST, threads, 0); }

static int host_dev(gpar_engine *eng) { return gpar_device_find(eng, GPAR_BACKEND_HOST, -1, 0); }

/* A GPAR_HOST buffer of n floats, all v. */
static gpar_buffer host_floats(gpar_engine *eng, size_t n, float v) {
  gpar_buffer b = tu_buffer(eng, GPAR_HOST, n * sizeof(float));
  if (tu_fill_value(b, n, v) != GPAR_OK || gpar_wait(b) != GPAR_OK) bail_out("writing a host buffer");
  return b;
}

static int all_floats(const float *p, size_t n, float v) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != v) return 0;
  return 1;
}

/* ---------------------------------------------------------------- a stale handle, its slot reused */

/* Communicators made and destroyed one after another take the same slot: every earlier handle
 * stays refused, never names the communicator now in its slot, and the live one keeps working. */
static void test_stale_slot(void) {
  enum { N = 300 };
  gpar_engine *eng = host_engine(2);
  int dev = host_dev(eng);
  gpar_buffer b = host_floats(eng, 16, 1.0f);
  static gpar_comm old[N];
  int create_bad = 0, same_id = 0, stale_ok = 0, enqueued = 0, live_bad = 0;
  for (int i = 0; i < N; i++) {
    gpar_comm c;
    if (gpar_comm_create(eng, &dev, 1, &c) != GPAR_OK) {
      create_bad++;
      continue;
    }
    for (int j = 0; j < i; j++) same_id += old[j].id == c.id;
    if (i > 0) { /* the previous communicator, destroyed: its slot now holds c */
      gpar_comm s = old[i - 1];
      gpar_stats s0, s1;
      gpar_stats_get(eng, &s0);
      int nm = -1;
      stale_ok += gpar_comm_info(s, &nm, NULL, NULL) != GPAR_EINVAL;
      stale_ok += gpar_allreduce(s, &b, NULL, 16, GPAR_FLOAT, GPAR_SUM) != GPAR_EINVAL;
      void *ctx = &ctx;
      stale_ok += gpar_comm_transport_ctx_get(s, &ctx) != GPAR_EINVAL || ctx;
      stale_ok += gpar_comm_destroy(s) != GPAR_EINVAL;
      gpar_stats_get(eng, &s1);
      enqueued += s1.ops_submitted != s0.ops_submitted;
    }
    /* The live communicator still works after its slot's earlier handles were used. */
    live_bad += gpar_allreduce(c, &b, NULL, 16, GPAR_FLOAT, GPAR_SUM) != GPAR_OK;
    live_bad += gpar_wait(b) != GPAR_OK;
    live_bad += gpar_comm_destroy(c) != GPAR_OK;
    old[i] = c;
  }
  is_int(create_bad, 0, "300 communicators made and destroyed in a row");
  is_int(same_id, 0, "no communicator handle repeats a destroyed one's");
  is_int(stale_ok, 0, "the previous handle, whose slot holds the live one: info, allreduce, transport ctx, destroy refused (GPAR_EINVAL)");
  is_int(enqueued, 0, "  and nothing was enqueued through it");
  is_int(live_bad, 0, "the live communicator works and is destroyed by its own handle");
  int later = 0;
  for (int i = 0; i < N; i++) later += gpar_comm_info(old[i], NULL, NULL, NULL) != GPAR_EINVAL;
  is_int(later, 0, "every destroyed handle is still refused at the end");
  float got[16];
  ok(gpar_read(b, 0, got, sizeof got) == GPAR_OK && all_floats(got, 16, 1.0f),
     "one-member sums left the data as it was (%g)", got[0]);
  gpar_buffer_release(b);
  is_status(gpar_shutdown(eng), GPAR_OK, "shutdown");
}

/* ---------------------------------------------------------------- transport context holds */

/* gpar_comm_transport_ctx_put refuses a put its thread did not get: after a failed get (a
 * communicator without a transport; a destroyed one whose slot holds another), a second put, a
 * never-used slot, another thread's hold; nothing is dropped, so the communicators stay whole
 * (their destroy does not wait forever, and no count goes below its own). Mutant: the put's
 * check of this thread's holds removed (an assert abort in a debug build, a NULL dereference on
 * the never-used slot). */
static void *put_other_thread(void *arg) {
  *(int *)arg = gpar_comm_transport_ctx_put(*(gpar_comm *)((int *)arg + 2));
  return NULL;
}

static void test_ctx_puts(void) {
  gpar_engine *eng = host_engine(2);
  int dev = host_dev(eng);
  gpar_comm own, tr;
  void *ctx = NULL;
  if (gpar_comm_create(eng, &dev, 1, &own) != GPAR_OK || tt_create(eng, dev, &tr) != GPAR_OK) bail_out("comms");
  is_status(gpar_comm_transport_ctx_get(own, &ctx), GPAR_EINVAL, "get on a communicator without a transport fails");
  is_status(gpar_comm_transport_ctx_put(own), GPAR_EINVAL, "  and the put after it is refused");
  gpar_comm never = {(uint64_t)9 << 32 | 4000}; /* a slot no communicator ever had */
  is_status(gpar_comm_transport_ctx_put(never), GPAR_EINVAL, "a put on a never-used slot is refused");
  is_status(gpar_comm_transport_ctx_put((gpar_comm){0}), GPAR_EINVAL, "a put on the null handle is refused");
  is_status(gpar_comm_transport_ctx_get(tr, &ctx), GPAR_OK, "get on a transport communicator");
  ok(ctx != NULL, "  gives its context");
  struct {
    int st, pad;
    gpar_comm c;
  } other = {GPAR_OK, 0, tr};
  pthread_t th;
  pthread_create(&th, NULL, put_other_thread, &other);
  pthread_join(th, NULL);
  is_status(other.st, GPAR_EINVAL, "another thread's put of that hold is refused");
  is_status(gpar_comm_transport_ctx_put(tr), GPAR_OK, "the getting thread's put");
  is_status(gpar_comm_transport_ctx_put(tr), GPAR_EINVAL, "a second put is refused");
  gpar_buffer b = host_floats(eng, 16, 1.0f);
  is_status(gpar_allreduce(own, &b, NULL, 16, GPAR_FLOAT, GPAR_SUM), GPAR_OK, "the communicators still work");
  is_status(gpar_wait(b), GPAR_OK, "  (waited)");
  is_status(gpar_comm_destroy(tr), GPAR_OK, "the transport communicator is destroyed (no hold left to wait for)");
  gpar_comm next;
  if (tt_create(eng, dev, &next) != GPAR_OK) bail_out("tt_create");
  is_status(gpar_comm_transport_ctx_get(tr, &ctx), GPAR_EINVAL, "get through the destroyed handle fails");
  is_status(gpar_comm_transport_ctx_put(tr), GPAR_EINVAL, "  and its put does not touch the slot's new communicator");
  is_status(gpar_comm_destroy(next), GPAR_OK, "  which is destroyed whole");
  is_status(gpar_comm_destroy(own), GPAR_OK, "and the other one");
  gpar_buffer_release(b);
  is_status(gpar_shutdown(eng), GPAR_OK, "shutdown");
}

/* ---------------------------------------------------------------- destroy from inside an op */

typedef struct inside {
  gpar_comm comm;
  float *x;         /* the member buffer this op writes (NULL: it only declares the write) */
  size_t n;
  float value;
  atomic_int queued;  /* the main thread has queued the collective */
  int st;             /* what gpar_comm_destroy returned inside the op */
} inside;

/* Write x, wait until a collective on x is queued behind this op, then try to destroy its
 * communicator from here. */
static int destroy_inside_fn(const gpar_native *nat, void *arg) {
  inside *in = arg;
  (void)nat;
  for (size_t i = 0; in->x && i < in->n; i++) in->x[i] = in->value;
  tu_wait_flag(&in->queued, 10);
  in->st = gpar_comm_destroy(in->comm);
  return GPAR_OK;
}

/* Transport communicator: the refused destroy must not reach the transport. */
static void test_destroy_inside_transport(void) {
  tt_reset();
  gpar_engine *eng = host_engine(2);
  gpar_buffer x = host_floats(eng, 64, 0.0f);
  static inside in;
  memset(&in, 0, sizeof in);
  if (tt_create(eng, host_dev(eng), &in.comm) != GPAR_OK) bail_out("transport communicator");
  in.x = gpar_buffer_host_ptr(x);
  in.n = 64;
  in.value = 1.0f;
  is_status(gpar_submit(eng, GPAR_HOST, destroy_inside_fn, &in, NULL, 0, &x, 1), GPAR_OK,
            "transport: an op that will destroy the communicator is queued");
  is_status(tt_allreduce(in.comm, x, 64), GPAR_OK, "transport: an allreduce is queued behind it");
  atomic_store(&in.queued, 1);
  is_status(gpar_wait(x), GPAR_OK, "transport: the allreduce completes");
  is_status(in.st, GPAR_EDEADLK, "transport: gpar_comm_destroy from inside an op: GPAR_EDEADLK");
  ok(all_floats(in.x, 64, 11.0f), "transport: the queued allreduce gave the right result (%g, want 11)", in.x[0]);
  ok(atomic_load(&tt.destroy_calls) == 0 && atomic_load(&tt.bad_ctx) == 0,
     "transport: the refused destroy left the transport alone (destroy called %d times, %d uses of a destroyed context)",
     atomic_load(&tt.destroy_calls), atomic_load(&tt.bad_ctx));
  is_status(gpar_comm_destroy(in.comm), GPAR_OK, "transport: a later destroy from outside succeeds");
  ok(atomic_load(&tt.destroy_calls) == 1 && atomic_load(&tt.early) == 0,
     "transport: destroyed once, after its ops ran (%d calls, %d early)", atomic_load(&tt.destroy_calls),
     atomic_load(&tt.early));
  is_status(gpar_comm_info(in.comm, NULL, NULL, NULL), GPAR_EINVAL, "transport: its handle is refused afterwards");
  gpar_buffer_release(x);
  is_status(gpar_shutdown(eng), GPAR_OK, "shutdown");
}

/* A communicator of the engine's own over devs (n members): an op queued first declares that it
 * writes member 0's buffer, so the allreduce queued next waits for it, and destroys from inside. */
static void destroy_inside_own(gpar_engine *eng, const int *devs, int n, const char *name) {
  static inside in;
  memset(&in, 0, sizeof in);
  if (gpar_comm_create(eng, devs, n, &in.comm) != GPAR_OK) bail_out("gpar_comm_create");
  gpar_buffer b[8] = {{0, 0}};
  float want = 0;
  for (int i = 0; i < n; i++) {
    b[i] = tu_buffer(eng, devs[i], 64 * sizeof(float));
    if (tu_fill_value(b[i], 64, (float)(i + 1)) != GPAR_OK) bail_out("fill a member");
    want += (float)(i + 1);
  }
  is_status(gpar_submit(eng, GPAR_HOST, destroy_inside_fn, &in, NULL, 0, &b[0], 1), GPAR_OK,
            "an op that will destroy the communicator is queued");
  int ar = gpar_allreduce(in.comm, b, NULL, 64, GPAR_FLOAT, GPAR_SUM);
  diag("%s: %d members", name, n);
  is_status(ar, GPAR_OK, "an allreduce is queued behind it");
  atomic_store(&in.queued, 1);
  int good = gpar_wait_all(eng) == GPAR_OK;
  for (int i = 0; i < n; i++) {
    float got[64];
    good &= gpar_read(b[i], 0, got, sizeof got) == GPAR_OK && all_floats(got, 64, want);
  }
  is_status(in.st, GPAR_EDEADLK, "gpar_comm_destroy from inside an op: GPAR_EDEADLK");
  ok(good, "%s: the queued allreduce gave every member the sum (%g)", name, want);
  is_status(gpar_allreduce(in.comm, b, NULL, 64, GPAR_FLOAT, GPAR_SUM), GPAR_OK, "the communicator still takes collectives");
  is_status(gpar_wait_all(eng), GPAR_OK, "  which complete");
  is_status(gpar_comm_destroy(in.comm), GPAR_OK, "a later destroy from outside succeeds");
  is_status(gpar_comm_info(in.comm, NULL, NULL, NULL), GPAR_EINVAL, "its handle is refused afterwards");
  for (int i = 0; i < n; i++) gpar_buffer_release(b[i]);
}

/* The engine's own communicators: the host with the OpenCL devices (staged), and the CUDA devices
 * (NCCL when built) where there are any. */
static void test_destroy_inside_own(void) {
  gpar_engine *eng = tu_engine(0, 2, 0);
  int devs[8], n = 0;
  devs[n++] = host_dev(eng);
  for (int i = 0; i < 2; i++) {
    int d = gpar_device_find(eng, GPAR_BACKEND_OPENCL, -1, i);
    if (d >= 0) devs[n++] = d;
  }
  destroy_inside_own(eng, devs, n, "host and OpenCL members (staged)");
  n = 0;
  for (int i = 0; i < 8; i++) {
    int d = gpar_device_find(eng, GPAR_BACKEND_CUDA, -1, i);
    if (d >= 0) devs[n++] = d;
  }
  if (n > 0)
    destroy_inside_own(eng, devs, n, "CUDA members");
  else
    skip(8, "no CUDA device");
  is_status(gpar_shutdown(eng), GPAR_OK, "shutdown");
}

/* ---------------------------------------------------------------- collectives while shutdown drains */

typedef struct drain {
  gpar_engine *eng;
  gpar_comm comm;
  float *x;
  gpar_buffer y;         /* inside case: the buffer of the collective called from the op */
  atomic_int closing;    /* the main thread saw the engine refuse outside calls */
  atomic_int release;    /* the gate may return */
  int inside_st;         /* status of the collective called from inside the op */
  int from_inside;
  int sd;                /* gpar_shutdown's status */
} drain;

/* The gate: writes x, then holds the engine's drain open until released; in the inside case it
 * first calls a collective on the communicator from here, while the engine drains. */
static int gate_fn(const gpar_native *nat, void *arg) {
  drain *d = arg;
  (void)nat;
  for (int i = 0; i < 64; i++) d->x[i] = 1.0f;
  if (d->from_inside) {
    tu_wait_flag(&d->closing, 10);
    d->inside_st = tt_allreduce(d->comm, d->y, 64);
  }
  tu_wait_flag(&d->release, 10);
  return GPAR_OK;
}

static void *shutdown_main(void *arg) {
  drain *d = arg;
  d->sd = gpar_shutdown(d->eng);
  return NULL;
}

/* 1 once outside calls are refused (gpar_shutdown has begun); 0 after 10 s. */
static int wait_closing(gpar_engine *eng) {
  double end = gpar_now() + 10;
  while (gpar_device_count(eng) != GPAR_ESHUTDOWN) {
    if (gpar_now() > end) return 0;
    tu_sleep_us(50);
  }
  return 1;
}

static void test_shutdown_drain(int from_inside) {
  const char *how = from_inside ? "from inside a draining op" : "from outside";
  tt_reset();
  static drain d;
  memset(&d, 0, sizeof d);
  d.eng = host_engine(2);
  d.from_inside = from_inside;
  gpar_buffer x = host_floats(d.eng, 64, 0.0f);
  d.y = host_floats(d.eng, 64, 5.0f);
  d.x = gpar_buffer_host_ptr(x);
  if (tt_create(d.eng, host_dev(d.eng), &d.comm) != GPAR_OK) bail_out("transport communicator");
  int st = gpar_submit(d.eng, GPAR_HOST, gate_fn, &d, NULL, 0, &x, 1);
  if (st == GPAR_OK) st = tt_allreduce(d.comm, x, 64); /* queued behind the gate */
  if (st != GPAR_OK) bail_out("queueing the gate and the allreduce");
  pthread_t th;
  if (pthread_create(&th, NULL, shutdown_main, &d)) bail_out("pthread_create");
  int closing = wait_closing(d.eng);
  int outside_st = GPAR_OK;
  if (!from_inside) outside_st = tt_allreduce(d.comm, x, 64);
  atomic_store(&d.closing, 1);
  atomic_store(&d.release, 1);
  pthread_join(th, NULL);
  ok(closing, "%s: gpar_shutdown began draining", how);
  if (!from_inside)
    is_status(outside_st, GPAR_ESHUTDOWN, "from outside: a collective while shutdown drains is refused: GPAR_ESHUTDOWN");
  else
    is_status(d.inside_st, GPAR_OK, "from inside a draining op: the collective is accepted");
  is_status(d.sd, GPAR_OK, "shutdown");
  int want_ops = from_inside ? 2 : 1;
  int good = atomic_load(&tt.ops_run) == want_ops && tt.x0[0] == 11.0f && (!from_inside || tt.x0[1] == 15.0f);
  ok(good && atomic_load(&tt.bad_ctx) == 0,
     "%s: the queued allreduce%s ran with its transport intact (%d ran, want %d; %g, %g; %d uses of a destroyed context)",
     how, from_inside ? " and the one called during the drain" : "", atomic_load(&tt.ops_run), want_ops, tt.x0[0],
     tt.x0[1], atomic_load(&tt.bad_ctx));
  is_int(atomic_load(&tt.early), 0, "  the transport was not destroyed before its ops ran");
  is_status(gpar_comm_info(d.comm, NULL, NULL, NULL), GPAR_EINVAL, "  afterwards the handle is refused: GPAR_EINVAL");
}

/* ---------------------------------------------------------------- shutdown reclaims communicators */

/* Communicators left at shutdown: a transport one with an allreduce still queued, and a staged one. */
static void test_shutdown_reclaims(void) {
  tt_reset();
  gpar_engine *eng = host_engine(2);
  int dev = host_dev(eng);
  gpar_comm ct, cs;
  if (tt_create(eng, dev, &ct) != GPAR_OK || gpar_comm_create(eng, &dev, 1, &cs) != GPAR_OK)
    bail_out("communicators");
  gpar_buffer x = host_floats(eng, 64, 1.0f);
  is_status(tt_allreduce(ct, x, 64), GPAR_OK, "an allreduce is queued; then shutdown at once");
  is_status(gpar_shutdown(eng), GPAR_OK, "shutdown with two communicators left");
  ok(atomic_load(&tt.destroy_calls) == 1, "shutdown destroyed the transport communicator once (%d calls)",
     atomic_load(&tt.destroy_calls));
  ok(atomic_load(&tt.ops_run) == 1 && tt.x0[0] == 11.0f && atomic_load(&tt.early) == 0 && atomic_load(&tt.bad_ctx) == 0,
     "  after the drain: its allreduce ran first, with the context intact (%d ran, %g; %d early, %d bad)",
     atomic_load(&tt.ops_run), tt.x0[0], atomic_load(&tt.early), atomic_load(&tt.bad_ctx));
  is_status(gpar_comm_info(ct, NULL, NULL, NULL), GPAR_EINVAL, "the transport communicator's handle is refused: GPAR_EINVAL");
  void *ctx = &ctx;
  ok(gpar_comm_transport_ctx_get(ct, &ctx) == GPAR_EINVAL && !ctx, "  gpar_comm_transport_ctx_get: GPAR_EINVAL, NULL");
  is_status(gpar_comm_info(cs, NULL, NULL, NULL), GPAR_EINVAL, "the staged communicator's handle is refused: GPAR_EINVAL");
  is_status(gpar_comm_destroy(cs), GPAR_EINVAL, "  destroying it: GPAR_EINVAL");
  is_status(gpar_comm_destroy(ct), GPAR_EINVAL, "  destroying the transport one: GPAR_EINVAL");
  ok(atomic_load(&tt.destroy_calls) == 1, "  the transport was destroyed once in all (%d)", atomic_load(&tt.destroy_calls));

  /* CUDA members (NCCL when built): the communicator left at shutdown after a queued allreduce. */
  gpar_engine *ge = tu_engine(0, 2, 0);
  int cd[8], nc = 0;
  for (int i = 0; i < 8; i++)
    if ((cd[nc] = gpar_device_find(ge, GPAR_BACKEND_CUDA, -1, i)) >= 0) nc++;
  if (nc > 0) {
    gpar_comm cc;
    gpar_buffer cb[8] = {{0, 0}};
    int st = gpar_comm_create(ge, cd, nc, &cc);
    for (int i = 0; i < nc && st == GPAR_OK; i++) {
      cb[i] = tu_buffer(ge, cd[i], 64 * sizeof(float));
      st = tu_fill_value(cb[i], 64, 1.0f);
    }
    if (st == GPAR_OK) st = gpar_allreduce(cc, cb, NULL, 64, GPAR_FLOAT, GPAR_SUM);
    int sd = gpar_shutdown(ge);
    ok(st == GPAR_OK && sd == GPAR_OK, "%d CUDA members: an allreduce queued, then shutdown (%s, %s)", nc,
       gpar_status_name(st), gpar_status_name(sd));
    is_status(gpar_comm_info(cc, NULL, NULL, NULL), GPAR_EINVAL, "  the CUDA communicator's handle is refused: GPAR_EINVAL");
  } else {
    skip(2, "no CUDA device");
    gpar_shutdown(ge);
  }
}

/* More engine lifetimes than the process has communicator slots (4,096 today), each leaving a
 * communicator behind: every create succeeds and every old handle stays refused. Last: on a
 * library that leaks them, no communicator can be made in this process afterwards. */
static void test_many_lifetimes(void) {
  enum { N = 4200 };
  static gpar_comm h[N];
  int bad = 0, first_bad = -1, last_st = GPAR_OK;
  for (int i = 0; i < N; i++) {
    gpar_engine *eng = host_engine(1);
    int dev = 0, st = gpar_comm_create(eng, &dev, 1, &h[i]);
    if (st != GPAR_OK) {
      if (first_bad < 0) first_bad = i, last_st = st;
      bad++;
      h[i].id = 0;
    }
    gpar_shutdown(eng);
  }
  ok(bad == 0, "%d engine lifetimes, each leaving a communicator: every gpar_comm_create succeeds (%d failed, the first at lifetime %d: %s)",
     N, bad, first_bad, gpar_status_name(last_st));
  int stale = 0;
  for (int i = 0; i < N; i++) stale += h[i].id && gpar_comm_info(h[i], NULL, NULL, NULL) != GPAR_EINVAL;
  is_int(stale, 0, "  and each communicator's handle is refused after its engine's shutdown (GPAR_EINVAL)");
}

/* Which cases run: all, or those named on the command line (e.g. to see one fail alone). */

int main(int argc, char **argv) {
  tap_start();
  if (tu_want(argc, argv, "stale_slot")) test_stale_slot();
  if (tu_want(argc, argv, "ctx_puts")) test_ctx_puts();
  if (tu_want(argc, argv, "destroy_inside_transport")) test_destroy_inside_transport();
  if (tu_want(argc, argv, "destroy_inside_own")) test_destroy_inside_own();
  if (tu_want(argc, argv, "drain_outside")) test_shutdown_drain(0);
  if (tu_want(argc, argv, "drain_inside")) test_shutdown_drain(1);
  if (tu_want(argc, argv, "shutdown_reclaims")) test_shutdown_reclaims();
  if (tu_want(argc, argv, "many_lifetimes")) test_many_lifetimes();
  return done_testing();
}
