#!/usr/bin/env python3
"""python-train.py: the training step of tools/train/train_mlp.c (`gpar-bench train`) written in
Python on the gpar package, call for call: the same MLP in-hidden-hidden-out with ReLU, softmax
cross-entropy and SGD, the same initial weights and minibatches (the counter-based generator of
tools/train/train_mlp.h, in NumPy), one device. Row-major gpar arrays over the C model's
column-major buffers make every gpar call the same libgpar call as C's, so the losses agree to
the bit on one device. Prints the loss after --steps steps (eager and through one recorded graph)
and the steady-state time per step of both, and, with --gpar-bench, runs `gpar-bench train` on
the same device in the same run, one round at a time between Python's rounds, and prints
Python / C.

    PYTHONPATH=build/python/.libs:python LD_LIBRARY_PATH=build/.libs python3 bench/python-train.py \
        --device cuda --gpar-bench build/tools/gpar-bench [--hidden 1024] [--steps 100] [--repeat 5]
"""
import argparse
import json
import re
import statistics
import subprocess
import sys
import time

import numpy as np

import gpar

IN, OUT, BATCH, LR, SEED = 784, 10, 256, 0.1, 1


def mix(z):
    with np.errstate(over="ignore"):
        z = z + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def top(stream, index, k):
    """The top k bits of the generator at (stream, index) (tools/train/train_data.c's draw)."""
    v = mix((np.uint64(stream) << np.uint64(40)) | index.astype(np.uint64))
    return (v >> np.uint64(64 - k)).astype(np.int64)


def fans(layer, hidden):
    return (IN if layer == 1 else hidden), (OUT if layer == 3 else hidden)


def init_wb(layer, hidden):
    """[W | b] of a layer as train_mlp.c holds it: W column-major fan_out x fan_in, then b = 0."""
    fi, fo = fans(layer, hidden)
    u = top(16 * SEED + layer, np.arange(fi * fo), 24).astype(np.float32) * np.float32(2.0 ** -24)
    w = (np.float32(2.0) * u - np.float32(1.0)) * np.float32(71.0 / 4096.0)
    return np.concatenate([w, np.zeros(fo, np.float32)])


def samples(first, count):
    """Features (count, IN) float32 (C's column-major IN x count) and labels (count,) int32."""
    q = top(16 * SEED + 8, np.arange(count * IN) + first * IN, 8).reshape(count, IN)
    t = top(16 * SEED + 9, np.arange(OUT * IN), 4).reshape(OUT, IN) - 8
    y = np.argmax(q @ t.T, axis=1).astype(np.int32)  # exact integers; the first maximum wins
    return (q.astype(np.float32) / np.float32(256.0)), y


