/* blas.c: BLAS and the array ops from Python, as libgpar takes them (column-major, offsets and
 * leading dimensions in elements); gpar/ maps row-major arrays onto them. Each returns at once. */
#include "pygpar.h"

/* The status of a call, as None or gpar.Error. */
static PyObject *py_gemm(PyObject *self, PyObject *args) {
  int dbl, ta, tb, m, n, k, lda, ldb, ldc;
  double alpha, beta;
  Py_ssize_t ao, bo, co;
  PyObject *A, *B, *C;
  gpar_buffer a, b, c;
  if (!PyArg_ParseTuple(args, "piiiiidOniOnidOni", &dbl, &ta, &tb, &m, &n, &k, &alpha, &A, &ao, &lda, &B, &bo, &ldb,
                        &beta, &C, &co, &ldc))
    return NULL;
  if (gpy_buffer_handle(A, &a) || gpy_buffer_handle(B, &b) || gpy_buffer_handle(C, &c)) return NULL;
  if (ao < 0 || bo < 0 || co < 0) return gpy_refuse(GPAR_EINVAL, "gemm: negative offset");
  if (dbl)
    return gpy_done(gpar_dgemm((gpar_trans)ta, (gpar_trans)tb, m, n, k, alpha, a, (size_t)ao, lda, b, (size_t)bo, ldb,
                               beta, c, (size_t)co, ldc));
  return gpy_done(gpar_sgemm((gpar_trans)ta, (gpar_trans)tb, m, n, k, (float)alpha, a, (size_t)ao, lda, b, (size_t)bo,
                             ldb, (float)beta, c, (size_t)co, ldc));
}

static PyObject *py_unary(PyObject *self, PyObject *args) {
  int op, dtype;
  Py_ssize_t count, xo, yo;
  PyObject *X, *Y;
  gpar_buffer x, y;
  if (!PyArg_ParseTuple(args, "iinOnOn", &op, &dtype, &count, &X, &xo, &Y, &yo)) return NULL;
  if (gpy_buffer_handle(X, &x) || gpy_buffer_handle(Y, &y)) return NULL;
  if (count < 0 || xo < 0 || yo < 0) return gpy_refuse(GPAR_EINVAL, "unary: negative count or offset");
  return gpy_done(gpar_unary((gpar_unop)op, (gpar_dtype)dtype, (size_t)count, x, (size_t)xo, y, (size_t)yo));
}

static PyObject *py_binary(PyObject *self, PyObject *args) {
  int op, dtype;
  Py_ssize_t count, ao, bo, co;
  PyObject *A, *B, *C;
  gpar_buffer a, b, c;
  if (!PyArg_ParseTuple(args, "iinOnOnOn", &op, &dtype, &count, &A, &ao, &B, &bo, &C, &co)) return NULL;
  if (gpy_buffer_handle(A, &a) || gpy_buffer_handle(B, &b) || gpy_buffer_handle(C, &c)) return NULL;
  if (count < 0 || ao < 0 || bo < 0 || co < 0) return gpy_refuse(GPAR_EINVAL, "binary: negative count or offset");
  return gpy_done(
      gpar_binary((gpar_binop)op, (gpar_dtype)dtype, (size_t)count, a, (size_t)ao, b, (size_t)bo, c, (size_t)co));
}

static PyObject *py_binary_bcast(PyObject *self, PyObject *args) {
  int op, dtype, m, n, lda, axis, ldc;
  Py_ssize_t ao, vo, co;
  PyObject *A, *V, *C;
  gpar_buffer a, v, c;
  if (!PyArg_ParseTuple(args, "iiiiOniOniOni", &op, &dtype, &m, &n, &A, &ao, &lda, &V, &vo, &axis, &C, &co, &ldc))
    return NULL;
  if (gpy_buffer_handle(A, &a) || gpy_buffer_handle(V, &v) || gpy_buffer_handle(C, &c)) return NULL;
  if (ao < 0 || vo < 0 || co < 0) return gpy_refuse(GPAR_EINVAL, "binary_bcast: negative offset");
  return gpy_done(gpar_binary_bcast((gpar_binop)op, (gpar_dtype)dtype, m, n, a, (size_t)ao, lda, v, (size_t)vo,
                                    (gpar_axis)axis, c, (size_t)co, ldc));
}

