# gpar_mpi.m4: --with-mpi: build libgpar_mpi. Not given: build it when an MPI C compiler
# wrapper's flags or pkg-config's mpi-c / ompi-c are found. --with-mpi: stop with an error when
# not found. Sets MPI_CFLAGS, MPI_LIBS, MPIRUN and the HAVE_MPI conditional.
AC_DEFUN([GPAR_CHECK_MPI], [
AC_ARG_WITH([mpi],
  [AS_HELP_STRING([--with-mpi], [build libgpar_mpi (collectives and messages across processes and hosts); default: when MPI is found])],
  [], [with_mpi=check])
AC_ARG_VAR([MPICC], [MPI C compiler wrapper whose flags libgpar_mpi uses (default: mpicc)])
gpar_have_mpi=no
gpar_mpi_status="not built (--without-mpi)"
AS_IF([test "x$with_mpi" != xno], [
  # Candidates, first that links wins: the MPI compiler wrapper's own flags (authoritative, and
  # immune to PKG_CONFIG_SYSROOT_DIR, which the GPU machine's OpenCL set-up exports and which
  # breaks ompi-c's paths there), then pkg-config's ompi-c and mpi-c.
  AC_PATH_PROGS([MPICC], [mpicc], [])
  gpar_mpi_try() {
    gpar_save_CPPFLAGS=$CPPFLAGS; gpar_save_LIBS=$LIBS
    CPPFLAGS="$CPPFLAGS $[]1"; LIBS="$LIBS $[]2"
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]],
      [[int p; MPI_Init_thread(0, 0, MPI_THREAD_MULTIPLE, &p); MPI_Request r; MPI_Iallreduce(MPI_IN_PLACE, &p, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r);]])],
      [gpar_mpi_ok=yes], [gpar_mpi_ok=no])
    CPPFLAGS=$gpar_save_CPPFLAGS; LIBS=$gpar_save_LIBS
    test "x$gpar_mpi_ok" = xyes
  }
  AC_MSG_CHECKING([for MPI flags that link])
  gpar_mpi_from=
  AS_IF([test -n "$MPICC"], [
    gpar_c=`$MPICC --showme:compile 2>/dev/null || $MPICC -compile_info 2>/dev/null | cut -d' ' -f2-`
    gpar_l=`$MPICC --showme:link 2>/dev/null || $MPICC -link_info 2>/dev/null | cut -d' ' -f2-`
    AS_IF([gpar_mpi_try "$gpar_c" "$gpar_l"], [MPI_CFLAGS=$gpar_c; MPI_LIBS=$gpar_l; gpar_mpi_from="$MPICC"])
  ])
  for gpar_m in ompi-c mpi-c; do
    AS_IF([test -z "$gpar_mpi_from" && test -n "$PKG_CONFIG" && $PKG_CONFIG --exists $gpar_m 2>/dev/null], [
      gpar_c=`$PKG_CONFIG --cflags $gpar_m`; gpar_l=`$PKG_CONFIG --libs $gpar_m`
      AS_IF([gpar_mpi_try "$gpar_c" "$gpar_l"], [MPI_CFLAGS=$gpar_c; MPI_LIBS=$gpar_l; gpar_mpi_from="pkg-config $gpar_m"])
    ])
  done
  AS_IF([test -n "$gpar_mpi_from"], [gpar_have_mpi=yes; AC_MSG_RESULT([yes ($gpar_mpi_from)])], [AC_MSG_RESULT([no])])
  AC_PATH_PROGS([MPIRUN], [mpirun mpiexec], [])
  AS_IF([test "x$gpar_have_mpi" = xyes], [gpar_mpi_status="yes (libgpar_mpi; tests run with ${MPIRUN:-no mpirun})"],
    [test "x$with_mpi" = xcheck], [gpar_mpi_status="not found (libgpar_mpi not built)"],
    [AC_MSG_ERROR([--with-mpi was given but no usable MPI was found. Install Open MPI (Debian: openmpi-bin libopenmpi-dev) or set MPICC])])
])
AC_SUBST([MPI_CFLAGS])
AC_SUBST([MPI_LIBS])
AC_SUBST([MPIRUN])
AM_CONDITIONAL([HAVE_MPI], [test "x$gpar_have_mpi" = xyes])
])
