#!/bin/sh
# lanes-matrix.sh: the DAG replay, fault, contention and graph tests (tests/dag, tests/faults,
# tests/contention, tests/graph, tests/graph_branches) at each backend's default number of compute
# lanes and with GPAR_LANES=1, 2 and 4 per GPU (gpar_init reads it): one TAP line per test and
# lane count, its output kept in tests/lanes-matrix.LANES.NAME.out.
# Usage: lanes-matrix.sh BUILDDIR
b=${1:-.}
n=0
fail=0
for lanes in default 1 2 4; do
  for t in dag faults contention graph graph_branches; do
    n=$((n + 1))
    out="$b/tests/lanes-matrix.$lanes.$t.out"
    if if [ "$lanes" = default ]; then env -u GPAR_LANES "$b/tests/$t"; else GPAR_LANES=$lanes "$b/tests/$t"; fi \
      >"$out" 2>&1; then
      echo "ok $n - GPAR_LANES=$lanes tests/$t ($(grep -c '^ok' "$out") ok)"
    else
      echo "not ok $n - GPAR_LANES=$lanes tests/$t: $(grep -m1 '^not ok\|^Bail' "$out")"
      fail=1
    fi
  done
done
echo "1..$n"
exit $fail
