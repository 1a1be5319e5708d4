/* graph.h: op graphs' private types, shared by graph_record.c (begin/end: recording, edges,
 * parts, the registry of live graphs) and graph_launch.c (launch, running a part, destroy).
 * A graph: ops that a thread submits between gpar_graph_begin and gpar_graph_end are validated
 * as usual, then kept instead of being linked into the engine; gpar_graph_end resolves every
 * edge among them once and cuts them into parts, one per device stretch; each launch submits
 * one engine op per part (kind GPAR__OP_GRAPH, over the union of the part's buffers). */
#ifndef GPAR_CORE_GRAPH_H
#define GPAR_CORE_GRAPH_H

#include "internal.h"

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

/* graph_record.c: the registry of live graphs (its lock is never held with an engine lock).
 * Remove g (take = 1) or only check it, when it is a live, ended graph; *token: its engine's
 * handle. 0 when it is not. */
GPAR__HIDDEN int gpar__graph_registry_find(gpar_graph *g, int take, gpar_engine **token);
/* Remove one graph of eng (recording or not) from the registry and return it; NULL if none. */
GPAR__HIDDEN gpar_graph *gpar__graph_registry_take(gpar_engine *eng);

/* graph_launch.c: free everything a graph holds (engine alive). Launches must have retired. */
GPAR__HIDDEN void gpar__graph_free(gpar_graph *g);

#endif
