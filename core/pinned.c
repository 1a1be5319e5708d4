/* pinned.c: the pool of pinned host memory behind GPAR_HOST buffers and the staging chunks of
 * gpar_write/gpar_read. Pinning is slow (cudaHostAlloc takes milliseconds and synchronises), so
 * freed blocks are kept per size class and reused; a limit bounds what the pool may hold. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define GPAR__PIN_HEADER 256 /* keeps user pointers 256-byte aligned */
#define GPAR__PIN_MIN_LOG 12

typedef struct pin_header {
  size_t size;  /* bytes of the whole block */
  int cls;
  void *next;   /* free list link */
} pin_header;

/* Size class: four steps per power of two, so rounding wastes at most 25%. */
static int size_class(size_t n, size_t *size) {
  int k = GPAR__PIN_MIN_LOG;
  while (k < 63 && ((size_t)1 << (k + 1)) < n) k++;
  if (n <= ((size_t)1 << GPAR__PIN_MIN_LOG)) {
    *size = (size_t)1 << GPAR__PIN_MIN_LOG;
    return 0;
  }
  size_t step = (size_t)1 << (k - 2); /* n in (2^k, 2^(k+1)]: classes 5..8 steps of 2^(k-2) */
  size_t s = (n + step - 1) / step * step;
  *size = s;
  int cls = (k - GPAR__PIN_MIN_LOG) * 4 + (int)(s / step) - 4;
  return cls < 128 ? cls : -1;
}

void gpar__pinned_init(gpar__pinned_pool *p, const gpar__backend_ops *ops, gpar__backend *be, size_t limit) {
  memset(p, 0, sizeof *p);
  pthread_mutex_init(&p->mu, NULL);
  p->ops = ops;
  p->be = be;
  p->limit = limit;
}

static void block_release(gpar__pinned_pool *p, pin_header *h) {
  p->held -= h->size;
  if (p->ops)
    p->ops->host_free(p->be, h);
  else
    free(h);
}

/* Return every cached block to the system (lock held). */
static void trim(gpar__pinned_pool *p) {
  for (int c = 0; c < 128; c++)
    while (p->free_lists[c]) {
      pin_header *h = p->free_lists[c];
      p->free_lists[c] = h->next;
      block_release(p, h);
    }
}

int gpar__pinned_alloc(gpar_engine *eng, size_t bytes, void **ptr) {
  gpar__pinned_pool *p = &eng->pinned;
  size_t size;
  int st = gpar__fault(eng, GPAR__FAULT_PINNED);
  if (st) return st;
  if (bytes > SIZE_MAX / 2) return gpar__errorf(GPAR_ENOMEM, "pinned host allocation of %zu bytes is too large", bytes);
  int cls = size_class(bytes + GPAR__PIN_HEADER, &size);
  if (cls < 0) return gpar__errorf(GPAR_ENOMEM, "pinned host allocation of %zu bytes is too large", bytes);
  pthread_mutex_lock(&p->mu);
  pin_header *h = p->free_lists[cls];
  if (h) {
    p->free_lists[cls] = h->next;
    pthread_mutex_unlock(&p->mu);
    *ptr = (char *)h + GPAR__PIN_HEADER;
    return GPAR_OK;
  }
  if (p->limit && p->held + size > p->limit) trim(p);
  if (p->limit && p->held + size > p->limit) {
    size_t held = p->held;
    pthread_mutex_unlock(&p->mu);
    return gpar__errorf(GPAR_ENOMEM, "pinned host pool limit reached: %zu bytes in use, %zu more asked, limit %zu",
                        held, size, p->limit);
  }
  p->held += size; /* reserve before the slow call so concurrent callers respect the limit */
  pthread_mutex_unlock(&p->mu);
  void *mem = NULL;
  if (p->ops) {
    st = p->ops->host_alloc(p->be, size, &mem);
  } else if (posix_memalign(&mem, 4096, size)) {
    st = gpar__errorf(GPAR_ENOMEM, "out of host memory (%zu bytes)", size);
  }
  if (st != GPAR_OK) {
    pthread_mutex_lock(&p->mu);
    p->held -= size;
    pthread_mutex_unlock(&p->mu);
    return st;
  }
  h = mem;
  h->size = size;
  h->cls = cls;
  *ptr = (char *)h + GPAR__PIN_HEADER;
  return GPAR_OK;
}

void gpar__pinned_free(gpar__pinned_pool *p, void *ptr) {
  if (!ptr) return;
  pin_header *h = (pin_header *)((char *)ptr - GPAR__PIN_HEADER);
  pthread_mutex_lock(&p->mu);
  h->next = p->free_lists[h->cls];
  p->free_lists[h->cls] = h;
  pthread_mutex_unlock(&p->mu);
}

void gpar__pinned_destroy(gpar__pinned_pool *p) {
  pthread_mutex_lock(&p->mu);
  trim(p);
  pthread_mutex_unlock(&p->mu);
  pthread_mutex_destroy(&p->mu);
}
