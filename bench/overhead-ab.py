#!/usr/bin/env python3
"""overhead-ab.py: interleaved A/B runs of `gpar-bench overhead` (host backend) for builds
that differ, to beat a noisy shared machine: each round runs every build once, in turn.

usage: bench/overhead-ab.py ROUNDS OPS DIR[:VAR=VALUE[,VAR=VALUE...]] ...
  DIR holds a gpar-bench binary and the libgpar.so* it should load (e.g. copies of
  build/tools/.libs/gpar-bench and build/.libs/libgpar.so*), or is a built tree (it has
  tools/.libs/gpar-bench and .libs/libgpar.so*); VAR=VALUE is set for that run. One DIR may be
  named twice with different variables, e.g. build:GPAR_RETIRE=direct build:GPAR_RETIRE=combine.
Prints min/median/max of total us/op per case (none, independent, chain, fan-in)."""
import os, re, signal, statistics, subprocess, sys

class Stop(Exception):
    pass

def stop(*_):
    raise Stop()

signal.signal(signal.SIGTERM, stop)  # under `timeout`: print the rounds done so far

rounds, ops, builds = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
cases = {'no buffers': 'none', 'independent': 'indep', 'chain': 'chain', 'fan-in': 'fanin'}
res = {b: {k: [] for k in cases.values()} for b in builds}


def run(b):
    d, _, extra = b.partition(':')
    exe, lib = os.path.join(d, 'gpar-bench'), d
    if os.path.exists(os.path.join(d, 'tools', '.libs', 'gpar-bench')):  # a built tree
        exe, lib = os.path.join(d, 'tools', '.libs', 'gpar-bench'), os.path.join(d, '.libs')
    env = dict(os.environ, GPAR_BACKENDS='host', LD_LIBRARY_PATH=lib)
    for kv in filter(None, extra.split(',')):
        k, _, v = kv.partition('=')
        env[k] = v
    out = subprocess.run([exe, 'overhead', '--iters', ops, '--quiet'],
                         env=env, capture_output=True, text=True, timeout=600).stdout
    for line in out.splitlines():
        for prefix, key in cases.items():
            if line.startswith(prefix):
                res[b][key].append(float(re.findall(r'[\d.]+', line[30:])[1]))

done = 0
try:
    for _ in range(rounds):
        for b in builds:
            run(b)
        done += 1
except (Stop, KeyboardInterrupt, subprocess.TimeoutExpired):
    print('stopped after %d of %d rounds' % (done, rounds))
for b in builds:
    print('%-24s' % b, '  '.join('%s %.3f/%.3f/%.3f' % (k, min(x), statistics.median(x), max(x))
                                 for k, x in res[b].items() if x))
