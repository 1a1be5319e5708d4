# gpar_cuda.m4: --with-cuda[=DIR]. Not given: detect in $CUDA_HOME or /usr/local/cuda and quietly
# leave the backend out when absent. Given: stop with an error naming what is missing.
# Sets CUDA_CPPFLAGS, CUDA_LDFLAGS, CUDA_LIBS and the HAVE_CUDA conditional. Links cudart and
# cuBLAS only (never -lcuda: a machine without a driver must still load the library).
AC_DEFUN([GPAR_CHECK_CUDA], [
AC_ARG_WITH([cuda],
  [AS_HELP_STRING([--with-cuda@<:@=DIR@:>@],
    [build the CUDA backend (cudart + cuBLAS) from the toolkit in DIR (default: $CUDA_HOME or /usr/local/cuda); default: build it when found])],
  [], [with_cuda=check])
AC_ARG_VAR([NVCCFLAGS], [flags for nvcc (accepted for build scripts; libgpar compiles no .cu files)])
gpar_have_cuda=no
gpar_cuda_status="not built (--without-cuda)"
gpar_cuda_distcheck=no
AS_IF([test "x$with_cuda" != xno], [
  AS_CASE([$with_cuda],
    [yes|check], [gpar_cuda_dir=${CUDA_HOME:-/usr/local/cuda}],
    [gpar_cuda_dir=$with_cuda])
  gpar_cuda_libdir=$gpar_cuda_dir/lib64
  AS_IF([test -d "$gpar_cuda_libdir"], [], [gpar_cuda_libdir=$gpar_cuda_dir/lib])
  gpar_save_CPPFLAGS=$CPPFLAGS; gpar_save_LDFLAGS=$LDFLAGS; gpar_save_LIBS=$LIBS
  CPPFLAGS="$CPPFLAGS -I$gpar_cuda_dir/include"
  LDFLAGS="$LDFLAGS -L$gpar_cuda_libdir"
  gpar_cuda_missing=
  AC_CHECK_HEADER([cuda_runtime_api.h], [], [gpar_cuda_missing="cuda_runtime_api.h (cudart headers)"])
  AS_IF([test -z "$gpar_cuda_missing"],
    [AC_CHECK_HEADER([cublas_v2.h], [], [gpar_cuda_missing="cublas_v2.h (cuBLAS headers)"])])
  AS_IF([test -z "$gpar_cuda_missing"],
    [AC_CHECK_LIB([cudart], [cudaGetDeviceCount], [], [gpar_cuda_missing="libcudart"])])
  AS_IF([test -z "$gpar_cuda_missing"],
    [AC_CHECK_LIB([cublas], [cublasCreate_v2], [], [gpar_cuda_missing="libcublas"], [-lcudart])])
  CPPFLAGS=$gpar_save_CPPFLAGS; LDFLAGS=$gpar_save_LDFLAGS; LIBS=$gpar_save_LIBS
  AS_IF([test -z "$gpar_cuda_missing"], [
    gpar_have_cuda=yes
    gpar_cuda_status="yes ($gpar_cuda_dir)"
    gpar_cuda_summary=" cuda"
    gpar_cuda_distcheck=$gpar_cuda_dir
    CUDA_CPPFLAGS="-I$gpar_cuda_dir/include"
    CUDA_LDFLAGS="-L$gpar_cuda_libdir -Wl,-rpath,$gpar_cuda_libdir"
    CUDA_LIBS="-lcublas -lcudart"
  ], [test "x$with_cuda" = xcheck], [
    gpar_cuda_status="not found ($gpar_cuda_missing missing in $gpar_cuda_dir)"
  ], [
    AC_MSG_ERROR([--with-cuda was given but $gpar_cuda_missing was not found in $gpar_cuda_dir. Install the CUDA toolkit (NVIDIA packages cuda-cudart-dev and libcublas-dev, or the full cuda-toolkit) or pass --with-cuda=DIR])
  ])
])
AC_SUBST([CUDA_CPPFLAGS])
AC_SUBST([CUDA_LDFLAGS])
AC_SUBST([CUDA_LIBS])
AM_CONDITIONAL([HAVE_CUDA], [test "x$gpar_have_cuda" = xyes])
])
