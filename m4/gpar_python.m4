# gpar_python.m4: the Python front (python/): a C extension module on Python's stable ABI
# (Py_LIMITED_API 3.9), built with libtool as a module and installed into pyexecdir beside the
# gpar package (pythondir), as libxml2 and gpgme do with AM_PATH_PYTHON.
# --enable-python: required (configure fails without Python >= 3.9 and its headers);
# --disable-python: off; neither: on when both are found. A sanitizer build leaves it off unless
# asked for, since an interpreter that is not itself instrumented cannot load the module, and
# a build without shared libraries leaves it off.
AC_DEFUN([GPAR_CHECK_PYTHON], [
AC_ARG_ENABLE([python], [AS_HELP_STRING([--enable-python],
  [build the Python module gpar (default: when Python >= 3.9 and its headers are found)])],
  [], [enable_python=auto])
gpar_have_python=no
gpar_python_status="no (--disable-python)"
AS_IF([test "x$enable_python" = xauto && test -n "$SAN_FLAGS"],
  [enable_python=no
   gpar_python_status="no (a sanitizer build; --enable-python to force)"])
# A Python module is a shared object: a build without shared libraries has none.
AS_IF([test "x$enable_shared" = xno],
  [AS_IF([test "x$enable_python" = xyes],
     [AC_MSG_ERROR([--enable-python needs shared libraries (drop --disable-shared)])])
   enable_python=no
   gpar_python_status="no (--disable-shared: a Python module is a shared object)"])
AS_IF([test "x$enable_python" != xno], [
  AM_PATH_PYTHON([3.9], [gpar_python_found=yes], [gpar_python_found=no])
  AS_IF([test "x$gpar_python_found" = xyes], [
    AC_MSG_CHECKING([for the include folder of $PYTHON])
    PYTHON_INCLUDE=`$PYTHON -c 'import sysconfig; print(sysconfig.get_paths()[["include"]])' 2>/dev/null`
    AC_MSG_RESULT([${PYTHON_INCLUDE:-none}])
    gpar_save_CPPFLAGS=$CPPFLAGS
    CPPFLAGS="$CPPFLAGS -I$PYTHON_INCLUDE"
    AC_CHECK_HEADER([Python.h], [gpar_have_python=yes], [], [[#define Py_LIMITED_API 0x03090000]])
    CPPFLAGS=$gpar_save_CPPFLAGS
  ])
  AS_IF([test "x$gpar_have_python" = xyes],
    [PYTHON_CPPFLAGS="-I$PYTHON_INCLUDE"
     gpar_python_status="yes (Python $PYTHON_VERSION, module in $pyexecdir)"],
    [test "x$enable_python" = xyes],
    [AC_MSG_ERROR([--enable-python: Python >= 3.9 with its headers not found (install python3-dev)])],
    [gpar_python_status="no (Python >= 3.9 with its headers not found: install python3-dev)"])
])
AC_SUBST([PYTHON_CPPFLAGS])
AM_CONDITIONAL([HAVE_PYTHON], [test "x$gpar_have_python" = xyes])
])
