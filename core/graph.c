/* graph.c: op graphs, record once and replay many (gpar_graph_*). Ops that a thread submits
 * between gpar_graph_begin and gpar_graph_end are validated as usual, then kept here instead of
 * being linked into the engine. gpar_graph_end resolves every edge among them once and cuts
 * them into parts, one per device stretch; a launch submits one engine op per part (kind
 * GPAR__OP_GRAPH, over the union of the part's buffers), so the engine orders a launch against
 * other work exactly as it orders any op. Running a part costs no engine bookkeeping per
 * recorded op: a backend graph (CUDA graph, captured at the first launch) or a replay of the
 * pre-resolved list on the device's dispatcher (GPU lanes, event edges decided at end) or on a
 * CPU worker (host part).
 *
 * Parts: ops are taken in record order; an op joins the latest part of its device unless one
 * of its producers lies in a part created after that one, in which case it opens a new part.
 * So every edge runs from an earlier-created part to a later one (or stays inside a part), and
 * submitting the parts in creation order lets the engine's per-buffer ordering (which only
 * adds edges from earlier to later ops) reproduce every cross-part edge: a graph that stays on
 * one device is one part, two independent device loops are two, a ping-pong between two GPUs
 * is one part per leg.
 *
 * Lock rule: the registry lock (live graphs) is never held together with an engine lock. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

_Thread_local gpar__rec_state gpar__rec;

/* One recorded op and its edges inside its part (part-local indices). */
typedef struct gpar__gnode {
  gpar__op *op;          /* the recorded op: validated, never submitted, kept as a template */
  int part;
  int nprods;
  int *prods;            /* part-local index << 1 | 1 when the edge carries data */
  int *accidx;           /* per access of op: its index in the part's union (writes only; else -1) */
  int need_event;        /* a consumer on another lane of the part (or the join) waits on it */
  int host_sync;         /* an H2D copy on a backend that reads host memory at enqueue */
} gpar__gnode;

struct gpar__graph_part {
  gpar_graph *g;
  gpar__device *dev;
  int nnodes;
  int *nodes;            /* indices into g->nodes, record order */
  int nacc;
  gpar__access *acc;     /* union of the nodes' accesses */
  int lane_last[GPAR__NLANES]; /* part-local index of the lane's last node, -1 if none */
  int no_capture;        /* replay op by op (user functions on the GPU, or a capture failed) */
  void *native;          /* backend graph; touched by the device's dispatcher only, until destroy */
};

struct gpar_graph {
  gpar_graph *next;      /* registry */
  gpar_engine *token;    /* the user's engine handle (gpar__engine_enter) */
  gpar_engine *eng;      /* the engine it names */
  int recording;
  int status;            /* first failure while recording (out of host memory) */
  int nnodes, capnodes;
  gpar__gnode *nodes;
  int nparts;
  gpar__graph_part *parts;
  int nbufs, capbufs;    /* buffers kept alive (pending++) until destroy */
  gpar__buf **bufs;
  int *bufhash;          /* open addressing over bufs, capacity 2 * capbufs; -1 empty */
};

static pthread_mutex_t graph_mu = PTHREAD_MUTEX_INITIALIZER;
static gpar_graph *graph_list;

/* ---------------------------------------------------------------- registry */

static void registry_add(gpar_graph *g) {
  pthread_mutex_lock(&graph_mu);
  g->next = graph_list;
  graph_list = g;
  pthread_mutex_unlock(&graph_mu);
}

/* Remove g (take = 1) or only check it, when it is a live, ended graph; *token: its engine's
 * handle. 0 when it is not. */
static int registry_find(gpar_graph *g, int take, gpar_engine **token) {
  int found = 0;
  pthread_mutex_lock(&graph_mu);
  for (gpar_graph **p = &graph_list; *p; p = &(*p)->next)
    if (*p == g && !g->recording) {
      found = 1;
      *token = g->token;
      if (take) *p = g->next;
      break;
    }
  pthread_mutex_unlock(&graph_mu);
  return found;
}

static void registry_remove(gpar_graph *g) {
  pthread_mutex_lock(&graph_mu);
  for (gpar_graph **p = &graph_list; *p; p = &(*p)->next)
    if (*p == g) {
      *p = g->next;
      break;
    }
  pthread_mutex_unlock(&graph_mu);
}

/* ---------------------------------------------------------------- recording */

static size_t ptr_hash(const void *p, int cap) { return ((uintptr_t)p >> 4) * 0x9e3779b97f4a7c15ull >> 7 & (size_t)(cap - 1); }

/* Index of b in g->bufs, or -1. */
static int buf_index(const gpar_graph *g, const gpar__buf *b) {
  if (!g->bufhash) return -1;
  int cap = 2 * g->capbufs;
  for (size_t h = ptr_hash(b, cap);; h = (h + 1) & (size_t)(cap - 1)) {
    int i = g->bufhash[h];
    if (i < 0) return -1;
    if (g->bufs[i] == b) return i;
  }
}

