/* engine.h: the engine layer, the bottom of core/ above backend.h. Engines and their devices,
 * buffers and their handles, ops and the dependency engine that orders them by the buffers they
 * declare, the threads that run them, waits, the pinned pool, traces, the clock and fault
 * injection. The engine runs ops through their kind's table (gpar__op_kind) and never names a
 * kind: the layers above define the kinds (api/: transfers, BLAS, fills, user functions;
 * graph/: graph launches; comm/: collectives) and build ops through the calls below.
 *
 * Layers (core/README.md has the whole map): backend.h < engine/ < api/ < graph/, comm/ <
 * lifecycle/. A file includes headers of its own layer and the ones below only (tests/layers.sh
 * checks it, and checks with nm that no object calls up).
 *
 * Files of this layer, bottom first: clock.c, fault.c (fault injection),
 * handle.c (handle tables: {slot, serial}, never-reused serials, references), registry.c
 * (engine slots, calls entering an engine), pinned.c (pinned host pool), buffer.c (buffers and
 * their handles), op.c (ops: allocation, accesses, building, discarding), queue.c (ready
 * queues), deps.c (linking, release, retirement, failure propagation), dispatch.c (CPU workers,
 * GPU dispatchers), complete.c (GPU completion threads), wait.c (waiting for ops, buffers, all),
 * trace.c (traces and the host-time breakdown).
 *
 * Lock order, every lock of core/ (outer before inner; "->" marks what may be taken while the
 * line above is held). The engine has no global lock: dependency state lives with each buffer
 * and op (deps.c), counts are atomics.
 *   c->issue_mu (comm/)        one collective's ops issued whole; the engine's locks below may be
 *                              taken while it is held (submitting, and waiting in synchronous mode)
 *   b->lock (spin)             a buffer's last writer and readers; several at once only while an
 *                              op is linked, taken in address order (deps.c link_op)
 *     -> op->lock (spin)       an op's consumer list and its dispatched state; one at a time
 *        -> q->mu              a ready queue's overflow list and sleepers (making a consumer ready)
 *   eng->wait_mu               sleeping waiters, wait_all's epochs, the first error; held alone
 *   eng->buf_mu                buffer slots and their free list; held alone
 *   eng->trace_mu              trace records and breakdown sums; held alone
 *   dev->cmu                   completion FIFOs of a GPU device; held alone
 *     -> backend locks         event queries under it
 *   eng->pinned.mu             pinned pool; held alone
 *     -> backend locks         host_alloc / host_free under the pool lock
 *   gpar__registry_mu          engine slots; held alone (registry.c)
 *   table->mu                  a handle table's growth and free list (handle.c); held alone
 *   ks->mu (kernel/)           an engine's kernel builds, kinds and device targets; held alone
 *   states_mu (array/kernels.c) the engines' tables of array kernels, their limits; held alone
 * Locks of the layers above (graph/, comm/, kernel/) are never held while calling into the engine,
 * except as their headers state. Every lock is taken and released in one function (link_op
 * takes and releases its buffers' locks together); a function that needs a lock held on entry
 * ends in _locked. */
#ifndef GPAR_CORE_ENGINE_H
#define GPAR_CORE_ENGINE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "backend.h"

#define GPAR__MAX_ENGINES 64
#define GPAR__INLINE 8 /* accesses and edges an op holds without allocating (a fan-in of 8 fits) */

typedef struct gpar__op gpar__op;
typedef struct gpar__buf gpar__buf;
typedef struct gpar__device gpar__device;

/* ---------------------------------------------------------------- op kinds */

/* What the engine knows of a kind of op: how to run it and what it needs. Each feature defines
 * its kinds as static tables (api/, graph/, comm/); the engine calls them and never looks at an
 * op's payload. */
