"""_ops.py: BLAS and the array ops on arrays: matmul (GEMM), elementwise unary and binary ops, a
row bias add, and sums, maxima and minima. Row-major arrays map onto libgpar's column-major
calls (a row-major m x n matrix is a column-major n x m one). Each call returns at once with its
output; every operand is on the output's device. out= writes into an existing array (x itself
for in place)."""
import builtins

import _gpar

from ._array import DTYPES, empty

_UNARY = {"relu": 0, "exp": 1, "log": 2, "tanh": 3, "sigmoid": 4, "abs": 5, "sqrt": 6, "negative": 7}
_BINARY = {"add": 0, "subtract": 1, "multiply": 2, "divide": 3, "maximum": 4, "minimum": 5}
_REDUCE = {"sum": 0, "max": 1, "min": 2}


def _gdtype(a):
    t = DTYPES[a.dtype][0]
    if t < 0:
        _gpar.refuse(_gpar.GPAR_EINVAL, "%s arrays have no array ops (float32, float64, float16, bfloat16)" % a.dtype)
    return t


def _el(a):
    """The array's offset in elements, for a contiguous array."""
    if not a._contig:
        a._need_contiguous("this op")
    return a._off // a._isz


def _out(out, like, shape=None):
    return out if out is not None else empty(like.shape if shape is None else shape, like.dtype, like.device,
                                             like.engine)


def matmul(a, b, out=None, alpha=1.0, beta=0.0, transpose_a=False, transpose_b=False):
    """out = alpha * op(a) @ op(b) + beta * out for 2-D row-major float32 or float64 arrays, op
    transposing where asked (no copy: BLAS reads the array transposed); beta != 0 needs out."""
    if a.ndim != 2 or b.ndim != 2:
        _gpar.refuse(_gpar.GPAR_EINVAL, "matmul: 2-D arrays, not %s and %s" % (a.shape, b.shape))
    m, k = a.shape[::-1] if transpose_a else a.shape
    k2, n = b.shape[::-1] if transpose_b else b.shape
    if k != k2:
        _gpar.refuse(_gpar.GPAR_EINVAL, "matmul: shapes %s%s and %s%s" % (a.shape, ".T" if transpose_a else "",
                                                                     b.shape, ".T" if transpose_b else ""))
    if a.dtype not in ("float32", "float64") or b.dtype != a.dtype:
        _gpar.refuse(_gpar.GPAR_EINVAL, "matmul: float32 or float64 operands of one type, not %s and %s"
                     % (a.dtype, b.dtype))
    c = _out(out, a, (m, n))
    if c.shape != (m, n) or c.dtype != a.dtype:
        _gpar.refuse(_gpar.GPAR_EINVAL, "matmul: out is %s %s, not %s %s" % (c.shape, c.dtype, (m, n), a.dtype))
    # row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: (n x k)(k x m); a row-major
    # r x s array is column-major s x r with leading dimension s
    _gpar.gemm(a.dtype == "float64", int(transpose_b), int(transpose_a), n, m, k, alpha, b._buf, _el(b),
               builtins.max(b.shape[1], 1), a._buf, _el(a), builtins.max(a.shape[1], 1), beta, c._buf, _el(c),
               builtins.max(n, 1))
    return c


def _unary(name):
    op = _UNARY[name]

    def f(x, out=None):
        y = _out(out, x)
        if y.size != x.size:
            _gpar.refuse(_gpar.GPAR_EINVAL, "%s: out has %d elements, x %d" % (name, y.size, x.size))
        _gpar.unary(op, _gdtype(x), x.size, x._buf, _el(x), y._buf, _el(y))
        return y
    f.__name__ = name
    f.__doc__ = "Elementwise %s(x) (out=x: in place)." % name
    return f


