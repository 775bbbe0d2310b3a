#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# libpfi-map.sh OUT HEADER... -- OBJECT...
# Writes the version script of libpfi.so: exported are the names the public headers declare
# (comments left out: perl, which Debian always has) that the objects define; everything else stays inside, so the internals
# (the daemon's, the store's, the allocator's workspaces) are no ABI the soname must keep.
set -eu
out=$1
shift
hdrs=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do hdrs="$hdrs $1"; shift; done
[ $# -gt 0 ] || { echo "libpfi-map.sh: no -- before the objects" >&2; exit 2; }
shift
tmp=$out.tmp
# shellcheck disable=SC2086
perl -0777 -pe 's{/\*.*?\*/}{ }gs; s{//[^\n]*}{}g' $hdrs |
    grep -ohE '\bpfi_[A-Za-z0-9_]+' | sort -u >"$tmp.names"
nm --defined-only -g "$@" | awk 'NF == 3 && $2 ~ /^[TDRB]$/ { print $3 }' | sort -u >"$tmp.defs"
{
    echo "/* Written by scripts/libpfi-map.sh from the public headers: do not edit. */"
    echo "{"
    echo "    global:"
    comm -12 "$tmp.names" "$tmp.defs" | sed 's/.*/        &;/'
    echo "    local: *;"
    echo "};"
} >"$tmp"
n=$(comm -12 "$tmp.names" "$tmp.defs" | wc -l)
rm -f "$tmp.names" "$tmp.defs"
[ "$n" -gt 0 ] || { echo "libpfi-map.sh: no public name is defined by the objects" >&2; rm -f "$tmp"; exit 1; }
mv "$tmp" "$out"