static void hash_put(gpar_graph *g, int i) {
  int cap = 2 * g->capbufs;
  size_t h = ptr_hash(g->bufs[i], cap);
  while (g->bufhash[h] >= 0) h = (h + 1) & (size_t)(cap - 1);
  g->bufhash[h] = i;
}

/* Keep b alive for the graph (engine lock held). */
static int graph_hold_buf_locked(gpar_graph *g, gpar__buf *b) {
  if (buf_index(g, b) >= 0) return GPAR_OK;
  if (g->nbufs == g->capbufs) {
    int cap = g->capbufs ? g->capbufs * 2 : 16;
    gpar__buf **v = realloc(g->bufs, sizeof *v * (size_t)cap);
    if (!v) return GPAR_ENOMEM;
    g->bufs = v;
    int *h = malloc(sizeof *h * (size_t)cap * 2);
    if (!h) return GPAR_ENOMEM;
    free(g->bufhash);
    g->bufhash = h;
    g->capbufs = cap;
    memset(h, 0xff, sizeof *h * (size_t)cap * 2);
    for (int i = 0; i < g->nbufs; i++) hash_put(g, i);
  }
  g->bufs[g->nbufs] = b;
  hash_put(g, g->nbufs++);
  b->pending++;
  return GPAR_OK;
}

static gpar__access *access_at(gpar__op *op, int i) {
  return i < GPAR__INLINE ? &op->acc[i] : &op->acc_more[i - GPAR__INLINE];
}

int gpar__graph_record_locked(gpar_engine *eng, gpar__op *op) {
  gpar_graph *g = gpar__rec.g;
  int st = g->status;
  if (st == GPAR_OK && g->nnodes == g->capnodes) {
    int cap = g->capnodes ? g->capnodes * 2 : 64;
    gpar__gnode *v = realloc(g->nodes, sizeof *v * (size_t)cap);
    if (v) {
      g->nodes = v;
      g->capnodes = cap;
    } else {
      st = GPAR_ENOMEM;
    }
  }
  for (int i = 0; i < op->nacc && st == GPAR_OK; i++) st = graph_hold_buf_locked(g, access_at(op, i)->buf);
  if (st != GPAR_OK) {
    /* The op is lost: the recording fails as a whole at gpar_graph_end. */
    g->status = st;
    if (op->staging) gpar__pinned_free(&eng->pinned, op->staging);
    gpar__op_discard_locked(eng, op);
    return gpar__errorf(st, "out of host memory while recording an operation");
  }
  memset(&g->nodes[g->nnodes], 0, sizeof g->nodes[0]);
  g->nodes[g->nnodes++].op = op;
  return GPAR_OK;
}

/* The calling thread's recording when its engine lifetime is over (shut down): forget it. */
static void forget_stale_recording(void) {
  gpar_engine *other = gpar__rec.eng;
  if (gpar__rec.g && (atomic_load(&other->state) != GPAR__ENG_OPEN || atomic_load(&other->serial) != gpar__rec.serial))
    memset(&gpar__rec, 0, sizeof gpar__rec);
}

GPAR_API int gpar_graph_begin(gpar_engine *e) {
  int st;
  gpar_engine *eng = gpar__engine_enter(e, &st);
  if (!eng) return st;
  forget_stale_recording();
  st = GPAR_OK;
  if (gpar__in_op)
    st = gpar__errorf(GPAR_EDEADLK, "gpar_graph_begin called from inside an operation");
  else if (gpar__rec.g)
    st = gpar__errorf(GPAR_ERECORDING, "gpar_graph_begin: this thread already records a graph%s",
                      gpar__rec.eng == eng ? "" : " (on another engine)");
  gpar_graph *g = st == GPAR_OK ? calloc(1, sizeof *g) : NULL;
  if (st == GPAR_OK && !g) st = gpar__errorf(GPAR_ENOMEM, "gpar_graph_begin: out of host memory");
  if (g) {
    g->token = e;
    g->eng = eng;
    g->recording = 1;
    registry_add(g);
    gpar__rec.eng = eng;
    gpar__rec.serial = atomic_load(&eng->serial);
    gpar__rec.g = g;
  }
  gpar__engine_leave(eng);
  return st;
}

/* ---------------------------------------------------------------- instantiation */

static int int_push(int **v, int *n, int *cap, int x) {
  if (*n == *cap) {
    int c = *cap ? *cap * 2 : 4;
    int *p = realloc(*v, sizeof *p * (size_t)c);
    if (!p) return GPAR_ENOMEM;
    *v = p;
    *cap = c;
  }
  (*v)[(*n)++] = x;
  return GPAR_OK;
}

