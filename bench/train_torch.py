#!/usr/bin/env python3
"""train_torch.py: the PyTorch peer of libgpar's training step (tools/train/train_mlp.c,
`gpar-bench train`): the same MLP in-hidden-hidden-out with ReLU, softmax cross-entropy and
plain SGD, the same initial weights and the same minibatches, bit for bit (the counter-based
generator of tools/train/train_mlp.h, in numpy, or in torch's int64 without it), TF32 off.
Prints the step time eagerly and as one CUDA graph (medians of --repeat rounds with min and
max; the graph step includes copying the minibatch into the graph's static inputs, as
libgpar's does) and the loss of step --steps (default 100), eager and through the graph, each
from the initial weights.

    python3 bench/train_torch.py [--steps 100] [--batch 256] [--in 784] [--hidden 1024]
        [--out 10] [--lr 0.1] [--seed 1] [--batches 100] [--repeat 5] [--device cuda]
        [--json FILE]
"""
import argparse
import json
import statistics
import sys
import time

try:
    import numpy as np
except ImportError:  # the generator then runs in torch's int64 (wrapping) arithmetic
    np = None

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # the GPU machine has it; say so elsewhere
    sys.exit("train_torch.py: PyTorch is not installed")

M64 = (1 << 64) - 1


def i64(c):
    """A uint64 constant as the int64 with the same bits."""
    return c - (1 << 64) if c >= 1 << 63 else c


def srl(z, k):
    """Logical right shift of int64 bits."""
    return (z >> k) & ((1 << (64 - k)) - 1)


def mix(z):
    """splitmix64's finaliser over uint64 (numpy) or int64 holding the same bits (torch)."""
    if np is not None and isinstance(z, np.ndarray):
        with np.errstate(over="ignore"):
            z = z + np.uint64(0x9E3779B97F4A7C15)
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            return z ^ (z >> np.uint64(31))
    z = z + i64(0x9E3779B97F4A7C15)
    z = (z ^ srl(z, 30)) * i64(0xBF58476D1CE4E5B9)
    z = (z ^ srl(z, 27)) * i64(0x94D049BB133111EB)
    return z ^ srl(z, 31)


def arange(n):
    return np.arange(n, dtype=np.uint64) if np is not None else torch.arange(n, dtype=torch.int64)


def draw(stream, index):
    """The generator's value at (stream, index); top(v, k): its top k bits as int64."""
    if np is not None:
        return mix((np.uint64(stream) << np.uint64(40)) | index.astype(np.uint64))
    return mix((stream << 40) | index)


def top(v, k):
    if np is not None:
        return (v >> np.uint64(64 - k)).astype(np.int64)
    return srl(v, 64 - k)


def fans(a, layer):
    return (a.inp if layer == 1 else a.hidden), (a.out if layer == 3 else a.hidden)


def init_weight(a, layer):
    """Layer's weights as PyTorch holds them, (fan_out, fan_in); train_mlp.c's column-major W."""
    fi, fo = fans(a, layer)
    u = torch.as_tensor(top(draw(16 * a.seed + layer, arange(fi * fo)), 24)).to(torch.float32) * (2.0 ** -24)
    w = (2.0 * u - 1.0) * (71.0 / 4096.0)  # float32 arithmetic, as in C
    return w.reshape(fi, fo).t().contiguous()  # element r + c * fo is W(r, c)


def samples(a, first, count):
    """Features (count, in) as float32 and labels (count,) of samples first .. first + count - 1."""
    idx = arange(count * a.inp)
    idx = idx + (first * a.inp)  # sample s, feature f at s * in + f
    q = torch.as_tensor(top(draw(16 * a.seed + 8, idx), 8)).reshape(count, a.inp)
    t = torch.as_tensor(top(draw(16 * a.seed + 9, arange(a.out * a.inp)), 4)).reshape(a.out, a.inp) - 8
    scores = q.to(torch.float64) @ t.t().to(torch.float64)  # exact: |score| < 2^53; first maximum wins
    return q.to(torch.float32) / 256.0, torch.argmax(scores, dim=1)


