/* record.c: op graphs, recording and instantiation (gpar_graph_begin/_end). Ops that a thread
 * submits between begin and end arrive here through the engine's op sink (validated, never
 * linked into the engine); end resolves every edge among them once and cuts them into parts
 * that launch.c submits and runs. Also the table of live graphs, their handles, and freeing a
 * graph.
 *
 * Parts: ops are taken in record order; an op joins the latest part of its device unless one
 * of its producers lies in a part created after that one, in which case it opens a new part.
 * So every edge runs from an earlier-created part to a later one (or stays inside a part), and
 * submitting the parts in creation order lets the engine's per-buffer ordering (which only
 * adds edges from earlier to later ops) reproduce every cross-part edge: a graph that stays on
 * one device is one part, two independent device loops are two, a ping-pong between two GPUs
 * is one part per leg. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

/* ---------------------------------------------------------------- handles */

/* Handles: token = serial << 21 | slot << 1 | 1 (an odd value, never an address). */
#define GRAPH_SLOT_BITS 20
#define GRAPH_SERIAL_MAX ((UINT64_C(1) << (63 - GRAPH_SLOT_BITS)) - 1)

static gpar__handle_table *graph_table;
static pthread_once_t graph_table_once = PTHREAD_ONCE_INIT;
static void graph_table_make(void) { graph_table = gpar__handle_table_new(1u << GRAPH_SLOT_BITS, GRAPH_SERIAL_MAX); }

gpar__handle_table *gpar__graph_table(void) {
  pthread_once(&graph_table_once, graph_table_make);
  return graph_table;
}

static gpar_graph *graph_token(const gpar__graph *g) {
  return (gpar_graph *)(uintptr_t)(g->serial << (GRAPH_SLOT_BITS + 1) | (uint64_t)g->slot << 1 | 1u);
}

gpar__graph *gpar__graph_get(gpar_graph *handle) {
  uint64_t v = (uint64_t)(uintptr_t)handle;
  gpar__handle_table *t = gpar__graph_table();
  if (!t || !(v & 1)) return NULL;
  return gpar__handle_get(t, (uint32_t)(v >> 1) & ((1u << GRAPH_SLOT_BITS) - 1), v >> (GRAPH_SLOT_BITS + 1));
}

/* ---------------------------------------------------------------- recording */

static size_t ptr_hash(const void *p, int cap) { return ((uintptr_t)p >> 4) * 0x9e3779b97f4a7c15ull >> 7 & (size_t)(cap - 1); }

/* Index of b in g->bufs, or -1. */
static int buf_index(const gpar__graph *g, const gpar__buf *b) {
  if (!g->bufhash) return -1;
  int cap = 2 * g->capbufs;
  for (size_t h = ptr_hash(b, cap);; h = (h + 1) & (size_t)(cap - 1)) {
    int i = g->bufhash[h];
    if (i < 0) return -1;
    if (g->bufs[i] == b) return i;
  }
}

static void hash_put(gpar__graph *g, int i) {
  int cap = 2 * g->capbufs;
  size_t h = ptr_hash(g->bufs[i], cap);
  while (g->bufhash[h] >= 0) h = (h + 1) & (size_t)(cap - 1);
  g->bufhash[h] = i;
}

/* Keep b alive for the graph (a reference of its own). */
static int graph_hold_buf(gpar__graph *g, gpar__buf *b) {
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
  gpar__buf_ref(b);
  return GPAR_OK;
}

/* The recording fails (the first failure stays): gpar_graph_end will return it, and every op
 * recorded meanwhile is refused with it. */
static void record_fail(gpar__graph *g, int status, const char *why) {
  if (g->status != GPAR_OK) return;
  g->status = status;
  g->why = strdup(why);
}

