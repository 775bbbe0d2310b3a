#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Whether a change left the simulator's results as they were, bit for bit: runs
# `pfi sim validate --json` and `pfi study --fleet paper` with an older pfi and with this tree's
# build/pfi, one after the other, and compares the validation's document byte for byte and the
# study's summary.json and report.md with their timings and paths taken out.  Prints each
# command's CPU seconds (user + system) too, old then new: one pair, not a measurement.
#
#   scripts/sim-same-output.sh OLD_PFI [NEW_PFI]      (from the source tree)
#
# Needs the public data ($PFI_DATA_DIR, default ../shared/data).  Minutes of CPU: not part of
# `make check`.  Exit 0: the same; 1: a difference (shown); 2: a run failed.
set -eu
old=${1:?usage: sim-same-output.sh OLD_PFI [NEW_PFI]}
new=${2:-build/pfi}
out=$(mktemp -d "${TMPDIR:-/tmp}/pfi-same.XXXXXX")
trap 'rm -rf "$out"' EXIT
cpu() { # label, then the command: its CPU seconds on stderr's last line
    label=$1
    shift
    /usr/bin/time -f "$label %U %S" "$@"
}
rc=0
for side in old new; do
    eval "bin=\$$side"
    # the validation exits 1 by design when a split's held-out error is over its bound
    cpu "sim validate, $side, user/sys s:" "$bin" sim validate --json >"$out/$side.json" \
        2>"$out/$side.err" || [ $? -eq 1 ] || { cat "$out/$side.err" >&2; exit 2; }
    tail -n 1 "$out/$side.err"
    cpu "study --fleet paper, $side, user/sys s:" "$bin" study --fleet paper --no-figures \
        --out "$out/study-$side" >/dev/null 2>"$out/study-$side.err" ||
        { cat "$out/study-$side.err" >&2; exit 2; }
    tail -n 1 "$out/study-$side.err"
    for f in summary.json report.md; do
        sed -e 's/"elapsed_s": [0-9.e+-]*/"elapsed_s": T/' -e "s|$out/study-$side|OUT|g" \
            -e 's/computed in this run ([0-9.]* s)/computed in this run (T)/' \
            "$out/study-$side/$f" >"$out/$side-$f"
    done
done
cmp "$out/old.json" "$out/new.json" || { diff "$out/old.json" "$out/new.json" | head -20; rc=1; }
for f in summary.json report.md; do
    cmp "$out/old-$f" "$out/new-$f" || { diff "$out/old-$f" "$out/new-$f" | head -20; rc=1; }
done
[ $rc -ne 0 ] || echo "the same: sim validate --json byte for byte, the study's summary.json and report.md but for timings and paths"
exit $rc
