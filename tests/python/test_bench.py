"""test_bench.py: bench/python-bench.py runs (--quick, every device kind present in turn), its
launches add up (the script checks x[0] against the launches it made and exits 1 otherwise),
and its JSON record has the rows it printed. Timings are printed, never checked."""
import json
import os
import subprocess
import sys
import tempfile

import tap

try:
    import numpy  # noqa: F401
except ImportError:
    tap.skip_all("NumPy is not installed (python3-numpy)")

import gpar

script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "python-bench.py")
eng = gpar.Engine()
kinds = []
for d in eng.devices:
    spec = "cpu" if d.backend == "host" else "%s:%d" % (d.backend, d.backend_index)
    if d.backend not in [k.split(":")[0] for k in kinds]:
        kinds.append(spec)
eng.close()
for spec in kinds:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "rec.json")
        p = subprocess.run([sys.executable, script, "--quick", "--device", spec, "--json", out],
                           capture_output=True, text=True, timeout=100)
        rec = json.load(open(out)) if p.returncode == 0 and os.path.exists(out) else {}
        good = p.returncode == 0 and rec.get("launch", {}).get("python", {}).get("median", 0) > 0 \
            and "import" in rec.get("numpy", {})
        tap.ok(good, "python-bench.py --quick --device %s" % spec)
        tap.diag(p.stdout + p.stderr)
tap.done()