/* The op sink of a recording thread: keep op (validated, never linked) as a node. */
static int record_take(void *ctx, gpar__op *op) {
  gpar__graph *g = ctx;
  if (g->status != GPAR_OK) { /* the recording failed already: nothing more is kept */
    gpar__op_discard(op);
    return gpar__errorf(g->status, "not recorded: the recording failed earlier: %s",
                        g->why ? g->why : gpar_strerror(g->status));
  }
  int st = GPAR_OK;
  if (g->nnodes == g->capnodes) {
    int cap = g->capnodes ? g->capnodes * 2 : 64;
    gpar__gnode *v = realloc(g->nodes, sizeof *v * (size_t)cap);
    if (v) {
      g->nodes = v;
      g->capnodes = cap;
    } else {
      st = GPAR_ENOMEM;
    }
  }
  for (int i = 0; i < op->nacc && st == GPAR_OK; i++) st = graph_hold_buf(g, gpar__op_access(op, i)->buf);
  if (st != GPAR_OK) {
    /* The op is lost: the recording fails as a whole at gpar_graph_end. */
    record_fail(g, st, "out of host memory while recording an operation");
    gpar__op_discard(op);
    return gpar__errorf(st, "out of host memory while recording an operation");
  }
  memset(&g->nodes[g->nnodes], 0, sizeof g->nodes[0]);
  g->nodes[g->nnodes++].op = op;
  return GPAR_OK;
}

/* The calling thread's recording when its engine lifetime is over (shut down): forget it (the
 * shutdown freed the graph). */
static void forget_stale_recording(void) {
  if (gpar__sink.take == record_take && !gpar__engine_is(gpar__sink.eng, gpar__sink.serial))
    memset(&gpar__sink, 0, sizeof gpar__sink);
}

/* The graph the calling thread records on eng, or NULL. */
static gpar__graph *recording_on(gpar_engine *eng) {
  return gpar__sink.take == record_take && gpar__sink_active(eng) ? gpar__sink.ctx : NULL;
}

/* Free everything a graph holds (graph.h). */
void gpar__graph_free(gpar__graph *g) {
  gpar_engine *eng = g->eng;
  for (int L = 0; L < g->nparts; L++) {
    gpar__graph_part *p = &g->parts[L];
    if (p->native) p->dev->ops->graph_destroy(p->dev->bdev, p->native);
    free(p->nodes);
    free(p->acc);
  }
  for (int i = 0; i < g->nnodes; i++) {
    gpar__op_discard(g->nodes[i].op); /* its buffers, its staged data (gpar_write) */
    free(g->nodes[i].prods);
    free(g->nodes[i].accidx);
    free(g->nodes[i].ins);
  }
  for (int b = 0; b < g->nbufs; b++) gpar__buf_put(g->bufs[b]);
  if (g->fence.id) gpar__buf_release_token(eng, g->fence);
  free(g->nodes);
  free(g->parts);
  free(g->bufs);
  free(g->bufhash);
  free(g->why);
  free(g);
}

/* Free a graph that never got a user handle (recording ended or failed). */
static void graph_drop(gpar__graph *g) {
  gpar__handle_table *t = gpar__graph_table();
  if (gpar__handle_kill(t, g->slot, g->serial)) gpar__handle_recycle(t, g->slot);
  gpar__graph_free(g);
}

