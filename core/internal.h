/* internal.h: the core's private types: engine, devices, buffers, operations and the queues
 * between the submitting threads, the per-device dispatchers and the completion threads.
 * Knows no vendor API: backends are reached only through gpar__backend_ops (backend.h).
 *
 * Files: registry.c (engine slots, handles, calls entering an engine), engine.c (lifecycle,
 * configuration), buffer.c (buffers and their handles), ops.c + transfer.c (public op calls:
 * validation and op construction), deps.c (dependency graph: submit, retire, failure
 * propagation), queue.c (ready queues), dispatch.c (dispatchers, CPU workers, running an op by
 * kind), complete.c (completion threads), wait.c, trace.c (traces, host-time breakdown).
 *
 * Lock order (outer before inner; "->" marks what may be taken while the line above is held):
 *   gpar__registry_mu          engine slots; held alone (registry.c)
 *   eng->mu                    the engine lock: graph, buffers, op free list, stats, trace
 *     -> dev->ready.mu         a ready queue (make_ready under the engine lock)
 *     -> eng->pinned.mu        pinned pool (staging freed at retire)
 *        -> backend locks      host_alloc / host_free under the pool lock
 *     -> backend locks         mem_free under the engine lock
 *   dev->cmu                   completion FIFOs; never held together with eng->mu
 *   the combiner role (a bit of eng->done, not a lock): its owner takes eng->mu to retire the
 *   finished ops; a finishing thread that does not get it never waits (complete.c proves that
 *   no finished op is left behind)
 * Every lock is taken and released in one function; a function that needs a lock held on
 * entry ends in _locked (the kept names gpar__op_new/_submit/_discard are aliases). One
 * exception is kept for callers outside the core: gpar__buf_lookup returns holding eng->mu. */
#ifndef GPAR_CORE_INTERNAL_H
#define GPAR_CORE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "backend.h"

#define GPAR__MAX_ENGINES 64
#define GPAR__INLINE 4

typedef struct gpar__op gpar__op;
typedef struct gpar__buf gpar__buf;
typedef struct gpar__device gpar__device;
typedef struct gpar__graph_part gpar__graph_part;

/* Access modes of an op on a buffer. A graph launch's op also marks, per buffer it writes,
 * how the last recorded op writing it ended (graph_launch.c). */
enum { GPAR__READ = 1, GPAR__WRITE = 2, GPAR__WRITE_FAILED = 4, GPAR__WRITE_SKIPPED = 8 };

/* Edge flags between a producer and a consumer op. */
enum {
  GPAR__EDGE_DATA = 1,   /* the consumer reads what the producer wrote: failures propagate */
  GPAR__EDGE_EVENT = 2   /* ordered on the device (consumer's lane waits on producer's event) */
};

/* Op kinds. A new kind: add it here, give it a member of gpar__op.u, and run it in
 * gpar__op_run (dispatch.c), the one switch over kinds. */
enum {
  GPAR__OP_COPY,   /* u.copy on dev's lane */
  GPAR__OP_FILL,   /* u.fill */
  GPAR__OP_GEMM,   /* u.gemm */
  GPAR__OP_USER,   /* u.user */
  GPAR__OP_NOP,    /* orders only (e.g. release of a staging buffer) */
  GPAR__OP_REDUCE, /* u.reduce: CPU reduction of a staged collective (comm_paths.c) */
  GPAR__OP_COLL,   /* u.coll: one member's part of a backend collective (comm_paths.c) */
  GPAR__OP_GRAPH   /* u.graph: one part of a graph launch (graph_launch.c) */
};

/* Op lifecycle (engine lock). Each step goes to the next state only (asserted). */
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
  gpar__buf *buf;
  int mode;
} gpar__access;