/* Per-buffer state while edges are resolved: last writer and the readers since. */
typedef struct {
  int writer;
  int nrd, caprd;
  int *rd;
} bufstate;

/* Producers of node i (global indices << 1 | data), from the buffer states; updates them. */
static int node_producers(gpar_graph *g, bufstate *bs, int i, int **prods, int *np, int *capp) {
  gpar__op *op = g->nodes[i].op;
  int st = GPAR_OK;
  *np = 0;
  for (int a = 0; a < op->nacc && st == GPAR_OK; a++) {
    gpar__access *acc = access_at(op, a);
    bufstate *b = &bs[buf_index(g, acc->buf)];
    int cand[2] = {-1, 0}; /* the writer, with the data flag */
    if (b->writer >= 0) cand[0] = b->writer, cand[1] = (acc->mode & GPAR__READ) != 0;
    if (cand[0] >= 0) {
      int k;
      for (k = 0; k < *np && ((*prods)[k] >> 1) != cand[0]; k++) {
      }
      if (k < *np)
        (*prods)[k] |= cand[1];
      else
        st = int_push(prods, np, capp, cand[0] << 1 | cand[1]);
    }
    if (acc->mode & GPAR__WRITE) {
      for (int r = 0; r < b->nrd && st == GPAR_OK; r++) {
        int k;
        for (k = 0; k < *np && ((*prods)[k] >> 1) != b->rd[r]; k++) {
        }
        if (k == *np && b->rd[r] != i) st = int_push(prods, np, capp, b->rd[r] << 1);
      }
      b->nrd = 0;
      b->writer = i;
    } else if (st == GPAR_OK && (!b->nrd || b->rd[b->nrd - 1] != i)) {
      st = int_push(&b->rd, &b->nrd, &b->caprd, i);
    }
  }
  return st;
}

/* Add b to part L's union; *idx: its index there. where[bi] caches (part, index) of b's last
 * entry, so a buffer that stays in one part is found without a search. */
static int part_add_access(gpar__graph_part *p, int L, int *cap, gpar__buf *b, int mode, int (*where)[2], int *idx) {
  if (where[0][0] == L) {
    p->acc[*idx = where[0][1]].mode |= mode;
    return GPAR_OK;
  }
  for (int i = 0; i < p->nacc; i++)
    if (p->acc[i].buf == b) {
      p->acc[i].mode |= mode;
      where[0][0] = L;
      where[0][1] = *idx = i;
      return GPAR_OK;
    }
  where[0][0] = L;
  where[0][1] = *idx = p->nacc;
  if (p->nacc == *cap) {
    int c = *cap ? *cap * 2 : 8;
    gpar__access *v = realloc(p->acc, sizeof *v * (size_t)c);
    if (!v) return GPAR_ENOMEM;
    p->acc = v;
    *cap = c;
  }
  p->acc[p->nacc].buf = b;
  p->acc[p->nacc++].mode = mode;
  return GPAR_OK;
}

/* Resolve the edges among the recorded ops, cut them into parts, and decide per node which
 * events the replay records and waits on. */