static PyObject *py_reduce_range(PyObject *self, PyObject *args) {
  int op, dtype;
  Py_ssize_t count, xo, oo;
  PyObject *X, *O;
  gpar_buffer x, o;
  if (!PyArg_ParseTuple(args, "iinOnOn", &op, &dtype, &count, &X, &xo, &O, &oo)) return NULL;
  if (gpy_buffer_handle(X, &x) || gpy_buffer_handle(O, &o)) return NULL;
  if (count < 0 || xo < 0 || oo < 0) return gpy_refuse(GPAR_EINVAL, "reduce: negative count or offset");
  return gpy_done(gpar_reduce_range((gpar_redop)op, (gpar_dtype)dtype, (size_t)count, x, (size_t)xo, o, (size_t)oo));
}

static PyObject *py_reduce_matrix(PyObject *self, PyObject *args) {
  int op, dtype, m, n, lda, axis;
  Py_ssize_t ao, oo;
  PyObject *A, *O;
  gpar_buffer a, o;
  if (!PyArg_ParseTuple(args, "iiiiOniiOn", &op, &dtype, &m, &n, &A, &ao, &lda, &axis, &O, &oo)) return NULL;
  if (gpy_buffer_handle(A, &a) || gpy_buffer_handle(O, &o)) return NULL;
  if (ao < 0 || oo < 0) return gpy_refuse(GPAR_EINVAL, "reduce_matrix: negative offset");
  return gpy_done(
      gpar_reduce_matrix((gpar_redop)op, (gpar_dtype)dtype, m, n, a, (size_t)ao, lda, (gpar_axis)axis, o, (size_t)oo));
}

static PyObject *py_softmax_xent(PyObject *self, PyObject *args) {
  int dtype, k, n, ldz, ldg;
  double scale;
  Py_ssize_t zo, lo, so, go;
  PyObject *Z, *L, *S, *G;
  gpar_buffer z, l, s = {0, 0}, g = {0, 0};
  if (!PyArg_ParseTuple(args, "iiiOniOndOnOni", &dtype, &k, &n, &Z, &zo, &ldz, &L, &lo, &scale, &S, &so, &G, &go, &ldg))
    return NULL;
  if (gpy_buffer_handle(Z, &z) || gpy_buffer_handle(L, &l)) return NULL;
  if ((S != Py_None && gpy_buffer_handle(S, &s)) || (G != Py_None && gpy_buffer_handle(G, &g))) return NULL;
  if (zo < 0 || lo < 0 || so < 0 || go < 0) return gpy_refuse(GPAR_EINVAL, "softmax_xent: negative offset");
  return gpy_done(gpar_softmax_xent((gpar_dtype)dtype, k, n, z, (size_t)zo, ldz, l, (size_t)lo, scale, s, (size_t)so, g,
                                    (size_t)go, ldg));
}

static PyObject *py_array_prepare(PyObject *self, PyObject *args) {
  PyObject *e;
  int dev, st;
  if (!PyArg_ParseTuple(args, "Oi", &e, &dev)) return NULL;
  gpar_engine *eng = gpy_engine(e);
  if (!eng) return NULL;
  Py_BEGIN_ALLOW_THREADS st = gpar_array_prepare(eng, dev);
  Py_END_ALLOW_THREADS return gpy_done(st);
}

PyMethodDef gpy_blas_methods[] = {
    {"gemm", py_gemm, METH_VARARGS,
     "gemm(double, trans_a, trans_b, m, n, k, alpha, A, a_off, lda, B, b_off, ldb, beta, C, c_off, ldc): "
     "column-major, as gpar_sgemm / gpar_dgemm"},
    {"unary", py_unary, METH_VARARGS, "unary(op, dtype, count, x, x_off, y, y_off)"},
    {"binary", py_binary, METH_VARARGS, "binary(op, dtype, count, a, a_off, b, b_off, c, c_off)"},
    {"binary_bcast", py_binary_bcast, METH_VARARGS,
     "binary_bcast(op, dtype, m, n, A, a_off, lda, v, v_off, axis, C, c_off, ldc)"},
    {"reduce_range", py_reduce_range, METH_VARARGS, "reduce_range(op, dtype, count, x, x_off, out, out_off)"},
    {"reduce_matrix", py_reduce_matrix, METH_VARARGS,
     "reduce_matrix(op, dtype, m, n, A, a_off, lda, axis, out, out_off)"},
    {"softmax_xent", py_softmax_xent, METH_VARARGS,
     "softmax_xent(dtype, k, n, Z, z_off, ldz, labels, labels_off, grad_scale, loss or None, loss_off, G or None, "
     "g_off, ldg)"},
    {"array_prepare", py_array_prepare, METH_VARARGS, "array_prepare(engine, dev): build the array kernels now"},
    {NULL, NULL, 0, NULL}};