typedef struct gpar__op_kind {
  const char *name; /* for traces */
  /* Run the op to completion (CPU device) or enqueue it on op->lane of dev (GPU device), from
   * the device's worker or dispatcher thread. GPAR_OK or a failure (with gpar__errorf). */
  int (*run)(gpar__device *dev, gpar__op *op);
  /* Optional: free what the payload owns; called once, when the op retires or is discarded. */
  void (*release)(gpar__op *op);
  /* Optional, GPU devices: called by the device's completion thread, with no lock held, while
   * the op is still pending on the device, every few tens of microseconds (watchdogs). */
  void (*pending)(gpar__device *dev, gpar__op *op);
  /* Optional, GPU devices: called by the completion thread, with no lock held, when the device
   * reports the op done without error: a failure only the kind can see (a collective its
   * library aborted), as a status with its message, or GPAR_OK. */
  int (*finished)(gpar__device *dev, gpar__op *op);
  /* Optional: whether a GPU backend's graph capture may take this op (graph/ asks; NULL: yes). */
  int (*capturable)(const gpar__op *op);
  unsigned flags; /* GPAR__KIND_* */
} gpar__op_kind;

enum {
  /* Run even when an input failed (the op then still fails with GPAR_EDEPFAILED): members of a
   * collective must join, or the other members wait for them forever. */
  GPAR__KIND_RUNS_ON_FAILED_INPUT = 1,
  /* Reads host memory when enqueued on backends that say h2d_reads_at_enqueue (a host-to-device
   * copy on NVIDIA's OpenCL): producers must have retired, not just been enqueued. */
  GPAR__KIND_READS_HOST_AT_ENQUEUE = 2,
  /* Note the dispatch time in op->t_dispatch even without tracing (for `pending`). */
  GPAR__KIND_TIMED = 4
};

/* ---------------------------------------------------------------- ops */

/* Access modes of an op on a buffer. An op with per-buffer outcomes (op->partial) marks, per
 * buffer it writes, that its write of that buffer failed or was skipped; the other buffers it
 * writes succeeded (a graph launch, where one recorded op of many failed). The engine marks,
 * before the op runs, each read whose buffer's last writer failed (GPAR__READ_FAILED; the op's
 * dep_failed is then set): a kind that runs on failed input sees which inputs failed. */
enum {
  GPAR__READ = 1, GPAR__WRITE = 2, GPAR__WRITE_FAILED = 4, GPAR__WRITE_SKIPPED = 8, GPAR__READ_FAILED = 16,
  GPAR__UNLINKED = 32 /* engine-internal: linking stopped before this access (out of memory) */
};

/* Edge flags between a producer and a consumer op. */
enum {
  GPAR__EDGE_DATA = 1,     /* the consumer reads what the producer wrote: failures propagate */
  GPAR__EDGE_EVENT = 2,    /* ordered on the device (consumer's lane waits on producer's event) */
  GPAR__EDGE_RELEASED = 4  /* a consumer on the producer's own lane, released when it was enqueued */
};

/* Op lifecycle. Each step goes to the next state only (asserted). */
enum {
  GPAR__ST_NEW,        /* built, not submitted */
  GPAR__ST_WAITING,    /* producers unmet */
  GPAR__ST_READY,      /* in its device's queue */
  GPAR__ST_DISPATCHED, /* enqueued on a lane, event recorded (or ran, on the CPU) */
  GPAR__ST_DONE,       /* device finished; waits for its producers to retire */
  GPAR__ST_RETIRED     /* finished, successors released */
};

typedef struct gpar__edge {
  gpar__op *op;
  int flags;
} gpar__edge;

/* Small vector with inline storage. */
typedef struct gpar__edges {
  int n, cap;
  gpar__edge *v;
  gpar__edge inl[GPAR__INLINE];
} gpar__edges;

typedef struct gpar__access {
  gpar__buf *buf; /* the op holds a reference on it */
  int mode;
} gpar__access;

/* A spin lock for the engine's short critical sections (a few loads and stores: a buffer's
 * last writer and readers, an op's consumer list). Spins, then yields to the scheduler. */
