# tests/fuzz/sources.sh: sourced by run.sh and replay.sh, which build the library's sources into
# one program outside automake. In: src (the source tree), cuda (a CUDA toolkit folder, or empty
# to leave CUDA out). Out: the arrays srcs, flags and libs, and have_ocl (1 when OpenCL + CLBlast
# are found through pkg-config).
# The core's and the host backend's .c files are the ones libgpar_la_SOURCES names (Makefile.am,
# or any local.mk that adds to it), so moving files between folders needs no change here; when
# none is found there, or it names a file that is not there, every .c file under core/ and
# backends/host/. Every folder under core/ that
# holds a header is on the include path, with core/ itself (as AM_CPPFLAGS has it).
gpar_lib_sources() {
  local f mk=()
  for f in "$src"/Makefile.am "$src"/*/local.mk "$src"/*/*/local.mk; do [ -f "$f" ] && mk+=("$f"); done
  # libgpar_la_SOURCES = / += lines, and the GPAR_*_SOURCES variables it is made of (the core's
  # layers), with their backslash continuations; the .c words of them
  awk '/^[ \t]*(libgpar_la|GPAR_[A-Z_]+)_SOURCES[ \t]*\+?=/ { on = 1 }
       on { line = $0; sub(/\\[ \t]*$/, "", line); print line; if ($0 !~ /\\[ \t]*$/) on = 0 }' "${mk[@]}" |
    sed -E 's/^[ \t]*(libgpar_la|GPAR_[A-Z_]+)_SOURCES[ \t]*\+?=//' | tr ' \t' '\n\n' | grep '\.c$' |
    grep -Ev '^(backends/(cuda|opencl)|mpi)/' | sort -u # (those come below, when built)
}
srcs=()
missing=0
while read -r f; do
  if [ -f "$src/$f" ]; then srcs+=("$src/$f"); else missing=1; fi
done < <(gpar_lib_sources)
if [ ${#srcs[@]} = 0 ] || [ $missing = 1 ]; then # a list that names files not there is stale
  [ $missing = 1 ] && echo "sources.sh: libgpar_la_SOURCES names files that do not exist: taking core/**.c" >&2
  srcs=()
  while read -r f; do srcs+=("$f"); done < <(find "$src/core" "$src/backends/host" -name '*.c' | sort)
fi
incs=(-I"$src/include" -I"$src/core")
while read -r d; do incs+=(-I"$d"); done < <(find "$src/core" -mindepth 2 -name '*.h' -printf '%h\n' | sort -u)
flags=(-std=c11 -pthread -D_GNU_SOURCE -DGPAR_BUILDING "${incs[@]}" -g -O1
       -fno-omit-frame-pointer $(pkg-config --cflags openblas 2>/dev/null))
libs=($(pkg-config --libs openblas 2>/dev/null || echo -lopenblas) -lm -ldl)
have_ocl=0
if pkg-config --exists OpenCL clblast 2>/dev/null; then
  have_ocl=1
  srcs+=("$src"/backends/opencl/*.c)
  flags+=(-DCL_TARGET_OPENCL_VERSION=120 $(pkg-config --cflags OpenCL clblast))
  libs+=($(pkg-config --libs OpenCL clblast))
fi
if [ -n "${cuda:-}" ]; then
  srcs+=("$src"/backends/cuda/*.c)
  flags+=(-I"$cuda/include")
  libs+=(-L"$cuda/lib64" -Wl,-rpath,"$cuda/lib64" -lcublas -lcublasLt -lcudart -lstdc++)
  # NCCL (cuda_nccl.c): from the toolkit folder or /usr, as configure finds it; left out without it.
  if [ -f "$cuda/include/nccl.h" ] || [ -f /usr/include/nccl.h ]; then
    libs+=(-lnccl)
  else
    keep=()
    for f in "${srcs[@]}"; do [[ $f == */cuda_nccl.c ]] || keep+=("$f"); done
    srcs=("${keep[@]}")
  fi
fi
