/* kernel.h: portable kernels, the kernel layer's private types and calls, file by file. A kernel
 * is a name, a typed signature and a body; the backends turn it into their source, compile, load
 * and launch it (core/backend.h, kernel_*).
 *
 * The files, bottom first; a file uses only files listed before it (tests/layers.sh checks the
 * includes and, with nm, the calls):
 * Layers (bottom first): names.c sig.c dialect.c disk.c target.c kernel.c kind.c build.c launch.c calls.c
 *   names.c    the names kernels, parameters and maps may not take
 *   sig.c      signatures, and the scans of a text (group memory, what reads files)
 *   dialect.c  the dialect's portable part
 *   disk.c     the disk cache
 *   target.c   each device's kernel target, and its records on disk
 *   kernel.c   kernel objects, their handles and references
 *   kind.c     the op kinds of launches, one per kernel name, and the host's spreading of groups
 *              over the CPU workers
 *   build.c    builds and the engine's memory cache (texts accepted, builds)
 *   launch.c   gpar_kernel_launch: the checks, then the op
 *   calls.c    the public calls that make, release, build and describe kernels; shutdown
 *
 * Layer 3, beside graph/ and comm/: it uses engine/ and api/, and nothing uses it but
 * lifecycle/ (gpar__kernel_shutdown). Its ops are engine ops of kinds defined in kind.c.
 *
 * Lifetimes. A kernel object lives while its handle or an op holding it (a launch in flight, a
 * graph's recorded launch) does: refs counts them; the last reference frees it. Handles follow
 * the one rule of engine/handle.c. A build (gpar__kentry: one kernel text on one device target)
 * belongs to the engine's kernel state and lives until gpar_shutdown, so an op that names one
 * never outlives it; so do the op kinds, interned per kernel name (a trace names them at
 * shutdown, after the kernels are gone).
 *
 * Lock order: ks->mu (an engine's kernel state: its builds, kinds and device targets) is held
 * alone: never across a backend call, a build or an engine call; a thread that waits for
 * another thread's build of the same text sleeps on ks->cv. */
#ifndef GPAR_CORE_KERNEL_H
#define GPAR_CORE_KERNEL_H

#include "api/api.h"

#define GPAR__KMAX_PARAMS 64

typedef struct gpar__kentry gpar__kentry;
typedef struct gpar__ktext gpar__ktext;
typedef struct gpar__kernel gpar__kernel;
typedef struct gpar__kkind gpar__kkind;

/* A build's state. BUILDING -> READY | FAILED (final), or -> RETRY after a failure that may not
 * happen again (out of memory, an injected fault, a vendor error): the next thread to want it
 * builds it again. */
enum { GPAR__KE_BUILDING, GPAR__KE_READY, GPAR__KE_FAILED, GPAR__KE_RETRY };

/* One build: a kernel's text on one device target (ks->mu guards state and the chain; every
 * other field is written by the building thread before it publishes READY or FAILED). */
struct gpar__kentry {
  gpar__kentry *next; /* hash chain */
  uint64_t hash;
  char *mkey;         /* the memory key: the device's target (and index, where modules are per
                         device) and the kernel's texts (gpar__kernel.text) */
  size_t mkey_len;
  int state;          /* GPAR__KE_* */
  gpar__device *dev;  /* the device that built it (its backend unloads the module) */
  int status;         /* FAILED: what every later build returns, with msg */
  char *msg;
  char *log;          /* the compiler's output; NULL: none */
  void *module;       /* READY: the backend's loaded kernel */
  gpar__klimits lim;
  int origin;         /* GPAR_KERNEL_COMPILED / _DISK_HIT */
  double seconds;     /* compile or load time */
};

/* A kernel text gpar_kernel_create accepted in this engine (ks->mu guards the chain; the rest is
 * written before it is published and never changes but built[]): another kernel of the same
 * text skips the checks, the signature's parse and the interning of its kind, and, on a device
 * where the text was built, the target and memory key (build.c). Kept until gpar_shutdown, as
 * builds are; at most GPAR__KTEXT_MAX of them (later texts take the slow path). */
