/* handle.c: handle tables, one lifetime rule for the objects users hold handles to (graphs,
 * communicators). A handle is {slot, serial}; serials count up per table and are never reused
 * (at their end gpar__handle_add fails), so a stale, foreign or destroyed handle can never name
 * a later object. Slots live in chunks freed only with the table, so a lookup may read any slot
 * at any time without touching freed memory.
 *
 * The protocol of a slot (refs counts the handle, while live, and every holder):
 *   add:     serial and obj written, then live = 1, then refs = 1 (release): visible whole;
 *   get:     refs incremented only from non-zero (CAS), then serial and live checked; a
 *            mismatch drops the reference again;
 *   kill:    live 1 -> 0 by one caller, who takes over the handle's reference; new gets fail;
 *   recycle: the killer waits until its reference is the only one (holders are calls in
 *            progress, which never block while holding one) and takes refs from 1 to 0 in one
 *            compare-and-swap, then frees the slot (serial 0, on the free list) and the object.
 * Only the killer ever drops refs to zero, so a holder's put never has to free anything. */
#include <assert.h>
#include <stdlib.h>
#include <time.h>

#include "engine/handle.h"

gpar__handle_table *gpar__handle_table_new(uint32_t max_slots, uint64_t max_serial) {
  size_t nchunks = (max_slots + GPAR__HANDLE_CHUNK - 1) / GPAR__HANDLE_CHUNK;
  gpar__handle_table *t = calloc(1, sizeof *t + sizeof t->chunks[0] * nchunks);
  if (!t) return NULL;
  pthread_mutex_init(&t->mu, NULL);
  t->max_slots = (uint32_t)(nchunks * GPAR__HANDLE_CHUNK);
  if (t->max_slots > max_slots) t->max_slots = max_slots;
  t->max_serial = max_serial;
  return t;
}

static gpar__handle_slot *slot_at(gpar__handle_table *t, uint32_t i) {
  if (i >= t->max_slots) return NULL;
  gpar__handle_slot *c = atomic_load_explicit(&t->chunks[i / GPAR__HANDLE_CHUNK], memory_order_acquire);
  return c ? &c[i % GPAR__HANDLE_CHUNK] : NULL;
}

/* A free slot index, growing by a chunk when none (table lock held); max_slots when full. */
static uint32_t take_slot_locked(gpar__handle_table *t) {
  if (t->free_head) {
    uint32_t i = t->free_head - 1;
    t->free_head = slot_at(t, i)->next_free;
    return i;
  }
  if (t->nslots >= t->max_slots) return t->max_slots;
  uint32_t i = t->nslots;
  if (i % GPAR__HANDLE_CHUNK == 0) {
    gpar__handle_slot *c = calloc(GPAR__HANDLE_CHUNK, sizeof *c);
    if (!c) return t->max_slots;
    atomic_store_explicit(&t->chunks[i / GPAR__HANDLE_CHUNK], c, memory_order_release);
  }
  t->nslots++;
  return i;
}

int gpar__handle_add(gpar__handle_table *t, void *obj, uint32_t *slot, uint64_t *serial) {
  int st = GPAR_OK;
  pthread_mutex_lock(&t->mu);
  uint32_t i = t->last_serial < t->max_serial ? take_slot_locked(t) : t->max_slots;
  if (t->last_serial >= t->max_serial)
    st = gpar__errorf(GPAR_ENOMEM, "handle serials used up (%llu objects)", (unsigned long long)t->max_serial);
  else if (i == t->max_slots)
    st = gpar__errorf(GPAR_ENOMEM, "more than %u live objects of this type", t->max_slots);
  if (st == GPAR_OK) {
    gpar__handle_slot *s = slot_at(t, i);
    *serial = ++t->last_serial;
    *slot = i;
    s->obj = obj;
    atomic_store(&s->serial, *serial);
    atomic_store(&s->live, 1);
    atomic_store_explicit(&s->refs, 1, memory_order_release);
  }
  pthread_mutex_unlock(&t->mu);
  return st;
}

void *gpar__handle_get(gpar__handle_table *t, uint32_t slot, uint64_t serial) {
  gpar__handle_slot *s = serial ? slot_at(t, slot) : NULL;
  if (!s) return NULL;
  long r = atomic_load(&s->refs);
  do
    if (r == 0) return NULL;
  while (!atomic_compare_exchange_weak(&s->refs, &r, r + 1));
  if (atomic_load(&s->serial) == serial && atomic_load(&s->live)) return s->obj;
  atomic_fetch_sub(&s->refs, 1); /* never the last: a slot in use keeps its killer's or handle's */
  return NULL;
}

void gpar__handle_put(gpar__handle_table *t, uint32_t slot) {
  long before = atomic_fetch_sub(&slot_at(t, slot)->refs, 1);
  assert(before > 1 && "only the killer's recycle drops a slot's last reference");
  (void)before;
}

void *gpar__handle_kill(gpar__handle_table *t, uint32_t slot, uint64_t serial) {
  void *obj = gpar__handle_get(t, slot, serial);
  if (!obj) return NULL;
  gpar__handle_slot *s = slot_at(t, slot);
  int live = 1;
  if (!atomic_compare_exchange_strong(&s->live, &live, 0)) { /* another killer won */
    gpar__handle_put(t, slot);
    return NULL;
  }
  gpar__handle_put(t, slot); /* keep one: the handle's, now the killer's */
  return obj;
}

void gpar__handle_recycle(gpar__handle_table *t, uint32_t slot) {
  gpar__handle_slot *s = slot_at(t, slot);
  /* The killer's reference is the last when refs is 1: it goes 1 -> 0 in one compare-and-swap,
   * so a get that took a reference meanwhile (refs 2) is waited for, and a get after it finds 0
   * and takes none. A plain store of 0 after a look at refs could wipe out such a get's
   * reference, and its put would then take a later object's count to 0. Holders are calls in
   * progress: they leave soon. */
  for (long one = 1; !atomic_compare_exchange_strong(&s->refs, &one, 0); one = 1) {
    struct timespec ts = {0, 20000};
    nanosleep(&ts, NULL);
  }
  pthread_mutex_lock(&t->mu);
  atomic_store(&s->serial, 0);
  s->obj = NULL;
  s->next_free = t->free_head;
  t->free_head = slot + 1;
  pthread_mutex_unlock(&t->mu);
}

void *gpar__handle_at(gpar__handle_table *t, uint32_t i, uint64_t *serial) {
  gpar__handle_slot *s = slot_at(t, i);
  if (!s) return NULL;
  uint64_t sn = atomic_load(&s->serial);
  void *obj = sn ? gpar__handle_get(t, i, sn) : NULL;
  if (obj) *serial = sn;
  return obj;
}

uint32_t gpar__handle_count(gpar__handle_table *t) {
  pthread_mutex_lock(&t->mu);
  uint32_t n = t->nslots;
  pthread_mutex_unlock(&t->mu);
  return n;
}

void gpar__handle_drain(gpar__handle_table *t, int (*mine)(void *obj, void *ctx), void (*drop)(void *obj, void *ctx),
                        void *ctx) {
  for (uint32_t i = 0, n = t ? gpar__handle_count(t) : 0; i < n; i++) {
    uint64_t serial;
    void *obj = gpar__handle_at(t, i, &serial);
    if (!obj) continue;
    void *taken = mine(obj, ctx) ? gpar__handle_kill(t, i, serial) : NULL;
    gpar__handle_put(t, i);
    if (!taken) continue;
    gpar__handle_recycle(t, i);
    drop(obj, ctx);
  }
}
