/* pinned.h: the pool of pinned host memory (pinned.c) behind GPAR_HOST buffers and the staging
 * chunks of gpar_write/gpar_read. A block is GPAR__PIN_HEADER bytes of bookkeeping, then what
 * the caller asked for; sizes round up to a size class, so a staging chunk that should fill its
 * class exactly asks for (class size - GPAR__PIN_HEADER). */
#ifndef GPAR_CORE_ENGINE_PINNED_H
#define GPAR_CORE_ENGINE_PINNED_H

#include <pthread.h>

#include "engine/registry.h"

#define GPAR__PIN_HEADER 256 /* keeps user pointers 256-byte aligned */
#define GPAR__PIN_MAX_REG 3  /* backends that may register blocks (one per backend slot) */
struct gpar__pinned_pool {
  pthread_mutex_t mu;
  const gpar__backend_ops *ops; /* provider (NULL: plain aligned host memory) */
  gpar__backend *be;
  /* Every other open backend with host_register: each new block is registered with each. */
  int nreg;
  struct { const gpar__backend_ops *ops; gpar__backend *be; } reg[GPAR__PIN_MAX_REG];
  unsigned long reg_failures; /* registrations refused (those blocks stay unregistered there) */
  char reg_why[256];          /* the first refusal, for gpar_pinned_status */
  void *free_lists[128];      /* by size class: 4 classes per power of two from 4 KiB */
  size_t held, limit;
};

/* Make eng->pinned: pick the provider and the registering backends among eng's open devices
 * (env GPAR_PINNED_PROVIDER overrides the choice), with eng->cfg.pinned_limit. */
GPAR__HIDDEN int gpar__pinned_init(gpar_engine *eng);
GPAR__HIDDEN int gpar__pinned_alloc(gpar_engine *eng, size_t bytes, void **ptr);
GPAR__HIDDEN void gpar__pinned_free(gpar__pinned_pool *p, void *ptr);
/* Give every cached block back and free the pool (NULL: nothing). */
GPAR__HIDDEN void gpar__pinned_destroy(gpar__pinned_pool *p);

#endif
