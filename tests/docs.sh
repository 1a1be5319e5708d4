#!/bin/sh
# docs.sh: what the documentation promises about itself. (1) README.md names every GPAR_*
# environment variable the library reads (each getenv("GPAR_...") in core/, backends/ and mpi/);
# (2) README.md stays short enough for a newcomer (at most 400 lines); (3) gpar.h has its table
# of contents and one banner per listed section, and declares no transport type or call (those
# are in gpar_transport.h); (4) the kernel dialect's manual page renders and documents the
# dialect (skipped without man or groff). TAP. Usage: docs.sh SRCDIR.
# Mutant: a getenv("GPAR_NEWVAR") added to core/ (or a variable's row taken out of README.md):
# "not ok 1 - README.md names every GPAR_* variable: missing GPAR_NEWVAR".
set -u
src=${1:?usage: docs.sh SRCDIR}
n=0 bad=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); bad=$((bad + 1)); echo "not ok $n - $1"; }
vars=$(grep -rhoE 'getenv\("GPAR_[A-Z0-9_]+"' "$src/core" "$src/backends" "$src/mpi" | sed 's/getenv("//; s/"//' | sort -u)
missing=
for v in $vars; do grep -q "\`$v[=\`]" "$src/README.md" || missing="$missing $v"; done
if [ -z "$missing" ] && [ -n "$vars" ]; then
  ok "README.md names every GPAR_* variable the library reads ($(echo $vars | wc -w))"
else
  notok "README.md names every GPAR_* variable:${missing:- none found in the sources}"
fi
lines=$(wc -l <"$src/README.md")
if [ "$lines" -le 400 ]; then ok "README.md is $lines lines (at most 400)"; else notok "README.md is $lines lines (over 400)"; fi
h=$src/include/gpar.h
toc=$(sed -n '/Contents (each a section below):/,/\*\//p' "$h" | grep -cE '^ \* +[0-9]+\. ')
secs=$(grep -cE '^ \* [0-9]+\. ' "$h")
if [ "$toc" -ge 10 ] && [ "$secs" -eq "$toc" ]; then
  ok "gpar.h: a table of contents of $toc sections, each with its banner"
else
  notok "gpar.h: $toc sections in the contents, $secs section banners"
fi
if grep -qE 'gpar_comm_transport|gpar_coll\b|gpar_coll_kind|GPAR_COLL_' "$h"; then
  notok "gpar.h declares transport types or calls (they belong in gpar_transport.h)"
else
  ok "gpar.h declares no transport type or call; gpar_transport.h: $(grep -c GPAR_API "$src/include/gpar_transport.h") calls"
fi
man=$src/man/gpar-kernel.7
if command -v man >/dev/null 2>&1; then
  out=$(MANWIDTH=100 man -l "$man" 2>/dev/null)
elif command -v groff >/dev/null 2>&1; then
  out=$(groff -man -Tutf8 -P-cbou "$man" 2>/dev/null)
else
  out=
fi
if [ -n "$out" ] && ! echo "$out" | grep -q '^NAME'; then # a stub man (a minimized system)
  first=$(echo "$out" | head -1)
  out=$(groff -man -Tutf8 -P-cbou "$man" 2>/dev/null) || out=
  [ -n "$out" ] || why="man here renders no page (it says: $first), and no groff"
fi
if [ -z "$out" ]; then
  echo "ok $((n + 1)) - # SKIP ${why:-neither man nor groff renders man pages here}"
  n=$((n + 1))
elif echo "$out" | grep -q 'GPAR_GLOBAL_ID' && echo "$out" | grep -q 'WHAT A BUILD MAY READ'; then
  ok "man/gpar-kernel.7 renders, with the dialect and what a build may read"
else
  notok "man/gpar-kernel.7 does not render the dialect"
fi
echo "1..$n"
[ "$bad" -eq 0 ]
