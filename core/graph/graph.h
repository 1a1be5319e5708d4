/* graph.h: op graphs' private types, shared by record.c (begin/end: recording, edges, parts,
 * the table of live graphs, freeing a graph) and launch.c (launch, running a part, destroy,
 * shutdown), which uses record.c. A graph:
 * ops that a thread submits between gpar_graph_begin and gpar_graph_end are validated as usual,
 * then diverted to the graph (the engine's op sink) instead of being linked; gpar_graph_end
 * resolves every edge among them once and cuts them into parts, one per device stretch; each
 * launch submits one engine op per part (kind graph_part, over the union of the part's buffers).
 *
 * Handles and lifetime (the one rule of engine/handle.c): a user's gpar_graph pointer is a
 * token {slot, serial} of the table of live graphs, never an address. A graph lives while its
 * handle or a launch in flight uses it: every launch's parts read the graph's hidden token
 * buffer, and destroy ends the handle, then writes the token (an op that waits for every
 * launch before it) and frees the graph when that op has retired. gpar_shutdown destroys the
 * engine's graphs after its drain (gpar__graph_shutdown). The table's lock is never held
 * together with an engine lock. */
#ifndef GPAR_CORE_GRAPH_H
#define GPAR_CORE_GRAPH_H

#include "api/api.h"

typedef struct gpar__graph gpar__graph;
typedef struct gpar__graph_part gpar__graph_part;

/* One recorded op and its edges inside its part (part-local indices). */
typedef struct gpar__gnode {
  gpar__op *op;          /* the recorded op: validated, never submitted, kept as a template */
  int part;
  int nprods;
  int *prods;            /* part-local index << 1 | 1 when the edge carries data */
  int *accidx;           /* per access of op: its index in the part's union, or -1 (a read of a
                            value the part itself wrote) */
  int nins;
  int *ins;              /* union indices of the buffers it reads from before the part: a launch
                            whose input failed there skips it (and what reads its output) */
  int need_event;        /* a consumer on another lane of the part (or the join) waits on it */
  int heir;              /* a later node of its part took its compute lane to follow it */
  int host_sync;         /* an H2D copy on a backend that reads host memory at enqueue */
} gpar__gnode;

struct gpar__graph_part {
  gpar__graph *g;
  gpar__device *dev;
  int nnodes;
  int *nodes;            /* indices into g->nodes, record order */
  int nacc;
  gpar__access *acc;     /* union of the nodes' accesses */
  int lane_last[GPAR__NLANES]; /* part-local index of the lane's last node, -1 if none */
  int branches;          /* compute lanes its nodes use (record.c's node_lane) */
  int no_capture;        /* replay op by op (user functions on the GPU, or a capture failed) */
  void *native;          /* backend graph; touched by the device's dispatcher only, until destroy */
  atomic_ulong native_nodes, native_edges; /* the backend graph's shape, once captured (gpar_graph_info) */
  atomic_int captured;   /* native is set (gpar_graph_info reads the shape then) */
};

struct gpar__graph {
  uint32_t slot;         /* its handle: {slot, serial} in the table of live graphs */
  uint64_t serial;
  gpar_engine *token;    /* its engine's user handle (entered with the serial check) */
  gpar_engine *eng;
  int recording;         /* 1 until gpar_graph_end: no user holds a handle yet */
  int status;            /* first failure while recording (out of host memory: an op could not
                            be kept): gpar_graph_end fails */
  char *why;             /* its message */
  gpar_buffer fence;     /* read by every launch's parts, written by destroy */
  int nnodes, capnodes;
  gpar__gnode *nodes;
  int nparts;
  gpar__graph_part *parts;
  int nbufs, capbufs;    /* buffers kept alive (a reference each) until the graph is freed */
  gpar__buf **bufs;
  int *bufhash;          /* open addressing over bufs, capacity 2 * capbufs; -1 empty */
};

/* record.c: the table of live graphs (created on first use; NULL without memory). */
GPAR__HIDDEN gpar__handle_table *gpar__graph_table(void);
/* The graph a user's handle names, with a table reference (gpar__handle_put), or NULL. */
GPAR__HIDDEN gpar__graph *gpar__graph_get(gpar_graph *handle);
/* Free everything a graph holds (its handle ended, no launch in flight). */
GPAR__HIDDEN void gpar__graph_free(gpar__graph *g);

/* launch.c: destroy every graph of eng (lifecycle/: after the drain, no call inside). */
GPAR__HIDDEN void gpar__graph_shutdown(gpar_engine *eng);

#endif
