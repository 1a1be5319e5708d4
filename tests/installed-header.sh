#!/bin/sh
# installed-header.sh: gpar.h as a user includes it (no GPAR_BUILDING) compiles without a warning
# as C99, C11 and C++ (C++11, C++17), and gpar_transport.h alone as C11, under -Wall -Wextra
# -pedantic -Werror. The C++ cases skip when no C++ compiler runs. TAP. Usage:
# installed-header.sh DIR_WITH_GPAR_H (CC, CXX: compilers; default cc and c++). make check runs
# it through the generated tests/installed_header.tap.
set -u
inc=${1:?usage: installed-header.sh DIR_WITH_GPAR_H}
cc=${CC:-cc}
cxx=${CXX:-c++}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpar-hdr.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/use.c" <<'EOC'
/* Every kind of declaration in gpar.h used once, as a program would. */
#include <gpar.h>
#include <gpar.h> /* twice: the include guard works */
int gpar_header_use(void);
int gpar_header_use(void) {
  gpar_config cfg;
  gpar_device_props info;
  gpar_buffer buf = {0, 0};
  gpar_native nat;
  gpar_stats stats;
  gpar_config_init(&cfg);
  (void)info;
  (void)nat;
  (void)stats;
  (void)buf;
  return (int)GPAR_OK + (int)GPAR_NO_TRANS + GPAR_BACKEND_HOST + (gpar_strerror(GPAR_EINVAL) != 0);
}
EOC
cp "$tmp/use.c" "$tmp/use.cpp"
n=0
fails=0
echo "1..5"
try() { # try COMPILER LANGFLAGS FILE DESCRIPTION
  n=$((n + 1))
  if $1 $2 -Wall -Wextra -pedantic -Werror -I"$inc" -c "$3" -o "$tmp/out$n.o" >"$tmp/log$n" 2>&1; then
    echo "ok $n - $4 ($1 $2)"
  else
    echo "not ok $n - $4 ($1 $2)"
    sed 's/^/# /' "$tmp/log$n" | head -n 20
    fails=$((fails + 1))
  fi
}
try "$cc" "-std=c99 -Wstrict-prototypes -Wmissing-prototypes" "$tmp/use.c" "gpar.h as C99"
try "$cc" "-std=c11 -Wstrict-prototypes -Wmissing-prototypes" "$tmp/use.c" "gpar.h as C11"
if echo 'int main() { return 0; }' >"$tmp/probe.cpp" && $cxx -c "$tmp/probe.cpp" -o "$tmp/probe.o" >/dev/null 2>&1; then
  try "$cxx" "-std=c++11" "$tmp/use.cpp" "gpar.h as C++11"
  try "$cxx" "-std=c++17" "$tmp/use.cpp" "gpar.h as C++17"
else
  echo "ok 3 # SKIP no C++ compiler ($cxx)"
  echo "ok 4 # SKIP no C++ compiler ($cxx)"
  n=4
fi
printf '#include <gpar_transport.h>\n#include <gpar_transport.h>\nint gpar_transport_use(void);\nint gpar_transport_use(void) { return (int)GPAR_COLL_ALLREDUCE + (int)sizeof(gpar_coll); }\n' >"$tmp/tr.c"
try "$cc" "-std=c11 -Wstrict-prototypes -Wmissing-prototypes" "$tmp/tr.c" "gpar_transport.h alone as C11"
[ $fails = 0 ]