struct gpar__op {
  gpar__op *next;                     /* device queue / free list */
  gpar__op *lane_next;                /* completion FIFO of its lane */
  gpar__op *done_next;                /* engine's list of finished ops (combining retirement) */
  gpar__op *inflight_prev, *inflight_next; /* engine's in-flight list, submission order */
  uint64_t seq;
  int kind;
  int state;
  int status;
  atomic_int dep_failed;  /* a producer whose data this op reads failed */
  int async_status;       /* failure reported by the device's event (completion thread) */
  char *async_msg;
  int refs;
  int reported;        /* its status goes to the caller (gpar_read), not to gpar_wait_all */
  int unmet;           /* producers not yet dispatched (event edges) or retired (others) */
  int unretired;       /* producers not yet retired */
  int lane;
  const char *name;    /* for traces */
  gpar__device *dev;
  gpar__event *event;  /* recorded after the op on its lane, when anyone needs it */
  gpar__op *cover;     /* else: a later op on the same lane whose event implies this one's */
  gpar__event *start_event; /* tracing only */
  gpar__edges prods;   /* producers (refs held until dispatch) */
  gpar__edges succs;   /* consumers */
  int nacc;
  gpar__access acc[GPAR__INLINE];
  gpar__access *acc_more;
  void *staging;       /* pinned staging freed at retire (gpar_write) */
  size_t staging_bytes;
  char *errmsg;        /* detail of a failure */
  double t_submit, t_dispatch, t_start, t_end; /* seconds, tracing */
  /* Host-time breakdown (tracing): public call entered, ready, taken by a worker or dispatcher,
   * run finished, completion seen under the engine lock. */
  double t_call, t_ready, t_taken, t_ran, t_seen;
  union {
    gpar__copy_args copy;
    struct { void *mem; size_t off, bytes; unsigned char value; } fill;
    gpar__gemm_args gemm;
    struct { gpar_user_fn fn; void *arg; } user;
    gpar__reduce_args reduce; /* src/dst arrays malloc'd, freed with the op */
    gpar__coll_args coll;
    struct { gpar__graph_part *part; int partial; } graph; /* partial: per-buffer failure marks */
  } u;
};

/* Access i of op: the first GPAR__INLINE inline, the rest in acc_more. Like strchr, it takes a
 * const op and returns a writable pointer, so that readers and writers share one accessor. */
static inline gpar__access *gpar__op_access(const gpar__op *op, int i) {
  return i < GPAR__INLINE ? (gpar__access *)&op->acc[i] : &op->acc_more[i - GPAR__INLINE];
}

/* A multi-producer queue of ready ops consumed by one or more threads that spin briefly
 * before sleeping. */
typedef struct gpar__queue {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  gpar__op *head, *tail;
  atomic_int count;
  atomic_int spinners;  /* consumers spinning before they sleep */
  int sleepers;
  int waking;           /* a sleeper was signalled and has not run yet */
  int stop;
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
  double trace_t0;             /* host time of trace_ref */
  gpar__event *trace_ref;
};

struct gpar__buf {
  uint64_t serial;             /* never reused in the process (handle check) */
  uint32_t slot;               /* index in the engine's slot table */
  gpar_engine *eng;
  gpar__device *dev;           /* NULL: pinned host memory (GPAR_HOST) */
  int host_memory;             /* 1 when host code can touch mem */
  void *mem;                   /* device handle or host pointer */
  size_t bytes;
  int released;
  int pending;                 /* ops in flight that access it */
  gpar__op *writer;            /* last writer not yet retired */
  int nreaders, capreaders;
  gpar__op **readers;          /* readers since that write, not yet retired */
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
  GPAR__FAULT_KINDS
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
  pthread_mutex_t mu;           /* dependency bookkeeping */
  pthread_cond_t retire_cv;
  /* Per lifetime: zeroed by gpar_init from here on. */
  int slot;
  int nwaiters;
  gpar_config cfg;
  int ndev;
  gpar__device **devs;
  gpar__device *host_dev;
  struct { const gpar__backend_ops *ops; gpar__backend *be; } backends[3];
  int nbackends;
  /* Backend status (gpar_backend_status, backend_status.c): the backends the caller named
   * (cfg.backends before defaults) and, per backend (GPAR__BACKEND_SLOT), why it has no device
   * or why one of its devices was skipped. */
  unsigned backends_named;
  char backend_why[3][192];
  /* Knobs with no gpar_config field, read from the environment at gpar_init by engine.c (the
   * one reader): GPAR_PINNED_PROVIDER=cuda|opencl|host ("" when unset), GPAR_COMM_STAGED=1
   * (collectives always staged). */
  char env_pinned_provider[16];
  int env_comm_staged;
  /* buffers */
  gpar__buf **slots;
  uint32_t nslots, capslots;
  uint32_t *free_slots;
  uint32_t nfree;
  /* ops */
  gpar__op *op_free;
  gpar__op *inflight_head, *inflight_tail;
  uint64_t seq;
  int first_error;
  char *first_errmsg;
  gpar_stats stats;
  atomic_long events_live;
  atomic_ulong graph_native;    /* graph parts launched as a backend graph (graph_launch.c) */
  gpar__pinned_pool pinned;
  /* tracing */
  int tracing;                  /* 1: per-op timestamps (breakdown), 2: also a trace file */
  double bd_sum[5];             /* breakdown sums (seconds), engine lock */
  uint64_t bd_ops;
  gpar__trace_rec *trace;
  size_t ntrace, captrace;
  double t0;
  /* fault injection */
  atomic_ulong fault_at[GPAR__FAULT_KINDS];
  /* Combining retirement (complete.c; cfg.retire == GPAR_RETIRE_COMBINE): finished ops, newest
   * first, pushed without the lock; low bit: a combiner owns the list and retires it. Last, on
   * a cache line of its own, away from what the lock's holder writes. */
  int combine;
  _Alignas(64) _Atomic uintptr_t done;
};

