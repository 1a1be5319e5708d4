/* pinned.c: the pool of pinned host memory behind GPAR_HOST buffers and the staging chunks of
 * gpar_write/gpar_read. Pinning is slow (cudaHostAlloc takes milliseconds and synchronises), so
 * freed blocks are kept per size class and reused; a limit bounds what the pool may hold.
 *
 * One memory for every backend. A driver copies at full rate only from memory it
 * pinned itself; NVIDIA's OpenCL stages copies from memory CUDA pinned. Measured on 2 x H200,
 * GPU 0, 64 MB copies (bench/probes/p1_pinned.c), GB/s D2H / H2D:
 *   (a) OpenCL Read/WriteBuffer into its own mapped CL_MEM_ALLOC_HOST_PTR memory  54.6 / 54.4
 *   (b) OpenCL Read/WriteBuffer into cudaHostAlloc memory (GPAR_HOST until now)   12.6 /  5.8
 *   (c) cudaHostAlloc memory wrapped by clCreateBuffer(CL_MEM_USE_HOST_PTR), plain
 *       Read/WriteBuffer with the raw pointer while the wrapper exists              54.7 / 54.3
 *   (d) mapped ALLOC_HOST_PTR memory given to cudaHostRegister(Portable): 3.4 ms per 64 MB;
 *       CUDA 54.9 / 54.9, OpenCL 54.7 / 54.7
 *   (e) posix_memalign + cudaHostRegister: CUDA 54.6, OpenCL 12.3 / 6.0
 *   (f) cudaHostAlloc: CUDA 54.8 / 54.9; pageable memory: CUDA 12.4 / 6.1
 * (clEnqueueCopyBuffer against a buffer wrapping host memory gave wrong data in (a), (c), (d):
 * the driver keeps a device-side copy, so backends copy host memory only with the raw pointer.)
 *
 * So one backend, the provider, allocates each block (host_alloc) and every other open backend
 * registers it (host_register) when the block is made, so it counts as that backend's pinned
 * memory too. The pool caches blocks, so the registration cost is paid once per block; the
 * limit, the "pinned" fault and stable host pointers are unchanged (a registration adds no
 * memory). The provider is a backend marked host_alloc_preferred (OpenCL) when it has a GPU
 * device, else the first GPU backend with a device: OpenCL's registration (a USE_HOST_PTR wrapper) is
 * only a hint whose rate in (c) was measured after the wrapper had been used by CopyBuffer,
 * whereas cudaHostRegister pins explicitly, and (d) was measured with no such step; with OpenCL
 * providing, OpenCL's copies with every backend open are exactly those of OpenCL alone.
 * GPAR_PINNED_PROVIDER=cuda|opencl|host overrides the choice (host: plain memory registered
 * with every GPU backend; tests use it to run the registration path on a machine without GPU).
 *
 * A refused registration (or the "register" fault) is not an error: the block stays usable by
 * that backend through its ordinary (staged, slower) copies, the first reason is logged and kept
 * for gpar_pinned_status, and later blocks try again. Correctness never depends on it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/device.h"
#include "engine/fault.h"
#include "engine/pinned.h"

#define GPAR__PIN_MIN_LOG 12

typedef struct pin_header {
  size_t size;  /* bytes of the whole block */
  int cls;
  void *next;   /* free list link */
  void *token[GPAR__PIN_MAX_REG]; /* host_register tokens, by pool->reg index */
  unsigned char registered;       /* bit i: registered with pool->reg[i] */
} pin_header;

_Static_assert(sizeof(pin_header) <= GPAR__PIN_HEADER, "pinned block header too large");

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

/* The backend (ops, be) of eng's devices whose name is `name`, else NULL. */
static const gpar__backend_ops *find_backend(gpar_engine *eng, const char *name, gpar__backend **be) {
  for (int i = 0; i < eng->ndev; i++)
    if (!strcmp(eng->devs[i]->ops->name, name)) {
      *be = eng->devs[i]->be;
      return eng->devs[i]->ops;
    }
  return NULL;
}

