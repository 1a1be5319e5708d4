/* buffer.h: buffers and their handles (buffer.c). A handle is {id, serial}: id locates the
 * buffer (engine slot + 1 in the high 32 bits, slot in the engine's table below), serial names
 * it and is never reused in the process. A buffer also carries its dependency state: its last
 * writer and the readers since (deps.c links ops through them, under the buffer's lock). */
#ifndef GPAR_CORE_ENGINE_BUFFER_H
#define GPAR_CORE_ENGINE_BUFFER_H

#include "engine/registry.h"
#include "engine/spin.h"

struct gpar__buf {
  /* References: 1 for the handle until released, 1 per op that accesses it until the op has
   * retired or was discarded, 1 per lookup in progress (gpar__buf_get .. gpar__buf_put). The
   * last one frees the memory; the struct itself lives in the engine's slot table (never freed
   * before the engine), so a lookup may read a slot whatever happens to its buffer. */
  atomic_long refs;
  _Atomic uint64_t serial;     /* never reused in the process (handle check); 0: slot free */
  atomic_int released;         /* the handle is released: no new lookup finds it */
  uint32_t slot;               /* index in the engine's slot table */
  uint32_t next_free;          /* free list link: next free slot + 1 (eng->buf_mu) */
  gpar_engine *eng;
  gpar__device *dev;           /* NULL: pinned host memory (GPAR_HOST) */
  int host_memory;             /* 1 when host code can touch mem */
  void *mem;                   /* device handle or host pointer */
  size_t bytes;                /* 0: a token (ordering only, no memory) */
  /* Imported memory (gpar_buffer_import): the owner's release (a no-op when it gave none),
   * called once instead of freeing mem when the last reference goes; NULL for memory libgpar
   * allocated. */
  void (*release)(void *arg);
  void *release_arg;
  /* Dependency state (lock). */
  gpar__spin lock;
  gpar__op *writer;            /* last writer not yet retired */
  int rhead, rtail, capreaders;
  gpar__op **readers;          /* readers since that write, not yet retired: [rhead, rtail), NULL
                                  where one retired (deps.c) */
  int status;                  /* status of the last retired writer */
  char *errmsg;
  uint64_t reader_probes;      /* slots looked at by readers leaving (gpar__test_reader_probes) */
};

/* The user's handle of b. */
GPAR__HIDDEN gpar_buffer gpar__buf_handle(const gpar__buf *b);
/* Resolve a handle of engine eng and take a reference on the buffer (gpar__buf_put drops it,
 * or an op takes it over: gpar__op_use). GPAR_EENGINE for a live handle of another engine,
 * GPAR_EBADBUF for anything else that is not a live buffer of eng. */
GPAR__HIDDEN int gpar__buf_get(gpar_engine *eng, gpar_buffer h, gpar__buf **b);
/* The same for a token (gpar__buf_create_token): the only way to reach one, so no user handle
 * (forged by flipping a bit of a real one, say) reaches the engine's ordering tokens. */
GPAR__HIDDEN int gpar__buf_get_token(gpar_engine *eng, gpar_buffer h, gpar__buf **b);
/* Drop a reference (the last one frees the memory). */
GPAR__HIDDEN void gpar__buf_put(gpar__buf *b);
GPAR__HIDDEN void gpar__buf_ref(gpar__buf *b);
/* Create a buffer of bytes on device dev (GPAR_HOST: pinned host memory). */
GPAR__HIDDEN int gpar__buf_create(gpar_engine *eng, int dev, size_t bytes, gpar_buffer *buf);
/* A buffer over bytes at ptr that another library owns, on device dev (its backend's
 * mem_import checks the memory); release(arg) runs when the last reference goes. */
GPAR__HIDDEN int gpar__buf_import(gpar_engine *eng, int dev, void *ptr, size_t bytes, void (*release)(void *arg),
                                  void *arg, gpar_buffer *buf);
/* A buffer with no memory, for ordering only (tokens: ops that read or write it are ordered
 * by it like by any buffer). */
GPAR__HIDDEN int gpar__buf_create_token(gpar_engine *eng, gpar_buffer *buf);
/* Release a handle: no new lookup finds it; the memory goes with the last reference. */
GPAR__HIDDEN int gpar__buf_release(gpar_engine *eng, gpar_buffer h);
/* Release a token's handle (gpar__buf_release refuses tokens). */
GPAR__HIDDEN int gpar__buf_release_token(gpar_engine *eng, gpar_buffer h);
/* Free every buffer left (shutdown: nothing in flight, no call inside). */
GPAR__HIDDEN void gpar__buf_free_all(gpar_engine *eng);

#endif