typedef struct gpar__spin {
  atomic_int held;
} gpar__spin;
static inline void gpar__cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}
GPAR__HIDDEN void gpar__spin_yield(void);
static inline void gpar__spin_lock(gpar__spin *s) {
  for (int n = 0;; n++) {
    if (!atomic_load_explicit(&s->held, memory_order_relaxed) &&
        !atomic_exchange_explicit(&s->held, 1, memory_order_acquire))
      return;
    if (n < 100)
      gpar__cpu_relax();
    else
      gpar__spin_yield();
  }
}
static inline void gpar__spin_unlock(gpar__spin *s) { atomic_store_explicit(&s->held, 0, memory_order_release); }

/* Bytes of kind-specific arguments an op carries (the largest is a GEMM's). */
#define GPAR__OP_PAYLOAD 144

/* An op. Who writes what (the engine has no global lock):
 * - before submission only the building thread touches it;
 * - lock guards its consumer list and the state changes a linking thread must see at once
 *   (dispatched, retired): a thread that links a consumer behind it holds it while it reads
 *   the state and appends the edge;
 * - unmet and unretired are counters: whoever brings one to 0 makes the op ready or retires it;
 * - status, errmsg and partial are written by the thread that runs or completes the op (under
 *   lock once the op may have consumers that read them), and read after the counters say so. */
struct gpar__op {
  const gpar__op_kind *kind;
  gpar_engine *eng;
  gpar__device *dev;
  int lane;
  gpar__op *next;                     /* ready queue, a dispatcher's list, the op pool */
  gpar__op *lane_next;                /* completion FIFO of its lane */
  atomic_int state;                   /* GPAR__ST_* */
  atomic_int refs;                    /* 1 while in flight, +1 per consumer's producer edge and
                                         cover until they let go, +1 kept for a waiter */
  atomic_int unmet;                   /* producers not yet dispatched (event edges) or retired
                                         (others), + 1 until its submission is done */
  atomic_int unretired;               /* producers not yet retired, + 1 until it is done itself */
  atomic_int dep_failed;              /* a producer whose data this op reads failed */
  atomic_int waited;                  /* a thread sleeps until it retires (wait.c) */
  gpar__spin lock;                    /* consumers list and state changes (above) */
  int epoch;                          /* its in-flight counter (wait.c) */
  int status;
  char *errmsg;                       /* detail of a failure */
  int async_status;                   /* failure reported by the device's event (completion thread) */
  char *async_msg;
  int reported;        /* its status goes to the caller (gpar_read), not to gpar_wait_all */
  int partial;         /* its failure is per buffer (the access marks); see GPAR__WRITE_FAILED */
  int need_event;      /* dispatch: a consumer on another lane or device waits on its own event */
  int lane_synced;     /* dispatch: its lane was synchronised after it (no event: complete) */
  gpar__event *event;  /* recorded after the op on its lane, when anyone needs it */
  gpar__op *cover;     /* else: a later op on the same lane whose event implies this one's */
  gpar__event *start_event; /* tracing only */
  int nacc;
  gpar__access *acc_more;
  void *owned_pinned;  /* pinned block freed when the op retires or is discarded (staging) */
  /* Zeroed by gpar__op_new up to here; from here on each field is set before it is read (the
   * edges' and accesses' counts say how much of their inline storage is in use), so a new op
   * touches few cache lines of memory another thread freed. */
  gpar__edges prods;   /* producers (references held until dispatch, or retirement on the CPU) */
  gpar__edges succs;   /* consumers (lock) */
  gpar__access acc[GPAR__INLINE];
  double t_submit, t_dispatch, t_start, t_end; /* seconds, tracing (zeroed when tracing) */
  /* Host-time breakdown (tracing): public call entered, ready, taken by a worker or dispatcher,
   * run finished, completion seen. */
  double t_call, t_ready, t_taken, t_ran, t_seen;
  _Alignas(16) unsigned char payload[GPAR__OP_PAYLOAD]; /* the kind's arguments */
};