/* registry.c: engine slots, their tokens and the calls inside them */
/* Public entry points bracket their work with enter/leave: enter resolves the user's engine
 * token (or an internal engine pointer), refuses a shut-down or stale one, and counts the call
 * so gpar_shutdown frees nothing while a call is inside. While the engine drains, only calls
 * from inside ops (gpar__in_op) or nested in an accepted call enter. */
GPAR__HIDDEN gpar_engine *gpar__engine_enter(gpar_engine *eng, int *status);
/* The engine a buffer handle names, entered as above (GPAR_EBADBUF when none). */
GPAR__HIDDEN gpar_engine *gpar__engine_enter_buf(gpar_buffer h, int *status);
GPAR__HIDDEN void gpar__engine_leave(gpar_engine *eng);
/* Validate without counting the call (prefer enter/leave). */
GPAR__HIDDEN gpar_engine *gpar__engine_check(gpar_engine *eng, int *status);
/* The engine in slot s (0-based), or NULL. */
GPAR__HIDDEN gpar_engine *gpar__engine_at(uint64_t s);
GPAR__HIDDEN gpar_engine *gpar__engine_token(gpar_engine *eng);
GPAR__HIDDEN gpar_engine *gpar__engine_claim(int *status);
GPAR__HIDDEN void gpar__engine_release_slot(gpar_engine *eng);
GPAR__HIDDEN int gpar__engine_begin_close(gpar_engine *eng);
GPAR__HIDDEN void gpar__engine_wait_callers(gpar_engine *eng);
GPAR__HIDDEN extern _Thread_local int gpar__in_op;
GPAR__HIDDEN extern _Thread_local int gpar__depth; /* entered public calls on this thread */
GPAR__HIDDEN extern _Thread_local double gpar__t_call; /* when this thread's public call entered (tracing) */
/* Test hook (exported, not in gpar.h): set the next engine and buffer serials, to test the
 * handle checks at the counters' end without running 2^57 lifetimes. */
GPAR_API void gpar__test_set_serials(uint64_t next_engine, uint64_t next_buffer);

/* engine.c */
GPAR__HIDDEN int gpar__fault(gpar_engine *eng, int kind);
GPAR__HIDDEN double gpar__now(void);

