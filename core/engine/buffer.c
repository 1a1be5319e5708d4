/* buffer.c: buffers and their handles. A handle is {id, serial}: id locates the buffer (engine
 * slot + 1 in the high 32 bits, slot in the engine's table below); serial names it and is never
 * reused in the process, so released, foreign and shut-down handles are refused however many
 * buffers and engines come and go. At the serials' end creation fails instead of wrapping.
 *
 * A buffer lives while anything references it: its handle (until released), each op that
 * accesses it (until the op retires or is discarded), each lookup in progress; the last
 * reference frees its memory and its slot. Lookups take no lock: the buffer structs live in
 * chunks of the engine's slot table that are never moved or freed before the engine, so a
 * lookup may read any slot; it takes a reference only from a count that is not 0 (a buffer
 * being freed is never revived), then checks the serial and the released mark, and drops the
 * reference again when they do not match. eng->buf_mu guards only new slots and the free list
 * (creation and the last reference's free). */
#include <stdlib.h>

#include "engine/buffer.h"
#include "engine/device.h"
#include "engine/fault.h"
#include "engine/pinned.h"

/* Handles: id = (engine slot + 1) << 32 | buffer slot; serial = the buffer's serial. */
gpar_buffer gpar__buf_handle(const gpar__buf *b) {
  return (gpar_buffer){((uint64_t)(b->eng->slot + 1) << 32) | b->slot, atomic_load(&b->serial)};
}

/* The struct of slot i, or NULL when no such slot was ever handed out. */
static gpar__buf *slot_at(gpar_engine *eng, uint32_t i) {
  if (i >= (uint32_t)GPAR__BUF_CHUNK * GPAR__BUF_CHUNKS) return NULL;
  gpar__buf *c = atomic_load_explicit(&eng->buf_chunks[i / GPAR__BUF_CHUNK], memory_order_acquire);
  return c ? &c[i % GPAR__BUF_CHUNK] : NULL;
}

/* Why handle h names no live buffer of eng (the message for a failed lookup). */
static int lookup_failure(gpar_engine *eng, gpar_buffer h) {
  if (h.id == 0) return gpar__errorf(GPAR_EBADBUF, "null buffer handle");
  if (atomic_load(&eng->state) == GPAR__ENG_CLOSED) return gpar__errorf(GPAR_ESHUTDOWN, "engine is shut down");
  uint64_t es = h.id >> 32;
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
  return gpar__errorf(GPAR_EBADBUF, "buffer handle %#llx:%llu is released or invalid", (unsigned long long)h.id,
                      (unsigned long long)h.serial);
}

/* The lookup behind gpar__buf_get and gpar__buf_get_token: a token (bytes 0) is found only by
 * the second, a buffer only by the first (a user's handle, even forged, never names a token). */
static int buf_lookup(gpar_engine *eng, gpar_buffer h, int token, gpar__buf **out) {
  gpar__buf *b = h.id >> 32 == (uint64_t)eng->slot + 1 && h.serial ? slot_at(eng, (uint32_t)h.id) : NULL;
  if (b && atomic_load_explicit(&eng->state, memory_order_relaxed) != GPAR__ENG_CLOSED) {
    long r = atomic_load_explicit(&b->refs, memory_order_relaxed);
    while (r > 0 && !atomic_compare_exchange_weak_explicit(&b->refs, &r, r + 1, memory_order_acquire,
                                                          memory_order_relaxed)) {
    }
    if (r > 0) {
      if (atomic_load_explicit(&b->serial, memory_order_relaxed) == h.serial &&
          !atomic_load_explicit(&b->released, memory_order_relaxed) && (b->bytes == 0) == token) {
        *out = b;
        return GPAR_OK;
      }
      gpar__buf_put(b); /* someone else's buffer now (a legitimate reference while held) */
    }
  }
  return lookup_failure(eng, h);
}

int gpar__buf_get(gpar_engine *eng, gpar_buffer h, gpar__buf **out) { return buf_lookup(eng, h, 0, out); }
int gpar__buf_get_token(gpar_engine *eng, gpar_buffer h, gpar__buf **out) { return buf_lookup(eng, h, 1, out); }

void gpar__buf_ref(gpar__buf *b) { atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed); }

