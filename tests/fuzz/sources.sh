# tests/fuzz/sources.sh: sourced by run.sh and replay.sh, which build the library's sources into
# one program outside automake. In: src (the source tree), cuda (a CUDA toolkit folder, or empty
# to leave CUDA out). Out: the arrays srcs, flags and libs, and have_ocl (1 when OpenCL + CLBlast
# are found through pkg-config).
srcs=("$src"/core/*.c "$src"/backends/host/*.c)
flags=(-std=c11 -pthread -D_GNU_SOURCE -DGPAR_BUILDING -I"$src/include" -I"$src/core" -g -O1
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
    srcs=("${srcs[@]/*cuda_nccl.c/}")
  fi
fi
