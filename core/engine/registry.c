/* registry.c: the engine slots and the handles users hold to them. A gpar_engine pointer given
 * to users is a token (serial << 7 | slot << 1 | 1), never a real address; engine serials count
 * up from 1 and are never reused (at their end gpar_init fails rather than wrap), and so do the
 * buffer serials of every engine. Every public call enters the engine it names and leaves it on
 * return, so gpar_shutdown can wait until no call is inside before it frees anything. The slot
 * fields above gpar_engine.slot (state, serial, callers) outlive each engine: stale handles may
 * still read them. */
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "engine/registry.h"

static struct gpar_engine gpar__engines[GPAR__MAX_ENGINES];
static pthread_mutex_t gpar__registry_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned gpar__next_engine;
GPAR__TLS int gpar__in_op;

/* Internal code passes real addresses of gpar__engines (even); users pass tokens (odd). With
 * 64-bit pointers, 2^57 - 1 engine serials. */
#define GPAR__TOKEN_SLOT_BITS 6
#define GPAR__ENGINE_SERIAL_MAX ((uint64_t)(UINTPTR_MAX >> (GPAR__TOKEN_SLOT_BITS + 1)))
_Static_assert(GPAR__MAX_ENGINES <= 1 << GPAR__TOKEN_SLOT_BITS, "engine slots fit the token");

static uint64_t gpar__engine_serial; /* last engine serial given (registry lock) */
static _Atomic uint64_t gpar__buf_serial; /* last buffer serial given */
GPAR__TLS int gpar__depth;
GPAR__TLS double gpar__t_call;

uint64_t gpar__buf_serial_last(void) { return atomic_load(&gpar__buf_serial); }

uint64_t gpar__buf_serial_next(void) {
  uint64_t n = atomic_load(&gpar__buf_serial);
  do {
    if (n == UINT64_MAX) return 0;
  } while (!atomic_compare_exchange_weak(&gpar__buf_serial, &n, n + 1));
  return n + 1;
}

gpar_engine *gpar__engine_token(gpar_engine *eng) {
  return (gpar_engine *)(uintptr_t)((atomic_load(&eng->serial) << (GPAR__TOKEN_SLOT_BITS + 1)) |
                                    ((uintptr_t)(eng - gpar__engines) << 1) | 1u);
}

/* Decode a token or an internal pointer; *serial 0 for internal pointers. */
static gpar_engine *engine_decode(gpar_engine *e, uint64_t *serial, int *status) {
  uintptr_t p = (uintptr_t)e, base = (uintptr_t)gpar__engines;
  *serial = 0;
  if (!e) {
    *status = gpar__errorf(GPAR_EINVAL, "engine is NULL");
    return NULL;
  }
  if (p & 1) {
    *serial = (uint64_t)(p >> (GPAR__TOKEN_SLOT_BITS + 1));
    unsigned slot = (unsigned)(p >> 1) & ((1u << GPAR__TOKEN_SLOT_BITS) - 1);
    if (slot < GPAR__MAX_ENGINES && *serial) return &gpar__engines[slot];
  } else if (p >= base && p < base + sizeof gpar__engines && (p - base) % sizeof gpar__engines[0] == 0) {
    return e;
  }
  *status = gpar__errorf(GPAR_EINVAL, "not an engine handle");
  return NULL;
}

/* May a call enter an engine in this state? */
static int state_admits(int state) {
  return state == GPAR__ENG_OPEN || (state == GPAR__ENG_CLOSING && (gpar__in_op || gpar__depth > 0));
}

static gpar_engine *engine_enter(gpar_engine *eng, uint64_t serial, int *status) {
  atomic_fetch_add(&eng->callers, 1);
  int state = atomic_load(&eng->state);
  uint64_t cur = atomic_load(&eng->serial);
  if (state_admits(state) && (!serial || serial == cur)) {
    if (gpar__depth++ == 0 && eng->tracing) gpar__t_call = gpar__now();
    *status = GPAR_OK;
    return eng;
  }
  atomic_fetch_sub(&eng->callers, 1);
  if (serial > cur)
    *status = gpar__errorf(GPAR_EINVAL, "not an engine handle");
  else if (serial == cur && (state == GPAR__ENG_CLOSING || state == GPAR__ENG_CLOSED))
    *status = gpar__errorf(GPAR_ESHUTDOWN, "engine is shutting down");
  else
    *status = gpar__errorf(GPAR_ESHUTDOWN, "engine is shut down");
  return NULL;
}

gpar__device *gpar__engine_device(gpar_engine *eng, int dev, const char *fn) {
  if (dev == GPAR_HOST) return eng->host_dev;
  if (dev >= 0 && dev < eng->ndev) return eng->devs[dev];
  gpar__errorf(GPAR_ENODEV, "%s: device %d does not exist (%d devices)", fn, dev, eng->ndev);
  return NULL;
}

gpar_engine *gpar__engine_enter(gpar_engine *e, int *status) {
  uint64_t serial;
  gpar_engine *eng = engine_decode(e, &serial, status);
  if (!eng) return NULL;
  if (!serial) serial = atomic_load(&eng->serial);
  return engine_enter(eng, serial, status);
}

