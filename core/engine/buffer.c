/* buffer.c: buffers and their handles. A handle is {id, serial}: id locates the buffer (engine
 * slot + 1 in the high 32 bits, slot in the engine's table below); serial names it and is never
 * reused in the process, so released, foreign and shut-down handles are refused however many
 * buffers and engines come and go. At the serials' end creation fails instead of wrapping.
 * A buffer lives while anything references it: its handle (until released), each op that
 * accesses it (until the op retires or is discarded), each lookup in progress. The last
 * reference frees its memory and its slot. */
#include <stdlib.h>

#include "engine/engine.h"

static _Atomic uint64_t gpar__buf_serial; /* last buffer serial given */

uint64_t gpar__buf_serial_last(void) { return atomic_load(&gpar__buf_serial); }

void gpar__buf_serial_set(uint64_t next) { atomic_store(&gpar__buf_serial, next - 1); }

/* A buffer serial, never 0 and never reused; 0 once they are used up. */
static uint64_t buf_serial_next(void) {
  uint64_t n = atomic_load(&gpar__buf_serial);
  do {
    if (n == UINT64_MAX) return 0;
  } while (!atomic_compare_exchange_weak(&gpar__buf_serial, &n, n + 1));
  return n + 1;
}

/* Handles: id = (engine slot + 1) << 32 | buffer slot; serial = the buffer's serial. */
gpar_buffer gpar__buf_handle(const gpar__buf *b) {
  return (gpar_buffer){((uint64_t)(b->eng->slot + 1) << 32) | b->slot, b->serial};
}

/* Resolve a handle for engine eng (engine lock held). */
static int buf_find_locked(gpar_engine *eng, gpar_buffer h, gpar__buf **b) {
  if (h.id == 0) return gpar__errorf(GPAR_EBADBUF, "null buffer handle");
  if (atomic_load(&eng->state) == GPAR__ENG_CLOSED) return gpar__errorf(GPAR_ESHUTDOWN, "engine is shut down");
  uint64_t es = h.id >> 32;
  uint32_t slot = (uint32_t)h.id;
  if (es != (uint64_t)eng->slot + 1) {
    const gpar_engine *other = es ? gpar__engine_at(es - 1) : NULL;
    int st = other ? atomic_load(&other->state) : GPAR__ENG_FREE;
    if ((st == GPAR__ENG_OPEN || st == GPAR__ENG_CLOSING) && h.serial >= atomic_load(&other->first_buf_serial))
      return gpar__errorf(GPAR_EENGINE, "buffer handle %#llx:%llu belongs to another engine",
                          (unsigned long long)h.id, (unsigned long long)h.serial);
    return gpar__errorf(GPAR_EBADBUF, "buffer handle %#llx:%llu: its engine is shut down or unknown",
                        (unsigned long long)h.id, (unsigned long long)h.serial);
  }
  if (h.serial < atomic_load(&eng->first_buf_serial))
    return gpar__errorf(GPAR_EBADBUF, "buffer handle %#llx:%llu: its engine is shut down", (unsigned long long)h.id,
                        (unsigned long long)h.serial);
  if (slot >= eng->nslots || !eng->slots[slot] || eng->slots[slot]->serial != h.serial ||
      atomic_load(&eng->slots[slot]->released))
    return gpar__errorf(GPAR_EBADBUF, "buffer handle %#llx:%llu is released or invalid", (unsigned long long)h.id,
                        (unsigned long long)h.serial);
  *b = eng->slots[slot];
  return GPAR_OK;
}

int gpar__buf_get(gpar_engine *eng, gpar_buffer h, gpar__buf **b) {
  pthread_mutex_lock(&eng->mu);
  int st = buf_find_locked(eng, h, b);
  if (st == GPAR_OK) atomic_fetch_add_explicit(&(*b)->refs, 1, memory_order_relaxed);
  pthread_mutex_unlock(&eng->mu);
  return st;
}

void gpar__buf_ref(gpar__buf *b) { atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed); }

/* Free a buffer nothing references any more (engine lock held). */
static void buf_free_locked(gpar_engine *eng, gpar__buf *b) {
  if (b->dev)
    b->dev->ops->mem_free(b->dev->bdev, b->mem);
  else
    gpar__pinned_free(&eng->pinned, b->mem);
  eng->slots[b->slot] = NULL;
  eng->free_slots[eng->nfree++] = b->slot;
  if (b->bytes) eng->stats.buffers_live--; /* tokens (no memory) are not counted */
  free(b->readers);
  free(b->errmsg);
  free(b);
}

void gpar__buf_put(gpar__buf *b) {
  if (atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) != 1) return;
  gpar_engine *eng = b->eng;
  pthread_mutex_lock(&eng->mu);
  buf_free_locked(eng, b);
  pthread_mutex_unlock(&eng->mu);
}

/* Drop a reference with the engine lock held (retirement). */
void gpar__buf_put_locked(gpar__buf *b) {
  if (atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) == 1) buf_free_locked(b->eng, b);
}

