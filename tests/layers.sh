#!/bin/sh
# tests/layers.sh SRCDIR BUILDDIR: the layers of core/ hold (TAP). Layers, bottom first:
#   0 base       core/backend.h (with backend_blas.h, backend_kernel.h, backend_dtype.h), core/error.c, core/clock.c,
#                core/dtype.c, and the backends (backends/*)
#   1 engine     core/engine/
#   2 api        core/api/
#   3 graph|comm|kernel  core/graph/, core/comm/ and core/kernel/ (siblings: none uses another)
#   4 array      core/array/ (array ops, above the kernels)
#   5 lifecycle  core/lifecycle/
# A file may use its own layer and the ones below only. The checks:
#  1. includes: every #include "..." of a core/ or backends/ file names a header of its own
#     layer or below (a backend includes only backend.h, gpar.h and its own folder's headers);
#     no core/ file includes a vendor header (CUDA, OpenCL, NCCL, MPI);
#  2. symbols: no object of a layer refers (nm -u) to a symbol that an object of a higher or
#     sibling layer defines, so no call goes up however it is spelled;
#  3. the engine names no kind of op: no engine file mentions an op kind's argument type;
#  4. inside a backend folder (or mpi/) that lists its files in layers, no file calls or includes
#     one listed above it;
#  5. inside core/engine/, core/kernel/ and core/array/, the same for their floors (engine.h,
#     kernel.h and array.h list them), includes and calls.
#  6. tools/ uses libgpar's public headers only (below); 7. so does python/ext/.
set -u
src=${1:?srcdir}
build=${2:?builddir}
n=0
fails=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; }

