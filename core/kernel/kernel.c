/* kernel.c: kernel objects, their handles and lifetime (kernel.h): the table of live kernels,
 * handle lookups, references, the device a call names. The public calls that make and describe
 * kernels are calls.c's, launches launch.c's, builds build.c's. */
#include <assert.h>
#include <stdlib.h>

#include "kernel/kernel.h"

/* ---------------------------------------------------------------- handles */

/* id = owned << 63 | serial << 20 | slot (serial >= 1, so id 0 is never valid). */
#define KERNEL_SLOT_BITS 20
#define KERNEL_SERIAL_MAX ((UINT64_C(1) << (63 - KERNEL_SLOT_BITS)) - 1)
#define KERNEL_OWNED_TAG (UINT64_C(1) << 63)

static gpar__handle_table *kernel_table;
static pthread_once_t kernel_table_once = PTHREAD_ONCE_INIT;
static void kernel_table_make(void) { kernel_table = gpar__handle_table_new(1u << KERNEL_SLOT_BITS, KERNEL_SERIAL_MAX); }
static gpar__handle_table *table(void) {
  pthread_once(&kernel_table_once, kernel_table_make);
  return kernel_table;
}

static _Thread_local int owned_calls; /* > 0: inside gpar__kernel_owned's bracket */

int gpar__kernel_owned(int step) {
  owned_calls += step;
  assert(owned_calls >= 0);
  return owned_calls;
}

gpar__kernel *gpar__kernel_get(gpar_kernel h, const char *fn) {
  gpar__handle_table *t = table();
  uint64_t id = h.id & ~KERNEL_OWNED_TAG;
  gpar__kernel *k = t ? gpar__handle_get(t, (uint32_t)(id & ((1u << KERNEL_SLOT_BITS) - 1)), id >> KERNEL_SLOT_BITS) : NULL;
  if (k && k->owned != !!(h.id & KERNEL_OWNED_TAG)) { /* the tag is part of the handle */
    gpar__kernel_put(k);
    k = NULL;
  }
  if (!k) gpar__errorf(GPAR_EINVAL, "%s: kernel %#llx is released or invalid", fn, (unsigned long long)h.id);
  return k;
}

void gpar__kernel_put(gpar__kernel *k) { gpar__handle_put(table(), k->slot); }

void gpar__kernel_ref(gpar__kernel *k) { atomic_fetch_add_explicit(&k->refs, 1, memory_order_relaxed); }

static void kernel_free(gpar__kernel *k) {
  atomic_fetch_sub(&k->eng->kernels_live, 1);
  if (!k->te) { /* else its text's entry owns them (build.c) */
    free(k->text);
    free(k->sig);
    free(k->params);
  }
  free(k);
}

void gpar__kernel_unref(gpar__kernel *k) {
  if (atomic_fetch_sub_explicit(&k->refs, 1, memory_order_acq_rel) == 1) kernel_free(k);
}

void gpar__kernel_discard(gpar__kernel *k) {
  atomic_fetch_add(&k->eng->kernels_live, 1);
  kernel_free(k);
}

int gpar__kernel_publish(gpar__kernel *k, gpar_kernel *out) {
  k->owned = owned_calls > 0;
  int st = gpar__handle_add(table(), k, &k->slot, &k->serial);
  if (st == GPAR_OK) {
    atomic_fetch_add(&k->eng->kernels_live, 1);
    out->id = (k->owned ? KERNEL_OWNED_TAG : 0) | k->serial << KERNEL_SLOT_BITS | k->slot;
  }
  return st;
}

gpar__kernel *gpar__kernel_kill(gpar__kernel *k) { return gpar__handle_kill(table(), k->slot, k->serial); }

void gpar__kernel_recycle(gpar__kernel *k) { gpar__handle_recycle(table(), k->slot); }

/* ---------------------------------------------------------------- shutdown */

static int kernel_of(void *obj, void *token) { return ((gpar__kernel *)obj)->token == token; }
static void kernel_drop(void *obj, void *token) {
  (void)token;
  gpar__kernel_unref(obj); /* the handle's; nothing else holds it after the drain and the graphs */
}

void gpar__kernel_drain(gpar_engine *eng) {
  gpar__handle_drain(table(), kernel_of, kernel_drop, gpar__engine_token(eng));
}
