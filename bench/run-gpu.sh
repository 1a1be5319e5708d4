#!/bin/bash
# run-gpu.sh: the benchmark batch behind bench/results/h200-x2-2026-11-29/ and h200-x4-2026-11-29/.
# Run it on the GPU machine from the built `make dist` tree that .gpu/gpu-check.sh makes:
#   bash .gpu/gpu-check.sh bash bench/run-gpu.sh [--asan "$PWD/.gpu/libgpar-0.1.0.tar.gz"]
# Every case times libgpar and the raw vendor loop (--raw) side by side in one process. On a
# machine with more than two GPUs the two-GPU cases use the first two (--devices 2) and the
# scaling cases use all of them. Logs, JSON, traces and the SVG go to $OUT/bench.tgz (the
# device tool brings back few files), else to ./bench-out.
set -u
out=/tmp/bench-out; rm -rf "$out"; mkdir -p "$out"
b=./tools/gpar-bench
run() { local name=$1; shift; echo "### $name: gpar-bench $*"; timeout 240 "$b" "$@" --quiet --json "$out/$name.json" 2>&1 | tee "$out/$name.txt"; }
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader
./tools/gpar-info | tee "$out/gpar-info.txt"
ngpu=$(nvidia-smi -L | wc -l)
# The chapter's experiments on CUDA (cuBLAS raw loop beside).
run cuda-multi multi-device --backend cuda --devices 2 --raw --repeat 5
run cuda-overlap copy-overlap --backend cuda --raw --repeat 5 --trace "$out/cuda-overlap.trace.json" --svg "$out/cuda-overlap.svg"
run cuda-overlap-pageable copy-overlap --backend cuda --pageable --repeat 3
run cuda-gemm gemm --backend cuda --raw --repeat 5
run cuda-gemm-tf32 gemm --backend cuda --raw --repeat 5 --tf32
# Small operations, one submitting thread.
run cuda-small256 multi-device --backend cuda --devices 2 --size 256 --iters 2000 --raw --repeat 5
run cuda-small1024 multi-device --backend cuda --devices 2 --size 1024 --iters 400 --raw --repeat 5
run cuda-overlap1024 copy-overlap --backend cuda --size 1024 --iters 400 --raw --repeat 5
# The same on NVIDIA's OpenCL (CLBlast raw loop beside).
run ocl-multi multi-device --backend opencl --devices 2 --raw --repeat 3
run ocl-overlap copy-overlap --backend opencl --raw --repeat 3
run ocl-gemm gemm --backend opencl --raw --repeat 3
run ocl-small256 multi-device --backend opencl --devices 2 --size 256 --iters 2000 --raw --repeat 5
# Every GPU at once (4 x H200 machine).
if [ "$ngpu" -gt 2 ]; then
  run cuda-multi-all multi-device --backend cuda --raw --repeat 5
  run cuda-overlap-all copy-overlap --backend cuda --devices "$ngpu" --raw --repeat 3
  run cuda-small256-all multi-device --backend cuda --size 256 --iters 2000 --raw --repeat 5
fi
# Engine cost per op on the host CPU device.
run overhead overhead
echo "gpus: $ngpu"
# --asan TARBALL: also build the tarball with ASan+UBSan and run the fault, stress, OOM and
# conformance tests on every device under it (protect_shadow_gap=0 for the driver).
if [ "${1:-}" = --asan ] && [ -f "${2:-}" ]; then
  echo "### asan: fault, stress, oom and conformance tests under ASan+UBSan"
  rm -rf /tmp/asan && mkdir -p /tmp/asan && tar -xzf "$2" -C /tmp/asan && cd /tmp/asan/*/ &&
    ./configure --enable-asan --with-cuda=/usr/local/cuda --with-opencl >/dev/null 2>&1 &&
    make -j"$(nproc)" >/dev/null 2>&1 &&
    ASAN_OPTIONS=protect_shadow_gap=0:detect_leaks=1 LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp:print_suppressions=0 \
      make -j4 check TESTS="tests/faults tests/stress tests/conformance tests/oom.tap" >"$out/asan-check.log" 2>&1
  echo "asan make check exit $?"
  grep -E '^(FAIL|ERROR)|^# (TOTAL|PASS|SKIP|FAIL|ERROR)' "$out/asan-check.log" | head -20
  grep -h -A12 'ERROR: AddressSanitizer\|ERROR: LeakSanitizer\|runtime error' tests/*.log 2>/dev/null | head -40
  cd - >/dev/null || true
fi
if [ -n "${OUT:-}" ]; then tar -czf "$OUT/bench.tgz" -C /tmp bench-out; else rm -rf bench-out; cp -r "$out" bench-out; fi