# Rank of a source path or of an include name as written in core/ (e.g. "engine/engine.h").
rank_of() {
  case $1 in
  core/backend.h | core/backend_blas.h | core/backend_kernel.h | core/backend_dtype.h | core/error.c | core/clock.c | core/dtype.c | \
    backend.h | backend_blas.h | backend_kernel.h | backend_dtype.h | \
    backends/*) echo 0 ;;
  core/engine/* | engine/*) echo 1 ;;
  core/api/* | api/*) echo 2 ;;
  core/graph/* | graph/*) echo 3g ;;
  core/comm/* | comm/*) echo 3c ;;
  core/kernel/* | kernel/*) echo 3k ;;
  core/array/* | array/*) echo 4 ;;
  core/lifecycle/* | lifecycle/*) echo 5 ;;
  *) echo none ;;
  esac
}
# May layer $1 use layer $2?
may_use() {
  case $1$2 in
  3g3c | 3c3g | 3g3k | 3k3g | 3c3k | 3k3c | none* | *none) return 1 ;;
  esac
  a=$(echo "$1" | tr -d gck)
  b=$(echo "$2" | tr -d gck)
  [ "$b" -le "$a" ]
}

# 1. includes
bad=""
cd "$src" || exit 1
for f in core/backend.h core/backend_blas.h core/backend_kernel.h core/backend_dtype.h core/error.c core/clock.c core/dtype.c \
  core/*/*.c core/*/*.h; do
  [ -f "$f" ] || continue
  me=$(rank_of "$f")
  for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
    case $inc in gpar.h | gpar_transport.h) continue ;; esac # the public headers
    them=$(rank_of "$inc")
    if [ "$them" = none ]; then
      bad="$bad $f:$inc(unknown)"
    elif ! may_use "$me" "$them"; then
      bad="$bad $f:$inc"
    fi
  done
  if grep -Eq '^[[:space:]]*#[[:space:]]*include[[:space:]]*<(cuda|cublas|CL/|clblast|nccl|mpi)' "$f"; then
    bad="$bad $f:vendor-header"
  fi
done
for f in backends/*/*.c backends/*/*.h; do
  [ -f "$f" ] || continue
  dir=$(dirname "$f")
  for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
    case $inc in
    gpar.h | backend.h) ;;
    *) [ -f "$dir/$inc" ] || bad="$bad $f:$inc" ;;
    esac
  done
done
if [ -z "$bad" ]; then ok "every include of core/ and backends/ names its own layer or one below"
else notok "includes that go up a layer:$bad"; fi

# 2. symbols, from the objects of the build (libtool keeps PIC objects in .libs/). An object's
# source: its folder without .libs/, its name without the "<library>_la-" prefix, .c for .o;
# objects whose source no longer exists (left by an older build) are skipped.
source_of() {
  d=$(dirname "$1" | sed 's|/\.libs$||; s|^\./||')
  b=$(basename "$1" .o | sed 's/^[a-z_]*_la-//')
  echo "$d/$b.c"
}
cd "$build" || exit 1
objs=""
for o in $(find core backends -name '*.o' 2>/dev/null | sort); do
  [ -f "$src/$(source_of "$o")" ] && objs="$objs $o"
done
if [ -z "$objs" ]; then
  notok "no objects under $build/core: build first"
else
  tmp=${TMPDIR:-/tmp}/gpar-layers.$$
  mkdir -p "$tmp"
  : >"$tmp/defs"
  for o in $objs; do
    r=$(rank_of "$(source_of "$o")")
    nm --defined-only -g "$o" 2>/dev/null | awk -v r="$r" -v o="$o" 'NF==3 {print $3, r, o}' >>"$tmp/defs"
  done
  bad=""
  for o in $objs; do
    me=$(rank_of "$(source_of "$o")")
    for sym in $(nm -u "$o" 2>/dev/null | awk '{print $2}' | grep '^gpar'); do
      line=$(grep -m1 "^$sym " "$tmp/defs") || continue
      them=$(echo "$line" | awk '{print $2}')
      may_use "$me" "$them" || bad="$bad $(basename "$o"):$sym($(echo "$line" | awk '{print $3}'))"
    done
  done
  rm -rf "$tmp"
  if [ -z "$bad" ]; then ok "no object calls a function of a higher or sibling layer ($(echo $objs | wc -w) objects)"
  else notok "calls that go up a layer:$bad"; fi
fi

erank() { # rank of a file name (x.c or x.h) in $eorder, or none
  i=0
  for f in $eorder; do
    i=$((i + 1))
    if [ "$f" = "$1" ] || [ "${f%.[ch]}" = "${1%.[ch]}" ]; then echo "$i"; return; fi
  done
  echo none
}
# The file list of a header's "Layers (bottom first):" line, with the comment lines after it that
# hold only more file names (a list longer than a line).
layers_line() {
  awk '/Layers \(bottom first\):/ { sub(/.*Layers \(bottom first\): */, ""); list = $0; on = 1; next }
       on && /^ \*  *[A-Za-z0-9_.]+\.[ch]( [A-Za-z0-9_.]+\.[ch])* *$/ { sub(/^ \* */, ""); list = list " " $0; next }
       on { print list; exit }' "$1"
}
# 4. inside a backend folder (or mpi/) whose private header lists its files ("Layers (bottom
# first): a.c b.c ..."), no object refers to a symbol defined by a file listed after its own,
# every file is listed and none includes a header listed after it.
cd "$build" || exit 1
for hdr in "$src"/backends/*/*_internal.h "$src"/mpi/*_internal.h; do
  order=$(layers_line "$hdr")
  [ -n "$order" ] || continue
  dir=${hdr#"$src"/}
  dir=${dir%/*}
  bad=""
  i=0
  for f in $order; do
    i=$((i + 1))
    o=$(find "$dir" -name "*_la-${f%.c}.o" 2>/dev/null | head -1)
    [ -n "$o" ] || continue
    j=0
    for g in $order; do
      j=$((j + 1))
      [ "$j" -gt "$i" ] || continue
      og=$(find "$dir" -name "*_la-${g%.c}.o" 2>/dev/null | head -1)
      [ -n "$og" ] || continue
      for sym in $(nm -u "$o" | awk '{print $2}'); do
        nm --defined-only -g "$og" | awk '{print $3}' | grep -qx "$sym" && bad="$bad $f:$sym($g)"
      done
    done
  done
  if [ -z "$bad" ]; then ok "$dir: no file calls a file listed above it ($order)"
  else notok "$dir: calls up the folder's layers:$bad"; fi
  # Its includes: every file but the private header is listed, and includes no header of the
  # folder listed after it (the private header is the folder's, for all).
  eorder=$order
  bad=""
  for f in "$src/$dir"/*.c "$src/$dir"/*.h; do
    [ -f "$f" ] && [ "$f" != "$hdr" ] || continue
    b=$(basename "$f")
    me=$(erank "$b")
    if [ "$me" = none ]; then bad="$bad $b:unranked"; continue; fi
    for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
      [ -f "$src/$dir/$inc" ] && [ "$src/$dir/$inc" != "$hdr" ] || continue
      them=$(erank "$inc")
      if [ "$them" = none ] || [ "$them" -gt "$me" ]; then bad="$bad $b:$inc"; fi
    done
  done
  if [ -z "$bad" ]; then ok "$dir: every file listed, no include of a header listed above it"
  else notok "$dir: includes up the folder's layers:$bad"; fi
done

# 5. inside each core/ folder with a map (its header lists its files bottom first: "Layers
# (bottom first): spin.h clock.c ..."; a header ranks with the .c file of its name, or by its
# own name): every file of the folder is ranked, no file includes a header of a higher rank,
# and no object refers to a symbol that a higher file defines. engine.h, the engine's map, is
# for the layers above (no engine file includes it); kernel.h and array.h are their folders'
# shared headers, which every file of the folder includes.
floors() { # floors MAP CLOSED: MAP core/x/x.h; CLOSED 1 when no file of the folder may include MAP
  map=$1
  closed=$2
  fdir=$(dirname "$map")
  short=${fdir#core/}
  cd "$src" || exit 1
  eorder=$(layers_line "$map")
  bad=""
  [ -n "$eorder" ] || bad=" $map:no-Layers-line"
  for f in "$fdir"/*.c "$fdir"/*.h; do
    [ -f "$f" ] || continue
    b=$(basename "$f")
    [ "$f" = "$map" ] && continue
    me=$(erank "$b")
    if [ "$me" = none ]; then bad="$bad $b:unranked"; continue; fi
    for inc in $(sed -n "s/^[[:space:]]*#[[:space:]]*include[[:space:]]*\"$short\/\([^\"]*\)\".*/\1/p" "$f"); do
      if [ "$fdir/$inc" = "$map" ]; then
        [ "$closed" = 1 ] && bad="$bad $b:$inc"
        continue
      fi
      them=$(erank "$inc")
      if [ "$them" = none ] || [ "$them" -gt "$me" ]; then bad="$bad $b:$inc"; fi
    done
  done
  if [ -z "$bad" ]; then ok "$fdir: every file ranked, no include of a higher floor ($(echo $eorder | wc -w) floors)"
  else notok "$fdir: includes up its floors:$bad"; fi
  cd "$build" || exit 1
  # One line per defined symbol ("D sym file") and per use ("U sym file"), joined in one awk.
  bad=$(for o in $(find "$fdir" -name '*.o' 2>/dev/null | sort); do
    f=$(basename "$(source_of "$o")")
    [ -f "$src/$fdir/$f" ] || continue
    nm --defined-only -g "$o" | awk -v f="$f" 'NF==3 {print "D", $3, f}'
    nm -u "$o" | awk -v f="$f" '$2 ~ /^gpar/ {print "U", $2, f}'
  done | awk -v order="$eorder" '
    function rank(n, k) { k = n; sub(/\.[ch]$/, "", k); return (k in r) ? r[k] : 0 }
    BEGIN { m = split(order, o, " "); for (i = 1; i <= m; i++) { k = o[i]; sub(/\.[ch]$/, "", k); r[k] = i } }
    $1 == "D" { def[$2] = $3; next }
    { use[++n] = $2 " " $3 }
    END { for (i = 1; i <= n; i++) { split(use[i], u, " "); if (!(u[1] in def)) continue
            d = def[u[1]]; if (!rank(u[2]) || !rank(d) || rank(d) > rank(u[2])) printf " %s:%s(%s)", u[2], u[1], d } }')
  if [ -z "$bad" ]; then ok "$fdir: no file calls a file of a higher floor"
  else notok "$fdir: calls up its floors:$bad"; fi
}
floors core/engine/engine.h 1
floors core/kernel/kernel.h 0
floors core/array/array.h 0