class Model:
    def __init__(self, a, dev):
        self.w0 = [init_weight(a, l).to(dev) for l in (1, 2, 3)]
        self.params = []
        for w in self.w0:
            self.params += [w.clone().requires_grad_(True), torch.zeros(w.shape[0], device=dev, requires_grad=True)]
        self.opt = torch.optim.SGD(self.params, lr=a.lr)

    def reset(self):
        with torch.no_grad():
            for i, w in enumerate(self.w0):
                self.params[2 * i].copy_(w)
                self.params[2 * i + 1].zero_()

    def loss(self, x, y):
        w1, b1, w2, b2, w3, b3 = self.params
        h = F.relu(F.linear(x, w1, b1))
        h = F.relu(F.linear(h, w2, b2))
        return F.cross_entropy(F.linear(h, w3, b3), y)

    def step(self, x, y):
        self.opt.zero_grad(set_to_none=True)
        loss = self.loss(x, y)
        loss.backward()
        self.opt.step()
        return loss


def capture(model, xs, ys):
    """The whole step as one CUDA graph (PyTorch's recipe: warm up on a side stream first)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            model.step(xs, ys)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    model.opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(g):
        loss = model.loss(xs, ys)
        loss.backward()
        model.opt.step()
    return g, loss


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def timed(fn, steps, dev):
    sync(dev)
    t0 = time.perf_counter()
    for t in range(steps):
        fn(t)
    sync(dev)
    return (time.perf_counter() - t0) / steps * 1e6


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--in", dest="inp", type=int, default=784)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--out", type=int, default=10)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--batches", type=int, default=100, help="distinct minibatches; step t uses t mod batches")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--device", default="cuda")
    p.add_argument("--json")
    a = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device(a.device)
    nb = min(a.batches, a.steps)
    x, y = samples(a, 0, nb * a.batch)
    xb = x.to(dev).view(nb, a.batch, a.inp)
    yb = y.to(dev).view(nb, a.batch)
    model = Model(a, dev)

    losses = {}
    out = {}

    def eager(t):
        out["loss"] = model.step(xb[t % nb], yb[t % nb])

    model.reset()
    timed(eager, a.steps, dev)
    losses["eager"] = out["loss"].item()
    out.clear()  # drop the last eager step's autograd graph: its AccumulateGrad nodes would break the capture
    rounds = {"eager": []}
    if dev.type == "cuda":  # CUDA graphs need a GPU; on the CPU the script checks the loss only
        xs, ys = xb[0].clone(), yb[0].clone()
        graph, gloss = capture(model, xs, ys)

        def replay(t):
            xs.copy_(xb[t % nb])
            ys.copy_(yb[t % nb])
            graph.replay()

        model.reset()
        timed(replay, a.steps, dev)
        losses["graph"] = gloss.item()
        rounds["graph"] = []
    for _ in range(a.repeat):  # interleaved rounds
        rounds["eager"].append(timed(eager, a.steps, dev))
        if "graph" in rounds:
            rounds["graph"].append(timed(replay, a.steps, dev))
    res = {"shape": [a.inp, a.hidden, a.hidden, a.out], "batch": a.batch, "steps": a.steps, "torch": torch.__version__,
           "tf32": torch.backends.cuda.matmul.allow_tf32,
           "device": torch.cuda.get_device_name(dev) if dev.type == "cuda" else str(dev)}
    for k, v in rounds.items():
        med = statistics.median(v)
        res[k + "_us"] = {"med": med, "min": min(v), "max": max(v)}
        print(f"torch {k}: {med:.1f} us per step (min {min(v):.1f}, max {max(v):.1f}, {len(v)} rounds of {a.steps})")
    for k, v in losses.items():
        res["loss_" + k] = v
        print(f"torch loss after {a.steps} steps ({k}): {v:.7f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
