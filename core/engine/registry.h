/* registry.h: the engine object (struct gpar_engine) and the registry of engine slots
 * (registry.c): the serials of engines and buffers, and the calls entering an engine. A user's
 * gpar_engine pointer is a token (serial << 7 | slot << 1 | 1), never a real address; serials
 * count up and are never reused. Every public call enters the engine it names and leaves it on
 * return, so gpar_shutdown frees nothing while a call is inside.
 * What an engine holds lives in the headers of its parts (devices, buffers, ops, the pinned
 * pool, traces); here they are pointers, so this header needs none of them. */
#ifndef GPAR_CORE_ENGINE_REGISTRY_H
#define GPAR_CORE_ENGINE_REGISTRY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "backend.h"

#define GPAR__MAX_ENGINES 64

typedef struct gpar__buf gpar__buf;
typedef struct gpar__device gpar__device;
typedef struct gpar__op gpar__op;
typedef struct gpar__pinned_pool gpar__pinned_pool;
typedef struct gpar__trace_rec gpar__trace_rec;

/* Kinds of injected faults (fault.c): an engine counts down one counter per kind. */
enum {
  GPAR__FAULT_ALLOC, GPAR__FAULT_PINNED, GPAR__FAULT_COPY, GPAR__FAULT_GEMM, GPAR__FAULT_FILL,
  GPAR__FAULT_USER, GPAR__FAULT_EVENT, GPAR__FAULT_COMPLETION, GPAR__FAULT_REGISTER, GPAR__FAULT_CAPTURE,
  GPAR__FAULT_BUILD, GPAR__FAULT_KINDS
};

/* Engine lifecycle (gpar_engine.state). */
enum {
  GPAR__ENG_FREE,    /* slot unused */
  GPAR__ENG_INIT,    /* gpar_init is building it */
  GPAR__ENG_OPEN,    /* accepting calls */
  GPAR__ENG_CLOSING, /* gpar_shutdown drains: only calls from inside ops or nested calls enter */
  GPAR__ENG_CLOSED   /* drained: every call is refused; threads are joined, memory freed */
};

/* Slot of a GPAR_BACKEND_* bit in gpar_engine.backend_why: host 0, cuda 1, opencl 2. */
#define GPAR__BACKEND_SLOT(id) ((id) == GPAR_BACKEND_CUDA ? 1 : (id) == GPAR_BACKEND_OPENCL ? 2 : 0)

struct gpar_engine {
  /* Kept across the slot's lifetimes (never zeroed, the mutex never destroyed), because callers
   * holding a stale handle may still touch them. */
  atomic_int state;             /* GPAR__ENG_* */
  _Atomic uint64_t serial;      /* never reused: the user's token carries it */
  _Atomic uint64_t first_buf_serial; /* buffer serials of this lifetime start here */
  atomic_long callers;          /* public calls inside (gpar__engine_enter/leave) */
  /* Per lifetime: zeroed by gpar__engine_claim from here on (the mutexes are made anew). */
  int slot;
  gpar_config cfg;
  int ndev;
  gpar__device **devs;
  gpar__device *host_dev;
  struct { const gpar__backend_ops *ops; gpar__backend *be; } backends[3];
  int nbackends;
  /* Backend status (gpar_backend_status): the backends the caller named (cfg.backends before
   * defaults) and, per backend (GPAR__BACKEND_SLOT), why it has no device or why one of its
   * devices was skipped. */
  unsigned backends_named;
  char backend_why[3][192];
  /* Knobs with no gpar_config field, read from the environment at gpar_init by lifecycle/ (the
   * one reader): GPAR_PINNED_PROVIDER=cuda|opencl|host ("" when unset), GPAR_COMM_STAGED=1
   * (collectives always staged). */
  char env_pinned_provider[16];
  int env_comm_staged;
  /* Buffers: slots in chunks that are never moved or freed before the engine (buffer.c). */
#define GPAR__BUF_CHUNK 1024
#define GPAR__BUF_CHUNKS 4096 /* at most 4M buffers alive at once */
  _Atomic(gpar__buf *) buf_chunks[GPAR__BUF_CHUNKS];
  pthread_mutex_t buf_mu;       /* new slots and the free list */
  uint32_t nslots;              /* slots handed out so far */
  uint32_t free_head;           /* first free slot + 1; 0: none */
  /* Ops in flight (inflight.h): one word holds two counters, one per epoch parity, the current
   * parity and the closed mark, so gpar_wait_all waits for the ops of the epochs before its
   * call only, and the drain closes the engine when both counters are 0, in one step. */
  _Alignas(64) _Atomic uint64_t inflight;
  _Atomic uint64_t ops_submitted, ops_failed;
  _Alignas(64) atomic_int nwaiters; /* threads sleeping in a wait (retirement wakes them) */
  pthread_mutex_t wait_mu;      /* sleeping waiters, wait_all's epoch flips, first_error */
  pthread_cond_t wait_cv;
  int wait_all_busy;            /* a wait for everything submitted is under way (wait_mu) */
  int first_error;
  char *first_errmsg;
  atomic_long buffers_live;
  /* Ops: returned to the engine by the threads that free them, taken whole by allocating
   * threads (op.c). */
  _Atomic(gpar__op *) op_pool;
  atomic_long events_live;
  atomic_ulong graph_native;    /* graph parts launched as a backend graph (counted by graph/) */
  /* Kernels: kernel/'s state of this engine (its memory cache; created at first use, freed by its
   * shutdown) and its counters for gpar_stats (written by kernel/ only). */
  _Atomic(void *) kernels;
  atomic_ulong kernels_live, kernel_launches, kernel_builds, kernel_mem_hits, kernel_disk_hits, kernel_build_ns;
  gpar__pinned_pool *pinned;    /* pinned.c; NULL until gpar__pinned_init */
  /* tracing (trace.c) */
  int tracing;                  /* 1: per-op timestamps (breakdown), 2: also a trace file */
  pthread_mutex_t trace_mu;     /* the records and sums below */
  double bd_sum[5];             /* breakdown sums (seconds) */
  uint64_t bd_ops;
  gpar__trace_rec *trace;
  size_t ntrace, captrace;
  double t0;
  /* fault injection (fault.c) */
  atomic_ulong fault_at[GPAR__FAULT_KINDS];
};