/* buffer.c */
GPAR__HIDDEN gpar_buffer gpar__buf_handle(const gpar__buf *b);
/* Resolve a handle of engine eng: GPAR_EENGINE for a live handle of another engine. */
GPAR__HIDDEN int gpar__buf_get_locked(gpar_engine *eng, gpar_buffer h, gpar__buf **b);
/* Decode a handle; on success returns holding eng->mu (callers outside the core). */
GPAR__HIDDEN int gpar__buf_lookup(gpar_buffer h, gpar__buf **out, gpar_engine **eng_out);
GPAR__HIDDEN void gpar__buf_free_locked(gpar_engine *eng, gpar__buf *b);
GPAR__HIDDEN int gpar__buffer_alloc(gpar_engine *eng, gpar__device *dev, size_t bytes, void **mem);
GPAR__HIDDEN void gpar__buffer_free_mem(gpar_engine *eng, gpar__device *dev, void *mem);
GPAR__HIDDEN int gpar__buffer_register_locked(gpar_engine *eng, gpar__device *dev, size_t bytes, void *mem, gpar__buf **out);
GPAR__HIDDEN int gpar__buffer_create(gpar_engine *eng, int dev, size_t bytes, gpar_buffer *buf);
GPAR__HIDDEN int gpar__buffer_release(gpar_buffer h);
GPAR__HIDDEN uint64_t gpar__buf_serial_last(void);
GPAR__HIDDEN void gpar__buf_serial_set(uint64_t next);

/* deps.c: ops and the dependency graph */
GPAR__HIDDEN gpar__op *gpar__op_new_locked(gpar_engine *eng);
#define gpar__op_new gpar__op_new_locked
GPAR__HIDDEN int gpar__op_add_access(gpar__op *op, gpar__buf *buf, int mode);
/* GPAR_ESHUTDOWN (op discarded) once the engine has drained for shutdown; else GPAR_OK. With
 * keep, an extra reference is returned for gpar__wait_op. */
GPAR__HIDDEN int gpar__op_submit_locked(gpar_engine *eng, gpar__op *op, int keep);
#define gpar__op_submit gpar__op_submit_locked
GPAR__HIDDEN void gpar__op_discard_locked(gpar_engine *eng, gpar__op *op);
#define gpar__op_discard gpar__op_discard_locked
GPAR__HIDDEN void gpar__op_unref_locked(gpar_engine *eng, gpar__op *op);
GPAR__HIDDEN void gpar__op_set_state(gpar__op *op, int state);
GPAR__HIDDEN void gpar__op_fail(gpar__op *op, int status);
/* The device has finished op: retire it (and what waited on it) once its producers have. */
GPAR__HIDDEN void gpar__op_complete_locked(gpar_engine *eng, gpar__op *op, int status);
/* op was dispatched on an event lane: release the consumers that wait on its event; those on
 * `local` are appended to *local_tail (run next by that dispatcher), the others queued. */
GPAR__HIDDEN void gpar__op_dispatched_locked(gpar_engine *eng, gpar__op *op, gpar__device *local, gpar__op ***local_tail);
GPAR__HIDDEN void gpar__engine_drop_ops(gpar_engine *eng);

/* ops.c: what the op calls share */
GPAR__HIDDEN int gpar__check_range(const gpar__buf *b, size_t off, size_t bytes, const char *what);
GPAR__HIDDEN gpar__op *gpar__op_build_locked(gpar_engine *eng, int kind, gpar__device *dev, int lane, const char *name);
GPAR__HIDDEN int gpar__op_access_locked(gpar_engine *eng, gpar__op *op, gpar__buf *b, int mode);
GPAR__HIDDEN int gpar__submit_locked(gpar_engine *eng, gpar__op *op, gpar__op **sync);
GPAR__HIDDEN int gpar__sync_wait(gpar_engine *eng, int st, gpar__op *sync);

/* queue.c */
GPAR__HIDDEN void gpar__queue_init(gpar__queue *q);
GPAR__HIDDEN void gpar__queue_destroy(gpar__queue *q);
GPAR__HIDDEN void gpar__queue_push(gpar__queue *q, gpar__op *op);
GPAR__HIDDEN void gpar__queue_stop(gpar__queue *q);
GPAR__HIDDEN gpar__op *gpar__queue_pop(gpar__queue *q, int all);

/* dispatch.c */
GPAR__HIDDEN int gpar__op_run(gpar__device *dev, gpar__op *op);
GPAR__HIDDEN int gpar__device_start(gpar__device *dev);
GPAR__HIDDEN void gpar__device_join(gpar__device *dev);
GPAR__HIDDEN gpar__event *gpar__op_done_event(const gpar__op *op);

/* complete.c */
/* Ops finished by the calling thread (a chain by ->next, oldest first): their run status is in
 * op->status (CPU ops, still READY) or op->async_status/async_msg (GPU ops, DISPATCHED). Retires
 * them under the engine lock (direct) or through the combining list (combine). */
