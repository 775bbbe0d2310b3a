#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# How much `pfi sim validate` depends on the last bits of the simulated clocks: builds a second
# pfi whose operating-point root finder aims AIM (default 0.3) instead of 0.25 of the clock
# tolerance past the root (both find every clock within PFI_SIM_CLOCK_TOL, 1e-6 MHz), runs the
# whole validation with each and compares what the fit chose and what the model computed
# (scripts/sim-fit-compare.py: fitted constants, simulated outputs; no error figure).  A fit
# whose minimum is well defined moves by about the clocks' own 1e-9; one on a corner of the
# model or along a flat direction moves by far more.
#
#   scripts/sim-fit-stability.sh [AIM] [--max-const X --max-out Y ...]   (from the source tree)
#
# Needs the public data ($PFI_DATA_DIR, default ../shared/data).  Takes two builds and two
# validations: minutes of CPU, so it is not part of `make check`.
set -eu
aim=0.3
case "${1:-}" in [0-9]*) aim=$1; shift ;; esac
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
alt=build/root-aim-$aim
out=$(mktemp -d "${TMPDIR:-/tmp}/pfi-fit-stability.XXXXXX")
trap 'rm -rf "$out"' EXIT
if ! { make -s build/pfi && make -s BUILD="$alt" CC="${CC:-cc} -DPFI_SIM_ROOT_AIM=$aim" "$alt/pfi"; } \
    >"$out/make.log" 2>&1; then
    cat "$out/make.log"
    echo "sim-fit-stability: the build failed" >&2
    exit 2
fi
# The validation exits 1 when its target is missed; only a document that does not parse fails.
build/pfi sim validate --json >"$out/a.json" 2>"$out/a.err" || true
"$alt/pfi" sim validate --json >"$out/b.json" 2>"$out/b.err" || true
echo "root finder aim 0.25 against $aim:"
rc=0
python3 scripts/sim-fit-compare.py "$out/a.json" "$out/b.json" "$@" || rc=$?
[ $rc -ne 2 ] || cat "$out/a.err" "$out/b.err" >&2
exit $rc
