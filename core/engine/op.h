/* op.h: ops and their kinds (op.c). The engine runs an op through its kind's table
 * (gpar__op_kind) and never looks at its payload: the layers above define the kinds (api/:
 * transfers, BLAS, fills, user functions; graph/: graph launches; comm/: collectives).
 * The one way to build an op: gpar__op_new, then gpar__op_use for each buffer it accesses, then
 * gpar__op_submit (deps.h) or gpar__op_discard. Arguments are checked before gpar__op_new; after
 * it, only running out of memory fails. */
#ifndef GPAR_CORE_ENGINE_OP_H
#define GPAR_CORE_ENGINE_OP_H

#include "engine/registry.h"
#include "engine/spin.h"

#define GPAR__INLINE 8 /* accesses and edges an op holds without allocating (a fan-in of 8 fits) */

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
  GPAR__KIND_TIMED = 4,
  /* Runs nothing of its own: its failure only echoes an input's, and goes to no one (neither
   * gpar_wait_all nor the call that submitted it). */
  GPAR__KIND_ECHOES = 8,
  /* Runs on the first compute lane (GPAR__LANE_COMPUTE) however many a device has: it issues
   * work on several lanes itself, in its dispatcher's thread (a graph part). */
  GPAR__KIND_FIRST_LANE = 16
};

/* The kind that runs nothing: an op of it orders by its buffers only (a graph's fence, the
 * order and closing ops of a staged collective). Run it on the host device. */
GPAR__HIDDEN extern const gpar__op_kind gpar__kind_order;

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
  int ridx;       /* while the op is one of buf's readers: its index there (buf's lock; deps.c) */
} gpar__access;

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
  int lane;                           /* final once it is queued (lanes.h) */
  atomic_int pick;                    /* its lane, or -1 while open (lanes.h); any thread */
  atomic_int heir;                    /* a consumer took its lane to follow it (lanes.c, rule 1) */
  unsigned width;                     /* its builder's estimate of its thread blocks or work-groups
                                         (0: unknown, small): lanes.c, rule 2 */
  unsigned long launched;             /* its device's count of dispatched ops when it was dispatched */
  gpar__op *next;                     /* ready queue, a dispatcher's list, the op pool */
  gpar__op *lane_next;                /* completion FIFO of its lane */
  atomic_int state;                   /* GPAR__ST_* */
  atomic_int refs;                    /* 1 while in flight, +1 per consumer's producer edge and
                                         cover until they let go, +1 kept for a waiter */
  atomic_int unmet;                   /* producers not yet dispatched (event edges) or retired
                                         (others), + 1 until its submission is done */
  atomic_int unretired;               /* producers not yet retired, + 1 until it is done itself */
  atomic_int dep_failed;              /* a producer whose data this op reads failed */
  gpar__spin lock;                    /* consumers list and state changes (above) */
  int waited;                         /* a thread sleeps until it retires (lock; wait.c) */
  int epoch;                          /* its in-flight counter (inflight.c) */
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

/* An op's width (lanes.c, rule 2) for `work` items done per_block to a thread block or
 * work-group, at least 1, saturated. */
static inline unsigned gpar__op_width(double work, double per_block) {
  double w = work / per_block;
  return w < 1 ? 1u : w > 4e9 ? 4000000000u : (unsigned)w;
}

/* The kind's arguments of op (each kind checks its type's size against GPAR__OP_PAYLOAD). */
static inline void *gpar__op_args(gpar__op *op) { return op->payload; }
static inline const void *gpar__op_cargs(const gpar__op *op) { return op->payload; }

/* Access i of op: the first GPAR__INLINE inline, the rest in acc_more. Like strchr, it takes a
 * const op and returns a writable pointer, so that readers and writers share one accessor. */
static inline gpar__access *gpar__op_access(const gpar__op *op, int i) {
  return i < GPAR__INLINE ? (gpar__access *)&op->acc[i] : &op->acc_more[i - GPAR__INLINE];
}

/* ---------------------------------------------------------------- building */

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

/* ---------------------------------------------------------------- the engine's side */

/* Give up what the op owns besides buffers (kind->release, owned_pinned): once, at retirement
 * or discard. */
GPAR__HIDDEN void gpar__op_release_owned(gpar__op *op);
GPAR__HIDDEN void gpar__op_ref(gpar__op *op);
GPAR__HIDDEN void gpar__op_unref(gpar__op *op);
GPAR__HIDDEN void gpar__op_set_state(gpar__op *op, int state);
/* Record the first failure of an op; GPAR_EDEPFAILED keeps its short text. */
GPAR__HIDDEN void gpar__op_fail(gpar__op *op, int status);
/* The status op leaves on buffer b that it writes, and its message (may be NULL). */
GPAR__HIDDEN int gpar__op_write_status(const gpar__op *op, const gpar__buf *b, const char **msg);
/* The event whose completion implies op's: its own, or that of the later op on the same lane
 * that covers it; NULL when its lane was synchronised (already complete). */
GPAR__HIDDEN gpar__event *gpar__op_done_event(const gpar__op *op);
/* Free the engine's pooled ops (shutdown: nothing in flight). */
GPAR__HIDDEN void gpar__engine_drop_ops(gpar_engine *eng);
/* Give the calling thread's cached ops of eng back to the engine (a worker leaving). */
GPAR__HIDDEN void gpar__op_cache_flush(gpar_engine *eng);

#endif
