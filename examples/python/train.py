"""train.py: an MLP training step written in Python on libgpar, run eagerly, then recorded as a graph and replayed.

A 2-layer ReLU MLP on a fixed random batch: matmul, add_rows and relu forward; softmax
cross-entropy as a gpar.Kernel (Python has no softmax op); backward GEMMs on transposes made by
a Kernel (matmul takes no transposed operand); the ReLU mask and SGD as gpar.Maps. Checked: step
1 against NumPy (relative error < 1e-4), the loss going down, graph replays = eager weights.
Every op writes a preallocated array (out=): a graph replays on the buffers it recorded, so the
weights change in place (recorded, `w = w - lr * g` would make every launch read the old w).
--device: the first GPU if omitted, else the CPU; --help lists the sizes and their defaults."""
import argparse
import sys

import numpy as np

import gpar

XENT = gpar.Kernel("xent", "u32 rows, u32 k, f32 scale, in f32 *z, in i32 *label, out f32 *g, out f32 *loss", """
    gpar_u64 r = GPAR_GLOBAL_ID(0);   /* one work-item per row; scale = 1 / rows: the mean */
    if (r >= rows) return;
    gpar_f32 m = z[r * k], s = 0.0f;
    for (gpar_u32 j = 1; j < k; j++) m = fmaxf(m, z[r * k + j]);
    for (gpar_u32 j = 0; j < k; j++) s += expf(z[r * k + j] - m);
    gpar_i32 y = label[r];
    for (gpar_u32 j = 0; j < k; j++)
        g[r * k + j] = scale * (expf(z[r * k + j] - m) / s - ((gpar_i32)j == y ? 1.0f : 0.0f));
    loss[r] = scale * (logf(s) + m - z[r * k + y]);""")
TRANSPOSE = gpar.Kernel("transpose", "u32 rows, u32 cols, in f32 *a, out f32 *t", """
    gpar_u64 i = GPAR_GLOBAL_ID(0);
    if (i < (gpar_u64)rows * cols) t[(i % cols) * rows + i / cols] = a[i];""")
RELU_BACK = gpar.Map("relu_back", "in f32 h, inout f32 d", "d = h > 0.0f ? d : 0.0f")
SGD = gpar.Map("sgd", "f32 lr, in f32 g, inout f32 w", "w = w - lr * g")