static int graph_build(gpar_graph *g) {
  gpar_engine *eng = g->eng;
  int n = g->nnodes, st = GPAR_OK;
  bufstate *bs = calloc((size_t)(g->nbufs ? g->nbufs : 1), sizeof *bs);
  int *lastpart = malloc(sizeof *lastpart * (size_t)eng->ndev);
  int *local = malloc(sizeof *local * (size_t)(n ? n : 1)); /* node -> index within its part */
  int *partcap = NULL, *acccap = NULL, nparts = 0, capparts = 0;
  int *prods = NULL, np = 0, capp = 0, *prevw = NULL, capw = 0;
  int(*where)[2] = malloc(sizeof *where * (size_t)(g->nbufs ? g->nbufs : 1));
  if (!where) st = GPAR_ENOMEM;
  for (int b = 0; where && b < g->nbufs; b++) where[b][0] = -1;
  if (!bs || !lastpart || !local) st = GPAR_ENOMEM;
  for (int b = 0; bs && b < g->nbufs; b++) bs[b].writer = -1;
  for (int d = 0; lastpart && d < eng->ndev; d++) lastpart[d] = -1;
  for (int i = 0; i < n && st == GPAR_OK; i++) {
    gpar__gnode *nd = &g->nodes[i];
    gpar__op *op = nd->op;
    /* Whether each read sees a value from outside the graph's part: noted before the
     * buffer states move on (the part is known only after the producers are). */
    if (op->nacc > capw) {
      int *v = realloc(prevw, sizeof *v * (size_t)op->nacc);
      if (!v) {
        st = GPAR_ENOMEM;
        break;
      }
      prevw = v;
      capw = op->nacc;
    }
    for (int a = 0; a < op->nacc; a++) prevw[a] = bs[buf_index(g, access_at(op, a)->buf)].writer;
    if ((st = node_producers(g, bs, i, &prods, &np, &capp))) break;
    int d = op->dev->index, L = lastpart[d];
    for (int k = 0; k < np && L >= 0; k++)
      if (g->nodes[prods[k] >> 1].part > L) L = -1;
    if (L < 0) { /* a new part for this device */
      if (nparts == capparts) {
        int c = capparts ? capparts * 2 : 4;
        gpar__graph_part *v = realloc(g->parts, sizeof *v * (size_t)c);
        int *pc = realloc(partcap, sizeof *pc * (size_t)c), *ac = pc ? realloc(acccap, sizeof *ac * (size_t)c) : NULL;
        if (v) g->parts = v;
        if (pc) partcap = pc;
        if (ac) acccap = ac;
        if (!v || !pc || !ac) {
          st = GPAR_ENOMEM;
          break;
        }
        capparts = c;
      }
      L = nparts++;
      g->nparts = nparts;
      gpar__graph_part *p = &g->parts[L];
      memset(p, 0, sizeof *p);
      p->g = g;
      p->dev = op->dev;
      for (int l = 0; l < GPAR__NLANES; l++) p->lane_last[l] = -1;
      partcap[L] = acccap[L] = 0;
      lastpart[d] = L;
    }
    gpar__graph_part *p = &g->parts[L];
    nd->part = L;
    local[i] = p->nnodes;
    if ((st = int_push(&p->nodes, &p->nnodes, &partcap[L], i))) break;
    /* The part reads a buffer (and a failure upstream reaches it) only where a read sees a
     * value from before the part: a fill then a GEMM that accumulates into it reads nothing. */
    if (!(nd->accidx = malloc(sizeof *nd->accidx * (size_t)op->nacc))) st = GPAR_ENOMEM;
    for (int a = 0; a < op->nacc && st == GPAR_OK; a++) {
      int mode = access_at(op, a)->mode, w = prevw[a];
      if (w >= 0 && g->nodes[w].part == L) mode &= ~GPAR__READ;
      gpar__buf *b = access_at(op, a)->buf;
      nd->accidx[a] = -1;
      if (mode) st = part_add_access(p, L, &acccap[L], b, mode, &where[buf_index(g, b)], &nd->accidx[a]);
    }
    /* Edges inside the part, as part-local indices; the others are the engine's at launch. */
    int ordered = op->dev->ops->ordered_by_events;
    nd->host_sync = ordered && op->kind == GPAR__OP_COPY && op->u.copy.kind == GPAR__COPY_H2D &&
                    op->dev->ops->h2d_reads_at_enqueue;
    for (int k = 0; k < np && st == GPAR_OK; k++) {
      int j = prods[k] >> 1;
      if (g->nodes[j].part != L) continue;
      int cap = nd->nprods; /* grows by doubling from the count */
      if ((st = int_push(&nd->prods, &nd->nprods, &cap, local[j] << 1 | (prods[k] & 1)))) break;
      if (ordered && (g->nodes[j].op->lane != op->lane || nd->host_sync)) g->nodes[j].need_event = 1;
    }
    if (ordered && op->dev->ops->graph_begin == NULL) p->no_capture = 1;
    if (op->kind == GPAR__OP_USER && ordered) p->no_capture = 1; /* called at every launch */
    /* Decided here, not by a failed capture: a host wait (event_sync) is refused while
     * capturing, and so are copies the backend cannot capture (CUDA: peer copies without peer
     * access). */
    if (nd->host_sync) p->no_capture = 1;
    if (ordered && op->kind == GPAR__OP_COPY && op->dev->ops->graph_copy_ok &&
        !op->dev->ops->graph_copy_ok(op->dev->bdev, &op->u.copy))
      p->no_capture = 1;
    p->lane_last[op->lane] = local[i];
  }
  /* The lanes other than the compute lane join it at the end of the part: their last node
   * records an event. A GEMM records none unless asked (OpenCL: no cl_event per call). */
  for (int L = 0; L < nparts && st == GPAR_OK; L++) {
    gpar__graph_part *p = &g->parts[L];
    if (!p->dev->ops->ordered_by_events) continue;
    for (int l = 1; l < GPAR__NLANES; l++)
      if (p->lane_last[l] >= 0) g->nodes[p->nodes[p->lane_last[l]]].need_event = 1;
  }
  for (int i = 0; i < n && st == GPAR_OK; i++)
    if (g->nodes[i].op->kind == GPAR__OP_GEMM) g->nodes[i].op->u.gemm.no_event = !g->nodes[i].need_event;
  for (int b = 0; bs && b < g->nbufs; b++) free(bs[b].rd);
  free(bs);
  free(lastpart);
  free(local);
  free(partcap);
  free(acccap);
  free(prods);
  free(prevw);
  free(where);
  if (st != GPAR_OK) return gpar__errorf(st, "gpar_graph_end: out of host memory while resolving edges");
  return GPAR_OK;
}

