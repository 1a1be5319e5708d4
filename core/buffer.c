/* buffer.c: buffers and their handles. A handle is {id, serial}: id locates the buffer (engine
 * slot + 1 in the high 32 bits, slot in the engine's table below); serial names it and is never
 * reused in the process, so released, foreign and shut-down handles are refused however many
 * buffers and engines come and go. At the serials' end creation fails instead of wrapping. */
#include <stdlib.h>

#include "internal.h"

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

/* Resolve a handle for engine eng (engine lock held). A live handle of another engine is
 * GPAR_EENGINE; anything else that is not a live buffer of eng is GPAR_EBADBUF. */
int gpar__buf_get_locked(gpar_engine *eng, gpar_buffer h, gpar__buf **b) {
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
  if (slot >= eng->nslots || !eng->slots[slot] || eng->slots[slot]->serial != h.serial || eng->slots[slot]->released)
    return gpar__errorf(GPAR_EBADBUF, "buffer handle %#llx:%llu is released or invalid", (unsigned long long)h.id,
                        (unsigned long long)h.serial);
  *b = eng->slots[slot];
  return GPAR_OK;
}

/* Decode a handle; on success the engine lock is held and *b is live and not released. */
int gpar__buf_lookup(gpar_buffer h, gpar__buf **b, gpar_engine **eng_out) {
  uint64_t es = h.id >> 32;
  if (h.id == 0) return gpar__errorf(GPAR_EBADBUF, "null buffer handle");
  gpar_engine *eng = es ? gpar__engine_at(es - 1) : NULL;
  if (!eng || atomic_load(&eng->state) == GPAR__ENG_FREE)
    return gpar__errorf(GPAR_EBADBUF, "buffer handle %#llx:%llu: its engine is shut down or unknown",
                        (unsigned long long)h.id, (unsigned long long)h.serial);
  pthread_mutex_lock(&eng->mu);
  int st = gpar__buf_get_locked(eng, h, b);
  if (st) {
    pthread_mutex_unlock(&eng->mu);
    return st;
  }
  *eng_out = eng;
  return GPAR_OK;
}

void gpar__buf_free_locked(gpar_engine *eng, gpar__buf *b) {
  gpar__buffer_free_mem(eng, b->dev, b->mem);
  eng->slots[b->slot] = NULL;
  eng->free_slots[eng->nfree++] = b->slot;
  eng->stats.buffers_live--;
  free(b->readers);
  free(b->errmsg);
  free(b);
}

int gpar__buffer_alloc(gpar_engine *eng, gpar__device *dev, size_t bytes, void **mem) {
  int st;
  if (dev) {
    st = gpar__fault(eng, GPAR__FAULT_ALLOC);
    if (!st) st = dev->ops->mem_alloc(dev->bdev, bytes, mem);
    return st;
  }
  return gpar__pinned_alloc(eng, bytes, mem);
}

void gpar__buffer_free_mem(gpar_engine *eng, gpar__device *dev, void *mem) {
  if (dev)
    dev->ops->mem_free(dev->bdev, mem);
  else
    gpar__pinned_free(&eng->pinned, mem);
}

int gpar__buffer_register_locked(gpar_engine *eng, gpar__device *dev, size_t bytes, void *mem, gpar__buf **out) {
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
  eng->slots[b->slot] = b;
  eng->stats.buffers_live++;
  *out = b;
  return GPAR_OK;
}

int gpar__buffer_create(gpar_engine *eng, int dev, size_t bytes, gpar_buffer *buf) {
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
  if ((st = gpar__buffer_alloc(eng, d, bytes, &mem))) return st;
  gpar__buf *b;
  pthread_mutex_lock(&eng->mu);
  st = gpar__buffer_register_locked(eng, d, bytes, mem, &b);
  if (st == GPAR_OK) *buf = gpar__buf_handle(b);
  pthread_mutex_unlock(&eng->mu);
  if (st != GPAR_OK) gpar__buffer_free_mem(eng, d, mem);
  return st;
}

GPAR_API int gpar_buffer_create(gpar_engine *e, int dev, size_t bytes, gpar_buffer *buf) {
  int st;
  if (buf) *buf = (gpar_buffer){0, 0};
  gpar_engine *eng = gpar__engine_enter(e, &st);
  if (!eng) return st;
  if (!buf)
    st = gpar__errorf(GPAR_EINVAL, "gpar_buffer_create: buf is NULL");
  else
    st = gpar__buffer_create(eng, dev, bytes, buf);
  gpar__engine_leave(eng);
  return st;
}

static int release_locked(gpar_engine *eng, gpar_buffer handle) {
  gpar__buf *b;
  int st = gpar__buf_get_locked(eng, handle, &b);
  if (st) return st;
  b->released = 1;
  if (b->pending == 0) gpar__buf_free_locked(eng, b);
  return GPAR_OK;
}

/* Release a handle of an entered engine. */
int gpar__buffer_release(gpar_buffer handle) {
  uint64_t es = handle.id >> 32;
  gpar_engine *eng = es ? gpar__engine_at(es - 1) : NULL;
  if (!eng) return gpar__errorf(GPAR_EBADBUF, "not a buffer handle");
  pthread_mutex_lock(&eng->mu);
  int st = release_locked(eng, handle);
  pthread_mutex_unlock(&eng->mu);
  return st;
}

GPAR_API int gpar_buffer_release(gpar_buffer handle) {
  int st;
  gpar_engine *eng = gpar__engine_enter_buf(handle, &st);
  if (!eng) return st;
  st = gpar__buffer_release(handle);
  gpar__engine_leave(eng);
  return st;
}

/* What the small queries read of a buffer. */
static int buf_peek(gpar_buffer handle, int *host, void **mem, size_t *bytes, int *dev) {
  int st;
  gpar_engine *eng = gpar__engine_enter_buf(handle, &st);
  if (!eng) return st;
  gpar__buf *b;
  pthread_mutex_lock(&eng->mu);
  if ((st = gpar__buf_get_locked(eng, handle, &b)) == GPAR_OK) {
    *host = b->host_memory;
    *mem = b->mem;
    *bytes = b->bytes;
    *dev = b->dev ? b->dev->index : GPAR_HOST;
  }
  pthread_mutex_unlock(&eng->mu);
  gpar__engine_leave(eng);
  return st;
}

GPAR_API void *gpar_buffer_host_ptr(gpar_buffer handle) {
  int host, dev;
  void *mem;
  size_t bytes;
  if (buf_peek(handle, &host, &mem, &bytes, &dev)) return NULL;
  if (!host) gpar__errorf(GPAR_EINVAL, "gpar_buffer_host_ptr: buffer is not in host memory");
  return host ? mem : NULL;
}

GPAR_API void *gpar_buffer_native(gpar_buffer handle) {
  int host, dev;
  void *mem;
  size_t bytes;
  return buf_peek(handle, &host, &mem, &bytes, &dev) ? NULL : mem;
}

GPAR_API int gpar_buffer_query(gpar_buffer handle, size_t *bytes, int *dev) {
  int host, d;
  void *mem;
  size_t n;
  int st = buf_peek(handle, &host, &mem, &n, &d);
  if (st) return st;
  if (bytes) *bytes = n;
  if (dev) *dev = d;
  return GPAR_OK;
}