/* Free a buffer nothing references any more, and its slot. */
static void buf_free(gpar__buf *b) {
  gpar_engine *eng = b->eng;
  void (*release)(void *) = b->release;
  void *release_arg = b->release_arg;
  b->release = NULL;
  b->release_arg = NULL;
  if (release)
    release(release_arg); /* imported: the owner frees it */
  else if (b->dev)
    b->dev->ops->mem_free(b->dev->bdev, b->mem);
  else if (b->mem)
    gpar__pinned_free(eng->pinned, b->mem);
  if (b->bytes) atomic_fetch_sub_explicit(&eng->buffers_live, 1, memory_order_relaxed); /* tokens not counted */
  free(b->readers);
  free(b->errmsg);
  b->readers = NULL;
  b->errmsg = NULL;
  b->rhead = b->rtail = b->capreaders = 0;
  b->reader_probes = 0;
  b->writer = NULL;
  b->mem = NULL;
  atomic_store(&b->serial, 0);
  pthread_mutex_lock(&eng->buf_mu);
  b->next_free = eng->free_head;
  eng->free_head = b->slot + 1;
  pthread_mutex_unlock(&eng->buf_mu);
}

void gpar__buf_put(gpar__buf *b) {
  if (atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) == 1) buf_free(b);
}

/* A free slot (a new chunk when none); NULL when the table is full or out of memory. */
static gpar__buf *slot_take(gpar_engine *eng) {
  gpar__buf *b = NULL;
  pthread_mutex_lock(&eng->buf_mu);
  if (eng->free_head) {
    b = slot_at(eng, eng->free_head - 1);
    eng->free_head = b->next_free;
  } else if (eng->nslots < (uint32_t)GPAR__BUF_CHUNK * GPAR__BUF_CHUNKS) {
    uint32_t i = eng->nslots;
    gpar__buf *chunk = atomic_load(&eng->buf_chunks[i / GPAR__BUF_CHUNK]);
    if (!chunk && (chunk = calloc(GPAR__BUF_CHUNK, sizeof *chunk))) {
      for (uint32_t k = 0; k < GPAR__BUF_CHUNK; k++) chunk[k].slot = i + k;
      atomic_store_explicit(&eng->buf_chunks[i / GPAR__BUF_CHUNK], chunk, memory_order_release);
    }
    if (chunk) {
      b = &chunk[i % GPAR__BUF_CHUNK];
      eng->nslots++;
    }
  }
  pthread_mutex_unlock(&eng->buf_mu);
  return b;
}

/* What frees an imported buffer's memory (gpar_buffer_import); {NULL, NULL} for libgpar's own. */
typedef struct {
  void (*fn)(void *arg);
  void *arg;
} buf_owner;

/* A new buffer over mem (bytes 0: a token), with one reference: the handle's. */
static int buf_register(gpar_engine *eng, gpar__device *dev, size_t bytes, void *mem, buf_owner owner,
                        gpar_buffer *out) {
  if (atomic_load(&eng->state) == GPAR__ENG_CLOSED) return gpar__errorf(GPAR_ESHUTDOWN, "engine is shut down");
  uint64_t serial = gpar__buf_serial_next();
  if (!serial) return gpar__errorf(GPAR_ENOMEM, "buffer serials used up");
  gpar__buf *b = slot_take(eng);
  if (!b)
    return gpar__errorf(GPAR_ENOMEM, "too many buffers (at most %u alive at once), or out of host memory",
                        (unsigned)GPAR__BUF_CHUNK * GPAR__BUF_CHUNKS);
  b->eng = eng;
  b->dev = dev;
  b->host_memory = !dev || !dev->ops->ordered_by_events;
  b->mem = mem;
  b->bytes = bytes;
  b->release = owner.fn;
  b->release_arg = owner.arg;
  b->status = GPAR_OK;
  atomic_store(&b->released, 0);
  atomic_store(&b->serial, serial);
  if (bytes) atomic_fetch_add_explicit(&eng->buffers_live, 1, memory_order_relaxed);
  atomic_store_explicit(&b->refs, 1, memory_order_release); /* visible whole from here on */
  *out = gpar__buf_handle(b);
  return GPAR_OK;
}