/* A slot for a new buffer (engine lock held). */
static int buf_register_locked(gpar_engine *eng, gpar__device *dev, size_t bytes, void *mem, gpar__buf **out) {
  if (atomic_load(&eng->state) == GPAR__ENG_CLOSED) return gpar__errorf(GPAR_ESHUTDOWN, "engine is shut down");
  if (!eng->nfree && eng->nslots == eng->capslots) {
    uint32_t cap = eng->capslots ? eng->capslots * 2 : 64;
    if (cap > (1u << 30)) return gpar__errorf(GPAR_ENOMEM, "too many buffers");
    gpar__buf **s = realloc(eng->slots, sizeof *s * cap);
    if (s) eng->slots = s;
    uint32_t *f = realloc(eng->free_slots, sizeof *f * cap);
    if (f) eng->free_slots = f;
    if (!s || !f) return gpar__errorf(GPAR_ENOMEM, "out of host memory for buffer slots");
    eng->capslots = cap;
  }
  uint64_t serial = buf_serial_next();
  if (!serial) return gpar__errorf(GPAR_ENOMEM, "buffer serials used up");
  gpar__buf *b = calloc(1, sizeof *b);
  if (!b) return gpar__errorf(GPAR_ENOMEM, "out of host memory");
  b->mem = mem;
  b->slot = eng->nfree ? eng->free_slots[--eng->nfree] : eng->nslots++;
  b->serial = serial;
  b->eng = eng;
  b->dev = dev;
  b->host_memory = !dev || !dev->ops->ordered_by_events;
  b->bytes = bytes;
  atomic_init(&b->refs, 1); /* the handle's */
  eng->slots[b->slot] = b;
  if (bytes) eng->stats.buffers_live++;
  *out = b;
  return GPAR_OK;
}

int gpar__buf_create(gpar_engine *eng, int dev, size_t bytes, gpar_buffer *buf) {
  int st;
  if (bytes == 0) return gpar__errorf(GPAR_EINVAL, "gpar_buffer_create: size is 0");
  if (dev != GPAR_HOST && (dev < 0 || dev >= eng->ndev))
    return gpar__errorf(GPAR_ENODEV, "gpar_buffer_create: device %d does not exist (%d devices)", dev, eng->ndev);
  gpar__device *d = dev == GPAR_HOST ? NULL : eng->devs[dev];
  if (d && d->info.memory_bytes && bytes > d->info.memory_bytes)
    return gpar__errorf(d->ops->ordered_by_events ? GPAR_EDEVMEM : GPAR_ENOMEM,
                        "gpar_buffer_create: %zu bytes exceed the %llu bytes of device %d (%s)", bytes,
                        (unsigned long long)d->info.memory_bytes, dev, d->info.name);
  /* Allocation may call the vendor (pool refill): not under the engine lock. */
  void *mem;
  if (d) {
    st = gpar__fault(eng, GPAR__FAULT_ALLOC);
    if (!st) st = d->ops->mem_alloc(d->bdev, bytes, &mem);
  } else {
    st = gpar__pinned_alloc(eng, bytes, &mem);
  }
  if (st) return st;
  gpar__buf *b;
  pthread_mutex_lock(&eng->mu);
  st = buf_register_locked(eng, d, bytes, mem, &b);
  if (st == GPAR_OK) *buf = gpar__buf_handle(b);
  pthread_mutex_unlock(&eng->mu);
  if (st != GPAR_OK) {
    if (d)
      d->ops->mem_free(d->bdev, mem);
    else
      gpar__pinned_free(&eng->pinned, mem);
  }
  return st;
}

int gpar__buf_create_token(gpar_engine *eng, gpar_buffer *buf) {
  gpar__buf *b;
  pthread_mutex_lock(&eng->mu);
  int st = buf_register_locked(eng, NULL, 0, NULL, &b);
  if (st == GPAR_OK) *buf = gpar__buf_handle(b);
  pthread_mutex_unlock(&eng->mu);
  return st;
}

int gpar__buf_release(gpar_engine *eng, gpar_buffer h) {
  gpar__buf *b;
  pthread_mutex_lock(&eng->mu);
  int st = buf_find_locked(eng, h, &b);
  if (st == GPAR_OK) atomic_store(&b->released, 1);
  pthread_mutex_unlock(&eng->mu);
  if (st == GPAR_OK) gpar__buf_put(b); /* the handle's reference */
  return st;
}

void gpar__buf_free_all(gpar_engine *eng) {
  pthread_mutex_lock(&eng->mu);
  for (uint32_t s = 0; s < eng->nslots; s++)
    if (eng->slots[s]) buf_free_locked(eng, eng->slots[s]);
  pthread_mutex_unlock(&eng->mu);
  free(eng->slots);
  free(eng->free_slots);
  eng->slots = NULL;
  eng->free_slots = NULL;
}