def _binary(name):
    op = _BINARY[name]

    def f(a, b, out=None):
        if a.shape != b.shape or a.dtype != b.dtype:
            _gpar.refuse(_gpar.GPAR_EINVAL, "%s: %s %s and %s %s (same shape and type; add_rows for a bias)"
                         % (name, a.shape, a.dtype, b.shape, b.dtype))
        c = _out(out, a)
        _gpar.binary(op, _gdtype(a), a.size, a._buf, _el(a), b._buf, _el(b), c._buf, _el(c))
        return c
    f.__name__ = name
    f.__doc__ = "Elementwise a %s b (out may be a or b: in place)." % name
    return f


def add_rows(x, v, out=None):
    """out[i, j] = x[i, j] + v[j]: a bias v of x.shape[1] elements added to every row of x."""
    if x.ndim != 2 or v.size != x.shape[1]:
        _gpar.refuse(_gpar.GPAR_EINVAL, "add_rows: x %s and v %s" % (x.shape, v.shape))
    y = _out(out, x)
    rows, cols = x.shape
    # row-major rows x cols is column-major cols x rows: v follows the column-major row index
    _gpar.binary_bcast(0, _gdtype(x), cols, rows, x._buf, _el(x), builtins.max(cols, 1), v._buf, _el(v), 0, y._buf, _el(y),
                       builtins.max(cols, 1))
    return y


def _reduce(name):
    op = _REDUCE[name]

    def f(x, axis=None, out=None):
        if axis is None:
            r = _out(out, x, (1,))
            _gpar.reduce_range(op, _gdtype(x), x.size, x._buf, _el(x), r._buf, _el(r))
            return r
        if x.ndim != 2 or axis not in (0, 1):
            _gpar.refuse(_gpar.GPAR_EINVAL, "%s: axis 0 or 1 of a 2-D array, not axis %r of %s" % (name, axis, x.shape))
        rows, cols = x.shape
        r = _out(out, x, (cols,) if axis == 0 else (rows,))
        # row-major rows x cols is column-major cols x rows: axis 0 (over rows) is per column-major row
        _gpar.reduce_matrix(op, _gdtype(x), cols, rows, x._buf, _el(x), builtins.max(cols, 1), 0 if axis == 0 else 1,
                            r._buf, _el(r))
        return r
    f.__name__ = name
    f.__doc__ = ("The %s of x's elements (axis None: all, as a 1-element array; axis 0 or 1 of a 2-D array: "
                 "over its rows or its columns), on x's device." % name)
    return f


def softmax_xent(logits, labels, grad_scale=None, loss=None, grad=None, want_loss=True, want_grad=True):
    """Softmax cross-entropy of a batch: logits (n, k) float rows of class scores, labels (n,)
    int32 classes. Returns (loss (n,), grad (n, k) = grad_scale * (softmax - onehot)); grad_scale
    defaults to 1/n. Either output may be skipped (want_loss, want_grad) or given (loss=, grad=)."""
    n, k = logits.shape
    if labels.dtype != "int32" or labels.size != n:
        _gpar.refuse(_gpar.GPAR_EINVAL, "softmax_xent: labels must be %d int32, not %s %s" % (n, labels.shape,
                                                                                          labels.dtype))
    lo = _out(loss, logits, (n,)) if want_loss or loss is not None else None
    go = _out(grad, logits) if want_grad or grad is not None else None
    _gpar.softmax_xent(_gdtype(logits), k, n, logits._buf, _el(logits), builtins.max(k, 1), labels._buf, _el(labels),
                       1.0 / n if grad_scale is None else grad_scale, lo._buf if lo else None, _el(lo) if lo else 0,
                       go._buf if go else None, _el(go) if go else 0, builtins.max(k, 1))
    return lo, go


def prepare(engine, device=None):
    """Build the array ops' kernels on device (None: every device) up front, in parallel, so a
    program's first step builds none (gpar_array_prepare; GIL released)."""
    _gpar.array_prepare(engine.handle, -1 if device is None else engine.device(device))


relu, exp, log, tanh, sigmoid, abs, sqrt, negative = (_unary(n) for n in _UNARY)  # noqa: A001
add, subtract, multiply, divide, maximum, minimum = (_binary(n) for n in _BINARY)
sum, max, min = (_reduce(n) for n in _REDUCE)  # noqa: A001
