#!/bin/bash
# call 6: the reviewed tree (one access accessor; env knobs read at gpar_init): full make check on
# 2 x H200, then two short benchmarks (GPAR_HOST copies with every backend open, a graph loop).
cat > /tmp/post6.sh <<'EOB'
export GPAR_QUIET=1
timeout 40 ./tools/gpar-bench copy-overlap --backend opencl --all-backends --raw --repeat 3 --quiet 2>&1 | grep -E "ratio to ideal|bandwidth|libgpar/raw"
timeout 30 ./tools/gpar-bench multi-device --backend cuda --devices 2 --size 256 --iters 2000 --graph --raw --repeat 3 --quiet 2>&1 | grep -E "all / max|libgpar/raw"
GPAR_PINNED_PROVIDER=cuda timeout 20 ./tests/pinned_mix 2>&1 | grep -cE "^ok"
EOB
bash .gpu/gpu-check.sh bash /tmp/post6.sh
