# gpar_opencl.m4: --with-opencl. Finds the ICD loader and CLBlast through pkg-config (modules
# OpenCL and clblast; clblast.pc does not require OpenCL, so both are named). Not given: detect
# and quietly leave the backend out. Given and missing: stop with the packages to install.
AC_DEFUN([GPAR_CHECK_OPENCL], [
AC_ARG_WITH([opencl],
  [AS_HELP_STRING([--with-opencl], [build the OpenCL backend (ICD loader + CLBlast); default: build it when found])],
  [], [with_opencl=check])
gpar_have_opencl=no
gpar_opencl_status="not built (--without-opencl)"
gpar_opencl_distcheck=no
AS_IF([test "x$with_opencl" != xno], [
  PKG_CHECK_MODULES([OPENCL], [OpenCL clblast], [
    gpar_save_CPPFLAGS=$CPPFLAGS
    CPPFLAGS="$CPPFLAGS $OPENCL_CFLAGS -DCL_TARGET_OPENCL_VERSION=120"
    AC_CHECK_HEADER([CL/cl.h], [gpar_have_opencl=yes], [gpar_opencl_missing="CL/cl.h (package opencl-c-headers)"])
    AS_IF([test "x$gpar_have_opencl" = xyes],
      [AC_CHECK_HEADER([clblast_c.h], [], [gpar_have_opencl=no; gpar_opencl_missing="clblast_c.h (package libclblast-dev)"])])
    CPPFLAGS=$gpar_save_CPPFLAGS
  ], [gpar_opencl_missing="pkg-config modules OpenCL and clblast ($OPENCL_PKG_ERRORS)"])
  AS_IF([test "x$gpar_have_opencl" = xyes], [
    gpar_opencl_status=yes
    gpar_opencl_summary=" opencl"
    gpar_opencl_distcheck=yes
  ], [test "x$with_opencl" = xcheck], [
    gpar_opencl_status="not found"
  ], [
    AC_MSG_ERROR([--with-opencl was given but $gpar_opencl_missing was not found. Install ocl-icd-opencl-dev, opencl-c-headers and libclblast-dev (Debian/Ubuntu), or set PKG_CONFIG_PATH])
  ])
])
AM_CONDITIONAL([HAVE_OPENCL], [test "x$gpar_have_opencl" = xyes])
])