class Model:
    """train_mlp.c's model on one device, its buffers as gpar arrays."""

    def __init__(self, eng, dev, hidden, batches):
        self.eng, self.dev, self.hidden, self.n = eng, dev, hidden, BATCH
        mk = lambda shape, dtype="float32": gpar.empty(shape, dtype, device=dev, engine=eng)  # noqa: E731
        self.wb0 = [init_wb(l, hidden) for l in (1, 2, 3)]
        self.wb = [gpar.asarray(w.copy(), engine=eng, device=dev) for w in self.wb0]
        if self.wb[0].device != dev or eng.devices[dev].backend == "host":
            self.wb = [w.to(dev) for w in self.wb]  # libgpar's own memory, as C's buffers
        self.gb = [mk(w.shape) for w in self.wb0]
        self.W, self.b, self.gW, self.gbias = [], [], [], []
        for l in (1, 2, 3):
            fi, fo = fans(l, hidden)
            for whole, Ws, bs in ((self.wb[l - 1], self.W, self.b), (self.gb[l - 1], self.gW, self.gbias)):
                Ws.append(gpar.Array(whole._buf, eng, dev, (fi, fo), "float32"))  # row-major view of W^T
                bs.append(gpar.Array(whole._buf, eng, dev, (fo,), "float32", off=fi * fo * 4))
        x, y = zip(*(samples(b * BATCH, BATCH) for b in range(batches)))
        self.x_all = gpar.asarray(np.concatenate(x), engine=eng).to(dev)
        self.y_all = gpar.asarray(np.concatenate(y), engine=eng).to(dev)
        self.xs, self.ys = mk((BATCH, IN)), mk((BATCH,), "int32")
        self.h = [mk((BATCH, hidden)) for _ in range(2)]
        self.dh = [mk((BATCH, hidden)) for _ in range(2)]
        self.z, self.dz, self.loss, self.lsum = mk((BATCH, OUT)), mk((BATCH, OUT)), mk((BATCH,)), mk((1,))
        self.relu_grad = gpar.Map("relu_grad", "in f32 h, inout f32 g", "g = h > 0 ? g : 0", engine=eng)
        self.sgd = gpar.Map("sgd", "inout f32 w, in f32 g, f32 lr", "w -= lr * g", engine=eng)
        self.batches, self.graph = batches, None

    def batch(self, t):
        b = t % self.batches
        return (gpar.Array(self.x_all._buf, self.eng, self.dev, (BATCH, IN), "float32", off=b * BATCH * IN * 4),
                gpar.Array(self.y_all._buf, self.eng, self.dev, (BATCH,), "int32", off=b * BATCH * 4))

    def step(self, x, y):
        a = x
        for l in range(3):  # forward: out = relu(a W^T + b), C's sgemm, binary_bcast and unary
            out = self.z if l == 2 else self.h[l]
            gpar.matmul(a, self.W[l], out=out)
            gpar.add_rows(out, self.b[l], out=out)
            if l < 2:
                gpar.relu(out, out=out)
            a = out
        gpar.softmax_xent(self.z, y, 1.0 / BATCH, loss=self.loss, grad=self.dz)
        gpar.sum(self.loss, out=self.lsum)
        acts = (x, self.h[0], self.h[1])
        grads = (self.dh[0], self.dh[1], self.dz)
        for l in (2, 1, 0):  # backward: layer 3's weights, then each input gradient and weights
            if l < 2:
                gpar.matmul(grads[l + 1], self.W[l + 1], out=grads[l], transpose_b=True)
                self.relu_grad(self.h[l], grads[l])
            gpar.matmul(acts[l], grads[l], out=self.gW[l], transpose_a=True)
            gpar.sum(grads[l], axis=0, out=self.gbias[l])
        for l in range(3):
            self.sgd(self.wb[l], self.gb[l], LR)

    def reset(self):
        for w, w0 in zip(self.wb, self.wb0):
            w.copy_(gpar.asarray(w0.copy(), engine=self.eng))
        self.eng.wait_all()

    def record(self):
        with self.eng.graph() as g:
            self.step(self.xs, self.ys)
        self.graph = g

    def step_graph(self, t):
        x, y = self.batch(t)
        self.xs.copy_(x)
        self.ys.copy_(y)
        self.graph.launch()

    def mean_loss(self):
        return float(self.lsum.numpy()[0]) / BATCH


def timed(run, steps, repeat, eng):
    us = []
    for _ in range(repeat):
        eng.wait_all()
        t0 = time.perf_counter()
        for t in range(steps):
            run(t)
        eng.wait_all()
        us.append((time.perf_counter() - t0) / steps * 1e6)
    return {"min": min(us), "median": statistics.median(us), "max": max(us)}


