/* runs.c: every op a device's dispatcher hands to a lane reaches the completion thread within a
 * bounded number of dispatched ops, whatever the other lanes do. A dispatcher records an event
 * only after a run of ops on one lane; a run left open while other lanes keep the dispatcher
 * busy once kept its ops (and their waiters, and consumers linked after the dispatch) waiting
 * until the device ran out of work. Here a device-to-host copy is dispatched, then a chain of
 * user functions keeps the compute lane busy (each takes a millisecond until the test is done,
 * then returns at once); a wait on the copy, and a consumer of the copy linked after it was
 * dispatched, must end while the chain still runs. On every device of an event backend (PoCL in
 * make check); skips wholly without one. */
#include <pthread.h>

#include "testutil.h"

#define N_CHAIN 3000 /* ~3 s of chain while the test is not done; the test needs a few dozen */

static atomic_int go, done, ran;

/* A host op that holds the copy and the chain back until the test has submitted them all, so
 * that both become ready at once and the copy is dispatched just before the chain starts. */
static int gate_fn(const gpar_native *nat, void *arg) {
  (void)nat;
  (void)arg;
  tu_wait_flag(&go, 30);
  return GPAR_OK;
}

/* One op of the chain, on the device's dispatcher: a millisecond while the test waits. */
static int chain_fn(const gpar_native *nat, void *arg) {
  (void)nat;
  (void)arg;
  if (!atomic_load(&done)) tu_sleep_us(1000);
  atomic_fetch_add(&ran, 1);
  return GPAR_OK;
}

/* The copy of src (device dev) into dst, gated with the chain on cbuf behind one host op. */
static int submit_all(gpar_engine *eng, int dev, gpar_buffer src, gpar_buffer dst, gpar_buffer cbuf) {
  gpar_buffer both[2] = {src, cbuf};
  int st = gpar_submit(eng, GPAR_HOST, gate_fn, NULL, NULL, 0, both, 2);
  if (st == GPAR_OK) st = gpar_copy(dst, 0, src, 0, 4096);
  for (int i = 0; i < N_CHAIN && st == GPAR_OK; i++) st = gpar_submit(eng, dev, chain_fn, NULL, NULL, 0, &cbuf, 1);
  return st;
}

/* The cases: a wait on a device-to-host copy; a consumer of it linked once it was dispatched
 * (host-to-device, on the device's h2d lane: an event edge on CUDA, a wait for retirement on
 * OpenCL, whose h2d copies read host memory at enqueue); a consumer linked once a
 * device-to-device copy was dispatched (device-to-host: an event edge on every event backend). */
enum { WAIT_D2H, LATE_H2D, LATE_D2H };

/* The case's wait ends while the chain still runs. */
static void run_case(gpar_engine *eng, int dev, const char *name, int mode) {
  static const char *what[] = {"a wait on a device-to-host copy", "a host-to-device consumer linked after its dispatch",
                               "a device-to-host consumer of a device copy linked after its dispatch"};
  gpar_buffer src = tu_buffer(eng, dev, 4096), cbuf = tu_buffer(eng, dev, 64), back = tu_buffer(eng, dev, 4096);
  gpar_buffer dst = tu_buffer(eng, mode == LATE_D2H ? dev : GPAR_HOST, 4096), host = tu_buffer(eng, GPAR_HOST, 4096);
  unsigned char h[4096];
  gpar_fill(src, 0, 4096, 0x5a);
  gpar_fill(back, 0, 4096, 0);
  gpar_wait_all(eng);
  atomic_store(&go, 0);
  atomic_store(&done, 0);
  atomic_store(&ran, 0);
  int st = submit_all(eng, dev, src, dst, cbuf), lst = GPAR_OK;
  atomic_store(&go, 1);
  gpar_buffer waited = dst;
  if (mode != WAIT_D2H) { /* the copy was dispatched just before the chain's first op */
    while (atomic_load(&ran) == 0) tu_sleep_us(100);
    waited = mode == LATE_H2D ? back : host;
    lst = gpar_copy(waited, 0, dst, 0, 4096);
  }
  int ws = gpar_wait(waited);
  int at = atomic_load(&ran);
  atomic_store(&done, 1);
  int wa = gpar_wait_all(eng);
  int rs = gpar_read(waited, 0, h, sizeof h);
  ok(st == GPAR_OK && lst == GPAR_OK && ws == GPAR_OK && wa == GPAR_OK && rs == GPAR_OK &&
         tu_all_bytes(h, sizeof h, 0x5a) && at < N_CHAIN,
     "%s: %s ends while the compute lane's chain runs (it ended after %d of %d chain ops; wait %s, data %s)", name,
     what[mode], at, N_CHAIN, gpar_status_name(ws), rs == GPAR_OK && tu_all_bytes(h, sizeof h, 0x5a) ? "right" : "wrong");
  gpar_buffer all[5] = {src, cbuf, back, dst, host};
  for (int i = 0; i < 5; i++) gpar_buffer_release(all[i]);
}

int main(void) {
  tap_start();
  gpar_engine *eng = tu_engine(0, 2, 0);
  int n = gpar_device_count(eng), tested = 0;
  for (int d = 0; d < n; d++) {
    tu_devinfo p;
    if (tu_device_info(eng, d, &p) != GPAR_OK || p.backend_id == GPAR_BACKEND_HOST) continue;
    char name[320];
    snprintf(name, sizeof name, "device %d (%s %s)", d, p.backend, p.name);
    for (int mode = WAIT_D2H; mode <= LATE_D2H; mode++) run_case(eng, d, name, mode);
    tested++;
  }
  gpar_shutdown(eng);
  if (!tested) skip_all("no device of an event backend (CUDA, OpenCL)");
  return done_testing();
}
