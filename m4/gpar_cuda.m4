# gpar_cuda.m4: --with-cuda[=DIR]. Not given: detect in $CUDA_HOME or /usr/local/cuda and quietly
# leave the backend out when absent. Given: stop with an error naming what is missing.
# The toolkit comes from that one folder only: its headers and libraries must be files under
# DIR/include and DIR/lib64 (or DIR/lib) before the compile and link checks run, since those
# would also find a toolkit in the compiler's default paths (/usr/local/include, LIBRARY_PATH).
# Sets CUDA_CPPFLAGS, CUDA_LDFLAGS, CUDA_LIBS and the HAVE_CUDA conditional. Links cudart,
# cuBLAS and cublasLt only (never -lcuda: a machine without a driver must still load the library).
AC_DEFUN([GPAR_CHECK_CUDA], [
AC_ARG_WITH([cuda],
  [AS_HELP_STRING([--with-cuda@<:@=DIR@:>@],
    [build the CUDA backend (cudart + cuBLAS + cublasLt) from the toolkit in DIR (default: $CUDA_HOME or /usr/local/cuda); default: build it when found])],
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
  AC_MSG_CHECKING([for a CUDA toolkit in $gpar_cuda_dir])
  gpar_cuda_lib_found=no
  for gpar_f in "$gpar_cuda_libdir"/libcudart.so "$gpar_cuda_libdir"/libcudart.a; do
    AS_IF([test -f "$gpar_f"], [gpar_cuda_lib_found=yes])
  done
  gpar_cublas_lib_found=no
  for gpar_f in "$gpar_cuda_libdir"/libcublas.so "$gpar_cuda_libdir"/libcublas.a; do
    AS_IF([test -f "$gpar_f"], [gpar_cublas_lib_found=yes])
  done
  gpar_cublaslt_lib_found=no
  for gpar_f in "$gpar_cuda_libdir"/libcublasLt.so "$gpar_cuda_libdir"/libcublasLt.a; do
    AS_IF([test -f "$gpar_f"], [gpar_cublaslt_lib_found=yes])
  done
  AS_IF([test ! -d "$gpar_cuda_dir"], [gpar_cuda_missing="no such folder"],
    [test ! -f "$gpar_cuda_dir/include/cuda_runtime_api.h"],
      [gpar_cuda_missing="no include/cuda_runtime_api.h (cudart headers)"],
    [test ! -f "$gpar_cuda_dir/include/cublas_v2.h"], [gpar_cuda_missing="no include/cublas_v2.h (cuBLAS headers)"],
    [test "x$gpar_cuda_lib_found" = xno], [gpar_cuda_missing="no libcudart in lib64 or lib"],
    [test ! -f "$gpar_cuda_dir/include/cublasLt.h"], [gpar_cuda_missing="no include/cublasLt.h (cublasLt headers)"],
    [test "x$gpar_cublas_lib_found" = xno], [gpar_cuda_missing="no libcublas in lib64 or lib"],
    [test "x$gpar_cublaslt_lib_found" = xno], [gpar_cuda_missing="no libcublasLt in lib64 or lib"])
  AS_IF([test -z "$gpar_cuda_missing"], [AC_MSG_RESULT([yes])], [AC_MSG_RESULT([no: $gpar_cuda_missing])])
  AS_IF([test -z "$gpar_cuda_missing"],
    [AC_CHECK_HEADER([cuda_runtime_api.h], [], [gpar_cuda_missing="cuda_runtime_api.h does not compile"])])
  AS_IF([test -z "$gpar_cuda_missing"],
    [AC_CHECK_HEADER([cublas_v2.h], [], [gpar_cuda_missing="cublas_v2.h does not compile"])])
  AS_IF([test -z "$gpar_cuda_missing"],
    [AC_CHECK_HEADER([cublasLt.h], [], [gpar_cuda_missing="cublasLt.h does not compile"])])
  AS_IF([test -z "$gpar_cuda_missing"],
    [AC_CHECK_LIB([cudart], [cudaGetDeviceCount], [], [gpar_cuda_missing="libcudart does not link"])])
  AS_IF([test -z "$gpar_cuda_missing"],
    [AC_CHECK_LIB([cublas], [cublasCreate_v2], [], [gpar_cuda_missing="libcublas does not link"], [-lcudart])])
  AS_IF([test -z "$gpar_cuda_missing"],
    [AC_CHECK_LIB([cublasLt], [cublasLtMatmul], [], [gpar_cuda_missing="libcublasLt does not link"], [-lcudart])])
  CPPFLAGS=$gpar_save_CPPFLAGS; LDFLAGS=$gpar_save_LDFLAGS; LIBS=$gpar_save_LIBS
  AS_IF([test -z "$gpar_cuda_missing"], [
    gpar_have_cuda=yes
    gpar_cuda_status="yes ($gpar_cuda_dir)"
    gpar_cuda_summary=" cuda"
    gpar_cuda_distcheck=$gpar_cuda_dir
    CUDA_CPPFLAGS="-I$gpar_cuda_dir/include"
    CUDA_LDFLAGS="-L$gpar_cuda_libdir -Wl,-rpath,$gpar_cuda_libdir"
    CUDA_LIBS="-lcublas -lcublasLt -lcudart"
  ], [test "x$with_cuda" = xcheck], [
    gpar_cuda_status="not found in $gpar_cuda_dir ($gpar_cuda_missing)"
  ], [
    AC_MSG_ERROR([--with-cuda=$with_cuda: no usable CUDA toolkit in $gpar_cuda_dir ($gpar_cuda_missing). libgpar takes the toolkit from that folder only. Pass the toolkit's folder (the one holding include/cuda_runtime_api.h and lib64/libcudart.so), install the CUDA toolkit (NVIDIA packages cuda-cudart-dev and libcublas-dev), or use --without-cuda])
  ])
])
AC_SUBST([CUDA_CPPFLAGS])
AC_SUBST([CUDA_LDFLAGS])
AC_SUBST([CUDA_LIBS])
AM_CONDITIONAL([HAVE_CUDA], [test "x$gpar_have_cuda" = xyes])
])