/* The kind's arguments of op (each kind checks its type's size against GPAR__OP_PAYLOAD). */
static inline void *gpar__op_args(gpar__op *op) { return op->payload; }
static inline const void *gpar__op_cargs(const gpar__op *op) { return op->payload; }

/* Access i of op: the first GPAR__INLINE inline, the rest in acc_more. Like strchr, it takes a
 * const op and returns a writable pointer, so that readers and writers share one accessor. */
static inline gpar__access *gpar__op_access(const gpar__op *op, int i) {
  return i < GPAR__INLINE ? (gpar__access *)&op->acc[i] : &op->acc_more[i - GPAR__INLINE];
}

/* ---------------------------------------------------------------- queues, devices, buffers */

/* The ready queue of a device (queue.c): ops whose producers are met, pushed by any thread
 * without a lock and taken by the device's CPU workers or its dispatcher. A ring of cells
 * with sequence numbers (Vyukov's bounded MPMC queue) for the common case, a locked list when
 * the ring is full. Consumers spin briefly, a few at a time, before they sleep; a push wakes a
 * sleeper only when no consumer spins, and a consumer that takes an op from a queue that still
 * holds more wakes the next sleeper, so a burst fans out without a wake-up per op. */
#define GPAR__RING 4096
typedef struct gpar__ring_cell {
  atomic_size_t seq;
  gpar__op *op;
} gpar__ring_cell;
typedef struct gpar__queue {
  _Alignas(64) atomic_size_t tail;    /* producers */
  _Alignas(64) atomic_size_t head;    /* consumers */
  _Alignas(64) atomic_int spinners;   /* consumers spinning before they sleep */
  atomic_int sleepers;                /* consumers asleep or about to sleep */
  atomic_int overflowed;              /* ops in the locked list */
  atomic_int stop;
  atomic_int waking;                  /* a wake-up is on its way (set under mu) */
  int nconsumers;                     /* threads that pop (a device's workers, or its dispatcher) */
  int max_spin;                       /* consumers that may spin at once */
  int yield_spin;                     /* spinners yield the core now and then (few cores) */
  pthread_mutex_t mu;                 /* the overflow list and sleeping */
  pthread_cond_t cv;
  gpar__op *ov_head, *ov_tail;
  int wake_gen;                       /* bumped by every wake-up (mu) */
  gpar__ring_cell *cells;             /* GPAR__RING of them */
} gpar__queue;

struct gpar__device {
  int index;                   /* flat index */
  int bidx;                    /* backend-local index */
  const gpar__backend_ops *ops;
  gpar__backend *be;
  gpar__bdev *bdev;
  gpar_device_props info;
  gpar_engine *eng;
  gpar__queue ready;
  int nthreads;
  pthread_t *threads;          /* dispatcher (GPU) or workers (CPU) */
  /* completion (event backends): per-lane FIFO of dispatched ops */
  pthread_t completer;
  pthread_mutex_t cmu;
  pthread_cond_t ccv;
  gpar__op *lane_head[GPAR__NLANES], *lane_tail[GPAR__NLANES];
  int cstop;
  int csleeping;               /* the completion thread sleeps on ccv (cmu): a hand-over signals */
  double trace_t0;             /* host time of trace_ref */
  gpar__event *trace_ref;
};

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
  /* Dependency state (lock). */
  gpar__spin lock;
  gpar__op *writer;            /* last writer not yet retired */
  int rhead, rtail, capreaders;
  gpar__op **readers;          /* readers since that write, not yet retired: [rhead, rtail), NULL
                                  where one retired (deps.c) */
  int status;                  /* status of the last retired writer */
  char *errmsg;
};

/* Pinned host memory pool (pinned.c). A block is GPAR__PIN_HEADER bytes of bookkeeping, then
 * what the caller asked for; sizes round up to a size class, so a staging chunk that should
 * fill its class exactly asks for (class size - GPAR__PIN_HEADER). */
