#!/usr/bin/env python3
"""engine-table.py: the engine targets table (an engine without its global lock) from the gpar-bench records that engine-gpu.sh
writes (DIR/<case>.<build>[.w<N>][.<k>].json, build "new" or "old"), as Markdown on stdout.

usage: bench/engine-table.py DIR

Every figure comes from the records: medians over a run's rounds (libgpar and the raw loops
interleaved in one process), with the range of the per-round values in brackets; several files of
one case and build (A B B A order) pool their rounds. A case without a record says so (and names
its log); nothing is filled in. Exit status 1 when a case that should have run has no record."""
import glob, json, os, re, statistics, sys

D = sys.argv[1] if len(sys.argv) > 1 else '.'
NAME = re.compile(r'^(?P<case>[a-z0-9-]+)\.(?P<build>new|old)(?:\.w(?P<w>\d+))?(?:\.(?P<k>\d+))?\.json$')
CASES = ('none', 'independent', 'chain', 'fanin')
CASE_LABEL = {'none': 'no buffers', 'independent': '64-buffer pool', 'chain': 'chain', 'fanin': 'fan-in 8->1'}
missing = []


def records(case, build):
    """[(asked workers from the file name or None, results, record)] of one case and build."""
    out = []
    for f in sorted(glob.glob(os.path.join(D, '%s.%s*.json' % (case, build)))):
        m = NAME.match(os.path.basename(f))
        if not m or m.group('case') != case:
            continue
        try:
            r = json.load(open(f))
        except (OSError, ValueError) as e:
            print('<!-- %s: unreadable (%s) -->' % (f, e))
            continue
        out.append((int(m.group('w')) if m.group('w') else None, r.get('results', {}), r))
    return out


def runs(stat):
    if isinstance(stat, dict):
        return list(stat.get('runs') or [stat.get('median')])
    if isinstance(stat, (int, float)):
        return [stat]
    return []


def cell(vals, unit='', digits=3):
    vals = [v for v in vals if v is not None]
    if not vals:
        return None, '-'
    med = statistics.median(vals)
    fmt = '%.' + str(digits) + 'f'
    s = (fmt % med) + unit
    if len(vals) > 1:
        s += ' [' + (fmt % min(vals)) + ', ' + (fmt % max(vals)) + ']'
    return med, s


# ---------------------------------------------------------------- overhead records

def overhead(case, build):
    """{asked: {'workers': n, case: {'total': [...], 'submit': [...], 'cr': [...]}}}; asked 0 is
    the default count (one worker per core), whether asked as --workers 0 or left out."""
    out = {}
    for w, res, meta in records(case, build):
        if 'workers' in res:  # this gpar-bench: one entry per engine
            entries = [(e.get('asked', -1), e.get('workers'), e) for e in res['workers']]
        else:  # older gpar-bench: one engine, the cases at the top; the count from the file name
            entries = [(w if w is not None else 0, w, res)]
        for asked, workers, e in entries:
            asked = 0 if asked is None or asked < 0 else asked
            slot = out.setdefault(asked, {'workers': workers})
            for c in CASES:
                if c not in e:
                    continue
                d = slot.setdefault(c, {'total': [], 'submit': [], 'cr': []})
                d['total'] += runs(e[c].get('total_us_per_op'))
                d['submit'] += runs(e[c].get('submit_us_per_op'))
                bd = e[c].get('breakdown_us')
                if bd:
                    d['cr'] += runs(bd.get('complete_plus_retire'))
                elif 'bd_complete_us' in e[c]:  # older records: means over all rounds
                    d['cr'].append(e[c]['bd_complete_us'] + e[c].get('bd_retire_us', 0))
    return out


# ---------------------------------------------------------------- GPU records

def per_round(num, den):
    """Per-round ratios of two runs lists (rounds of one process pair up by index)."""
    return [a / b for a, b in zip(num, den) if b]


def md_ratio(case, build, raw_key):
    """multi-device: libgpar all / raw loop all, per round; None when absent."""
    vals = []
    for _, res, _ in records(case, build):
        raw = res.get(raw_key)
        if isinstance(raw, dict) and 'all' in raw:
            vals += per_round(runs(res['all']), runs(raw['all']))
    return vals or None


def md_both_over_one(case, build):
    """multi-device: libgpar all devices / the slowest device alone, per round."""
    vals = []
    for _, res, _ in records(case, build):
        if 'all' not in res or not res.get('alone'):
            continue
        alone = [runs(v) for v in res['alone'].values()]
        for i, a in enumerate(runs(res['all'])):
            mx = max((x[i] for x in alone if len(x) > i), default=0)
            if mx:
                vals.append(a / mx)
    return vals or None