def T(a, out):
    TRANSPOSE((a.size + 63) // 64, 64, (a.shape[0], a.shape[1], a, out))
    return out


class MLP:
    def __init__(self, params, x, labels, lr):
        (self.w1, self.b1, self.w2, self.b2), self.lr = params, lr
        dev, (B, D), H, O = x.device, x.shape, self.w1.shape[1], self.w2.shape[1]
        z = lambda *shape: gpar.zeros(shape, device=dev)  # noqa: E731 - every array a step writes
        self.x, self.labels, self.xT = x, labels, T(x, z(D, B))
        self.ones = gpar.asarray(np.ones((1, B), np.float32), device=dev)
        self.h, self.z, self.dz, self.loss_rows, self.loss = z(B, H), z(B, O), z(B, O), z(B), z(1)
        self.hT, self.w2T, self.dh = z(H, B), z(O, H), z(B, H)
        self.grads = z(D, H), z(1, H), z(H, O), z(1, O)   # dW1, db1, dW2, db2

    def step(self):
        """Forward, loss, backward and SGD, all queued: returns at once."""
        (B, O), (dw1, db1, dw2, db2) = self.z.shape, self.grads
        gpar.matmul(self.x, self.w1, out=self.h)
        gpar.relu(gpar.add_rows(self.h, self.b1, out=self.h), out=self.h)
        gpar.add_rows(gpar.matmul(self.h, self.w2, out=self.z), self.b2, out=self.z)
        XENT((B + 63) // 64, 64, (B, O, 1.0 / B, self.z, self.labels, self.dz, self.loss_rows))
        gpar.sum(self.loss_rows, out=self.loss)
        gpar.matmul(T(self.h, self.hT), self.dz, out=dw2)
        gpar.matmul(self.ones, self.dz, out=db2)
        gpar.matmul(self.dz, T(self.w2, self.w2T), out=self.dh)
        RELU_BACK(self.h, self.dh)
        gpar.matmul(self.xT, self.dh, out=dw1)
        gpar.matmul(self.ones, self.dh, out=db1)
        for g, w in zip(self.grads, (self.w1, self.b1, self.w2, self.b2)):
            SGD(self.lr, g, w)


def reference(x, labels, w1, b1, w2, b2):
    """The same math in NumPy, in float64: the loss and [dW1, db1, dW2, db2]."""
    x, w1, b1, w2, b2 = (a.astype(np.float64) for a in (x, w1, b1, w2, b2))
    h = np.maximum(x @ w1 + b1, 0)
    p = np.exp(h @ w2 + b2 - (h @ w2 + b2).max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    onehot = np.eye(w2.shape[1])[labels]
    dz = (p - onehot) / len(x)
    dh = (dz @ w2.T) * (h > 0)
    return -np.log((p * onehot).sum(1)).mean(), [x.T @ dh, dh.sum(0), h.T @ dz, dz.sum(0)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", help="the first GPU if omitted, else the CPU")
    options = ("--steps", int, 20), ("--batch", int, 64), ("--sizes", str, "64,32,10"), ("--lr", float, 0.5)
    for name, kind, value in options:
        ap.add_argument(name, type=kind, default=value, help="(default %s)" % value)
    args = ap.parse_args()
    (D, H, O), eng = (int(s) for s in args.sizes.split(",")), gpar.default_engine()
    try:
        dev = eng.device(int(args.device) if args.device and args.device.isdigit() else args.device)
    except (ValueError, gpar.Error) as e:   # no such device
        ap.error(str(e))
    print("device %d: %s; MLP %d-%d-%d, batch %d" % (dev, eng.devices[dev].name, D, H, O, args.batch))
    try:  # built up front: a device that cannot build kernels is a skip (exit 77), as in the C examples
        XENT.build(dev), TRANSPOSE.build(dev)
    except gpar.Error as e:
        if e.name != "GPAR_ENOTSUP":
            raise
        print("skipped: " + e.message)
        sys.exit(77)
    rng = np.random.default_rng(0)   # the data, labels and initial weights
    x, labels = rng.standard_normal((args.batch, D), dtype=np.float32), rng.integers(0, O, args.batch, dtype=np.int32)
    init = [(rng.standard_normal((D, H)) / np.sqrt(D)).astype(np.float32), np.zeros(H, np.float32),
            (rng.standard_normal((H, O)) / np.sqrt(H)).astype(np.float32), np.zeros(O, np.float32)]
    params = [gpar.asarray(a.copy(), device=dev) for a in init]   # copies: the steps update them in place
    net = MLP(params, gpar.asarray(x, device=dev), gpar.asarray(labels, device=dev), args.lr)
    weights = lambda: [p.numpy() for p in params]  # noqa: E731 - each waits for the ops that write p

    # Eager: a step's ops are queued at once; numpy() waits for the ops that write what it reads.
    losses = []
    for t in range(args.steps):
        net.step()
        losses.append(float(net.loss.numpy()[0]))
        if t == 0:
            ref_loss, ref = reference(x, labels, *init)
            err = max(np.max(np.abs(g.numpy().ravel() - r.ravel())) / np.max(np.abs(r)) for g, r in zip(net.grads, ref))
            print("step 1: loss %.6f (NumPy %.6f), gradients' max relative error %.2e" % (losses[0], ref_loss, err))
            if not (err < 1e-4 and abs(losses[0] - ref_loss) < 1e-4 * ref_loss):
                sys.exit("train.py: wrong result: step 1 differs from NumPy")   # exit status 1
    final = weights()
    print("eager: %d steps, loss %.6f -> %.6f" % (args.steps, losses[0], losses[-1]))
    if args.steps > 1 and not losses[-1] < losses[0]:
        sys.exit("train.py: wrong result: the loss did not go down")

    # Graph: record one step (nothing runs while recording), then replay it from the same start.
    with eng.graph() as g:
        net.step()
    print("graph: %(ops)d ops in %(parts)d part(s)" % g.info())
    for p, a in zip(params, init):
        p.copy_(gpar.asarray(a, device=dev))
    for _ in range(args.steps):
        g.launch()                      # returns at once, as an eager op does
    err = max(np.max(np.abs(a - b)) for a, b in zip(weights(), final))   # weights() waits for the launches
    print("graph: %d launches from the same start: max weight difference to the eager run %.2e" % (args.steps, err))
    if not err <= 1e-6:
        sys.exit("train.py: wrong result: the graph's weights differ from the eager run's")
    g.destroy()
    eng.close()


if __name__ == "__main__":
    main()
