/* graph.c: op graphs from Python: begin and end recording on the calling thread, launch,
 * describe, destroy (the last waits for launches in flight, so it lets the GIL go). A graph
 * travels as its handle, an int. */
#include "pygpar.h"

static gpar_graph *graph_of(PyObject *o) {
  void *p = PyLong_AsVoidPtr(o);
  if (!p && !PyErr_Occurred()) gpy_refuse(GPAR_EINVAL, "not a graph handle");
  return p;
}

static PyObject *py_graph_begin(PyObject *self, PyObject *arg) {
  gpar_engine *eng = gpy_engine(arg);
  if (!eng) return NULL;
  int st = gpar_graph_begin(eng);
  return gpy_done(st);
}

static PyObject *py_graph_end(PyObject *self, PyObject *arg) {
  gpar_engine *eng = gpy_engine(arg);
  if (!eng) return NULL;
  gpar_graph *g = NULL;
  int st = gpar_graph_end(eng, &g);
  return st ? gpy_raise(st) : PyLong_FromVoidPtr(g);
}

static PyObject *py_graph_launch(PyObject *self, PyObject *arg) {
  gpar_graph *g = graph_of(arg);
  if (!g) return NULL;
  int st = gpar_graph_launch(g);
  return gpy_done(st);
}

static PyObject *py_graph_info(PyObject *self, PyObject *arg) {
  gpar_graph *g = graph_of(arg);
  if (!g) return NULL;
  gpar_graph_props p;
  int st = gpar_graph_info(g, &p);
  if (st) return gpy_raise(st);
  return Py_BuildValue("{s:i,s:i,s:i,s:i,s:K,s:K}", "ops", p.ops, "parts", p.parts, "branches", p.branches,
                       "native_parts", p.native_parts, "native_nodes", (unsigned long long)p.native_nodes,
                       "native_edges", (unsigned long long)p.native_edges);
}

static PyObject *py_graph_destroy(PyObject *self, PyObject *arg) {
  gpar_graph *g = graph_of(arg);
  if (!g) return NULL;
  int st;
  Py_BEGIN_ALLOW_THREADS st = gpar_graph_destroy(g);
  Py_END_ALLOW_THREADS if (st) return gpy_raise(st);
  Py_RETURN_NONE;
}

PyMethodDef gpy_graph_methods[] = {
    {"graph_begin", py_graph_begin, METH_O, "graph_begin(engine): record this thread's ops"},
    {"graph_end", py_graph_end, METH_O, "graph_end(engine) -> graph handle"},
    {"graph_launch", py_graph_launch, METH_O, "graph_launch(graph)"},
    {"graph_info", py_graph_info, METH_O, "graph_info(graph) -> dict"},
    {"graph_destroy", py_graph_destroy, METH_O, "graph_destroy(graph) (GIL released)"},
    {NULL, NULL, 0, NULL}};