/* Free everything a graph holds (engine alive). Launches must have retired. */
static void graph_free(gpar_graph *g) {
  gpar_engine *eng = g->eng;
  for (int L = 0; L < g->nparts; L++) {
    gpar__graph_part *p = &g->parts[L];
    if (p->native) p->dev->ops->graph_destroy(p->dev->bdev, p->native);
    free(p->nodes);
    free(p->acc);
  }
  pthread_mutex_lock(&eng->mu);
  for (int i = 0; i < g->nnodes; i++) {
    gpar__op *op = g->nodes[i].op;
    if (op->staging) gpar__pinned_free(&eng->pinned, op->staging);
    op->staging = NULL;
    gpar__op_discard_locked(eng, op);
    free(g->nodes[i].prods);
    free(g->nodes[i].accidx);
  }
  for (int b = 0; b < g->nbufs; b++)
    if (--g->bufs[b]->pending == 0 && g->bufs[b]->released) gpar__buf_free_locked(eng, g->bufs[b]);
  pthread_mutex_unlock(&eng->mu);
  free(g->nodes);
  free(g->parts);
  free(g->bufs);
  free(g->bufhash);
  free(g);
}

GPAR_API int gpar_graph_end(gpar_engine *e, gpar_graph **graph) {
  int st;
  gpar_engine *eng = gpar__engine_enter(e, &st);
  if (!eng) {
    forget_stale_recording();
    return st;
  }
  if (graph) *graph = NULL;
  if (!graph) {
    st = gpar__errorf(GPAR_EINVAL, "gpar_graph_end: graph is NULL");
  } else if (!gpar__graph_recording(eng)) {
    st = gpar__errorf(GPAR_EINVAL, "gpar_graph_end: this thread records no graph on this engine");
  } else {
    gpar_graph *g = gpar__rec.g;
    memset(&gpar__rec, 0, sizeof gpar__rec);
    st = g->status;
    if (st != GPAR_OK)
      gpar__errorf(st, "gpar_graph_end: an operation could not be recorded (out of host memory)");
    else
      st = graph_build(g);
    if (st != GPAR_OK) {
      registry_remove(g);
      graph_free(g);
    } else {
      pthread_mutex_lock(&graph_mu);
      g->recording = 0;
      pthread_mutex_unlock(&graph_mu);
      *graph = g;
    }
  }
  gpar__engine_leave(eng);
  return st;
}

/* ---------------------------------------------------------------- launch */

static int launch_parts(gpar_engine *eng, gpar_graph *g);

GPAR_API int gpar_graph_launch(gpar_graph *g) {
  gpar_engine *token, *eng;
  int st;
  if (!g) return gpar__errorf(GPAR_EINVAL, "gpar_graph_launch: graph is NULL");
  if (!registry_find(g, 0, &token))
    return gpar__errorf(GPAR_EINVAL, "gpar_graph_launch: not a live graph (destroyed, or its engine shut down)");
  if (!(eng = gpar__engine_enter(token, &st))) return st;
  if (gpar__graph_recording(eng))
    st = gpar__errorf(GPAR_ERECORDING, "gpar_graph_launch: this thread is recording a graph on this engine");
  else
    st = launch_parts(eng, g);
  gpar__engine_leave(eng);
  return st;
}

/* Submit one engine op per part, all in one engine lock (nothing when one cannot be built). */
static int launch_parts(gpar_engine *eng, gpar_graph *g) {
  int st = GPAR_OK;
  enum { MAX_STACK = 8 };
  gpar__op *stack_ops[MAX_STACK], **ops = g->nparts <= MAX_STACK ? stack_ops : malloc(sizeof *ops * (size_t)g->nparts);
  if (!ops) return gpar__errorf(GPAR_ENOMEM, "gpar_graph_launch: out of host memory");
  int wait = eng->cfg.synchronous && !gpar__in_op;
  pthread_mutex_lock(&eng->mu);
  int n = 0;
  for (; n < g->nparts; n++) {
    gpar__graph_part *p = &g->parts[n];
    gpar__op *op = ops[n] = gpar__op_new_locked(eng);
    if (!op) {
      st = GPAR_ENOMEM;
      break;
    }
    op->kind = GPAR__OP_GRAPH;
    op->dev = p->dev;
    op->lane = GPAR__LANE_COMPUTE;
    op->name = "graph";
    op->u.graph.part = p;
    /* The union has no duplicates: copy it in (gpar__op_add_access would search it per entry). */
    if (p->nacc > GPAR__INLINE && !(op->acc_more = malloc(sizeof *op->acc_more * (size_t)(p->nacc - GPAR__INLINE))))
      st = GPAR_ENOMEM;
    for (int a = 0; a < p->nacc && st == GPAR_OK; a++) *access_at(op, a) = p->acc[a];
    if (st == GPAR_OK) op->nacc = p->nacc;
    if (st != GPAR_OK) {
      n++;
      break;
    }
  }
  if (st != GPAR_OK) { /* nothing submitted */
    for (int i = 0; i < n; i++)
      if (ops[i]) gpar__op_discard_locked(eng, ops[i]);
    pthread_mutex_unlock(&eng->mu);
    if (ops != stack_ops) free(ops);
    return gpar__errorf(GPAR_ENOMEM, "gpar_graph_launch: out of host memory");
  }
  for (int i = 0; i < n; i++) { /* refused (engine closed meanwhile): discarded, not waited on */
    int s = gpar__op_submit_locked(eng, ops[i], wait);
    if (s != GPAR_OK) {
      ops[i] = NULL;
      if (st == GPAR_OK) st = s;
    }
  }
  pthread_mutex_unlock(&eng->mu);
  for (int i = 0; wait && i < n; i++) {
    int s = ops[i] ? gpar__wait_op(eng, ops[i]) : GPAR_OK;
    if (st == GPAR_OK) st = s;
  }
  if (ops != stack_ops) free(ops);
  return st;
}

