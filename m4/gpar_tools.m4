# gpar_tools.m4: what the tools (tools/) need beyond the library: jansson for
# `gpar-bench report` (optional: without it that subcommand says it was not built), help2man
# for the man pages (optional: the dist tarball carries them), and the CLBlast version that
# benchmark records carry (pkg-config; the library has no call that returns it).
AC_DEFUN([GPAR_CHECK_TOOLS], [
PKG_CHECK_MODULES([JANSSON], [jansson], [gpar_have_jansson=yes], [gpar_have_jansson=no])
AS_IF([test "x$gpar_have_jansson" = xyes],
  [gpar_report_status="yes (jansson $($PKG_CONFIG --modversion jansson))"],
  [gpar_report_status="not built: jansson not found (install libjansson-dev)"
   AC_MSG_WARN([jansson not found: `gpar-bench report' will not be built (install libjansson-dev)])])
AM_CONDITIONAL([HAVE_JANSSON], [test "x$gpar_have_jansson" = xyes])
AC_CHECK_PROGS([HELP2MAN], [help2man], [])
AS_IF([$PKG_CONFIG --exists clblast 2>/dev/null],
  [AC_DEFINE_UNQUOTED([GPAR_CLBLAST_VERSION], ["$($PKG_CONFIG --modversion clblast)"],
    [CLBlast version found by pkg-config])])
])
