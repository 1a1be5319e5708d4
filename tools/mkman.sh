#!/bin/sh
# mkman.sh HELP2MAN VERSION PROGRAM OUT NAME [INCLUDE]: writes the man page of PROGRAM from its --help
# (the version is VERSION, the package's) with help2man. Without
# help2man it keeps an existing page, else writes a stub that says how to get the real one.
help2man=$1 version=$2 prog=$3 out=$4 name=$5 include=${6-}
base=$(basename "$prog")
if [ -n "$help2man" ]; then
  vopt="--version-string=$version" # the package version, not the tool's commit line
  [ -n "$include" ] && [ -f "$include" ] && vopt="$vopt --include=$include"
  exec $help2man --no-info --no-discard-stderr --name="$name" $vopt --output="$out" "$prog"
fi
if [ -f "$out" ]; then
  echo "mkman.sh: help2man not found; keeping $out" >&2
  touch "$out"
  exit 0
fi
echo "mkman.sh: help2man not found; writing a stub $out (install help2man for the real page)" >&2
up=$(echo "$base" | tr a-z A-Z)
printf '.TH %s 1 "" "libgpar %s" "User Commands"\n.SH NAME\n%s \\- %s\n.SH DESCRIPTION\nRun\n.B %s --help\nfor the options. (This page is a stub: help2man was not found at build time.)\n' \
  "$up" "$version" "$base" "$name" "$base" > "$out"