def co_ideal(case, build):
    """copy-overlap: (run + copy) / (max(run, copy) + one chunk), per round."""
    vals = []
    for _, res, rec in records(case, build):
        if 'run_and_copy' not in res or not rec.get('iters'):
            continue
        rr, cc, bb = runs(res['run']), runs(res['copy']), runs(res['run_and_copy'])
        vals += [b / (max(r, c) + c / rec['iters']) for r, c, b in zip(rr, cc, bb)]
    return vals or None


def gemm_ratio(case, build, key='raw'):
    vals = []
    for _, res, _ in records(case, build):
        for dev, r in res.items():
            if isinstance(r, dict) and key in r and isinstance(r[key], dict):
                vals += per_round(runs(r['libgpar']), runs(r[key]))
    return vals or None


# ---------------------------------------------------------------- the table

builds = [b for b in ('new', 'old') if glob.glob(os.path.join(D, '*.%s*.json' % b))]
if not builds:
    print('no records in %s' % D)
    sys.exit(1)
meta = {}
for b in builds:
    for f in sorted(glob.glob(os.path.join(D, '*.%s*.json' % b))):
        try:
            m = json.load(open(f)).get('meta', {})
        except (OSError, ValueError):
            continue
        meta[b] = m
        break
rows = []  # (item, target, {build: text}, {build: ok or None})


def skipped(case, build):
    """The reason engine-gpu.sh wrote when it did not run a case (e.g. one GPU), else None."""
    try:
        return open(os.path.join(D, '%s.%s.skip' % (case, build))).read().strip() or 'skipped'
    except OSError:
        return None


def row(item, target, limit, get, unit='', digits=3, log=None):
    """get(build) -> list of values or None; limit: the value (median) must be <= limit."""
    texts, oks = {}, {}
    for b in builds:
        vals = get(b)
        if isinstance(vals, str):
            texts[b], oks[b] = vals, None
            continue
        if vals is None:
            why = skipped(log, b) if log else None
            if why:
                texts[b] = 'not run: ' + why
            elif records(log, b):  # the run left a record without this figure
                texts[b] = 'not in the record (a raw loop that failed, or an older gpar-bench: %s.%s*.txt)' % (log, b)
            else:
                texts[b] = 'no record (%s.%s*.txt)' % (log, b)
            oks[b] = None
            if b == 'new' and not why:
                missing.append(log)
            continue
        med, texts[b] = cell(vals, unit, digits)
        oks[b] = None if limit is None or med is None else med <= limit
    rows.append((item, target, texts, oks))


# Host: empty ops.
ovw = {b: overhead('h-workers', b) for b in builds}
ovb = {b: overhead('h-breakdown', b) for b in builds}
ov2 = {b: overhead('h-2core', b) for b in builds}
ova = {b: overhead('h-allbe', b) for b in builds}


def ov_get(table, asked, c, field='total'):
    def get(b):
        if table[b] and asked not in table[b]:
            return 'not measured: no run at %s' % ('%d workers' % asked if asked else 'one worker per core (0)')
        v = table[b].get(asked, {}).get(c, {}).get(field)
        return v or None
    return get


def default_workers(table, b):
    w = table[b].get(0, {}).get('workers')
    return '%s workers' % w if w else 'default workers'


for c, lim in (('none', 0.5), ('independent', 0.5), ('chain', 0.5), ('fanin', 1.0)):
    row('empty host op, %s, one worker per core (%s)' % (CASE_LABEL[c], default_workers(ovw, builds[0])),
        '<= %.1f us' % lim, lim, ov_get(ovw, 0, c), ' us', log='h-workers')
counts = sorted({a for b in builds for a in ovw[b] if a})
for a in counts:
    for c in CASES:
        row('same at %d workers: %s' % (a, CASE_LABEL[c]), 'report', None, ov_get(ovw, a, c), ' us', log='h-workers')
for c in CASES:
    def flat(b, c=c):
        if not ovw[b]:
            return None
        lo, hi = ovw[b].get(2, {}).get(c, {}).get('total'), ovw[b].get(16, {}).get(c, {}).get('total')
        if not lo or not hi:
            return 'not measured: the worker counts have no 2 and 16 (ENGINE_WORKERS)'

        return [statistics.median(hi) / statistics.median(lo)]
    row('16 workers / 2 workers, %s (ratio of medians)' % CASE_LABEL[c], '<= 1.20', 1.2, flat, log='h-workers')
for c in CASES:
    row('complete + retire per op (breakdown), %s, %s' % (CASE_LABEL[c], default_workers(ovb, builds[0])),
        '<= 2 us', 2.0, ov_get(ovb, 0, c, 'cr'), ' us', log='h-breakdown')