/* ---------------------------------------------------------------- running a part */

static int faults_armed(gpar_engine *eng) {
  static const int kinds[] = {GPAR__FAULT_COPY, GPAR__FAULT_GEMM, GPAR__FAULT_FILL, GPAR__FAULT_USER};
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
    if (atomic_load_explicit(&eng->fault_at[kinds[k]], memory_order_relaxed)) return 1;
  return 0;
}

/* The first failure of a replay: its status and message. */
typedef struct {
  int status;
  char *msg;
} first_failure;

static void note_failure(first_failure *f, int st) {
  if (f->status != GPAR_OK) return;
  f->status = st;
  f->msg = strdup(gpar__error_msg());
}

/* A capture stops at its first failure (replay_gpu). */
static int halted(const first_failure *f, int capturing) { return capturing && f->status != GPAR_OK; }

static int report(first_failure *f) {
  if (f->status != GPAR_OK) gpar__errorf(f->status, "%s", f->msg ? f->msg : gpar_strerror(f->status));
  free(f->msg);
  return f->status;
}

/* A recorded op whose data producer failed is skipped, as the engine would skip it. */
static int producer_failed(const gpar__gnode *nd, const int *status) {
  for (int k = 0; k < nd->nprods; k++)
    if ((nd->prods[k] & 1) && status[nd->prods[k] >> 1] != GPAR_OK) return 1;
  return 0;
}

/* Host part: run the ops in record order on this CPU worker. */
static int replay_host(gpar__device *dev, gpar__graph_part *p, int *status) {
  gpar__gnode *nodes = p->g->nodes;
  first_failure f = {GPAR_OK, NULL};
  for (int k = 0; k < p->nnodes; k++) {
    gpar__gnode *nd = &nodes[p->nodes[k]];
    int st = producer_failed(nd, status) ? GPAR_EDEPFAILED : gpar__op_run(dev, nd->op);
    status[k] = st;
    if (st != GPAR_OK) note_failure(&f, st);
  }
  return report(&f);
}

/* GPU part: enqueue the ops on the device's lanes in record order. A lane other than the
 * compute lane first waits on an event of the compute lane (where the engine put the part's
 * waits on its producers), and at the end the compute lane waits on each such lane's last op,
 * so the event the engine records after the part covers all of it. The same sequence serves
 * for a stream capture (capturing = 1): there the first failure stops it at once, since a
 * failed call may have invalidated the capture, which then refuses every further call, and
 * synchronising a lane is refused anyway; capture() ends it and the part is replayed. */