gpar_engine *gpar__engine_enter_buf(gpar_buffer h, int *status) {
  uint64_t s = h.id >> 32;
  if (h.id == 0) {
    *status = gpar__errorf(GPAR_EBADBUF, "null buffer handle");
    return NULL;
  }
  if (s == 0 || s > GPAR__MAX_ENGINES || !h.serial) {
    *status = gpar__errorf(GPAR_EBADBUF, "not a buffer handle");
    return NULL;
  }
  gpar_engine *eng = &gpar__engines[s - 1];
  atomic_fetch_add(&eng->callers, 1);
  int state = atomic_load(&eng->state);
  if (state_admits(state) && h.serial >= atomic_load(&eng->first_buf_serial)) {
    if (gpar__depth++ == 0 && eng->tracing) gpar__t_call = gpar__now();
    *status = GPAR_OK;
    return eng;
  }
  atomic_fetch_sub(&eng->callers, 1);
  if ((state == GPAR__ENG_CLOSING || state == GPAR__ENG_CLOSED) && h.serial >= atomic_load(&eng->first_buf_serial))
    *status = gpar__errorf(GPAR_ESHUTDOWN, "buffer handle: its engine is shutting down");
  else
    *status = gpar__errorf(GPAR_EBADBUF, "buffer handle: its engine is shut down or unknown");
  return NULL;
}

void gpar__engine_leave(gpar_engine *eng) {
  gpar__depth--;
  atomic_fetch_sub(&eng->callers, 1);
}

int gpar__engine_hold(gpar_engine *eng, uint64_t serial) {
  atomic_fetch_add(&eng->callers, 1); /* before the state is read: see gpar__engine_wait_callers */
  int state = atomic_load(&eng->state);
  if (atomic_load(&eng->serial) == serial && (state == GPAR__ENG_OPEN || state == GPAR__ENG_CLOSING)) return 1;
  atomic_fetch_sub(&eng->callers, 1);
  return 0;
}

void gpar__engine_unhold(gpar_engine *eng) { atomic_fetch_sub(&eng->callers, 1); }

int gpar__engine_is(gpar_engine *eng, uint64_t serial) {
  int state = atomic_load(&eng->state);
  return atomic_load(&eng->serial) == serial && (state == GPAR__ENG_OPEN || state == GPAR__ENG_CLOSING);
}

GPAR_API void gpar__test_set_serials(uint64_t next_engine, uint64_t next_buffer) {
  pthread_mutex_lock(&gpar__registry_mu);
  if (next_engine) gpar__engine_serial = next_engine - 1;
  if (next_buffer) atomic_store(&gpar__buf_serial, next_buffer - 1);
  pthread_mutex_unlock(&gpar__registry_mu);
}

gpar_engine *gpar__engine_at(uint64_t s) { return s < GPAR__MAX_ENGINES ? &gpar__engines[s] : NULL; }

/* The locks and counters of a new lifetime (the slot was zeroed). */
static void engine_locks_init(gpar_engine *eng) {
  pthread_mutex_init(&eng->wait_mu, NULL);
  pthread_cond_init(&eng->wait_cv, NULL);
  pthread_mutex_init(&eng->buf_mu, NULL);
  pthread_mutex_init(&eng->trace_mu, NULL);
  atomic_init(&eng->inflight, 0);
  atomic_init(&eng->nwaiters, 0);
}

static void engine_locks_destroy(gpar_engine *eng) {
  pthread_mutex_destroy(&eng->wait_mu);
  pthread_cond_destroy(&eng->wait_cv);
  pthread_mutex_destroy(&eng->buf_mu);
  pthread_mutex_destroy(&eng->trace_mu);
}

/* Claim a free slot with a fresh serial (registry lock); NULL with *status on failure. */
gpar_engine *gpar__engine_claim(int *status) {
  pthread_mutex_lock(&gpar__registry_mu);
  gpar_engine *eng = NULL;
  if (gpar__engine_serial >= GPAR__ENGINE_SERIAL_MAX) {
    pthread_mutex_unlock(&gpar__registry_mu);
    *status = gpar__errorf(GPAR_ENOMEM, "gpar_init: engine serials used up (%llu engines)",
                           (unsigned long long)GPAR__ENGINE_SERIAL_MAX);
    return NULL;
  }
  for (unsigned i = 0; i < GPAR__MAX_ENGINES && !eng; i++) {
    unsigned s = (gpar__next_engine + i) % GPAR__MAX_ENGINES;
    if (atomic_load(&gpar__engines[s].state) == GPAR__ENG_FREE) {
      eng = &gpar__engines[s];
      gpar__next_engine = s + 1;
    }
  }
  if (eng) {
    memset(&eng->slot, 0, sizeof *eng - offsetof(gpar_engine, slot));
    eng->slot = (int)(eng - gpar__engines);
    atomic_store(&eng->serial, ++gpar__engine_serial);
    atomic_store(&eng->first_buf_serial, gpar__buf_serial_last() + 1);
    engine_locks_init(eng);
    atomic_store(&eng->state, GPAR__ENG_INIT);
  }
  pthread_mutex_unlock(&gpar__registry_mu);
  if (!eng) *status = gpar__errorf(GPAR_ENOMEM, "gpar_init: more than %d engines alive", GPAR__MAX_ENGINES);
  return eng;
}

void gpar__engine_release_slot(gpar_engine *eng) {
  engine_locks_destroy(eng);
  pthread_mutex_lock(&gpar__registry_mu);
  atomic_store(&eng->state, GPAR__ENG_FREE);
  pthread_mutex_unlock(&gpar__registry_mu);
}

/* Shutdown's first step: only one caller moves an open engine to CLOSING. */
int gpar__engine_begin_close(gpar_engine *eng) {
  int open = GPAR__ENG_OPEN;
  if (atomic_compare_exchange_strong(&eng->state, &open, GPAR__ENG_CLOSING)) return GPAR_OK;
  return gpar__errorf(GPAR_ESHUTDOWN, "engine is shutting down");
}

/* Wait until no public call is inside the engine (it is CLOSED: none can enter). */
void gpar__engine_wait_callers(gpar_engine *eng) {
  while (atomic_load(&eng->callers) > 0) {
    struct timespec ts = {0, 50000};
    nanosleep(&ts, NULL);
  }
}
