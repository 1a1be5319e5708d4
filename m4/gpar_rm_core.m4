# gpar_rm_core.m4: GPAR_RM_CORE_DIR, the one workaround libgpar's configure carries for autoconf.
# Autoconf cleans up after each test program, and at exit, with `rm -f core ...` (core dumps).
# In libgpar's source tree, and in a build tree once config.status made its folders, `core` is
# the core/ folder (the device-neutral core: a name the design keeps), and rm printed "cannot
# remove 'core': Is a directory" (the exit trap's cleanup of conftest files even stopped there).
# The macro shadows rm for the rest of configure with a shell function that leaves out that word
# alone while it names a folder; every other rm runs as written. Should autoconf stop cleaning up
# with `rm -f core', configure says so, and the macro can go.
AC_DEFUN([GPAR_RM_CORE_DIR], [
rm () {
  if test "x$[]1" = x-f && test "x$[]2" = xcore && test -d core; then shift 2; command rm -f "$[]@"
  else command rm "$[]@"; fi
}
AS_IF([grep 'rm -f core' "$as_myself" >/dev/null 2>&1], [],
  [AC_MSG_WARN([autoconf no longer cleans up with `rm -f core': the rm function of m4/gpar_rm_core.m4 can go])])
])