static int replay_gpu(gpar__device *dev, gpar__graph_part *p, int *status, gpar__event **ev, int capturing) {
  const gpar__backend_ops *ops = dev->ops;
  gpar__gnode *nodes = p->g->nodes;
  first_failure f = {GPAR_OK, NULL};
  gpar__event *fork = NULL;
  int forked[GPAR__NLANES] = {0}, st;
  for (int k = 0; k < p->nnodes; k++) ev[k] = NULL;
  for (int k = 0; k < p->nnodes && !halted(&f, capturing); k++) {
    gpar__gnode *nd = &nodes[p->nodes[k]];
    gpar__op *op = nd->op;
    if (op->lane != GPAR__LANE_COMPUTE && !forked[op->lane]) {
      forked[op->lane] = 1;
      st = fork ? GPAR_OK : ops->event_record(dev->bdev, GPAR__LANE_COMPUTE, 0, &fork);
      if (st == GPAR_OK) st = ops->event_wait(dev->bdev, op->lane, fork);
      if (st != GPAR_OK) note_failure(&f, st);
    }
    for (int j = 0; j < nd->nprods && !halted(&f, capturing); j++) {
      int pk = nd->prods[j] >> 1;
      gpar__event *pe = ev[pk];
      if (!pe) continue; /* same lane (in order), or its lane was synchronised */
      st = nd->host_sync ? ops->event_sync(pe) : ops->event_wait(dev->bdev, op->lane, pe);
      if (st != GPAR_OK) note_failure(&f, st);
    }
    if (halted(&f, capturing)) break;
    st = producer_failed(nd, status) ? GPAR_EDEPFAILED : gpar__op_run(dev, op);
    status[k] = st;
    if (st != GPAR_OK) note_failure(&f, st);
    if (halted(&f, capturing)) break;
    if (nd->need_event && ops->event_record(dev->bdev, op->lane, 0, &ev[k]) != GPAR_OK) {
      note_failure(&f, GPAR_EBACKEND);
      ev[k] = NULL;
      if (!capturing) ops->lane_sync(dev->bdev, op->lane);
    }
  }
  /* Fault "capture": a failure with every lane forked and none joined back (tests). */
  if (capturing && !halted(&f, capturing) && (st = gpar__fault(dev->eng, GPAR__FAULT_CAPTURE)) != GPAR_OK)
    note_failure(&f, st);
  for (int l = 1; l < GPAR__NLANES && !halted(&f, capturing); l++) {
    int last = p->lane_last[l];
    if (last >= 0 && ev[last] && (st = ops->event_wait(dev->bdev, GPAR__LANE_COMPUTE, ev[last])) != GPAR_OK)
      note_failure(&f, st);
  }
  for (int k = 0; k < p->nnodes; k++)
    if (ev[k]) ops->event_release(ev[k]);
  if (fork) ops->event_release(fork);
  return report(&f);
}

/* Capture the part into a backend graph (first launch with no fault armed). A failure ends the
 * capture (the backend discards it) before anything else runs; the caller then replays. */
static int capture(gpar__device *dev, gpar__graph_part *p, int *status, gpar__event **ev) {
  const gpar__backend_ops *ops = dev->ops;
  void *native = NULL;
  int st = ops->graph_begin(dev->bdev, GPAR__LANE_COMPUTE);
  if (st == GPAR_OK) {
    st = replay_gpu(dev, p, status, ev, 1);
    char *why = st != GPAR_OK ? strdup(gpar__error_msg()) : NULL; /* ending may log its own */
    int e = ops->graph_end(dev->bdev, GPAR__LANE_COMPUTE, st == GPAR_OK ? &native : NULL);
    if (st == GPAR_OK)
      st = e;
    else
      gpar__errorf(st, "%s", why ? why : gpar_strerror(st));
    free(why);
  }
  if (st != GPAR_OK) {
    gpar__log("%s: device %d: graph capture failed (%s); this part replays op by op", ops->name, dev->index,
              gpar__error_msg());
    p->no_capture = 1;
    return st;
  }
  p->native = native;
  return GPAR_OK;
}

/* After a replay with failures: mark each buffer the part writes with how its last recorded
 * writer ended, so the failure reaches exactly the buffers it would reach eagerly. */
static void mark_failures(gpar__op *op, gpar__graph_part *p, const int *status) {
  int any = 0;
  for (int k = 0; k < p->nnodes; k++) {
    gpar__gnode *nd = &p->g->nodes[p->nodes[k]];
    any |= status[k] != GPAR_OK;
    for (int a = 0; a < nd->op->nacc; a++) {
      if (!(access_at(nd->op, a)->mode & GPAR__WRITE)) continue;
      int *m = &access_at(op, nd->accidx[a])->mode;
      *m &= ~(GPAR__WRITE_FAILED | GPAR__WRITE_SKIPPED);
      if (status[k] != GPAR_OK) *m |= status[k] == GPAR_EDEPFAILED ? GPAR__WRITE_SKIPPED : GPAR__WRITE_FAILED;
    }
  }
  op->u.graph.partial = any; /* else the failure was no op's (an event): the whole part has it */
}

int gpar__graph_write_status(const gpar__op *op, const gpar__buf *b, const char **msg) {
  *msg = NULL;
  for (int a = 0; a < op->nacc; a++) {
    const gpar__access *acc = a < GPAR__INLINE ? &op->acc[a] : &op->acc_more[a - GPAR__INLINE];
    if (acc->buf != b) continue;
    if (acc->mode & GPAR__WRITE_FAILED) {
      *msg = op->errmsg;
      return op->status;
    }
    if (acc->mode & GPAR__WRITE_SKIPPED) {
      *msg = gpar_strerror(GPAR_EDEPFAILED);
      return GPAR_EDEPFAILED;
    }
    break;
  }
  return GPAR_OK;
}