#define GPAR__PIN_HEADER 256 /* keeps user pointers 256-byte aligned */
#define GPAR__PIN_MAX_REG 3  /* backends that may register blocks (one per backend slot) */
typedef struct gpar__pinned_pool {
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
} gpar__pinned_pool;

typedef struct gpar__trace_rec {
  const char *name;
  int dev, lane;
  double ts, dur, submit;
  float phase[5]; /* microseconds: submit, hand-off, dispatch, completion, retire */
} gpar__trace_rec;

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
  /* Per lifetime: zeroed by gpar_init from here on (the mutexes are made anew). */
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
  /* Ops in flight (wait.c): two counters in one word, one per epoch parity (low and high 32
   * bits), so gpar_wait_all waits for the ops of the epochs before its call only, and the
   * drain for the word to reach 0. */
  _Alignas(64) _Atomic uint64_t inflight;
  atomic_uint epoch;
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
  gpar__pinned_pool pinned;
  /* tracing */
  int tracing;                  /* 1: per-op timestamps (breakdown), 2: also a trace file */
  pthread_mutex_t trace_mu;     /* the records and sums below */
  double bd_sum[5];             /* breakdown sums (seconds) */
  uint64_t bd_ops;
  gpar__trace_rec *trace;
  size_t ntrace, captrace;
  double t0;
  /* fault injection */
  atomic_ulong fault_at[GPAR__FAULT_KINDS];
};

/* ---------------------------------------------------------------- clock.c, fault.c */

/* Seconds on a monotonic clock. */
GPAR__HIDDEN double gpar__now(void);
/* GPAR_EFAULT (with its message) when the armed fault of this kind fires now, else GPAR_OK. */
GPAR__HIDDEN int gpar__fault(gpar_engine *eng, int kind);
/* Arm fault `kind` (its name) to fire at the nth later call; n = 0 disarms. */
GPAR__HIDDEN int gpar__fault_arm(gpar_engine *eng, const char *kind, unsigned long n);

/* ---------------------------------------------------------------- handle.c */

/* A table of objects that users hold handles to: {slot, serial}. Serials count up per table and
 * are never reused (at their end creation fails); a slot is reused once its object is gone.
 * Lookups never block and never touch freed memory: the slots live in chunks that are only
 * freed with the table, and a lookup takes a reference only while the slot still holds the
 * object its serial names. One rule for graphs and communicators (engines and buffers carry
 * their own slot + serial pairs, see registry.c and buffer.c). */
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

/* ---------------------------------------------------------------- registry.c */

/* Public entry points bracket their work with enter/leave: enter resolves the user's engine
 * token (or an internal engine pointer), refuses a shut-down or stale one, and counts the call
 * so gpar_shutdown frees nothing while a call is inside. While the engine drains, only calls
 * from inside ops (gpar__in_op) or nested in an accepted call enter. */
GPAR__HIDDEN gpar_engine *gpar__engine_enter(gpar_engine *eng, int *status);
/* The engine a buffer handle names, entered as above (GPAR_EBADBUF when none). */
GPAR__HIDDEN gpar_engine *gpar__engine_enter_buf(gpar_buffer h, int *status);
GPAR__HIDDEN void gpar__engine_leave(gpar_engine *eng);
/* The engine in slot s (0-based), or NULL. */
GPAR__HIDDEN gpar_engine *gpar__engine_at(uint64_t s);
/* The user's handle of an engine (its token). */
GPAR__HIDDEN gpar_engine *gpar__engine_token(gpar_engine *eng);
GPAR__HIDDEN gpar_engine *gpar__engine_claim(int *status);
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
/* Test hook (exported, not in gpar.h): set the next engine and buffer serials, to test the
 * handle checks at the counters' end without running 2^57 lifetimes. */
GPAR_API void gpar__test_set_serials(uint64_t next_engine, uint64_t next_buffer);

