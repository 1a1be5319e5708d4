#!/bin/sh
# quickstart.sh: on a fresh Debian/Ubuntu machine, install libgpar's dependencies, build it in
# ./build, list the devices and run the chapter's two experiments on every backend that has
# devices (host CPU, CUDA GPUs, OpenCL devices such as PoCL's). Run from the repository root.
set -eu
cd "$(dirname "$0")/.."
pkgs="build-essential autoconf automake libtool pkg-config libopenblas-dev ocl-icd-opencl-dev opencl-c-headers libclblast-dev pocl-opencl-icd libjansson-dev help2man openmpi-bin libopenmpi-dev python3-dev python3-numpy"
if command -v apt-get >/dev/null 2>&1; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "== installing: $pkgs"
  $sudo apt-get update -qq >/dev/null
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $pkgs >/dev/null
fi
echo "== building"
autoreconf -fi >/dev/null 2>&1
mkdir -p build && cd build
# The Python module is built for the interpreter apt's NumPy belongs to (another python3 may come
# first on PATH, e.g. pyenv's); PYTHON=... in the environment wins.
[ -n "${PYTHON:-}" ] || [ ! -x /usr/bin/python3 ] || PYTHON=/usr/bin/python3
../configure ${PYTHON:+PYTHON="$PYTHON"} >configure.log 2>&1 || { tail -20 configure.log; exit 1; }
sed -n '/configuration summary/,$p' configure.log
make -j"$(nproc)" >make.log 2>&1 || { grep -m20 -E 'error' make.log; exit 1; }
echo "== devices"
./tools/gpar-info
for backend in cuda opencl host; do
  if ./tools/gpar-info | awk -v b="$backend" 'index($2, b ":") == 1 { found = 1 } END { exit !found }'; then
    echo "== $backend: experiment 1 (multi-device)"
    ./tools/gpar-bench multi-device --backend "$backend" --raw || true
    echo "== $backend: experiment 2 (copy overlap)"
    ./tools/gpar-bench copy-overlap --backend "$backend" --raw --svg "copy-overlap-$backend.svg" || true
  fi
done
echo "== timelines: build/copy-overlap-*.svg"
