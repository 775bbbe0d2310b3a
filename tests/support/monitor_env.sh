# SPDX-License-Identifier: Apache-2.0
# Sourced by the monitoring tests (it_monitor.sh, it_status_page.sh): two node daemons on the
# fake NVML over their own simulated nodes and a site controller over the second.
#   n1: `pfi serve` alone (local mode): three jobs, a 70% budget, grid events.
#   n2: `pfi serve` under `pfi cluster serve` (external mode): caps from the site budget.
# The caller sets $name, and N2_FAULTS: the fake NVML's fault rules for n2 (faults.c).  Sets
# fail() and note() (a failure shows the end of every daemon's log), here (tests/), dir (a
# scratch folder removed at exit, when every process in $pids is killed), N1, N2, CL
# (http://127.0.0.1:PORT), N2_PID (n2's daemon), TOKEN (a file), and start_node NAME [RULES
# [OPTIONS...]] for another node daemon.
fail() {
    echo "$name: FAIL: $*"
    for f in n1 n2 cluster; do [ -f "$dir/$f.log" ] && { echo "-- $f"; tail -n 15 "$dir/$f.log"; }; done
    exit 1
}
note() { echo "$name: $*"; }
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/$name.XXXXXX") || exit 1
cleanup() {
    for p in ${pids:-}; do kill -9 "$p" 2>/dev/null; done
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
[ -n "${PFI_BIN:-}" ] && [ -x "$PFI_BIN" ] || { echo "$name: PFI_BIN is not set"; exit 1; }
command -v curl >/dev/null || fail "curl is missing (scripts/install-deps.sh test)"
unset PFI_SERVE_URL PFI_SERVE_TOKEN_FILE PFI_READ_ONLY
if [ -n "${PFI_FAKENVML:-}" ] && [ -f "$PFI_FAKENVML" ]; then
    HW="--backend nvml --nvml-lib $PFI_FAKENVML"
else
    echo "$name: fake NVML not built ($PFI_FAKENVML): running on the sim backend"
    HW="--backend sim"
fi
TOKEN=$dir/token
head -c 32 /dev/urandom | base64 >"$TOKEN"
chmod 600 "$TOKEN"
pids=""
wait_file() { # $1 file, $2 what
    i=0
    while [ ! -s "$1" ]; do
        i=$((i + 1)); [ $i -gt 600 ] && fail "$2 did not start"
        sleep 0.05
    done
}
start_node() { # $1 name, $2 fault rules, then more options of pfi serve
    nm=$1
    rules=${2:-}
    shift
    [ $# -gt 0 ] && shift
    # shellcheck disable=SC2086
    PFI_FAKENVML_FAULTS="$rules" PFI_SIM_STATE="$dir/$nm.state" PFI_JOURNAL="$dir/$nm.journal" \
        "$PFI_BIN" serve $HW \
        --listen 127.0.0.1:0 --port-file "$dir/$nm.port" --token-file "$TOKEN" \
        --db "$dir/$nm.db" --sample-interval 100ms "$@" >"$dir/$nm.log" 2>&1 &
    pids="$pids $!"
    wait_file "$dir/$nm.port" "pfi serve ($nm)"
}
start_node n1
start_node n2 "${N2_FAULTS:-}"
N2_PID=${pids##* }
N1=http://$(cat "$dir/n1.port")
N2=http://$(cat "$dir/n2.port")
ctl1() { "$PFI_BIN" ctl --url "$N1" --token-file "$TOKEN" "$@"; }
ctl1 job add a --gpus 0-3 --sla 0.1 --tokens-per-s 5000 >/dev/null || fail "job a"
ctl1 job add b --gpus 4,5 --pfi30 0.25 >/dev/null || fail "job b"
ctl1 job add c --gpus 6-7 --pfi30 0.8 --weight 2 >/dev/null || fail "job c"
ctl1 job throughput a 4700 >/dev/null || fail "job a throughput"
ctl1 budget set 70% >/dev/null || fail "budget 70%"
"$PFI_BIN" event --url "$N1" --token-file "$TOKEN" add --id next-cut --start now+2h \
    --duration 1h --limit 3500W >/dev/null || fail "grid event next-cut"
"$PFI_BIN" event --url "$N1" --token-file "$TOKEN" add --id now-cap --start now+0s \
    --duration 1h --limit 3800W >/dev/null || fail "grid event now-cap"
"$PFI_BIN" ctl --url "$N2" --token-file "$TOKEN" job add x --gpus 0-7 --sla 0.2 --pfi30 0.5 >/dev/null ||
    fail "job x on n2"

echo '{"nodes": [{"name": "n2", "gpus": 8}], "jobs": [{"id": "x", "parts": [{"node": "n2", "gpus": [0, 1, 2, 3, 4, 5, 6, 7]}]}]}' >"$dir/topo.json"
echo "n2 $N2" >"$dir/node.map"
"$PFI_BIN" cluster serve --listen 127.0.0.1:0 --port-file "$dir/cluster.port" --token-file "$TOKEN" \
    --node-map "$dir/node.map" --node-token-file "$TOKEN" --topology "$dir/topo.json" \
    --heartbeat 1s --db "$dir/cluster.db" --budget 4800W >"$dir/cluster.log" 2>&1 &
pids="$pids $!"
wait_file "$dir/cluster.port" "pfi cluster serve"
CL=http://127.0.0.1:$(cat "$dir/cluster.port")