#define GPAR__KTEXT_MAX 4096
#define GPAR__KTEXT_BUCKETS 1024
struct gpar__ktext {
  gpar__ktext *next;                /* hash chain */
  uint64_t hash;
  size_t len;
  char *text;                       /* as gpar__kernel.text; its kernels point into it */
  char *sig;                        /* the signature, cut by its parse, that params' names point into */
  gpar__kparam *params;
  int nparams, uses_group_memory;
  const gpar__op_kind *kind;
  _Atomic(gpar__kentry *) built[];  /* per device: its build (READY or FAILED) once known */
};

/* An engine's kernel state (eng->kernels), created at its first kernel. */
typedef struct gpar__kstate {
  pthread_mutex_t mu;
  pthread_cond_t cv;  /* a build finished */
  gpar__kentry **bucket;
  int nbuckets, nentries;
  gpar__kkind *kinds; /* interned op kinds, one per kernel name */
  gpar__ktext **tbucket; /* the texts accepted (GPAR__KTEXT_BUCKETS chains) */
  int ntexts, ndev;
  char **target;      /* per device: its kernel_target words, once known */
  int *target_st;     /* per device: 0 unknown, 1 known (target), else why it cannot (target_why) */
  char **target_why;  /* per device: why it cannot build (target_st != GPAR_OK) */
} gpar__kstate;

/* A kernel object. */
struct gpar__kernel {
  uint32_t slot;               /* its handle: {slot, serial} in the table of live kernels */
  uint64_t serial;
  int owned;                   /* the library's own (a map's, an array op's): see gpar__kernel_owned */
  gpar_engine *token;          /* its engine's user handle */
  gpar_engine *eng;
  atomic_long refs;            /* the handle's, and one per op that holds it */
  char *text;                  /* name, params, body, preamble, each NUL-terminated, in one block */
  size_t text_len;
  char *sig;                   /* the signature's copy that the parameters' names point into */
  gpar__kernel_def def;        /* what the backends see (points into text and params) */
  gpar__kparam *params;
  const gpar__op_kind *kind;   /* its launches' kind (interned by name) */
  gpar__ktext *te;             /* its text's entry, which owns text, sig and params (NULL: k owns them);
                                  lives until gpar_shutdown */
  int ndev;
  struct {
    _Atomic(gpar__kentry *) e; /* its build on the device (READY or FAILED) once known */
    atomic_int hit;            /* that came from the memory cache */
  } built[];                   /* per device */
};

/* A launch op's arguments (its payload; kind.c runs it, launch.c fills it). */
#define GPAR__KL_INLINE 5 /* arguments held in the op's payload; more are allocated */

typedef struct gpar__klaunch {
  gpar__kernel *k;  /* a reference, dropped when the op is done (release) */
  gpar__kentry *e;  /* its build on the op's device (lives until gpar_shutdown) */
  gpar__karg *more; /* nargs > GPAR__KL_INLINE: the arguments */
  uint32_t groups[3], size[3];
  int nargs;
  gpar__karg inl[GPAR__KL_INLINE];
} gpar__klaunch;
_Static_assert(sizeof(gpar__klaunch) <= GPAR__OP_PAYLOAD, "a kernel launch fits an op's payload");

/* ---- names.c ---- */

/* Check a kernel name (a C identifier, not a keyword, not gpar-prefixed). */
GPAR__HIDDEN int gpar__kname_check(const char *name, const char *fn);
/* Why the len bytes at name cannot name a kernel, a kernel's parameter or a map's (NULL when they
 * can): one check for all, so kernels and maps never disagree. lib: a name the library generates
 * (a map's array pointers), which may start with gpar_ and be up to 80 characters long. */
GPAR__HIDDEN const char *gpar__kname_why(const char *name, size_t len, int lib);

/* ---- sig.c ---- */

