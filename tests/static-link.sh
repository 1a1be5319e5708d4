#!/bin/sh
# static-link.sh: `pkg-config --static --libs gpar` lists what a static link of libgpar.a needs
# (the static-link convention). Builds the library alone with --enable-static (the default build is shared-only)
# in a scratch folder, installs it under a scratch prefix, removes the shared library there so
# that -lgpar can only mean libgpar.a, then links and runs a program with exactly the flags
# pkg-config gives. Speaks TAP. Usage: tests/static-link.sh [SRCDIR] [configure args...]
# (SRCDIR: the folder holding configure; default: .. of this script). About a minute.
set -u
here=$(cd "$(dirname "$0")" && pwd)
srcdir=$(cd "${1:-$here/..}" && pwd)
[ $# -gt 0 ] && shift
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpar-static.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
echo "1..3"
fail() { echo "not ok $1 - $2"; tail -n 20 "$3" | sed 's/^/# /'; exit 1; }
cd "$tmp" || exit 1
if "$srcdir/configure" --enable-static --prefix="$tmp/inst" "$@" >configure.log 2>&1 &&
  make -j2 libgpar.la >make.log 2>&1 &&
  make install-libLTLIBRARIES install-includeHEADERS install-pkgconfigDATA >install.log 2>&1 &&
  [ -f "$tmp/inst/lib/libgpar.a" ]; then
  echo "ok 1 - libgpar.a built and installed ($(sed -n 's/^ *backends built: *//p' configure.log))"
else
  cat make.log install.log >>configure.log 2>/dev/null
  fail 1 "libgpar.a built and installed" configure.log
fi
export PKG_CONFIG_PATH="$tmp/inst/lib/pkgconfig"
cat >prog.c <<'EOC'
#include <stdio.h>
#include <gpar.h>
int main(void) {
  gpar_engine *eng = NULL;
  gpar_config cfg;
  gpar_config_init(&cfg);
  cfg.quiet = 1;
  if (gpar_init(&eng, &cfg) != GPAR_OK) return 1;
  int n = gpar_device_count(eng);
  printf("devices %d:", n);
  for (int i = 0; i < n; i++) {
    gpar_device_props p;
    if (gpar_device_info(eng, i, &p) == GPAR_OK) printf(" %s", p.backend);
  }
  printf("\n");
  return gpar_shutdown(eng) == GPAR_OK ? 0 : 1;
}
EOC
# The same program linked shared: the device count the static one must match (every backend).
# shellcheck disable=SC2046
${CC:-cc} -std=c99 -o prog-shared prog.c $(pkg-config --cflags --libs gpar) -Wl,-rpath,"$tmp/inst/lib" >link.log 2>&1 &&
  ./prog-shared >run-shared.log 2>&1 || fail 2 "the program links and runs against libgpar.so" link.log
rm -f "$tmp"/inst/lib/libgpar.so*
flags=$(pkg-config --static --cflags --libs gpar) || fail 2 "pkg-config --static --libs gpar" configure.log
echo "# pkg-config --static --cflags --libs gpar: $flags"
# shellcheck disable=SC2086
if ${CC:-cc} -std=c99 -o prog prog.c $flags >link.log 2>&1; then
  echo "ok 2 - a program links against libgpar.a with exactly those flags"
else
  fail 2 "a program links against libgpar.a with exactly those flags" link.log
fi
if ./prog >run.log 2>&1 && cmp -s run.log run-shared.log; then
  echo "ok 3 - and runs with every backend the shared library has ($(cat run.log))"
else
  echo "static: $(cat run.log); shared: $(cat run-shared.log)" >>run.log
  fail 3 "and runs with every backend the shared library has" run.log
fi
