#!/bin/sh
# kernel-reserved.sh: every macro a kernel compiler defines is refused as a name (core/kernel/
# names.c keeps them as a list, read off the compilers, not as prefixes): the OpenCL C macros of
# clang (as PoCL's compiler defines them) and the C11 headers' macros of the C compiler, each
# given to `tests/kernel_names --refused`, which prints the names it was able to use. A compiler
# that is absent skips its part. TAP. Usage: kernel-reserved.sh BUILDDIR (CC: the C compiler).
# Mutant: a name taken out of names.c's list (FLT_RADIX) is printed here, and the test fails.
set -u
build=${1:?usage: kernel-reserved.sh BUILDDIR}
cc=${CC:-cc}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpar-reserved.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
echo "1..2"
n=1
check() { # what, file of names
  if [ ! -s "$2" ]; then
    echo "ok $n - # SKIP $1: no compiler here"
  elif "$build/tests/kernel_names" --refused <"$2" >"$tmp/left" 2>&1; then
    echo "ok $n - $1: all $(wc -l <"$2") refused"
  else
    echo "not ok $n - $1: names not refused: $(tr '\n' ' ' <"$tmp/left" | cut -c1-400)"
  fi
  n=$((n + 1))
}
names() { awk '$1 == "#define" { sub(/\(.*/, "", $2); print $2 }' | grep -v '^_' | sort -u; }
clang=
for c in clang clang-18 clang-17 clang-16 clang-15 clang-14; do
  command -v "$c" >/dev/null 2>&1 && { clang=$c; break; }
done
: >"$tmp/cl"
[ -n "$clang" ] && "$clang" -x cl -cl-std=CL1.2 -Xclang -finclude-default-header -dM -E - </dev/null 2>/dev/null |
  names >"$tmp/cl"
check "OpenCL C 1.2 macros ($clang)" "$tmp/cl"
printf '#include <float.h>\n#include <math.h>\n#include <limits.h>\n#include <stdint.h>\n#include <stddef.h>\n' |
  "$cc" -std=c11 -dM -E - 2>/dev/null | names >"$tmp/c11"
check "C11 float.h, math.h, limits.h, stdint.h, stddef.h macros ($cc)" "$tmp/c11"