/* Parse a signature into n parameters (*out malloc'ed; names point into the writable copy
 * text, which the parse cuts with NULs). GPAR_EINVAL with the 1-based column on a bad one. lib:
 * the library's own kernel (gpar__kname_why). */
GPAR__HIDDEN int gpar__ksig_parse(char *text, const char *fn, int lib, gpar__kparam **out, int *n);
/* 1 when code names GPAR_BARRIER or GPAR_LOCAL (a group barrier or group-local memory). */
GPAR__HIDDEN int gpar__kuses_group_memory(const char *code);
/* GPAR_EINVAL (fn: what, line and column) when code, read every way a compiler may (trigraphs,
 * splices after blanks, digit separators, raw strings), has a directive that reads a file
 * (#include, #include_next, #embed, #import; # also spelled %: or ??=, blanks and comments
 * after it), __has_include, __has_embed, inline assembly (its .incbin), or token pasting beside
 * a name that begins __has_include or __asm__. */
GPAR__HIDDEN int gpar__kfiles_check(const char *code, const char *what, const char *fn);
/* A type's signature name ("f32") and element size in bytes. */
GPAR__HIDDEN const char *gpar__ktype_name(int type);
GPAR__HIDDEN size_t gpar__ktype_size(int type);
/* The gpar_arg kind a scalar parameter of type takes (0: none, not a scalar type). */
GPAR__HIDDEN int gpar__ktype_arg(int type);

/* ---- dialect.c ---- */

/* The dialect's portable part, written against what each backend's header defines. */
GPAR__HIDDEN extern const char gpar__kernel_common[];

/* ---- disk.c ---- */

/* A 64-bit hash of n bytes (file names, memory keys, checksums), seeded. */
GPAR__HIDDEN uint64_t gpar__khash(const void *p, size_t n, uint64_t seed);
/* The cache folder dir, made (0700) when missing and opened: its descriptor (the caller closes
 * it), or -1 after a line saying why it is not used (it cannot be made, or is not trusted). */
GPAR__HIDDEN int gpar__kdisk_open(const char *dir);
/* The entry for key (keylen bytes) in the folder dfd (dir, for messages): GPAR_OK with *payload
 * (malloc'ed, *len bytes) when the file exists, is trusted and holds exactly this key and a
 * payload that matches its checksum; else a status (GPAR_ENODEV: no entry; GPAR_EBACKEND: one
 * not trusted, corrupt or stale, said in the message). */
GPAR__HIDDEN int gpar__kdisk_load(const char *dir, int dfd, const char *key, size_t keylen, void **payload,
                                  size_t *len);
/* Store payload under key in the folder dfd (dir): a temporary file renamed over the entry, so
 * readers see an old entry or the whole new one. Best effort: a failure is logged, not returned. */
GPAR__HIDDEN void gpar__kdisk_store(const char *dir, int dfd, const char *key, size_t keylen, const void *payload,
                                    size_t len);

/* ---- target.c ---- */

/* dev's kernel_target words into buf (known once per device; through a record in the cache
 * folder dir, when set, where the backend identifies its compiler cheaply): GPAR_OK, or
 * GPAR_ENOTSUP with the reason (in buf too). */
GPAR__HIDDEN int gpar__kernel_target(gpar__kstate *ks, gpar__device *dev, const char *dir, char *buf, size_t cap);

/* ---- kernel.c ---- */

/* The kernel a handle names, with a table reference (gpar__kernel_put), or NULL (GPAR_EINVAL
 * message naming fn). */
GPAR__HIDDEN gpar__kernel *gpar__kernel_get(gpar_kernel h, const char *fn);
/* The library's calls on kernels of its own (maps', array ops'), bracketed by +1 and -1 in the
 * calling thread (0 asks; returns the depth): a kernel created inside the bracket is the
 * library's, its handle tagged (bit 63), and gpar_kernel_release refuses it outside one (it goes
 * with its map or engine). Serials come in order, so a user can guess the handle made after
 * theirs; without the tag the guess finds nothing of the library's. */
