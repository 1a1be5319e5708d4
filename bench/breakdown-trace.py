#!/usr/bin/env python3
"""breakdown-trace.py: per-op host-time breakdown from a libgpar trace file (GPAR_TRACE=FILE or
gpar-bench --trace FILE): mean microseconds per phase (submit, handoff, dispatch, complete,
retire; see gpar_breakdown in gpar.h), per op name and device.

usage: bench/breakdown-trace.py TRACE.json"""
import collections, json, sys

events = json.load(open(sys.argv[1]))
names = {}
for e in events:
    if e.get('ph') == 'M' and e.get('name') == 'process_name':
        names[e['pid']] = e['args']['name']
phases = ('submit', 'handoff', 'dispatch', 'complete', 'retire')
sums = collections.defaultdict(lambda: [0, [0.0] * len(phases)])
for e in events:
    h = e.get('args', {}).get('host_us') if e.get('ph') == 'X' else None
    if not h:
        continue
    s = sums[(names.get(e['pid'], e['pid']), e['name'])]
    s[0] += 1
    for i, p in enumerate(phases):
        s[1][i] += h[p]
print('%-28s %-14s %8s ' % ('device', 'op', 'ops') + ' '.join('%9s' % p for p in phases))
for (dev, name), (n, tot) in sorted(sums.items()):
    print('%-28s %-14s %8d ' % (dev[:28], name, n) + ' '.join('%9.3f' % (t / n) for t in tot))
