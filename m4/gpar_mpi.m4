# gpar_mpi.m4: --with-mpi: build libgpar_mpi (issue 15). Not given: build it when an MPI C
# compiler wrapper's flags or pkg-config's mpi-c / ompi-c are found. --with-mpi: stop with an
# error when not found. Sets MPI_CFLAGS, MPI_LIBS, MPIRUN and the HAVE_MPI conditional.
AC_DEFUN([GPAR_CHECK_MPI], [
AC_ARG_WITH([mpi],
  [AS_HELP_STRING([--with-mpi], [build libgpar_mpi (collectives and messages across processes and hosts); default: when MPI is found])],
  [], [with_mpi=check])
AC_ARG_VAR([MPICC], [MPI C compiler wrapper whose flags libgpar_mpi uses (default: mpicc)])
gpar_have_mpi=no
gpar_mpi_status="not built (--without-mpi)"
AS_IF([test "x$with_mpi" != xno], [
  PKG_CHECK_MODULES([MPI], [ompi-c], [gpar_have_mpi=yes],
    [PKG_CHECK_MODULES([MPI], [mpi-c], [gpar_have_mpi=yes], [
      AC_PATH_PROGS([MPICC], [mpicc], [])
      AS_IF([test -n "$MPICC"], [
        MPI_CFLAGS=`$MPICC --showme:compile 2>/dev/null || $MPICC -compile_info 2>/dev/null | cut -d' ' -f2-`
        MPI_LIBS=`$MPICC --showme:link 2>/dev/null || $MPICC -link_info 2>/dev/null | cut -d' ' -f2-`
        gpar_have_mpi=yes
      ])
    ])])
  AS_IF([test "x$gpar_have_mpi" = xyes], [
    gpar_save_CPPFLAGS=$CPPFLAGS; gpar_save_LIBS=$LIBS
    CPPFLAGS="$CPPFLAGS $MPI_CFLAGS"; LIBS="$LIBS $MPI_LIBS"
    AC_MSG_CHECKING([whether MPI programs link])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]],
      [[int p; MPI_Init_thread(0, 0, MPI_THREAD_MULTIPLE, &p); MPI_Request r; MPI_Iallreduce(MPI_IN_PLACE, &p, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r);]])],
      [AC_MSG_RESULT([yes])], [AC_MSG_RESULT([no]); gpar_have_mpi=no])
    CPPFLAGS=$gpar_save_CPPFLAGS; LIBS=$gpar_save_LIBS
  ])
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