GPAR__HIDDEN int gpar__kernel_owned(int step);
GPAR__HIDDEN void gpar__kernel_put(gpar__kernel *k);
/* Object references (ops): the last unref frees the kernel. */
GPAR__HIDDEN void gpar__kernel_ref(gpar__kernel *k);
GPAR__HIDDEN void gpar__kernel_unref(gpar__kernel *k);
/* Free a kernel that was never published (gpar_kernel_create's failure). */
GPAR__HIDDEN void gpar__kernel_discard(gpar__kernel *k);
/* Add k to the table of live kernels: GPAR_OK with its handle in *out. */
GPAR__HIDDEN int gpar__kernel_publish(gpar__kernel *k, gpar_kernel *out);
/* Take k's handle out of the table (NULL when another release did); then recycle its slot. */
GPAR__HIDDEN gpar__kernel *gpar__kernel_kill(gpar__kernel *k);
GPAR__HIDDEN void gpar__kernel_recycle(gpar__kernel *k);
/* Drop the handle reference of every kernel of eng (gpar__kernel_shutdown). */
GPAR__HIDDEN void gpar__kernel_drain(gpar_engine *eng);

/* ---- kind.c ---- */

/* The op kind of kernel name's launches, interned in ks (NULL without memory). */
GPAR__HIDDEN const gpar__op_kind *gpar__klaunch_kind(gpar__kstate *ks, const char *name);
/* Free ks's kinds (gpar__kstate_free). */
GPAR__HIDDEN void gpar__klaunch_kinds_free(gpar__kstate *ks);

/* ---- build.c ---- */

/* k's build on dev, building it in the calling thread when it has none (memory cache, disk
 * cache, compiler): GPAR_OK with *e READY, or the build's failure (GPAR_EBUILD, GPAR_ENOTSUP
 * kept; others retried next time) with its message. */
GPAR__HIDDEN int gpar__kernel_build_on(gpar__kernel *k, gpar__device *dev, gpar__kentry **e);
/* The hash of a kernel's texts (name, params, body, preamble; len[i]: their lengths). */
GPAR__HIDDEN uint64_t gpar__ktext_hash(const char *const txt[4], const size_t len[4]);
/* The entry of those texts (hash h) in ks, or NULL. */
GPAR__HIDDEN gpar__ktext *gpar__ktext_find(gpar__kstate *ks, const char *const txt[4], const size_t len[4], uint64_t h);
/* k's texts, signature, parameters and kind become te's (which k does not free: kernel.c). */
GPAR__HIDDEN void gpar__ktext_use(gpar__kernel *k, gpar__ktext *te);
/* Keep k's text (checked, its signature parsed, its kind interned; hash h) in ks: its entry takes
 * k's texts, or k uses an entry another thread kept first (gpar__ktext_use); best effort: without
 * memory or room, k keeps its own and k->te stays NULL. */
GPAR__HIDDEN void gpar__ktext_keep(gpar__kstate *ks, gpar__kernel *k, uint64_t h);
/* eng's kernel state, created on first use; NULL (GPAR_ENOMEM) without memory. */
GPAR__HIDDEN gpar__kstate *gpar__kstate_get(gpar_engine *eng);
/* Free the builds (unloading their modules) and the kinds (gpar__kernel_shutdown). */
GPAR__HIDDEN void gpar__kstate_free(gpar_engine *eng);

/* ---- launch.c ---- */

/* gpar_kernel_launch's checks (and build), but its op joins sub (policy.h: the caller submits
 * or discards sub whole) instead of being submitted: the launches of one call as one
 * submission, no other thread's op between them. */
GPAR__HIDDEN int gpar__kernel_launch_into(gpar__batch *sub, gpar_kernel h, int dev, const gpar_grid *grid,
                                          const gpar_arg *args, int nargs);

/* ---- calls.c ---- */

/* Free every kernel of eng and its kernel state (gpar_shutdown: after the drain, the graphs and
 * the trace; nothing in flight, no call inside). */
GPAR__HIDDEN void gpar__kernel_shutdown(gpar_engine *eng);

#endif
