"""test_train.py: bench/python-train.py, the C training step (tools/train/train_mlp.c) written in
Python on the gpar package, gives the loss of `gpar-bench train` to the bit after the same steps,
eager and through a recorded graph, on each device kind present (a small model: 784-32-32-10,
5 steps). The script compares the two and exits 1 when they differ. Timings are printed only."""
import os
import subprocess
import sys

import tap

try:
    import numpy  # noqa: F401
except ImportError:
    tap.skip_all("NumPy is not installed (python3-numpy)")

import gpar

here = os.path.dirname(os.path.abspath(__file__))
script = os.path.join(here, "..", "..", "bench", "python-train.py")
bench = os.path.join(os.environ.get("GPAR_BUILDDIR", ""), "tools", "gpar-bench")
if not os.access(bench, os.X_OK):
    tap.skip_all("no gpar-bench in this build (GPAR_BUILDDIR=%r)" % os.environ.get("GPAR_BUILDDIR"))
eng = gpar.Engine()
specs = []
for d in eng.devices:
    spec = "cpu" if d.backend == "host" else "%s:%d" % (d.backend, d.backend_index)
    if spec.split(":")[0] not in [s.split(":")[0] for s in specs]:
        specs.append(spec)
eng.close()
for spec in specs:
    p = subprocess.run([sys.executable, script, "--device", spec, "--hidden", "32", "--steps", "5", "--repeat", "1",
                        "--gpar-bench", bench], capture_output=True, text=True, timeout=100)
    tap.ok(p.returncode == 0 and p.stdout.count("losses agree") == 2,
           "device %s: Python's step gives C's loss, eager and graph" % spec)
    tap.diag(p.stdout + p.stderr)
tap.done()