GPAR_API int gpar_graph_begin(gpar_engine *e) {
  int st;
  gpar_engine *eng = gpar__engine_enter(e, &st);
  if (!eng) return st;
  forget_stale_recording();
  gpar__handle_table *t = gpar__graph_table();
  gpar__graph *g = NULL;
  if (gpar__in_op)
    st = gpar__errorf(GPAR_EDEADLK, "gpar_graph_begin called from inside an operation");
  else if (gpar__sink.take)
    st = gpar__errorf(GPAR_ERECORDING, "gpar_graph_begin: this thread already records a graph%s",
                      gpar__sink.eng == eng ? "" : " (on another engine)");
  else if (!t || !(g = calloc(1, sizeof *g)))
    st = gpar__errorf(GPAR_ENOMEM, "gpar_graph_begin: out of host memory");
  if (g) {
    g->token = gpar__engine_token(eng);
    g->eng = eng;
    g->recording = 1;
    st = gpar__buf_create_token(eng, &g->fence);
    if (st == GPAR_OK && (st = gpar__handle_add(t, g, &g->slot, &g->serial)) != GPAR_OK) g->serial = 0;
    if (st != GPAR_OK) {
      if (g->fence.id) gpar__buf_release_token(eng, g->fence);
      free(g);
    } else {
      gpar__sink = (gpar__op_sink){eng, atomic_load(&eng->serial), record_take, g};
    }
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
static int node_producers(gpar__graph *g, bufstate *bs, int i, int **prods, int *np, int *capp) {
  gpar__op *op = g->nodes[i].op;
  int st = GPAR_OK;
  *np = 0;
  for (int a = 0; a < op->nacc && st == GPAR_OK; a++) {
    gpar__access *acc = gpar__op_access(op, a);
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

/* The scratch state of graph_build. */
typedef struct builder {
  gpar__graph *g;
  bufstate *bs;          /* per buffer of g->bufs: last writer and readers so far */
  int (*where)[2];       /* per buffer: (part, index) of its last entry in a part's union */
  int *lastpart;         /* per device: its latest part, -1 if none */
  int *local;            /* node -> index within its part */
  int *partcap, *acccap, capparts;
  int *prods, np, capp;  /* the producers of the node being placed */
  int *prevw, capw;      /* per access of that node: the buffer's writer before it */
} builder;

static int builder_init(builder *B, gpar__graph *g) {
  int nb = g->nbufs ? g->nbufs : 1;
  memset(B, 0, sizeof *B);
  B->g = g;
  B->bs = calloc((size_t)nb, sizeof *B->bs);
  B->where = malloc(sizeof *B->where * (size_t)nb);
  B->lastpart = malloc(sizeof *B->lastpart * (size_t)g->eng->ndev);
  B->local = malloc(sizeof *B->local * (size_t)(g->nnodes ? g->nnodes : 1));
  if (!B->bs || !B->where || !B->lastpart || !B->local) return GPAR_ENOMEM;
  for (int b = 0; b < g->nbufs; b++) B->bs[b].writer = -1, B->where[b][0] = -1;
  for (int d = 0; d < g->eng->ndev; d++) B->lastpart[d] = -1;
  return GPAR_OK;
}

static void builder_free(builder *B) {
  for (int b = 0; B->bs && b < B->g->nbufs; b++) free(B->bs[b].rd);
  free(B->bs);
  free(B->where);
  free(B->lastpart);
  free(B->local);
  free(B->partcap);
  free(B->acccap);
  free(B->prods);
  free(B->prevw);
}

/* Note, per access of node i, the buffer's writer before it (whether each read sees a value
 * from outside the node's part is known only once its part is, after its producers). */
static int note_prev_writers(builder *B, const gpar__op *op) {
  if (op->nacc > B->capw) {
    int *v = realloc(B->prevw, sizeof *v * (size_t)op->nacc);
    if (!v) return GPAR_ENOMEM;
    B->prevw = v;
    B->capw = op->nacc;
  }
  for (int a = 0; a < op->nacc; a++) B->prevw[a] = B->bs[buf_index(B->g, gpar__op_access(op, a)->buf)].writer;
  return GPAR_OK;
}

/* The part node i joins: its device's latest part unless a producer lies in a later one, else
 * a new part; -1 without memory. */
static int place_node(builder *B, int i) {
  gpar__graph *g = B->g;
  gpar__op *op = g->nodes[i].op;
  int d = op->dev->index, L = B->lastpart[d];
  for (int k = 0; k < B->np && L >= 0; k++)
    if (g->nodes[B->prods[k] >> 1].part > L) L = -1;
  if (L >= 0) return L;
  if (g->nparts == B->capparts) {
    int c = B->capparts ? B->capparts * 2 : 4;
    gpar__graph_part *v = realloc(g->parts, sizeof *v * (size_t)c);
    int *pc = realloc(B->partcap, sizeof *pc * (size_t)c), *ac = pc ? realloc(B->acccap, sizeof *ac * (size_t)c) : NULL;
    if (v) g->parts = v;
    if (pc) B->partcap = pc;
    if (ac) B->acccap = ac;
    if (!v || !pc || !ac) return -1;
    B->capparts = c;
  }
  L = g->nparts++;
  gpar__graph_part *p = &g->parts[L];
  memset(p, 0, sizeof *p);
  p->g = g;
  p->dev = op->dev;
  for (int l = 0; l < GPAR__NLANES; l++) p->lane_last[l] = -1;
  B->partcap[L] = B->acccap[L] = 0;
  B->lastpart[d] = L;
  return L;
}

/* Node i's accesses in its part L's union. The part reads a buffer (and a failure upstream
 * reaches it) only where a read sees a value from before the part: a fill then a GEMM that
 * accumulates into it reads nothing. */
static int node_accesses(builder *B, int i, int L) {
  gpar__graph *g = B->g;
  gpar__gnode *nd = &g->nodes[i];
  gpar__op *op = nd->op;
  gpar__graph_part *p = &g->parts[L];
  int st = GPAR_OK;
  if (!(nd->accidx = malloc(sizeof *nd->accidx * (size_t)op->nacc))) return GPAR_ENOMEM;
  for (int a = 0, capin = 0; a < op->nacc && st == GPAR_OK; a++) {
    int mode = gpar__op_access(op, a)->mode, w = B->prevw[a];
    if (w >= 0 && g->nodes[w].part == L) mode &= ~GPAR__READ;
    gpar__buf *b = gpar__op_access(op, a)->buf;
    nd->accidx[a] = -1;
    if (mode) st = part_add_access(p, L, &B->acccap[L], b, mode, &B->where[buf_index(g, b)], &nd->accidx[a]);
    if (st == GPAR_OK && (mode & GPAR__READ)) st = int_push(&nd->ins, &nd->nins, &capin, nd->accidx[a]);
  }
  return st;
}

/* Node i's edges inside its part L, as part-local indices (the others are the engine's at
 * launch), the events they need, and whether the part can be captured. */
static int node_edges(builder *B, int i, int L) {
  gpar__graph *g = B->g;
  gpar__gnode *nd = &g->nodes[i];
  gpar__op *op = nd->op;
  gpar__graph_part *p = &g->parts[L];
  int st = GPAR_OK, ordered = op->dev->ops->ordered_by_events;
  nd->host_sync = ordered && (op->kind->flags & GPAR__KIND_READS_HOST_AT_ENQUEUE) && op->dev->ops->h2d_reads_at_enqueue;
  for (int k = 0; k < B->np && st == GPAR_OK; k++) {
    int j = B->prods[k] >> 1;
    if (g->nodes[j].part != L) continue;
    int cap = nd->nprods; /* grows by doubling from the count */
    if ((st = int_push(&nd->prods, &nd->nprods, &cap, B->local[j] << 1 | (B->prods[k] & 1)))) break;
    if (ordered && (g->nodes[j].op->lane != op->lane || nd->host_sync)) g->nodes[j].need_event = 1;
  }
  if (ordered && op->dev->ops->graph_begin == NULL) p->no_capture = 1;
  /* Decided here, not by a failed capture: a host wait (event_sync) is refused while
   * capturing, and so are ops the kind says cannot be captured (user functions, called at
   * every launch; CUDA peer copies without peer access). */
  if (nd->host_sync) p->no_capture = 1;
  if (ordered && op->kind->capturable && !op->kind->capturable(op)) p->no_capture = 1;
  p->lane_last[op->lane] = B->local[i];
  return st;
}

/* Node i's compute lane in part L, on a device with several: core/engine/lanes.c's rules at
 * record time, so the part keeps the DAG's branches (a CUDA graph runs them at once, a replay
 * issues them on several lanes). A chain stays on one lane: the node takes the lane of its last
 * recorded producer in the part whose heir it can be (that producer's first follower); else it
 * starts a branch: on a lane the part does not use yet, else on the one whose last node is the
 * oldest. Cross-lane edges become events (node_edges). */
static void node_lane(builder *B, int i, int L) {
  gpar__graph *g = B->g;
  gpar__op *op = g->nodes[i].op;
  gpar__graph_part *p = &g->parts[L];
  int lanes = op->dev->lanes, j = -1;
  if (lanes <= 1 || !gpar__lane_is_compute(op->lane)) return;
  for (int k = 0; k < B->np; k++) {
    int c = B->prods[k] >> 1;
    if (g->nodes[c].part == L && gpar__lane_is_compute(g->nodes[c].op->lane) && !g->nodes[c].heir && c > j) j = c;
  }
  if (j >= 0) {
    g->nodes[j].heir = 1;
    op->lane = g->nodes[j].op->lane;
    return;
  }
  int lane = 0;
  for (int l = 1; l < lanes; l++)
    if (p->lane_last[l] < p->lane_last[lane]) lane = l;
  if (p->lane_last[lane] < 0) p->branches++;
  op->lane = lane;
}

/* Place node i: its producers, its part, its accesses and edges there. */
static int build_node(builder *B, int i) {
  gpar__graph *g = B->g;
  int st = note_prev_writers(B, g->nodes[i].op);
  if (st == GPAR_OK) st = node_producers(g, B->bs, i, &B->prods, &B->np, &B->capp);
  if (st != GPAR_OK) return st;
  int L = place_node(B, i);
  if (L < 0) return GPAR_ENOMEM;
  gpar__graph_part *p = &g->parts[L];
  g->nodes[i].part = L;
  B->local[i] = p->nnodes;
  if ((st = int_push(&p->nodes, &p->nnodes, &B->partcap[L], i))) return st;
  if ((st = node_accesses(B, i, L))) return st;
  node_lane(B, i, L);
  return node_edges(B, i, L);
}

/* Resolve the edges among the recorded ops, cut them into parts, and decide per node which
 * events the replay records and waits on. */
static int graph_build(gpar__graph *g) {
  builder B;
  int st = builder_init(&B, g);
  for (int i = 0; i < g->nnodes && st == GPAR_OK; i++) st = build_node(&B, i);
  /* The lanes other than the compute lane join it at the end of the part: their last node
   * records an event. A GEMM records none unless asked (OpenCL: no cl_event per call). */
  for (int L = 0; L < g->nparts && st == GPAR_OK; L++) {
    gpar__graph_part *p = &g->parts[L];
    if (!p->dev->ops->ordered_by_events) continue;
    for (int l = 1; l < GPAR__NLANES; l++)
      if (p->lane_last[l] >= 0) g->nodes[p->nodes[p->lane_last[l]]].need_event = 1;
  }
  for (int i = 0; i < g->nnodes && st == GPAR_OK; i++) g->nodes[i].op->need_event = g->nodes[i].need_event;
  builder_free(&B);
  if (st != GPAR_OK) return gpar__errorf(st, "gpar_graph_end: out of host memory while resolving edges");
  return GPAR_OK;
}

GPAR_API int gpar_graph_end(gpar_engine *e, gpar_graph **graph) {
  int st;
  if (graph) *graph = NULL; /* NULL on every failure */
  gpar_engine *eng = gpar__engine_enter(e, &st);
  if (!eng) {
    forget_stale_recording();
    return st;
  }
  gpar__graph *g = recording_on(eng);
  if (!graph) {
    st = gpar__errorf(GPAR_EINVAL, "gpar_graph_end: graph is NULL");
  } else if (!g) {
    st = gpar__errorf(GPAR_EINVAL, "gpar_graph_end: this thread records no graph on this engine");
  } else {
    memset(&gpar__sink, 0, sizeof gpar__sink);
    st = g->status;
    if (st != GPAR_OK)
      gpar__errorf(st, "gpar_graph_end: the recording failed: %s", g->why ? g->why : gpar_strerror(st));
    else
      st = graph_build(g);
    if (st != GPAR_OK) {
      graph_drop(g);
    } else {
      g->recording = 0;
      *graph = graph_token(g);
    }
  }
  gpar__engine_leave(eng);
  return st;
}
