#!/bin/bash
# session-gpu.sh: every GPU-only check of Reliability VI, lanes and the Python front in ONE call,
# after gpu-check.sh's build and make check, from its build dir:
#   bash .gpu/gpu-check.sh bash $PWD/bench/session-gpu.sh
# (1) reads-gpu.sh: the kernel tests again, disk hits against the hand loader, NVIDIA OpenCL's
# poison probe; (2) compute-sanitizer memcheck of buffer_import and lanes (host + CUDA); (3) the
# Python front with PyTorch and CuPy on CUDA: test_cuda_peers, the same test with from_dlpack's
# gpar_buffer_wait_native taken out (a mutant: it must fail), python-bench and python-train on
# CUDA, test_cuda_peers under compute-sanitizer; (4) lanes-gpu.sh. Each part under a timeout;
# SESSION_PARTS picks parts (default "reads memcheck python lanes"); logs in $OUT (else
# /tmp/session-out).
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
build=$PWD
out=${OUT:-/tmp/session-out}
mkdir -p "$out/python"
parts=" ${SESSION_PARTS:-reads memcheck python lanes} "
part() { echo "=== $* ($(date +%T))"; }
want() { [[ $parts == *" $1 "* ]]; }

if want reads; then
part "reads"
timeout 150 bash "$src/bench/reads-gpu.sh"
fi

cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if want memcheck; then
part "memcheck buffer_import, lanes"
for t in tests/buffer_import tests/lanes; do
  GPAR_BACKENDS=host,cuda GPAR_QUIET=1 timeout 120 "$cs" --tool memcheck --error-exitcode 9 "$t" \
    >"$out/memcheck-$(basename $t).txt" 2>&1
  echo "memcheck $t: exit $?, $(grep -c '^ok' "$out/memcheck-$(basename $t).txt") ok," \
    "$(grep -c '^not ok' "$out/memcheck-$(basename $t).txt") not ok;" \
    "$(grep -E 'ERROR SUMMARY' "$out/memcheck-$(basename $t).txt" | tail -1)"
done
fi

if want python; then
part "python"
py=/usr/bin/python3; command -v python3 >/dev/null && py=$(command -v python3)
if [ -f python/_gpar.la ]; then
  "$py" -c 'import torch, sys; print("torch", torch.__version__, "cuda", torch.cuda.is_available())' 2>&1
  "$py" -c 'import cupy; print("cupy", cupy.__version__)' 2>&1 | tail -1
  pt() { PYTHON=$py timeout 120 sh "$src/tests/python-tap.sh" "$1" "$build" "$2"; }
  pt "$build" "$src/tests/python/test_cuda_peers.py" >"$out/python/test_cuda_peers.txt" 2>&1
  echo "test_cuda_peers: exit $?, $(grep -c '^ok' "$out/python/test_cuda_peers.txt") ok," \
    "$(grep -c '^not ok' "$out/python/test_cuda_peers.txt") not ok"
  grep -E '^(not ok|# |1\.\.)' "$out/python/test_cuda_peers.txt" | head -20
  # mutants of _array.py, each must fail the test: from_dlpack without gpar_buffer_wait_native;
  # __dlpack__ without gpar_buffer_signal_native; __dlpack__ waiting on the host instead
  mutant() { # NAME SED-EXPRESSION
    rm -rf /tmp/mutant && mkdir -p /tmp/mutant && cp -r "$src/python" "$src/tests" /tmp/mutant/
    sed -i "$2" /tmp/mutant/python/gpar/_array.py
    local n; n=$(grep -c MUTANT /tmp/mutant/python/gpar/_array.py)
    pt /tmp/mutant /tmp/mutant/tests/python/test_cuda_peers.py >"$out/python/mutant_$1.txt" 2>&1
    echo "mutant $1 ($n line changed): exit $?; $(grep '^not ok' "$out/python/mutant_$1.txt" | head -3)"
  }
  [ "${SESSION_MUTANTS:-1}" = 1 ] || mutant() { :; }
  mutant no_wait_native 's/^        _gpar.wait_native(buf, 0)$/        pass  # MUTANT/'
  mutant no_signal_native 's/^                _gpar.signal_native(self._buf, .*$/                pass  # MUTANT/'
  mutant host_wait 's/^                _gpar.signal_native(self._buf, .*$/                _gpar.wait(self._buf)  # MUTANT/'
  PYTHONPATH="$build/python/.libs:$src/python" LD_LIBRARY_PATH="$build/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" GPAR_QUIET=1 \
    timeout 120 "$py" "$src/bench/python-bench.py" --json "$out/python/python-bench.json" >"$out/python/python-bench.txt" 2>&1
  echo "python-bench: exit $?"; cat "$out/python/python-bench.txt"
  train=${SESSION_TRAIN-cuda,cpu --steps 20 --repeat 3} # devices (with options), comma-separated
  IFS=, read -r -a train <<<"$train"
  for d in "${train[@]}"; do
    PYTHONPATH="$build/python/.libs:$src/python" LD_LIBRARY_PATH="$build/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" GPAR_QUIET=1 \
      timeout 120 "$py" "$src/bench/python-train.py" --device $d --gpar-bench tools/gpar-bench \
      --json "$out/python/python-train-${d%% *}.json" >"$out/python/python-train-${d%% *}.txt" 2>&1
    echo "python-train $d: exit $?"; tail -12 "$out/python/python-train-${d%% *}.txt"
  done
  PYTHONPATH="$build/python/.libs:$src/python:$src/tests/python" LD_LIBRARY_PATH="$build/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" GPAR_QUIET=1 \
    GPAR_TEST_TIMEOUT=140 timeout 150 "$cs" --tool memcheck --error-exitcode 9 "$py" \
    "$src/tests/python/test_cuda_peers.py" >"$out/python/memcheck-test_cuda_peers.txt" 2>&1
  echo "memcheck test_cuda_peers: exit $?, $(grep -c '^ok' "$out/python/memcheck-test_cuda_peers.txt") ok," \
    "$(grep -c '^not ok' "$out/python/memcheck-test_cuda_peers.txt") not ok;" \
    "$(grep -E 'ERROR SUMMARY' "$out/python/memcheck-test_cuda_peers.txt" | tail -1)"
else
  echo "no Python module in this build (python/_gpar.la): configure.log says:"
  grep -i python config.log | tail -5
fi

fi

if want lanes; then
part "lanes"
LANES_REPEAT=3 timeout 200 bash "$src/bench/lanes-gpu.sh"
fi
part "end"