int gpar__pinned_init(gpar_engine *eng) {
  gpar__pinned_pool *p = eng->pinned = calloc(1, sizeof *p);
  if (!p) return gpar__errorf(GPAR_ENOMEM, "out of host memory for the pinned pool");
  pthread_mutex_init(&p->mu, NULL);
  p->limit = eng->cfg.pinned_limit;
  /* Provider: the env's choice, else a preferred backend with a GPU device (pinning matters for
   * DMA only: OpenCL with just PoCL's CPU devices is not preferred), else the first GPU backend
   * (CUDA before OpenCL). */
  const char *want = eng->env_pinned_provider;
  int forced = 0;
  if (want && *want) {
    gpar__backend *be = NULL;
    const gpar__backend_ops *ops = strcmp(want, "host") ? find_backend(eng, want, &be) : NULL;
    if (!strcmp(want, "host") || (ops && ops->host_alloc && ops->ordered_by_events)) {
      p->ops = ops;
      p->be = be;
      forced = 1;
    } else {
      gpar__log("GPAR_PINNED_PROVIDER=%s: no such GPU backend with a device here (cuda, opencl or host); "
                "using the default", want);
    }
  }
  for (int pass = 0; pass < 2 && !forced && !p->ops; pass++)
    for (int i = 0; i < eng->ndev && !p->ops; i++) {
      const gpar__backend_ops *ops = eng->devs[i]->ops;
      int preferred = ops->host_alloc_preferred && eng->devs[i]->info.type == GPAR_DEVICE_GPU;
      if (ops->host_alloc && ops->ordered_by_events && (pass == 1 || preferred)) {
        p->ops = ops;
        p->be = eng->devs[i]->be;
      }
    }
  /* Registrants: every other backend with a device and host_register, once each. */
  for (int i = 0; i < eng->ndev; i++) {
    const gpar__backend_ops *ops = eng->devs[i]->ops;
    int seen = ops == p->ops || !ops->host_register || !ops->host_unregister;
    for (int r = 0; r < p->nreg && !seen; r++) seen = p->reg[r].ops == ops;
    if (!seen && p->nreg < GPAR__PIN_MAX_REG) {
      p->reg[p->nreg].ops = ops;
      p->reg[p->nreg].be = eng->devs[i]->be;
      p->nreg++;
    }
  }
  return GPAR_OK;
}

/* Register a new block with every registrant; a refusal leaves that one out (see the header). */
static void block_register(gpar_engine *eng, pin_header *h) {
  gpar__pinned_pool *p = eng->pinned;
  h->registered = 0;
  for (int r = 0; r < p->nreg; r++) {
    h->token[r] = NULL;
    int st = gpar__fault(eng, GPAR__FAULT_REGISTER);
    if (st == GPAR_OK) st = p->reg[r].ops->host_register(p->reg[r].be, h, h->size, &h->token[r]);
    if (st == GPAR_OK) {
      h->registered |= (unsigned char)(1u << r);
      continue;
    }
    pthread_mutex_lock(&p->mu);
    int first = p->reg_failures++ == 0;
    if (first)
      snprintf(p->reg_why, sizeof p->reg_why, "%s: %s; such blocks stay unregistered there (staged copies)",
               p->reg[r].ops->name, gpar__error_msg());
    pthread_mutex_unlock(&p->mu);
    if (first) gpar__log("pinned host memory: %s (%s)", p->reg_why, gpar_status_name(st));
  }
}

static void block_release(gpar__pinned_pool *p, pin_header *h) {
  p->held -= h->size;
  for (int r = p->nreg - 1; r >= 0; r--)
    if (h->registered & (1u << r)) p->reg[r].ops->host_unregister(p->reg[r].be, h->token[r]);
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
  gpar__pinned_pool *p = eng->pinned;
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
  block_register(eng, h); /* outside the lock: milliseconds per block */
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
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  trim(p);
  pthread_mutex_unlock(&p->mu);
  pthread_mutex_destroy(&p->mu);
  free(p);
}