GPAR__HIDDEN void gpar__complete_finished(gpar_engine *eng, gpar__op *ops);
GPAR__HIDDEN void gpar__completer_hand(gpar__device *dev, gpar__op *group);
GPAR__HIDDEN void *gpar__completer_main(void *arg);
GPAR__HIDDEN void gpar__completer_stop(gpar__device *dev);

/* wait.c */
GPAR__HIDDEN int gpar__wait_op(gpar_engine *eng, gpar__op *op);

/* comm_paths.c: the engine's hooks for collectives' ops (comm.c: the public collectives) */
GPAR__HIDDEN int gpar__comm_exec(gpar__device *dev, gpar__op *op);
GPAR__HIDDEN void gpar__comm_op_free(gpar__op *op);
GPAR__HIDDEN void gpar__comm_watch(gpar__device *dev, gpar__op *op);
/* graph_record.c (recording, gpar_graph_end) and graph_launch.c (launch, running a part): op
 * graphs. The calling thread's recording (record hook in gpar__op_submit). */
typedef struct gpar__rec_state {
  gpar_engine *eng;
  uint64_t serial; /* the engine's lifetime when recording began */
  struct gpar_graph *g;
} gpar__rec_state;
GPAR__HIDDEN extern _Thread_local gpar__rec_state gpar__rec;
/* 1 when the calling thread records a graph on eng: its submits are recorded, waits refused. */
static inline int gpar__graph_recording(gpar_engine *eng) {
  return gpar__rec.g && gpar__rec.eng == eng && gpar__rec.serial == atomic_load(&eng->serial);
}
GPAR__HIDDEN int gpar__graph_record_locked(gpar_engine *eng, gpar__op *op);
GPAR__HIDDEN int gpar__graph_write_status(const gpar__op *op, const gpar__buf *b, const char **msg);
GPAR__HIDDEN int gpar__graph_fails_reader(const gpar__op *op, const gpar__op *c);
GPAR__HIDDEN int gpar__graph_wait_buf(gpar_engine *eng, gpar__op *w, const gpar__buf *b);
/* The status op leaves on buffer b that it writes, and its message (may be NULL). A graph
 * launch's op that failed inside leaves it only on the buffers its failed ops wrote. */
static inline int gpar__op_write_status(const gpar__op *op, const gpar__buf *b, const char **msg) {
  if (op->kind == GPAR__OP_GRAPH && op->u.graph.partial) return gpar__graph_write_status(op, b, msg);
  *msg = op->errmsg;
  return op->status;
}
/* Whether consumer c, linked behind op by a data edge, reads what op failed to produce. */
static inline int gpar__op_fails_reader(const gpar__op *op, const gpar__op *c) {
  return op->status != GPAR_OK &&
         (op->kind != GPAR__OP_GRAPH || !op->u.graph.partial || gpar__graph_fails_reader(op, c));
}
GPAR__HIDDEN int gpar__graph_exec(gpar__device *dev, gpar__op *op);
GPAR__HIDDEN void gpar__graph_shutdown(gpar_engine *eng);

/* pinned.c */
/* Pick the provider and the registering backends among eng's open devices (env
 * GPAR_PINNED_PROVIDER overrides the choice) and set the pool up with eng->cfg.pinned_limit. */
GPAR__HIDDEN void gpar__pinned_init(gpar_engine *eng);
GPAR__HIDDEN int gpar__pinned_alloc(gpar_engine *eng, size_t bytes, void **ptr);
GPAR__HIDDEN void gpar__pinned_free(gpar__pinned_pool *p, void *ptr);
GPAR__HIDDEN void gpar__pinned_destroy(gpar__pinned_pool *p);

/* trace.c */
GPAR__HIDDEN void gpar__trace_op_locked(gpar_engine *eng, gpar__op *op, double t_retired);
GPAR__HIDDEN void gpar__trace_write(gpar_engine *eng);

/* error.c */
GPAR__HIDDEN void gpar__set_quiet(int quiet);
GPAR__HIDDEN const char *gpar__error_msg(void);
GPAR__HIDDEN void gpar__set_error_msg(int status, const char *msg);

#endif
