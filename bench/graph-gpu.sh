#!/bin/bash
# graph-gpu.sh: op graphs on the GPU machine: the graph test on every device (under
# compute-sanitizer memcheck when it is installed), then gpar-bench --graph against the raw
# cuBLAS loop and its hand-captured CUDA graph, each figure checked against the target.
# Run it from a built tree (e.g. bash .gpu/gpu-check.sh bash bench/graph-gpu.sh). Prints one
# "PASS"/"FAIL" line per target and exits 1 when any failed; logs and JSON go to $OUT/graph.tgz
# (else ./graph-out).
set -u
out=/tmp/graph-out; rm -rf "$out"; mkdir -p "$out"
b=./tools/gpar-bench
fails=0
run() { local name=$1; shift; echo "### $name: gpar-bench $*"; timeout 300 "$b" "$@" --quiet --json "$out/$name.json" 2>&1 | tee "$out/$name.txt"; }
# check NAME EXPR LIMIT: EXPR is a Python expression over r (the JSON "results" object).
check() {
  local v
  v=$(python3 -c "import json,sys; r=json.load(open('$out/$1.json'))['results']; print('%.4f' % ($2))" 2>/dev/null) || v=nan
  if python3 -c "import sys; sys.exit(0 if float('$v') <= $3 else 1)" 2>/dev/null; then
    echo "PASS $1: $2 = $v <= $3"
  else
    echo "FAIL $1: $2 = $v (target <= $3)"; fails=$((fails + 1))
  fi
}
nvidia-smi --query-gpu=index,name --format=csv,noheader
echo "### tests/graph (every device of every backend)"
GPAR_QUIET=1 ./tests/graph > "$out/test-graph.txt" 2>&1; rc=$?
grep -v '^ok' "$out/test-graph.txt"; echo "tests/graph exit $rc"; [ $rc = 0 ] || fails=$((fails + 1))
if command -v compute-sanitizer >/dev/null; then
  echo "### compute-sanitizer memcheck tests/graph (CUDA only)"
  GPAR_BACKENDS=host,cuda GPAR_QUIET=1 GPAR_TEST_TIMEOUT=900 compute-sanitizer --tool memcheck --error-exitcode 9 \
    ./tests/graph > "$out/memcheck-graph.txt" 2>&1; rc=$?
  tail -3 "$out/memcheck-graph.txt"; echo "memcheck exit $rc"; [ $rc = 0 ] || fails=$((fails + 1))
fi
# One GPU: graph / raw loop, graph / hand-captured graph.
run g256 multi-device --backend cuda --devices 1 --size 256 --iters 2000 --graph --raw --repeat 5
check g256 "r['raw']['libgpar_over_raw_all']" 0.57
check g256 "r['raw_graph']['libgpar_over_raw_all']" 1.05
check g256 "r['graph_record_seconds'] + r['graph_first_launch_seconds'] - r['all']['median'] - 2 * r['raw_graph']['capture_seconds']" 0
run g64 multi-device --backend cuda --devices 1 --size 64 --iters 10000 --graph --raw --repeat 5
check g64 "r['raw']['libgpar_over_raw_all']" 0.40
check g64 "r['raw_graph']['libgpar_over_raw_all']" 1.05
run g512 multi-device --backend cuda --devices 1 --size 512 --iters 1000 --graph --raw --repeat 5
check g512 "r['raw_graph']['libgpar_over_raw_all']" 1.05
run g1024 multi-device --backend cuda --devices 1 --size 1024 --iters 400 --graph --raw --repeat 5
check g1024 "r['raw_graph']['libgpar_over_raw_all']" 1.05
# Both GPUs / one.
run g256x2 multi-device --backend cuda --devices 2 --size 256 --iters 2000 --graph --raw --repeat 5
check g256x2 "r['all_over_max_alone']" 1.03
check g256x2 "r['raw_graph']['libgpar_over_raw_all']" 1.05
run g64x2 multi-device --backend cuda --devices 2 --size 64 --iters 10000 --graph --raw --repeat 5
check g64x2 "r['all_over_max_alone']" 1.03
# Copy overlap through a graph.
run gco256 copy-overlap --backend cuda --size 256 --iters 2000 --graph --raw --repeat 5
check gco256 "r['ratio_to_ideal']" 1.05
# The chapter's experiments (4000^3) through graphs: unchanged.
run gchapter multi-device --backend cuda --devices 2 --graph --raw --repeat 3
check gchapter "r['all_over_max_alone']" 1.01
run gco4000 copy-overlap --backend cuda --graph --raw --repeat 3
check gco4000 "r['ratio_to_ideal']" 1.05
# NVIDIA OpenCL: the pre-resolved replay (no command buffers there); reported, not targeted.
run gocl256 multi-device --backend opencl --devices 2 --size 256 --iters 2000 --graph --raw --repeat 3
echo "targets failed: $fails"
if [ -n "${OUT:-}" ]; then tar -czf "$OUT/graph.tgz" -C /tmp graph-out; else rm -rf graph-out; cp -r "$out" graph-out; fi
[ $fails = 0 ]
