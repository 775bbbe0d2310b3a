#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Jobs found by discovery whatever bytes their command line and log path hold: a job is named
# by its command line cut to 128 bytes, and a cut inside a UTF-8 character (a long torchrun line
# with an accented argument), or a Latin-1 byte in its argv, made the name no UTF-8: the job was
# never registered (its GPUs planned as idle while it trained) and a discovery_error event was
# written at every round.  A log path with a byte that is no UTF-8 dropped log_followed from
# GET /v1/jobs and the job_discovered event from GET /v1/events.  The daemon runs on the fake
# NVML over a simulated node (h200x8-mixed: job 0 on GPUs 0-3, job 1 on 4-5) with a stand-in
# /proc (proc_root) giving the two simulated jobs' processes those command lines and logs.
set -u
name=it_discover_names
fail() { echo "$name: FAIL: $*"; [ -f "$dir/serve.log" ] && tail -n 20 "$dir/serve.log"; exit 1; }
. "$(dirname "$0")/support/wait_listening.sh"
[ -n "${PFI_BIN:-}" ] && [ -x "$PFI_BIN" ] || { echo "$name: PFI_BIN is not set"; exit 1; }
[ -n "${PFI_FAKENVML:-}" ] && [ -f "$PFI_FAKENVML" ] || { echo "$name: PFI_FAKENVML is not built"; exit 1; }
command -v curl >/dev/null && command -v jq >/dev/null || { echo "$name: needs curl and jq"; exit 1; }
dir=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/$name.XXXXXX") || exit 1
SERVE="" J0="" J1=""
cleanup() {
    for p in $SERVE $J0 $J1; do kill -9 "$p" 2>/dev/null; done
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
unset PFI_SERVE_URL PFI_SERVE_TOKEN_FILE PFI_READ_ONLY PFI_BACKEND
export PFI_SIM_STATE="$dir/sim.state" PFI_JOURNAL="$dir/journal"
"$PFI_BIN" sim init --state "$PFI_SIM_STATE" --sim h200x8-mixed --speed 20 >/dev/null || fail "sim init"
head -c 32 /dev/urandom | base64 >"$dir/token"
chmod 600 "$dir/token"

# Job 1's log: a file whose name has a Latin-1 byte (caf\351.log).
badlog=$(printf '%s/caf\351.log' "$dir")
"$PFI_BIN" sim job --job 0 --log-format torchtitan >"$dir/job0.log" 2>&1 &
J0=$!
"$PFI_BIN" sim job --job 1 --log-format torchtitan >"$badlog" 2>&1 &
J1=$!
mkproc() { # pid: its own process group, plain stat and environ
    mkdir -p "$dir/proc/$1/fd"
    printf '0::/user.slice/user-1000.slice/session-3.scope\n' >"$dir/proc/$1/cgroup"
    printf '%s (python) S 1 %s %s 0 -1 4194560\n' "$1" "$1" "$1" >"$dir/proc/$1/stat"
    : >"$dir/proc/$1/environ"
}
mkproc "$J0"
mkproc "$J1"
# Job 0: 128 bytes of command line end inside the two bytes of an 'é' (UTF-8 \303\251).
pad=$(printf '%097d' 0 | tr 0 x)
printf 'torchrun\000train.py\000--run-name\000r%s\303\251t\303\251\000' "$pad" >"$dir/proc/$J0/cmdline"
cut=$(tr '\000' ' ' <"$dir/proc/$J0/cmdline" | head -c 128 | tail -c 1 | od -An -tx1 | tr -d ' ')
[ "$cut" = c3 ] || fail "the test's command line is not cut inside its character (byte 128 is $cut)"
# Job 1: a Latin-1 byte in its argv.
printf 'python\000train.py\000--note\000caf\351\000' >"$dir/proc/$J1/cmdline"
ln -s "$dir/job0.log" "$dir/proc/$J0/fd/1"
ln -s "$badlog" "$dir/proc/$J1/fd/1"

"$PFI_BIN" serve --backend nvml --nvml-lib "$PFI_FAKENVML" --listen 127.0.0.1:0 \
    --port-file "$dir/port" --token-file "$dir/token" --db "$dir/serve.db" \
    --sample-interval 100ms --set proc_root="$dir/proc" >"$dir/serve.log" 2>&1 &
SERVE=$!
wait_listening "$SERVE" "$dir/port" "pfi serve"
URL="http://$(cat "$dir/port")"
jobs_json() { curl -sf --max-time 5 "$URL/v1/jobs"; }
for j in "$J0:4" "$J1:2"; do
    pid=${j%:*} ng=${j#*:}
    i=0
    until jobs_json | jq -e --arg id "pg-$pid" --argjson ng "$ng" \
        '[.jobs[] | select(.id == $id and (.gpus | length) == $ng)] | length == 1' >/dev/null 2>&1; do
        i=$((i + 1)); [ $i -gt 150 ] && fail "pg-$pid not discovered: $(jobs_json) $(grep -a discovery_error "$dir/serve.log" | head -3)"
        sleep 0.1
    done
done
sleep 1 # rounds more: a refusal would be said at each
n=$(grep -ac "discovery_error" "$dir/serve.log")
[ "$n" = 0 ] || fail "$n discovery_error events: $(grep -a discovery_error "$dir/serve.log" | head -3)"
# its name, its command line cut to 128 bytes, shown (the cut character as '?')
jobs_json | jq -e --arg id "pg-$J0" '.jobs[] | select(.id == $id) | .name | startswith("torchrun train.py --run-name rxxx") and endswith("x?") and (utf8bytelength == 128)' >/dev/null ||
    fail "pg-$J0's name: $(jobs_json | jq -c --arg id "pg-$J0" '.jobs[] | select(.id == $id) | .name')"
jobs_json | jq -e --arg id "pg-$J1" '.jobs[] | select(.id == $id) | .log_followed | test("caf.*[.]log$")' >/dev/null ||
    fail "pg-$J1's log_followed not shown: $(jobs_json | jq -c --arg id "pg-$J1" '.jobs[] | select(.id == $id)')"
for pid in "$J0" "$J1"; do
    curl -sf "$URL/v1/events?limit=200" | jq -e --arg m "job pg-$pid " \
        '[.events[] | select(.kind == "job_discovered" and (.message | startswith($m)))] | length == 1' >/dev/null ||
        fail "no job_discovered event for pg-$pid in GET /v1/events"
done
echo "$name: a command line cut inside a character and one with a Latin-1 byte both registered, no discovery_error; a log path with a Latin-1 byte shown in log_followed and in its event"
exit 0