def c_side(path, spec, backend_index, hidden, steps, repeat):
    """gpar-bench train on the same device: {'eager': (us, loss), 'graph': (us, loss)}."""
    backend = spec.split(":")[0]
    cmd = [path, "train", "--backend", backend, "--size", str(hidden), "--iters", str(steps), "--repeat", str(repeat)]
    if backend != "host":
        cmd += ["--devices", "%d," % backend_index]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    res = {}
    for kind in ("eager", "graph"):
        m = re.search(r"1 device, %s: first step [\d.]+ ms; steady state ([\d.]+) us per step \(median of \d+ rounds "
                      r"of \d+, min ([\d.]+), max ([\d.]+)\); loss after \d+ steps ([\d.]+)" % kind, out)
        if not m:
            sys.exit("python-train.py: cannot read gpar-bench's output:\n" + out)
        res[kind] = ({"median": float(m.group(1)), "min": float(m.group(2)), "max": float(m.group(3))},
                     float(m.group(4)))
    return res, " ".join(cmd)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default=None)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--gpar-bench", dest="bench", default=None, help="gpar-bench to run the C side with")
    ap.add_argument("--json", default=None)
    o = ap.parse_args()
    eng = gpar.Engine()
    dev = eng.device(o.device)
    d = eng.devices[dev]
    spec = "host" if d.backend == "host" else "%s:%d" % (d.backend, d.backend_index)
    batches = min(o.steps, 100)
    print("MLP %d-%d-%d-%d, batch %d, lr %g, %d steps; device %d: %s %s" % (IN, o.hidden, o.hidden, OUT, BATCH, LR,
                                                                         o.steps, dev, d.backend, d.name), flush=True)
    t0 = time.perf_counter()
    m = Model(eng, dev, o.hidden, batches)
    gpar.prepare(eng, dev)
    eng.wait_all()
    print("  setup (data, buffers, prepare): %.1f ms" % ((time.perf_counter() - t0) * 1e3))
    t0 = time.perf_counter()
    m.step(*m.batch(0))
    first = m.mean_loss()
    print("  first eager step: %.1f ms" % ((time.perf_counter() - t0) * 1e3))
    m.reset()
    for t in range(o.steps):
        m.step(*m.batch(t))
    loss_eager = m.mean_loss()
    t0 = time.perf_counter()
    m.reset()
    m.record()
    m.step_graph(0)
    eng.wait_all()
    print("  recording and first graph step: %.1f ms" % ((time.perf_counter() - t0) * 1e3))
    m.reset()
    for t in range(o.steps):
        m.step_graph(t)
    loss_graph = m.mean_loss()
    # Rounds interleaved: a Python eager round, a Python graph round, then (with --gpar-bench) one
    # round of each in C, so that a noisy neighbour falls on both sides alike.
    rounds = {"eager": [], "graph": [], "c_eager": [], "c_graph": []}
    c, cmd = None, None
    for _ in range(o.repeat):
        rounds["eager"].append(timed(lambda t: m.step(*m.batch(t)), o.steps, 1, eng)["median"])
        rounds["graph"].append(timed(m.step_graph, o.steps, 1, eng)["median"])
        if o.bench:
            cr, cmd = c_side(o.bench, spec, d.backend_index, o.hidden, o.steps, 1)
            for kind in ("eager", "graph"):
                rounds["c_" + kind].append(cr[kind][0]["median"])
                c = c or {}
                c[kind] = (None, cr[kind][1])
    summary = lambda us: {"min": min(us), "median": statistics.median(us), "max": max(us)}  # noqa: E731
    eager, graph = summary(rounds["eager"]), summary(rounds["graph"])
    rec = {"device": d.__dict__, "hidden": o.hidden, "steps": o.steps, "first_loss": first, "rounds": rounds,
           "python": {"eager": [eager, loss_eager], "graph": [graph, loss_graph]}}
    if c:
        c = {kind: (summary(rounds["c_" + kind]), c[kind][1]) for kind in ("eager", "graph")}
        rec["c"] = {k: list(v) for k, v in c.items()}
        rec["c_command"] = cmd
    for kind, (st, loss) in (("eager", (eager, loss_eager)), ("graph", (graph, loss_graph))):
        line = "  %-5s: %10.1f us per step (median of %d rounds of %d, min %.1f, max %.1f); loss after %d steps " \
               "%.7f" % (kind, st["median"], o.repeat, o.steps, st["min"], st["max"], o.steps, loss)
        if c:
            cs, closs = c[kind]
            line += "\n         C %10.1f us per step (min %.1f, max %.1f); loss %.7f; Python / C %.3f; losses %s" % (
                cs["median"], cs["min"], cs["max"], closs, st["median"] / cs["median"],
                "agree" if "%.7f" % loss == "%.7f" % closs else "DIFFER")
        print(line, flush=True)
    eng.close(force=True)
    if o.json:
        with open(o.json, "w") as f:
            json.dump(rec, f, indent=1)
    if c and any("%.7f" % rec["python"][k][1] != "%.7f" % c[k][1] for k in ("eager", "graph")):
        sys.exit(1)


if __name__ == "__main__":
    main()