/* ---------------------------------------------------------------- pinned.c */

/* Pick the provider and the registering backends among eng's open devices (env
 * GPAR_PINNED_PROVIDER overrides the choice) and set the pool up with eng->cfg.pinned_limit. */
GPAR__HIDDEN void gpar__pinned_init(gpar_engine *eng);
GPAR__HIDDEN int gpar__pinned_alloc(gpar_engine *eng, size_t bytes, void **ptr);
GPAR__HIDDEN void gpar__pinned_free(gpar__pinned_pool *p, void *ptr);
GPAR__HIDDEN void gpar__pinned_destroy(gpar__pinned_pool *p);

/* ---------------------------------------------------------------- buffer.c */

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
/* A buffer with no memory, for ordering only (tokens: ops that read or write it are ordered
 * by it like by any buffer). */
GPAR__HIDDEN int gpar__buf_create_token(gpar_engine *eng, gpar_buffer *buf);
/* Release a handle: no new lookup finds it; the memory goes with the last reference. */
GPAR__HIDDEN int gpar__buf_release(gpar_engine *eng, gpar_buffer h);
/* Release a token's handle (gpar__buf_release refuses tokens). */
GPAR__HIDDEN int gpar__buf_release_token(gpar_engine *eng, gpar_buffer h);
/* Free every buffer left (shutdown: nothing in flight, no call inside). */
GPAR__HIDDEN void gpar__buf_free_all(gpar_engine *eng);
GPAR__HIDDEN uint64_t gpar__buf_serial_last(void);
GPAR__HIDDEN void gpar__buf_serial_set(uint64_t next);

/* ---------------------------------------------------------------- op.c: building ops
 * The one way to build an op: gpar__op_new, then gpar__op_use for each buffer it accesses,
 * then gpar__op_submit (which also takes ops a recording thread diverts) or gpar__op_discard.
 * Arguments are checked before gpar__op_new; after it, only running out of memory fails. */

/* A new op of kind on dev's lane; NULL (GPAR_ENOMEM) without memory. Its payload is not
 * zeroed: the builder writes the kind's arguments whole. */
GPAR__HIDDEN gpar__op *gpar__op_new(gpar_engine *eng, const gpar__op_kind *kind, gpar__device *dev, int lane);
/* The op accesses b in mode (GPAR__READ / GPAR__WRITE); it takes over the caller's reference on
 * b (a buffer named twice keeps one). On failure (no memory) the reference is dropped and the
 * op must be discarded. */
GPAR__HIDDEN int gpar__op_use(gpar__op *op, gpar__buf *b, int mode);
/* The op accesses each of acc[0..n-1] (a union without duplicates, e.g. a graph part's): each
 * buffer gets a new reference. On failure (no memory) the op must be discarded. */
GPAR__HIDDEN int gpar__op_use_unique(gpar__op *op, const gpar__access *acc, int n);
/* Discard an op never submitted: its buffer references, owned pinned block and payload
 * (kind->release) go with it. */
GPAR__HIDDEN void gpar__op_discard(gpar__op *op);
/* Give up what the op owns besides buffers (kind->release, owned_pinned): once, at retirement
 * or discard (engine-internal). */
GPAR__HIDDEN void gpar__op_release_owned(gpar__op *op);

/* ---------------------------------------------------------------- deps.c: submitting */

/* A thread may divert the ops it submits on one engine to a sink instead of running them
 * (graph recording). Its submissions go to take(); its waits are refused (GPAR_ERECORDING). */
