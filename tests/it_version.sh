#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# `pfi --version` states how the binary was compiled: every optimization level (-O0 to -O3,
# -Os, -Og, -Ofast) and -ffp-contract setting that the compiler recorded for pfi's own files
# (each file's DW_AT_producer in the debug info, which the build always writes: -g) is on its
# flags line.  The normal build compiles the simulator's files with other flags than the rest
# (Makefile, HOT_OPT); --version said "-O2 -g" for all of them.
set -u
PFI=${PFI_BIN:?PFI_BIN not set}
fail() { echo "it_version: FAIL: $*"; exit 1; }
command -v readelf >/dev/null || { echo "it_version: readelf (binutils) is missing"; exit 77; }
flags=$("$PFI" --version | sed -n 's/^compiler: .*, flags //p')
[ -n "$flags" ] || fail "no flags on the compiler line: $("$PFI" --version)"
# The producer of each compilation unit whose name is one of pfi's sources (src/, or the files
# the build generates), then the optimization and contraction flags among them.
used=$(readelf --debug-dump=info "$PFI" | awk '
    /DW_AT_producer/ { p = $0; next }
    /DW_AT_name/ && p != "" { if ($NF ~ /^(src\/|.*\/gen\/)/) print p; p = "" }' |
    tr ' ' '\n' | grep -E '^-(O[0-3sgz]?|Ofast|ffp-contract=.*)$' | sort -u)
[ -n "$used" ] || fail "no compile flags of pfi's files in the debug info of $PFI"
for f in $used; do
    case " $flags " in
    *" $f "* | *" $f)"*) ;;
    *) fail "$f compiled some of pfi's files, --version's flags do not name it: '$flags'" ;;
    esac
done
echo "it_version: ok ($(echo "$used" | tr '\n' ' ')): flags $flags"