int gpar__buf_create(gpar_engine *eng, int dev, size_t bytes, gpar_buffer *buf) {
  int st;
  if (bytes == 0) return gpar__errorf(GPAR_EINVAL, "gpar_buffer_create: size is 0");
  gpar__device *d = dev == GPAR_HOST ? NULL : gpar__engine_device(eng, dev, "gpar_buffer_create"); /* NULL: pinned */
  if (dev != GPAR_HOST && !d) return GPAR_ENODEV;
  if (d && d->info.memory_bytes && bytes > d->info.memory_bytes)
    return gpar__errorf(d->ops->ordered_by_events ? GPAR_EDEVMEM : GPAR_ENOMEM,
                        "gpar_buffer_create: %zu bytes exceed the %llu bytes of device %d (%s)", bytes,
                        (unsigned long long)d->info.memory_bytes, dev, d->info.name);
  void *mem;
  if (d) {
    st = gpar__fault(eng, GPAR__FAULT_ALLOC);
    if (!st) st = d->ops->mem_alloc(d->bdev, bytes, &mem);
  } else {
    st = gpar__pinned_alloc(eng, bytes, &mem);
  }
  if (st) return st;
  if ((st = buf_register(eng, d, bytes, mem, (buf_owner){NULL, NULL}, buf)) != GPAR_OK) {
    if (d)
      d->ops->mem_free(d->bdev, mem);
    else
      gpar__pinned_free(eng->pinned, mem);
  }
  return st;
}

/* The release of an import whose owner asked for no call: the memory is simply not ours. */
static void owner_keeps(void *arg) { (void)arg; }

int gpar__buf_import(gpar_engine *eng, int dev, void *ptr, size_t bytes, void (*release)(void *arg), void *arg,
                     gpar_buffer *buf) {
  if (bytes == 0) return gpar__errorf(GPAR_EINVAL, "gpar_buffer_import: size is 0");
  if (!ptr) return gpar__errorf(GPAR_EINVAL, "gpar_buffer_import: ptr is NULL");
  if (dev == GPAR_HOST)
    return gpar__errorf(GPAR_EINVAL, "gpar_buffer_import: GPAR_HOST is libgpar's pinned memory; import host memory "
                                     "on the CPU device (gpar_device_find(eng, GPAR_BACKEND_HOST, -1, 0))");
  gpar__device *d = gpar__engine_device(eng, dev, "gpar_buffer_import");
  if (!d) return GPAR_ENODEV;
  if (!d->ops->mem_import)
    return gpar__errorf(GPAR_ENOTSUP, "gpar_buffer_import: device %d (%s, %s) cannot use another library's memory",
                        dev, d->ops->name, d->info.name);
  void *mem;
  int st = d->ops->mem_import(d->bdev, ptr, bytes, &mem);
  if (st) return st;
  return buf_register(eng, d, bytes, mem, (buf_owner){release ? release : owner_keeps, arg}, buf);
}

int gpar__buf_create_token(gpar_engine *eng, gpar_buffer *buf) {
  return buf_register(eng, NULL, 0, NULL, (buf_owner){NULL, NULL}, buf);
}

static int buf_release(gpar_engine *eng, gpar_buffer h, int token) {
  gpar__buf *b;
  int st = buf_lookup(eng, h, token, &b);
  if (st) return st;
  int was = atomic_exchange(&b->released, 1);
  if (!was) gpar__buf_put(b); /* the handle's reference */
  gpar__buf_put(b);           /* the lookup's */
  return was ? lookup_failure(eng, h) : GPAR_OK;
}

int gpar__buf_release(gpar_engine *eng, gpar_buffer h) { return buf_release(eng, h, 0); }
int gpar__buf_release_token(gpar_engine *eng, gpar_buffer h) { return buf_release(eng, h, 1); }

void gpar__buf_free_all(gpar_engine *eng) {
  for (uint32_t i = 0; i < eng->nslots; i++) {
    gpar__buf *b = slot_at(eng, i);
    if (b && atomic_load(&b->refs) > 0) {
      atomic_store(&b->refs, 0);
      buf_free(b);
    }
  }
  for (int c = 0; c < GPAR__BUF_CHUNKS; c++) {
    free(atomic_load(&eng->buf_chunks[c]));
    atomic_store(&eng->buf_chunks[c], NULL);
  }
  eng->nslots = 0;
  eng->free_head = 0;
}
