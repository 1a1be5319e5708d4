/* engine.c: engines and devices from Python: init (gpar_config's fields as keywords), shutdown
 * and wait_all without the GIL, the device list as dicts, configuration, counters, fault
 * injection. */
#include "pygpar.h"

static PyObject *py_init(PyObject *self, PyObject *args, PyObject *kw) {
  static char *names[] = {"backends", "lanes", "host_threads", "synchronous", "quiet", NULL};
  unsigned backends = 0;
  int lanes = -1, host_threads = -1, synchronous = -1, quiet = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|Iiiip", names, &backends, &lanes, &host_threads, &synchronous, &quiet))
    return NULL;
  gpy_owners_drain();
  gpar_config cfg;
  gpar_config_init(&cfg);
  if (backends) cfg.backends = backends;
  if (lanes >= 0) cfg.lanes = lanes;
  if (host_threads >= 0) cfg.host_threads = host_threads;
  if (synchronous >= 0) cfg.synchronous = synchronous;
  cfg.quiet = quiet;
  gpar_engine *eng = NULL;
  int st;
  Py_BEGIN_ALLOW_THREADS st = gpar_init(&eng, &cfg);
  Py_END_ALLOW_THREADS if (st) return gpy_raise(st);
  return PyLong_FromVoidPtr(eng);
}

static PyObject *py_shutdown(PyObject *self, PyObject *arg) {
  gpar_engine *eng = gpy_engine(arg);
  if (!eng) return NULL;
  int st;
  Py_BEGIN_ALLOW_THREADS st = gpar_shutdown(eng);
  Py_END_ALLOW_THREADS gpy_owners_drain(); /* the imports shutdown freed */
  return gpy_done(st);
}

static PyObject *py_wait_all(PyObject *self, PyObject *arg) {
  gpar_engine *eng = gpy_engine(arg);
  if (!eng) return NULL;
  int st;
  Py_BEGIN_ALLOW_THREADS st = gpar_wait_all(eng);
  Py_END_ALLOW_THREADS gpy_owners_drain();
  return gpy_done(st);
}

static PyObject *py_device_count(PyObject *self, PyObject *arg) {
  gpar_engine *eng = gpy_engine(arg);
  if (!eng) return NULL;
  int n = gpar_device_count(eng);
  return n < 0 ? gpy_raise(n) : PyLong_FromLong(n);
}

static PyObject *py_device_info(PyObject *self, PyObject *args) {
  PyObject *e;
  int dev;
  if (!PyArg_ParseTuple(args, "Oi", &e, &dev)) return NULL;
  gpar_engine *eng = gpy_engine(e);
  if (!eng) return NULL;
  gpar_device_props p;
  int st = gpar_device_info(eng, dev, &p);
  if (st) return gpy_raise(st);
  return Py_BuildValue("{s:i,s:s,s:i,s:i,s:s,s:s,s:s,s:K,s:i,s:i,s:K,s:s,s:s,s:i}", "index", dev, "backend", p.backend,
                       "backend_id", p.backend_id, "backend_index", p.backend_index, "vendor", p.vendor, "name", p.name,
                       "type",
                       p.type == GPAR_DEVICE_CPU   ? "cpu"
                       : p.type == GPAR_DEVICE_GPU ? "gpu"
                                                   : "other",
                       "memory_bytes", (unsigned long long)p.memory_bytes, "copy_engines", p.copy_engines,
                       "compute_units", p.compute_units, "peer_mask", (unsigned long long)p.peer_mask, "driver_version",
                       p.driver_version, "runtime_version", p.runtime_version, "compute_lanes", p.compute_lanes);
}

static PyObject *py_device_find(PyObject *self, PyObject *args) {
  PyObject *e;
  int backend, type, skip;
  if (!PyArg_ParseTuple(args, "Oiii", &e, &backend, &type, &skip)) return NULL;
  gpar_engine *eng = gpy_engine(e);
  if (!eng) return NULL;
  int d = gpar_device_find(eng, backend, type, skip);
  if (d == GPAR_ENODEV) return PyLong_FromLong(-1);
  return d < 0 ? gpy_raise(d) : PyLong_FromLong(d);
}

static PyObject *py_config(PyObject *self, PyObject *arg) {
  gpar_engine *eng = gpy_engine(arg);
  if (!eng) return NULL;
  gpar_config c;
  int st = gpar_config_get(eng, &c);
  if (st) return gpy_raise(st);
  return Py_BuildValue("{s:i,s:i,s:I,s:i,s:i,s:z,s:z}", "synchronous", c.synchronous, "host_threads", c.host_threads,
                       "backends", c.backends, "lanes", c.lanes, "tf32", c.tf32, "kernel_cache_dir", c.kernel_cache_dir,
                       "kernel_cc", c.kernel_cc);
}

static PyObject *py_stats(PyObject *self, PyObject *arg) {
  gpar_engine *eng = gpy_engine(arg);
  if (!eng) return NULL;
  gpar_stats s;
  int st = gpar_stats_get(eng, &s);
  if (st) return gpy_raise(st);
  return Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K}", "ops_submitted", s.ops_submitted,
                       "ops_completed", s.ops_completed, "ops_failed", s.ops_failed, "ops_in_flight", s.ops_in_flight,
                       "buffers_live", s.buffers_live, "kernels_live", s.kernels_live, "kernel_launches",
                       s.kernel_launches, "kernel_builds", s.kernel_builds, "kernel_memory_hits", s.kernel_memory_hits,
                       "kernel_disk_hits", s.kernel_disk_hits, "graph_native_launches", s.graph_native_launches,
                       "lane_moves", s.lane_moves);
}

static PyObject *py_fault_inject(PyObject *self, PyObject *args) {
  PyObject *e;
  const char *kind;
  unsigned long n;
  if (!PyArg_ParseTuple(args, "Osk", &e, &kind, &n)) return NULL;
  gpar_engine *eng = gpy_engine(e);
  if (!eng) return NULL;
  int st = gpar_fault_inject(eng, kind, n);
  return gpy_done(st);
}

PyMethodDef gpy_engine_methods[] = {
    {"init", (PyCFunction)(void (*)(void))py_init, METH_VARARGS | METH_KEYWORDS,
     "init(backends=0, lanes=-1, host_threads=-1, synchronous=-1, quiet=True) -> engine handle (-1: the "
     "environment's or the default; GPAR_* variables apply as in C)"},
    {"shutdown", py_shutdown, METH_O, "shutdown(engine): drain and free everything (GIL released)"},
    {"wait_all", py_wait_all, METH_O, "wait_all(engine): wait for everything submitted (GIL released)"},
    {"device_count", py_device_count, METH_O, "device_count(engine) -> int"},
    {"device_info", py_device_info, METH_VARARGS, "device_info(engine, dev) -> dict"},
    {"device_find", py_device_find, METH_VARARGS, "device_find(engine, backend_id, type, skip) -> dev or -1"},
    {"config", py_config, METH_O, "config(engine) -> dict of the configuration it runs with"},
    {"stats", py_stats, METH_O, "stats(engine) -> dict of counters"},
    {"fault_inject", py_fault_inject, METH_VARARGS, "fault_inject(engine, kind, n): fail the nth later call of kind"},
    {NULL, NULL, 0, NULL}};