# 3. the engine names no kind
cd "$src" || exit 1
hits=$(grep -nE 'gpar__(copy|gemm|coll|reduce)_args|GPAR__COPY_|gpar__graph|gpar__comm|gpar__k(ernel|launch|param|arg)' core/engine/*.c core/engine/*.h 2>/dev/null)
if [ -z "$hits" ]; then ok "no engine file names an op kind (argument types, copy kinds, graphs, communicators, kernels)"
else notok "the engine names op kinds: $(echo "$hits" | head -5 | tr '\n' ' ')"; fi

# 6. tools/ in rooms (tools/README.md): every tool uses libgpar's public headers only, and the
# hand vendor loops of tools/raw/ use nothing of libgpar but its clock and element conversions
# (gpar_now; gpar_convert, to set up and check data) and nothing of tools/bench/, so a raw
# figure never goes through the code it is compared with.
cd "$src" || exit 1
bad=$(grep -n '#include "' tools/*.c tools/bench/*.[ch] tools/raw/*.[ch] tools/train/*.[ch] 2>/dev/null |
  grep -vE '"(gpar\.h|gpar_mpi\.h|bench_[a-z_]+\.h|raw/raw[a-z_]*\.h|raw[a-z_]*\.h|(train/)?train_mlp\.h)"')
bad="$bad$(grep -n '#include "' tools/raw/*.[ch] 2>/dev/null | grep -E '"(bench_|raw/|train_)')"
if [ -z "$bad" ]; then ok "tools/: public headers only; tools/raw/ includes nothing of tools/bench/"
else notok "tools/ includes: $(echo "$bad" | head -5 | tr '\n' ' ')"; fi
cd "$build" || exit 1
bad=$(for o in $(find tools/raw -name '*.o' 2>/dev/null | sort); do
  nm -u "$o" | awk -v f="$o" '$2 ~ /^gpar/ && $2 != "gpar_now" && $2 != "gpar_convert" && $2 !~ /^gpar_raw_/ {print f ":" $2}'
done; for o in $(find tools -name '*.o' 2>/dev/null | sort); do
  nm -u "$o" | awk -v f="$o" '$2 ~ /^gpar__/ {print f ":" $2}'
done)
if [ -z "$bad" ]; then ok "tools/: no internal symbol used; tools/raw/ calls only gpar_now and gpar_convert of libgpar"
else notok "tools/ symbols: $(echo "$bad" | head -5 | tr '\n' ' ')"; fi

# 7. python/ext/ (the _gpar module) stands on the public API alone: its own headers, gpar.h and
# Python's; no libgpar symbol it uses is internal (when it was built here).
cd "$src" || exit 1
bad=$(grep -n '#include' python/ext/*.[ch] 2>/dev/null |
  grep -vE '(#include "(pygpar|dlpack)\.h")|(#include <(gpar|Python|structmember|stdarg|stdint|stdio|stdlib|string|pthread)\.h>)')
if [ -z "$bad" ]; then ok "python/ext/: gpar.h, Python's headers and its own only"
else notok "python/ext/ includes: $(echo "$bad" | head -5 | tr '\n' ' ')"; fi
cd "$build" || exit 1
bad=$(for o in $(find python -name '*.o' 2>/dev/null | sort); do
  nm -u "$o" | awk -v f="$o" '$2 ~ /^gpar__/ {print f ":" $2}'
done)
if [ -z "$bad" ]; then ok "python/ext/: no internal symbol of libgpar used"
else notok "python/ext/ symbols: $(echo "$bad" | head -5 | tr '\n' ' ')"; fi

echo "1..$n"
[ "$fails" -eq 0 ]
