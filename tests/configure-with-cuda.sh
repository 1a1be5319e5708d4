#!/bin/sh
# configure-with-cuda.sh: --with-cuda=DIR takes the toolkit from DIR only. Runs
# configure (OpenCL off, for speed) in scratch folders and speaks TAP:
#   1. a DIR that does not exist stops configure, naming DIR;
#   2. an existing DIR without a toolkit stops configure, even though the compiler's default
#      paths may hold one (/usr/local/include here);
#   3. when a toolkit is at CUDA_DIR (default /usr/local/cuda), --with-cuda=CUDA_DIR builds it.
# Usage: tests/configure-with-cuda.sh [SRCDIR]  (SRCDIR: the folder holding configure; default: ..
# of this script). About 5-10 s.
set -u
here=$(cd "$(dirname "$0")" && pwd)
srcdir=$(cd "${1:-$here/..}" && pwd)
cuda_dir=${CUDA_DIR:-/usr/local/cuda}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpar-cfgcuda.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
n=0
fails=0
echo "1..3"
check() { # check WANT_RC PATTERN DESCRIPTION -- configure args...
  want=$1 pat=$2 what=$3
  shift 4
  n=$((n + 1))
  mkdir -p "$tmp/b$n" && (cd "$tmp/b$n" && "$srcdir/configure" --without-opencl "$@" >out.log 2>&1)
  rc=$?
  if { [ "$want" = 0 ] && [ $rc = 0 ]; } || { [ "$want" != 0 ] && [ $rc != 0 ]; }; then
    if grep -q -- "$pat" "$tmp/b$n/out.log"; then
      echo "ok $n - $what"
      return
    fi
  fi
  echo "not ok $n - $what (configure rc $rc; expected output matching: $pat)"
  sed 's/^/# /' "$tmp/b$n/out.log" | tail -n 15
  fails=$((fails + 1))
}
check 1 "no usable CUDA toolkit in $tmp/none" "--with-cuda=<missing folder> stops configure" -- \
  --with-cuda="$tmp/none"
mkdir -p "$tmp/empty/include" "$tmp/empty/lib64"
check 1 "no usable CUDA toolkit in $tmp/empty" "--with-cuda=<folder without a toolkit> stops configure" -- \
  --with-cuda="$tmp/empty"
if [ -f "$cuda_dir/include/cuda_runtime_api.h" ]; then
  check 0 "cuda: *yes ($cuda_dir)" "--with-cuda=$cuda_dir builds the CUDA backend from it" -- --with-cuda="$cuda_dir"
else
  n=$((n + 1))
  echo "ok $n # SKIP no CUDA toolkit at $cuda_dir"
fi
[ $fails = 0 ]