typedef struct gpar__op_sink {
  gpar_engine *eng;
  uint64_t serial;             /* the engine lifetime it diverts */
  int (*take)(void *ctx, gpar__op *op); /* owns op from now on, even when it fails */
  /* A call whose ops went to the sink failed after some of them were taken (a multi-chunk
   * write): the sink must not keep a part of that call as if it succeeded. */
  void (*call_failed)(void *ctx, int status);
  void *ctx;
} gpar__op_sink;
GPAR__HIDDEN extern GPAR__TLS gpar__op_sink gpar__sink;
/* 1 when the calling thread's submissions on eng go to a sink. */
static inline int gpar__sink_active(gpar_engine *eng) {
  return gpar__sink.take && gpar__sink.eng == eng && gpar__sink.serial == atomic_load(&eng->serial);
}
/* Tell the calling thread's sink on eng, if any, that a call failed part way (see above). */
static inline void gpar__sink_call_failed(gpar_engine *eng, int status) {
  if (gpar__sink_active(eng) && gpar__sink.call_failed) gpar__sink.call_failed(gpar__sink.ctx, status);
}

enum {
  GPAR__SUBMIT_KEEP = 1, /* keep a reference for gpar__op_wait */
  GPAR__SUBMIT_SYNC = 2, /* in synchronous mode (cfg.synchronous, outside ops), keep one too */
  GPAR__SUBMIT_NO_SINK = 4 /* run it even when the calling thread's submissions are diverted */
};
/* Submit a built op: link it behind the last writer and readers of each buffer it accesses and
 * queue it when nothing holds it back; a diverted thread's op goes to its sink. GPAR_ESHUTDOWN
 * (op discarded) once the engine has drained for shutdown. *kept (may be NULL with neither
 * flag): the op with a reference for gpar__op_wait, or NULL. */
GPAR__HIDDEN int gpar__op_submit(gpar__op *op, int flags, gpar__op **kept);
/* Submit several ops at once: all are linked, or (engine shut down) none. */
GPAR__HIDDEN int gpar__op_submit_all(gpar__op **ops, int n, int flags, gpar__op **kept);
/* Open and close an engine's waiting and in-flight state (lifecycle/). */
GPAR__HIDDEN void gpar__engine_sync_init(gpar_engine *eng);
GPAR__HIDDEN void gpar__engine_sync_destroy(gpar_engine *eng);
/* The status op leaves on buffer b that it writes, and its message (may be NULL). */
GPAR__HIDDEN int gpar__op_write_status(const gpar__op *op, const gpar__buf *b, const char **msg);
/* Record the first failure of an op; GPAR_EDEPFAILED keeps its short text. */
GPAR__HIDDEN void gpar__op_fail(gpar__op *op, int status);
GPAR__HIDDEN void gpar__op_ref(gpar__op *op);
GPAR__HIDDEN void gpar__op_unref(gpar__op *op);
/* Engine-internal (deps.c, dispatch.c, complete.c). */
GPAR__HIDDEN void gpar__op_set_state(gpar__op *op, int state);
/* op ran on a CPU worker (status in op->status): complete it. A consumer it makes ready on
 * `local` may be handed back in *next for the calling worker to run at once (NULL: none). */
GPAR__HIDDEN void gpar__op_ran(gpar__op *op, gpar__device *local, gpar__op **next);
/* The device finished op (a GPU op: its event completed; failure in op->async_status):
 * retire it, and what waited on it, once its producers have. */
GPAR__HIDDEN void gpar__op_done(gpar__op *op);
/* op was enqueued on an event lane and its event (or cover) is known: release the consumers
 * that wait on its event; those on `local` are appended to *local_tail (run next by that
 * dispatcher), the others queued. */
GPAR__HIDDEN void gpar__op_dispatched(gpar__op *op, gpar__device *local, gpar__op ***local_tail);
/* op was enqueued on its lane, its event not known yet: release only the consumers on that same
 * lane (the lane orders them), appended to *local_tail. */
GPAR__HIDDEN void gpar__op_release_lane(gpar__op *op, gpar__device *local, gpar__op ***local_tail);
/* Free the engine's pooled ops (shutdown: nothing in flight). */
GPAR__HIDDEN void gpar__engine_drop_ops(gpar_engine *eng);
/* Give the calling thread's cached ops of eng back to the engine (a worker leaving). */
GPAR__HIDDEN void gpar__op_cache_flush(gpar_engine *eng);
/* The engine's counters (gpar_stats_get). */
GPAR__HIDDEN void gpar__stats(gpar_engine *eng, gpar_stats *stats);

