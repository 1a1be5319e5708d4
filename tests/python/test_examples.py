"""test_examples.py: runs each of examples/python/ once at a small size, as a subprocess with this
Python and this environment (so the same gpar and _gpar), and checks its exit status: 0 passes,
77 (the device cannot build kernels) is a skip, anything else or a timeout fails with the
example's output shown. One test per example."""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tap  # noqa: E402

HERE = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "python"))
EXAMPLES = [
    ("chapter.py", ["--size", "64", "-n", "3"]),
    ("train.py", ["--steps", "5", "--batch", "16", "--sizes", "16,8,4"]),
    ("kernel_inplace.py", ["-n", "1000"]),
]
# The whole file runs under tap's watchdog (GPAR_TEST_TIMEOUT, default 120 s): each example gets
# its share, so a hung one fails here, with its output, before the watchdog bails out.
TIMEOUT = float(os.environ.get("GPAR_TEST_TIMEOUT", "120")) / (len(EXAMPLES) + 1)

if not os.path.isdir(HERE):
    tap.skip_all("no examples/python/ beside tests/ (%s)" % HERE)
for name, args in EXAMPLES:
    cmd = [sys.executable, os.path.join(HERE, name)] + args
    what = "%s %s" % (name, " ".join(args))
    t0 = time.perf_counter()
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=TIMEOUT,
                           universal_newlines=True)
        out, rc = r.stdout, r.returncode
    except subprocess.TimeoutExpired as e:
        out, rc = e.stdout or "", None
        if isinstance(out, bytes):
            out = out.decode(errors="replace")
    secs = time.perf_counter() - t0
    if rc == 77:
        tap.skip(1, "%s: %s" % (what, out.strip().splitlines()[-1] if out.strip() else "skipped"))
        continue
    if tap.ok(rc == 0, "%s (%.1f s)" % (what, secs)):
        tap.diag(out.rstrip())
    else:
        tap.diag("  %s: %s" % (" ".join(cmd), "timed out after %.1f s" % TIMEOUT if rc is None else
                               "exit status %d" % rc))
        tap.diag(out.rstrip() or "(no output)")
tap.done()