for c in ('none', 'independent', 'chain'):
    row('empty host op, 2 cores (taskset -c 0,1, 2 workers), host only, %s' % CASE_LABEL[c], '<= 0.3 us', 0.3,
        ov_get(ov2, 2, c), ' us', log='h-2core')
for c in CASES:
    row('empty host op, every backend open, default workers: %s' % CASE_LABEL[c], 'report', None,
        ov_get(ova, 0, c), ' us', log='h-allbe')

# CUDA, eager.
row('CUDA copy-overlap --size 256 --iters 2000, eager: x ideal', '<= 1.10', 1.10,
    lambda b: co_ideal('c-overlap256', b), log='c-overlap256')
for n, case in (('64^3 x 10000', 'c-m64'), ('256^3 x 2000', 'c-m256')):
    row('CUDA %s eager / hand cublasLt loop' % n, '<= 1.0', 1.0, lambda b, c=case: md_ratio(c, b, 'raw_lt'), log=case)
    row('CUDA %s eager / cublasSgemm loop' % n, 'report', None, lambda b, c=case: md_ratio(c, b, 'raw'), log=case)

# Unchanged: the chapter's 4000^3 figures and the graph figures, against the targets they met.
row('4000^3 x 50, both GPUs / one (libgpar)', '<= 1.01 (unchanged)', 1.01,
    lambda b: md_both_over_one('k-multi', b), log='k-multi')
row('4000^3 x 50, libgpar / cublasSgemm loop, all GPUs', 'report', None, lambda b: md_ratio('k-multi', b, 'raw'), log='k-multi')
row('4000^3 x 50 copy-overlap: x ideal', '<= 1.05 (unchanged)', 1.05, lambda b: co_ideal('k-overlap', b), log='k-overlap')
row('4000^3 sgemm time, libgpar / cublasSgemm loop', '<= 1.03 (unchanged)', 1.03, lambda b: gemm_ratio('k-gemm', b), log='k-gemm')
row('4000^3 sgemm time, libgpar / hand cublasLt loop', 'report', None, lambda b: gemm_ratio('k-gemm', b, 'raw_lt'), log='k-gemm')
row('graph 256^3 x 2000 / cublasSgemm loop', '<= 0.57 (unchanged)', 0.57, lambda b: md_ratio('g-m256', b, 'raw'), log='g-m256')
row('graph 256^3 x 2000 / hand-captured CUDA graph', '<= 1.05 (unchanged)', 1.05,
    lambda b: md_ratio('g-m256', b, 'raw_graph'), log='g-m256')
row('graph 64^3 x 10000 / cublasSgemm loop', '<= 0.40 (unchanged)', 0.40, lambda b: md_ratio('g-m64', b, 'raw'), log='g-m64')
row('graph 64^3 x 10000 / hand-captured CUDA graph', '<= 1.05 (unchanged)', 1.05,
    lambda b: md_ratio('g-m64', b, 'raw_graph'), log='g-m64')
row('graph copy-overlap 256 x 2000: x ideal', '<= 1.05 (unchanged)', 1.05, lambda b: co_ideal('g-overlap256', b),
    log='g-overlap256')
row('graph 256^3 x 2000, both GPUs / one', '<= 1.03 (unchanged)', 1.03, lambda b: md_both_over_one('g-m256x2', b),
    log='g-m256x2')

# ---------------------------------------------------------------- print

def describe(b):
    m = meta.get(b, {})
    return '%s: libgpar %s (commit %s), %s cores online (%s), host %s' % (
        b, m.get('libgpar_version', '?'), m.get('git_commit', '?'), m.get('cpu_cores_online', '?'),
        m.get('cpu_model', '?'), m.get('hostname', '?'))


print('# Engine targets (bench/engine-gpu.sh)\n')
for b in builds:
    print('- ' + describe(b))
print('\nMedians over the rounds of each run (libgpar and the raw loops interleaved in one process); '
      '[min, max] of the per-round values. "met" compares the median with the target.\n')
head = '| item | target | ' + ' | '.join(builds) + ' |'
print(head)
print('|' + '---|' * (2 + len(builds)))
for item, target, texts, oks in rows:
    cells = []
    for b in builds:
        t = texts[b]
        if oks[b] is True:
            t += ' met'
        elif oks[b] is False:
            t += ' **missed**'
        cells.append(t)
    print('| %s | %s | %s |' % (item, target, ' | '.join(cells)))
if missing:
    print('\nno record for: %s (see their .txt logs in %s)' % (', '.join(sorted(set(missing))), D))
    sys.exit(1)