/* Public entry points bracket their work with enter/leave: enter resolves the user's engine
 * token (or an internal engine pointer), refuses a shut-down or stale one, and counts the call
 * so gpar_shutdown frees nothing while a call is inside. While the engine drains, only calls
 * from inside ops (gpar__in_op) or nested in an accepted call enter. */
GPAR__HIDDEN gpar_engine *gpar__engine_enter(gpar_engine *eng, int *status);
/* The engine a buffer handle names, entered as above (GPAR_EBADBUF when none). */
GPAR__HIDDEN gpar_engine *gpar__engine_enter_buf(gpar_buffer h, int *status);
GPAR__HIDDEN void gpar__engine_leave(gpar_engine *eng);
/* Device dev of eng (GPAR_HOST: its CPU device), or NULL after a GPAR_ENODEV message naming
 * fn, the public call. */
GPAR__HIDDEN gpar__device *gpar__engine_device(gpar_engine *eng, int dev, const char *fn);
/* The engine in slot s (0-based), or NULL. */
GPAR__HIDDEN gpar_engine *gpar__engine_at(uint64_t s);
/* The user's handle of an engine (its token). */
GPAR__HIDDEN gpar_engine *gpar__engine_token(gpar_engine *eng);
/* A free slot with a fresh serial and its locks made (state INIT), or NULL with *status. */
GPAR__HIDDEN gpar_engine *gpar__engine_claim(int *status);
/* Give the slot back (its locks destroyed). */
GPAR__HIDDEN void gpar__engine_release_slot(gpar_engine *eng);
GPAR__HIDDEN int gpar__engine_begin_close(gpar_engine *eng);
GPAR__HIDDEN void gpar__engine_wait_callers(gpar_engine *eng);
/* The engine's lifetime is the one with this serial and it is open (or draining). */
GPAR__HIDDEN int gpar__engine_is(gpar_engine *eng, uint64_t serial);
/* Count the calling thread among eng's callers, with no message, while eng still has this serial
 * and is open or closing (1; gpar__engine_unhold ends it), else 0. Its shutdown frees what the
 * engine pools only after every caller left, so what a holder gives back is not lost. */
GPAR__HIDDEN int gpar__engine_hold(gpar_engine *eng, uint64_t serial);
GPAR__HIDDEN void gpar__engine_unhold(gpar_engine *eng);
GPAR__HIDDEN extern GPAR__TLS int gpar__in_op;
GPAR__HIDDEN extern GPAR__TLS int gpar__depth; /* entered public calls on this thread */
GPAR__HIDDEN extern GPAR__TLS double gpar__t_call; /* when this thread's public call entered (tracing) */

/* Buffer serials, never 0 and never reused in the process (buffer.c names its buffers with
 * them): the next one, or 0 once they are used up; the last one given. */
GPAR__HIDDEN uint64_t gpar__buf_serial_next(void);
GPAR__HIDDEN uint64_t gpar__buf_serial_last(void);
/* Test hook (exported, not in gpar.h): set the next engine and buffer serials, to test the
 * handle checks at the counters' end without running 2^57 lifetimes. */
GPAR_API void gpar__test_set_serials(uint64_t next_engine, uint64_t next_buffer);

#endif
