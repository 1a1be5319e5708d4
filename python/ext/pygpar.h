/* pygpar.h: what the files of the _gpar extension module share. The module is a thin layer on
 * gpar.h for Python's stable ABI (3.9): engines and kernels travel as integers, buffers as
 * _gpar.Buffer objects that release their handle when collected; gpar/ (Python) builds the
 * arrays, kernels and graphs users see on top. Every call that can block (waits, reads,
 * builds, shutdown) lets the GIL go. */
#ifndef GPAR_PYTHON_PYGPAR_H
#define GPAR_PYTHON_PYGPAR_H

#define PY_SSIZE_T_CLEAN
#define Py_LIMITED_API 0x03090000
#include <Python.h>

#include <gpar.h>

/* A buffer handle owned by Python: released when the object goes. */
typedef struct {
  PyObject_HEAD gpar_buffer h;
  int dev; /* device index (GPAR_HOST for pinned host memory) */
  size_t bytes;
} gpy_buffer;

/* errors.c: the exception class gpar.Error (made by module.c), and raising it. */
extern PyObject *gpy_error;
/* Raise gpar.Error(status, name, message) from status and the thread's gpar_last_error();
 * returns NULL. */
PyObject *gpy_raise(int status);
/* A call's result from its status: None for GPAR_OK, else gpy_raise(status). */
PyObject *gpy_done(int status);
/* Raise gpar.Error for a refusal of the Python layer itself (status, formatted message). */
PyObject *gpy_refuse(int status, const char *fmt, ...);
/* An engine handle from a Python int (NULL with an exception set on a bad one). */
gpar_engine *gpy_engine(PyObject *o);

/* buffer.c: the Buffer type. */
extern PyTypeObject *gpy_buffer_type;
int gpy_buffer_type_init(PyObject *module);
/* A new Buffer over handle h (taking it over). */
PyObject *gpy_buffer_new(gpar_buffer h, int dev, size_t bytes);
/* The Buffer o's handle (o must be a Buffer: -1 with TypeError otherwise). */
int gpy_buffer_handle(PyObject *o, gpar_buffer *h);
/* The handle and byte offset of a launch argument: a Buffer, or an object with attributes _buf
 * (a Buffer) and _off (an int); 0, or -1 with an exception set. */
int gpy_buffer_arg(PyObject *o, gpar_buffer *h, size_t *off);
extern PyMethodDef gpy_buffer_methods[];

/* engine.c, dlpack.c, kernel.c, blas.c, graph.c, comm.c: module functions. */
extern PyMethodDef gpy_error_methods[];
extern PyMethodDef gpy_engine_methods[];
extern PyMethodDef gpy_dlpack_methods[];
extern PyMethodDef gpy_kernel_methods[];
extern PyMethodDef gpy_blas_methods[];
extern PyMethodDef gpy_graph_methods[];
extern PyMethodDef gpy_comm_methods[];

/* owners.c: the memory of imported tensors goes back to its owner (a DLPack deleter) under the
 * GIL: libgpar calls gpy_owner_release from any thread, possibly inside the engine, where
 * taking the GIL could deadlock, so it only queues; gpy_owners_drain (GIL held) runs what is
 * queued, at the next module call or from Python's pending calls. */
void gpy_owner_release(void *arg);
void gpy_owners_drain(void);
/* A queued owner: call fn(ctx) under the GIL. */
typedef struct gpy_owner {
  void (*fn)(void *ctx);
  void *ctx;
  struct gpy_owner *next;
} gpy_owner;
extern PyMethodDef gpy_owner_methods[];

#endif
