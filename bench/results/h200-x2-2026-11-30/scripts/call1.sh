#!/bin/bash
# call 1: probes + baseline small-op figures of main (ca95577)
cd "$(dirname "$0")/.."
. .gpu/opencl-env.sh .gpu/debs >/dev/null 2>&1
nvidia-smi -L; nproc
PROBE_TIMEOUT=120 bash bench/probes/run.sh > $OUT/probes.txt 2>&1; echo "probes rc=$?"
cat > /tmp/base.sh <<'EOB'
b=./tools/gpar-bench
for c in "multi-device --backend cuda --devices 2 --size 256 --iters 2000 --raw --repeat 5" \
         "copy-overlap --backend cuda --size 256 --iters 2000 --raw --repeat 5" \
         "multi-device --backend opencl --devices 2 --size 256 --iters 2000 --raw --repeat 5" \
         "overhead"; do echo "### $c"; timeout 120 $b $c --quiet; done
EOB
GPU_CHECK_TESTS=0 bash .gpu/gpu-check.sh bash /tmp/base.sh > $OUT/baseline.txt 2>&1; echo "baseline rc=$?"
grep -E "ratio|both|median|us per|TFLOP|GB/s|###" $OUT/baseline.txt | head -60