int gpar__graph_fails_reader(const gpar__op *op, const gpar__op *c) {
  const char *msg;
  for (int a = 0; a < c->nacc; a++) {
    const gpar__access *acc = a < GPAR__INLINE ? &c->acc[a] : &c->acc_more[a - GPAR__INLINE];
    if ((acc->mode & GPAR__READ) && gpar__graph_write_status(op, acc->buf, &msg) != GPAR_OK) return 1;
  }
  return 0;
}

/* gpar_wait on b whose last writer is the launch op w (the caller holds a reference on w):
 * the status w left on b rather than w's own. */
int gpar__graph_wait_buf(gpar_engine *eng, gpar__op *w, const gpar__buf *b) {
  const char *msg;
  pthread_mutex_lock(&eng->mu);
  w->refs++; /* kept past gpar__wait_op, which drops one */
  pthread_mutex_unlock(&eng->mu);
  gpar__wait_op(eng, w);
  pthread_mutex_lock(&eng->mu);
  int st = gpar__op_write_status(w, b, &msg);
  if (st != GPAR_OK) gpar__set_error_msg(st, msg);
  gpar__op_unref_locked(eng, w);
  pthread_mutex_unlock(&eng->mu);
  return st;
}

int gpar__graph_exec(gpar__device *dev, gpar__op *op) {
  gpar__graph_part *p = op->u.graph.part;
  enum { STACK_NODES = 64 };
  int stack_status[STACK_NODES];
  gpar__event *stack_ev[STACK_NODES];
  int armed = faults_armed(dev->eng);
  if (p->native && !armed) {
    atomic_fetch_add_explicit(&dev->eng->graph_native, 1, memory_order_relaxed);
    return dev->ops->graph_launch(dev->bdev, GPAR__LANE_COMPUTE, p->native);
  }
  int small = p->nnodes <= STACK_NODES, replayed = 1;
  int *status = small ? stack_status : malloc(sizeof *status * (size_t)p->nnodes);
  gpar__event **ev = small ? stack_ev : malloc(sizeof *ev * (size_t)p->nnodes);
  int st;
  if (!status || !ev) {
    st = gpar__errorf(GPAR_ENOMEM, "graph launch: out of host memory");
    replayed = 0;
  } else if (!dev->ops->ordered_by_events) {
    st = replay_host(dev, p, status);
  } else if (!armed && !p->no_capture && capture(dev, p, status, ev) == GPAR_OK) {
    atomic_fetch_add_explicit(&dev->eng->graph_native, 1, memory_order_relaxed);
    st = dev->ops->graph_launch(dev->bdev, GPAR__LANE_COMPUTE, p->native);
    replayed = 0;
  } else {
    st = replay_gpu(dev, p, status, ev, 0);
  }
  if (st != GPAR_OK && replayed) mark_failures(op, p, status);
  if (!small) {
    free(status);
    free(ev);
  }
  return st;
}

/* ---------------------------------------------------------------- destroy */

/* Wait until no launch of g is in flight. */
static void wait_launches(gpar_engine *eng, gpar_graph *g) {
  for (;;) {
    gpar__op *w = NULL;
    pthread_mutex_lock(&eng->mu);
    for (gpar__op *op = eng->inflight_head; op && !w; op = op->inflight_next)
      if (op->kind == GPAR__OP_GRAPH && op->u.graph.part->g == g) w = op;
    if (w) w->refs++;
    pthread_mutex_unlock(&eng->mu);
    if (!w) return;
    gpar__wait_op(eng, w);
  }
}

GPAR_API int gpar_graph_destroy(gpar_graph *g) {
  gpar_engine *eng;
  int st;
  if (!g) return gpar__errorf(GPAR_EINVAL, "gpar_graph_destroy: graph is NULL");
  if (gpar__in_op) return gpar__errorf(GPAR_EDEADLK, "gpar_graph_destroy called from inside an operation");
  gpar_engine *token;
  if (!registry_find(g, 0, &token) || !(eng = gpar__engine_enter(token, &st)))
    return gpar__errorf(GPAR_EINVAL, "gpar_graph_destroy: not a live graph (destroyed already, or its engine shut down)");
  if (registry_find(g, 1, &token)) { /* taken: a racing destroy finds it no more */
    wait_launches(eng, g);
    graph_free(g);
    st = GPAR_OK;
  } else {
    st = gpar__errorf(GPAR_EINVAL, "gpar_graph_destroy: not a live graph (destroyed already)");
  }
  gpar__engine_leave(eng);
  return st;
}

void gpar__graph_shutdown(gpar_engine *eng) {
  for (;;) {
    gpar_graph *g = NULL;
    pthread_mutex_lock(&graph_mu);
    for (gpar_graph **p = &graph_list; *p; p = &(*p)->next)
      if ((*p)->eng == eng) {
        g = *p;
        *p = g->next;
        break;
      }
    pthread_mutex_unlock(&graph_mu);
    if (!g) break;
    if (gpar__rec.g == g) memset(&gpar__rec, 0, sizeof gpar__rec);
    graph_free(g);
  }
}
