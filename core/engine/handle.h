/* handle.h: handle tables (handle.c), one lifetime rule for the objects users hold handles to
 * (graphs, communicators). A handle is {slot, serial}. Serials count up per table and are never
 * reused (at their end creation fails); a slot is reused once its object is gone. Lookups never
 * block and never touch freed memory: the slots live in chunks that are only freed with the
 * table, and a lookup takes a reference only while the slot still holds the object its serial
 * names. Engines and buffers carry their own slot + serial pairs (registry.c, buffer.c). */
#ifndef GPAR_CORE_ENGINE_HANDLE_H
#define GPAR_CORE_ENGINE_HANDLE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "backend.h"

#define GPAR__HANDLE_CHUNK 256
typedef struct gpar__handle_slot {
  _Atomic uint64_t serial; /* of the object in the slot; 0 when none */
  atomic_long refs;        /* 1 for the handle while live, 1 per holder; 0: slot free */
  atomic_int live;         /* the handle is valid (kill clears it) */
  void *obj;
  uint32_t next_free;      /* free list link: next free slot + 1 (table lock) */
} gpar__handle_slot;
typedef struct gpar__handle_table {
  pthread_mutex_t mu;      /* growth and the free list */
  uint32_t max_slots;      /* fixed bound (the handle encoding's slot bits) */
  uint64_t max_serial;
  uint64_t last_serial;
  uint32_t nslots;         /* slots handed out so far */
  uint32_t free_head;      /* first free slot + 1; 0: none */
  _Atomic(gpar__handle_slot *) chunks[]; /* max_slots / GPAR__HANDLE_CHUNK entries */
} gpar__handle_table;

/* A table for at most max_slots live objects and max_serial serials; NULL without memory. */
GPAR__HIDDEN gpar__handle_table *gpar__handle_table_new(uint32_t max_slots, uint64_t max_serial);
/* Put obj in a free slot with a fresh serial (one reference: the handle's). */
GPAR__HIDDEN int gpar__handle_add(gpar__handle_table *t, void *obj, uint32_t *slot, uint64_t *serial);
/* The live object of {slot, serial} with a reference taken, or NULL. */
GPAR__HIDDEN void *gpar__handle_get(gpar__handle_table *t, uint32_t slot, uint64_t serial);
/* Drop a reference taken by gpar__handle_get (never the last one). */
GPAR__HIDDEN void gpar__handle_put(gpar__handle_table *t, uint32_t slot);
/* End a live handle (one caller wins): later gets fail. Returns the object, with a reference
 * the caller now holds (the handle's), or NULL when it was not live. */
GPAR__HIDDEN void *gpar__handle_kill(gpar__handle_table *t, uint32_t slot, uint64_t serial);
/* The killer: wait until no other holder is left, then free the slot for another object (the
 * caller frees the object once this returns). */
GPAR__HIDDEN void gpar__handle_recycle(gpar__handle_table *t, uint32_t slot);
/* The live object in slot i with a reference taken, or NULL; *serial is its serial. With
 * gpar__handle_count (slots handed out so far) it walks every object (shutdown). */
GPAR__HIDDEN void *gpar__handle_at(gpar__handle_table *t, uint32_t i, uint64_t *serial);
GPAR__HIDDEN uint32_t gpar__handle_count(gpar__handle_table *t);
/* End every live handle whose object mine(obj, ctx) accepts, free its slot, and give the object
 * to drop(obj, ctx) (shutdown: an engine's graphs or communicators; nothing uses them then). */
GPAR__HIDDEN void gpar__handle_drain(gpar__handle_table *t, int (*mine)(void *obj, void *ctx),
                                     void (*drop)(void *obj, void *ctx), void *ctx);

#endif
