#!/bin/bash
# call 2a: full make check on 2 x H200 (CUDA + NVIDIA OpenCL + PoCL), breakdown at 256^3,
# compute-sanitizer memcheck/racecheck on conformance (CUDA devices).
R=$(cd "$(dirname "$0")/.." && pwd)
cat > /tmp/post2a.sh <<EOB
set -u
export GPAR_QUIET=1
echo "### breakdown 256^3 x 2000 one GPU"
timeout 120 ./tools/gpar-bench multi-device --backend cuda --devices 1 --size 256 --iters 2000 --repeat 3 --quiet --trace /tmp/t.json > \$OUT/breakdown-run.txt 2>&1
python3 $R/bench/breakdown-trace.py /tmp/t.json | tee \$OUT/breakdown.txt | head -20
./tools/gpar-bench overhead --breakdown --quiet 2>&1 | tee \$OUT/overhead.txt | head -30
for tool in memcheck racecheck; do
  echo "### compute-sanitizer \$tool conformance (host+cuda)"
  GPAR_BACKENDS=host,cuda GPAR_TEST_TIMEOUT=600 timeout 150 compute-sanitizer --tool \$tool --error-exitcode 9 ./tests/conformance > \$OUT/cs-\$tool-conformance.txt 2>&1; echo "exit \$?"
  tail -3 \$OUT/cs-\$tool-conformance.txt
done
EOB
bash .gpu/gpu-check.sh bash /tmp/post2a.sh