/* ---------------------------------------------------------------- queue.c */

GPAR__HIDDEN int gpar__queue_init(gpar__queue *q, int nconsumers);
GPAR__HIDDEN void gpar__queue_destroy(gpar__queue *q);
GPAR__HIDDEN void gpar__queue_push(gpar__queue *q, gpar__op *op);
GPAR__HIDDEN void gpar__queue_stop(gpar__queue *q);
/* One ready op, waiting for one (spinning, then asleep) when there is none; NULL once stopped
 * and empty. max > 1: up to max ops, chained by ->next, oldest first. */
GPAR__HIDDEN gpar__op *gpar__queue_pop(gpar__queue *q, int max);
/* Up to max ready ops without waiting; NULL when none is queued. */
GPAR__HIDDEN gpar__op *gpar__queue_take(gpar__queue *q, int max);

/* ---------------------------------------------------------------- dispatch.c, complete.c */

/* Start a device's threads (CPU workers, or a GPU's dispatcher and completion thread). */
GPAR__HIDDEN int gpar__device_start(gpar__device *dev);
GPAR__HIDDEN void gpar__device_join(gpar__device *dev);
GPAR__HIDDEN gpar__event *gpar__op_done_event(const gpar__op *op);
GPAR__HIDDEN void gpar__completer_hand(gpar__device *dev, gpar__op *group);
GPAR__HIDDEN void *gpar__completer_main(void *arg);
GPAR__HIDDEN void gpar__completer_stop(gpar__device *dev);

/* ---------------------------------------------------------------- wait.c */

/* Count ops in flight (each in the current epoch's counter) and check the engine is open to
 * submissions: GPAR_ESHUTDOWN (counts undone) once the drain has closed it. */
GPAR__HIDDEN int gpar__inflight_enter(gpar_engine *eng, gpar__op **ops, int n);
/* A retired op of epoch parity `epoch` leaves the counts (failed: it retired with an error);
 * waiters are woken when one waits for this op (waited) or a count reached 0. */
GPAR__HIDDEN void gpar__inflight_leave(gpar_engine *eng, int epoch, int failed, int waited);
/* A failure for gpar_wait_all, kept when it is the first since the last report. */
GPAR__HIDDEN void gpar__first_error(gpar_engine *eng, int status, const char *msg);

/* Wait until op has retired; drop the reference the caller held; its status (message set). */
GPAR__HIDDEN int gpar__op_wait(gpar__op *op);
/* Wait for the last writer of b (a reference the caller holds); the status it left on b. */
GPAR__HIDDEN int gpar__buf_wait(gpar_engine *eng, gpar__buf *b);
/* Wait until every op submitted before the call has retired; the first error since the last
 * such wait (reset). */
GPAR__HIDDEN int gpar__wait_all(gpar_engine *eng);
/* Wait until every op submitted before the call has retired; errors stay for the next. */
GPAR__HIDDEN void gpar__wait_submitted(gpar_engine *eng);
/* Wait until nothing is in flight, then close the engine to submissions (shutdown's drain);
 * the first error not yet reported. */
GPAR__HIDDEN int gpar__drain(gpar_engine *eng);

/* ---------------------------------------------------------------- trace.c */

GPAR__HIDDEN void gpar__trace_op(gpar_engine *eng, gpar__op *op, double t_retired);
GPAR__HIDDEN void gpar__trace_write(gpar_engine *eng);
/* The breakdown's means so far (reset != 0 starts anew); GPAR_ENOTSUP without tracing. */
GPAR__HIDDEN int gpar__breakdown(gpar_engine *eng, gpar_breakdown *bd, int reset);

#endif
