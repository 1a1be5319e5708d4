# gpar_nccl.m4: --with-nccl[=DIR]. NCCL carries collectives between CUDA devices.
# Not given: look in the CUDA toolkit's folder, then /usr (the GPU machine's image), quietly
# leaving NCCL out when absent (CUDA collectives are then staged through host memory).
# Given: stop with an error naming what is missing. Needs the CUDA backend.
# Sets NCCL_CPPFLAGS, NCCL_LDFLAGS, NCCL_LIBS, gpar_nccl_status and the HAVE_NCCL conditional.
AC_DEFUN([GPAR_CHECK_NCCL], [
AC_ARG_WITH([nccl],
  [AS_HELP_STRING([--with-nccl@<:@=DIR@:>@],
    [NCCL for collectives between CUDA devices, from DIR (with include/nccl.h and lib64/ or lib/ or lib/x86_64-linux-gnu/libnccl.so); default: the CUDA toolkit's folder, then /usr, when found])],
  [], [with_nccl=check])
gpar_have_nccl=no
gpar_nccl_status="not built (--without-nccl)"
AS_IF([test "x$with_nccl" != xno], [
  AS_IF([test "x$gpar_have_cuda" != xyes], [
    AS_IF([test "x$with_nccl" = xcheck], [gpar_nccl_status="not built (no CUDA backend)"],
      [AC_MSG_ERROR([--with-nccl needs the CUDA backend, which is not built ($gpar_cuda_status)])])
  ], [
    AS_CASE([$with_nccl],
      [yes|check], [gpar_nccl_dirs="$gpar_cuda_dir /usr"],
      [gpar_nccl_dirs=$with_nccl])
    AC_MSG_CHECKING([for NCCL])
    gpar_nccl_found=
    for gpar_d in $gpar_nccl_dirs; do
      test -f "$gpar_d/include/nccl.h" || continue
      for gpar_l in "$gpar_d/lib64" "$gpar_d/lib" "$gpar_d/lib/x86_64-linux-gnu" "$gpar_d/lib/aarch64-linux-gnu"; do
        AS_IF([test -z "$gpar_nccl_found" && test -f "$gpar_l/libnccl.so"], [
          gpar_nccl_found=$gpar_d
          gpar_nccl_libdir=$gpar_l
        ])
      done
      test -n "$gpar_nccl_found" && break
    done
    AS_IF([test -n "$gpar_nccl_found"], [
      AC_MSG_RESULT([$gpar_nccl_found])
      gpar_save_CPPFLAGS=$CPPFLAGS; gpar_save_LDFLAGS=$LDFLAGS; gpar_save_LIBS=$LIBS
      CPPFLAGS="$CPPFLAGS $CUDA_CPPFLAGS -I$gpar_nccl_found/include"
      LDFLAGS="$LDFLAGS $CUDA_LDFLAGS -L$gpar_nccl_libdir"
      AC_CHECK_LIB([nccl], [ncclCommInitAll], [], [gpar_nccl_found=], [-lcudart])
      CPPFLAGS=$gpar_save_CPPFLAGS; LDFLAGS=$gpar_save_LDFLAGS; LIBS=$gpar_save_LIBS
    ], [AC_MSG_RESULT([no])])
    AS_IF([test -n "$gpar_nccl_found"], [
      gpar_have_nccl=yes
      gpar_nccl_status="yes ($gpar_nccl_found)"
      # -isystem: nccl.h has old-style declarations that -Wstrict-prototypes would flag.
      AS_IF([test "x$gpar_nccl_found" = x/usr], [NCCL_CPPFLAGS=], [NCCL_CPPFLAGS="-isystem $gpar_nccl_found/include"])
      NCCL_LDFLAGS="-L$gpar_nccl_libdir -Wl,-rpath,$gpar_nccl_libdir"
      NCCL_LIBS="-lnccl"
    ], [test "x$with_nccl" = xcheck], [
      gpar_nccl_status="not found in $gpar_nccl_dirs (CUDA collectives staged through host memory)"
    ], [
      AC_MSG_ERROR([--with-nccl=$with_nccl: no usable NCCL (include/nccl.h and libnccl.so) in $gpar_nccl_dirs. Install NCCL (NVIDIA packages libnccl2 and libnccl-dev) or pass --with-nccl=DIR])
    ])
  ])
])
AC_SUBST([NCCL_CPPFLAGS])
AC_SUBST([NCCL_LDFLAGS])
AC_SUBST([NCCL_LIBS])
AM_CONDITIONAL([HAVE_NCCL], [test "x$gpar_have_nccl" = xyes])
])
