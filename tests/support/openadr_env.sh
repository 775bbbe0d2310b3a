# SPDX-License-Identifier: Apache-2.0
# Sourced by the OpenADR tests (it_openadr.sh, it_openadr_serve.sh): the tools they need, a
# scratch folder removed at exit with every process in $pids, pfi's clock scaled SCALE times
# (util/clock.h; every process of the test shares it: daemons, fake NVML, sampler, test VTN),
# the backend, the token and the VTN client's secret, and the helpers below.
# The caller sets $name and fail() (which may read $dir), and may set PFI_CLOCK_SCALE's factor
# in SCALE (default 100).  Sets SAMPLER, here, PY, dir, pids, HW.  Functions:
#   wait_file FILE WHAT   waits until FILE is not empty (a daemon's port file)
#   limits, sum_limits    the GPUs' limits as the simulated state has them, and their sum
#   le A B                A <= B (half a watt of printing allowed)
#   now, iso T            pfi's scaled clock (Unix seconds), T as ISO 8601 UTC
#   sleep_until T         sleeps until pfi's clock reaches T
[ -n "${PFI_BIN:-}" ] && [ -x "$PFI_BIN" ] || { echo "$name: PFI_BIN is not set"; exit 1; }
SAMPLER=$(dirname "$PFI_BIN")/tests/test_serve_sampler
[ -x "$SAMPLER" ] || { echo "$name: $SAMPLER is not built"; exit 1; }
command -v curl >/dev/null || { echo "$name: curl is missing (scripts/install-deps.sh test)"; exit 77; }
command -v python3 >/dev/null || { echo "$name: python3 is missing (scripts/install-deps.sh test)"; exit 77; }
here=$(cd "$(dirname "$0")" && pwd)
# The interpreter itself, found once (a version manager's shim costs seconds a call when loaded).
PY=$(python3 -c 'import sys; print(sys.executable)') || { echo "$name: python3 does not run"; exit 1; }

dir=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/$name.XXXXXX") || exit 1
pids=""
cleanup() {
    for p in $pids; do kill -9 "$p" 2>/dev/null; done
    [ -n "${KEEP:-}" ] || rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

export PFI_SIM_STATE="$dir/sim.state" PFI_JOURNAL="$dir/journal"
SCALE=${SCALE:-100}
PFI_CLOCK_SCALE=$SCALE PFI_CLOCK_ORIGIN=$(date +%s)
export PFI_CLOCK_SCALE PFI_CLOCK_ORIGIN
unset PFI_SERVE_URL PFI_SERVE_TOKEN_FILE PFI_READ_ONLY
if [ -n "${PFI_FAKENVML:-}" ] && [ -f "$PFI_FAKENVML" ]; then
    HW="--backend nvml --nvml-lib $PFI_FAKENVML"
else
    echo "$name: fake NVML not built ($PFI_FAKENVML): running on the sim backend over the same state"
    HW="--backend sim"
fi
head -c 32 /dev/urandom | base64 >"$dir/token"
head -c 32 /dev/urandom | base64 >"$dir/secret"
chmod 600 "$dir/token" "$dir/secret"

wait_file() {
    i=0
    while [ ! -s "$1" ]; do
        i=$((i + 1)); [ $i -gt 600 ] && fail "$2 did not start"
        sleep 0.05
    done
}
limits() {
    # shellcheck disable=SC2086
    "$PFI_BIN" gpus $HW --read-only --json | awk -F': ' '/"limit_w"/ { sub(/,$/, "", $2); printf "%s ", $2 }'
}
sum_limits() { limits | awk '{ s = 0; for (i = 1; i <= NF; i++) s += $i; printf "%.1f\n", s }'; }
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b + 0.5) }'; }
now() { awk -v r="$(date +%s.%N)" -v s="$SCALE" -v o="$PFI_CLOCK_ORIGIN" 'BEGIN { printf "%.3f", o + (r - o) * s }'; }
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
sleep_until() { while awk -v a="$(now)" -v b="$1" 'BEGIN { exit !(a < b) }'; do sleep 0.05; done; }
