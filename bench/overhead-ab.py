#!/usr/bin/env python3
"""overhead-ab.py: interleaved A/B runs of `gpar-bench overhead` (host backend) for builds or
settings that differ, to beat a noisy shared machine: each round runs every build once, in turn.

usage: bench/overhead-ab.py ROUNDS OPS DIR[:VAR=VALUE[,VAR=VALUE...]] ...
  DIR is a built tree (it holds tools/gpar-bench: libtool's wrapper, which finds its own libgpar)
  or a folder holding a gpar-bench binary and the libgpar.so* it should load (put in front of
  LD_LIBRARY_PATH, never in its place: gpu-check.sh's OpenCL loader lives there too); VAR=VALUE is
  set for that run. One DIR may be named twice with different variables, e.g.
  build:GPAR_HOST_THREADS=2 build:GPAR_HOST_THREADS=16.
Prints min/median/max of total us/op per case (none, independent, chain, fan-in) from each run's
JSON record. Every build must start (checked with --version first) and every run must succeed;
otherwise the command, its exit status and its last lines are printed and the exit status is 1."""
import json, os, signal, statistics, subprocess, sys, tempfile


class Stop(Exception):
    pass


def stop(*_):
    raise Stop()


signal.signal(signal.SIGTERM, stop)  # under `timeout`: print the rounds done so far

if len(sys.argv) < 4:
    sys.exit(__doc__)
rounds, ops, builds = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
cases = ('none', 'independent', 'chain', 'fanin')
res = {b: {k: [] for k in cases} for b in builds}
failed = 0


def command(b):
    """(argv prefix, environment) that runs build b's gpar-bench."""
    d, _, extra = b.partition(':')
    d = os.path.abspath(d)
    env = dict(os.environ, GPAR_BACKENDS='host', GPAR_QUIET='1')
    env.pop('GPAR_HOST_THREADS', None)
    wrapper = os.path.join(d, 'tools', 'gpar-bench')
    if os.path.isfile(wrapper) and os.access(wrapper, os.X_OK):
        exe = wrapper
    elif os.path.isfile(os.path.join(d, 'gpar-bench')):
        exe = os.path.join(d, 'gpar-bench')
        env['LD_LIBRARY_PATH'] = d + (':' + env['LD_LIBRARY_PATH'] if env.get('LD_LIBRARY_PATH') else '')
    else:
        sys.exit('overhead-ab.py: %s holds neither tools/gpar-bench (a built tree) nor gpar-bench' % d)
    for kv in filter(None, extra.split(',')):
        k, _, v = kv.partition('=')
        env[k] = v
    return [exe], env


def show_failure(b, argv, p):
    global failed
    failed += 1
    print('%s: %s exited %s' % (b, ' '.join(argv), p.returncode))
    for line in (p.stdout + p.stderr).splitlines()[-8:]:
        print('  | ' + line)


def run(b, json_path):
    argv, env = command(b)
    argv = argv + ['overhead', '--backend', 'host', '--iters', ops, '--repeat', '1', '--quiet', '--json', json_path]
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        show_failure(b, argv, p)
        return
    r = json.load(open(json_path))['results']
    entry = r['workers'][0] if 'workers' in r else r  # this gpar-bench, or an older one's layout
    for k in cases:
        if k in entry:
            res[b][k] += entry[k]['total_us_per_op'].get('runs') or [entry[k]['total_us_per_op']['median']]


for b in dict.fromkeys(builds):  # each build once: does it start at all?
    argv, env = command(b)
    p = subprocess.run(argv + ['--version'], env=env, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        show_failure(b, argv + ['--version'], p)
        sys.exit(1)

done = 0
with tempfile.TemporaryDirectory() as tmp:
    try:
        for _ in range(rounds):
            for i, b in enumerate(builds):
                run(b, os.path.join(tmp, '%d.json' % i))
            done += 1
    except (Stop, KeyboardInterrupt, subprocess.TimeoutExpired):
        print('stopped after %d of %d rounds' % (done, rounds))
for b in builds:
    if not any(res[b].values()):
        print('%-24s no result' % b)
        failed += 1
        continue
    print('%-24s' % b, '  '.join('%s %.3f/%.3f/%.3f' % (k, min(x), statistics.median(x), max(x))
                                 for k, x in res[b].items() if x))
sys.exit(1 if failed else 0)
