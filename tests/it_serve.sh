#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Integration test of `pfi serve` (issue 8) on the fake NVML over a shared simulated node:
# three jobs, a 30% budget cut and its restoration, many random reallocations under a fixed
# budget, all while a separate process samples the sum of the power limits at single instants
# and must never find it over the budget; Prometheus' own checker on /metrics; 4xx answers that
# change nothing; restore on SIGTERM; restore at the next start after kill -9 (over the Unix
# socket this time).
# Needs $PFI_BIN, $PFI_FAKENVML, $PFI_TEST_TMP (tests/run.sh sets them).
set -u
name=it_serve

fail() { echo "it_serve: FAIL: $*"; [ -f "$dir/serve.log" ] && tail -n 30 "$dir/serve.log"; exit 1; }
note() { echo "it_serve: $*"; }
# A part that could not run: the script still runs the rest, then reports a skip (exit 77), not a pass.
skipped=""
skipped() { echo "it_serve: SKIPPED $*"; skipped="$skipped; $*"; }

. "$(dirname "$0")/support/sampler.sh"
command -v curl >/dev/null || { echo "it_serve: curl is missing (scripts/install-deps.sh test)"; exit 77; }

dir=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/it_serve.XXXXXX") || exit 1
SERVE=""
SAMPLE=""
cleanup() {
    [ -n "$SERVE" ] && kill -9 "$SERVE" 2>/dev/null
    [ -n "$SAMPLE" ] && kill -9 "$SAMPLE" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

export PFI_SIM_STATE="$dir/sim.state" PFI_JOURNAL="$dir/journal"
SERVE_OPTS="--sample-interval 100ms"
. "$(dirname "$0")/support/serve_env.sh"

# A bad listen address is refused before any GPU is touched: no store, no journal.
"$PFI_BIN" serve $HW --listen 127.0.0.1:99999 --db "$dir/bad.db" --journal "$dir/bad.journal" \
    --token-file "$dir/token" >"$dir/bad.out" 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q "bad port" "$dir/bad.out" || fail "bad --listen port: exit $rc, $(cat "$dir/bad.out")"
[ ! -e "$dir/bad.db" ] && [ ! -e "$dir/bad.journal" ] || fail "bad --listen port left a store or a journal"

ctl() {
    case "$ADDR" in
    unix:*) "$PFI_BIN" ctl --socket "${ADDR#unix:}" --token-file "$dir/token" "$@" ;;
    *) "$PFI_BIN" ctl --url "http://$ADDR" --token-file "$dir/token" "$@" ;;
    esac
}
# Limits as the GPUs report them, through another process's view of the same node.
limits() {
    # shellcheck disable=SC2086
    "$PFI_BIN" gpus $HW --read-only --json | awk -F': ' '/"limit_w"/ { sub(/,$/, "", $2); printf "%s ", $2 }'
}
sum_limits() { limits | awk '{ s = 0; for (i = 1; i <= NF; i++) s += $i; printf "%.1f\n", s }'; }
all_at() { # $1: watts; every GPU's limit
    limits | awk -v w="$1" '{ for (i = 1; i <= NF; i++) if ($i + 0 != w + 0) exit 1 }'
}
set_allowed() { echo "$1" > "$dir/allowed.tmp" && mv "$dir/allowed.tmp" "$dir/allowed"; }
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b + 0.5) }'; }

# A probe library that cannot be read is refused before any GPU is touched, too.
"$PFI_BIN" serve $HW --set probe_library="$dir/none.db" --db "$dir/bad.db" \
    --journal "$dir/bad.journal" --token-file "$dir/token" >"$dir/bad.out" 2>&1 &&
    fail "a missing probe library was accepted"
grep -q "probe_library $dir/none.db" "$dir/bad.out" || fail "probe library error: $(cat "$dir/bad.out")"
# ... and its hint is in the daemon's terms: it said "pass --public", an option serve lacks
grep -q "or set probe_library public" "$dir/bad.out" || fail "probe library hint: $(cat "$dir/bad.out")"
[ ! -e "$dir/bad.db" ] && [ ! -e "$dir/bad.journal" ] || fail "a bad probe library left a store or a journal"

# ---- start, three jobs ----
# Probes are read through a library of measured curves (the public sweeps, when present).
LIB=""
if "$PFI_BIN" import all --db "$dir/lib.db" >/dev/null 2>&1; then
    LIB="$dir/lib.db"
    start_serve 127.0.0.1:0 --set probe_library="$LIB"
else
    skipped "public sweeps not found (PFI_DATA_DIR=${PFI_DATA_DIR:-unset}): no probe library"
    start_serve 127.0.0.1:0
fi
note "listening on $ADDR"
if [ -n "$LIB" ]; then
    ctl events --limit 50 | grep -q 'probes read through 2[0-9][0-9] measured curves' ||
        fail "no probe_library event: $(ctl events --limit 5)"
fi
all_at 700 || fail "GPUs do not start at their 700 W default: $(limits)"
NOMINAL=5600
CUT=3920 # 70% of 5600
ctl job add a --gpus 0-3 --sla 0.1 --seq-len 2048 --tokens-per-step 1048576 >/dev/null || fail "job a"
ctl jobs | jq -e '.jobs[] | select(.id == "a") | .seq_len == 2048 and .tokens_per_step == 1048576' >/dev/null ||
    fail "job a's units of its log: $(ctl jobs)"
ctl job add b --gpus 4,5 --pfi30 0.25 >/dev/null || fail "job b"
ctl job add c --gpus 6-7 --pfi30 0.8 --weight 2 >/dev/null || fail "job c"

set_allowed $NOMINAL
"$SAMPLER" --sample "$PFI_SIM_STATE" "$dir/allowed" "$dir/sampled" 2>>"$dir/sampler.log" &
SAMPLE=$!

# ---- the 30% cut ----
ctl budget set 70% >"$dir/cut.json" || fail "budget cut refused"
set_allowed $CUT
s=$(sum_limits)
le "$s" $CUT || fail "after the cut the limits sum to $s W > $CUT W"
grep -q '"failed": 0' "$dir/cut.json" || fail "a cap failed: $(cat "$dir/cut.json")"
note "cut to 70%: limits $(limits)(sum $s W)"
# The SLA job (a, at most 10% slower) is predicted at >= 90% of its throughput; the flexible
# job b gives more than job c.
lim=$(limits)
echo "$lim" | awk '{ exit !($5 < $7) }' || fail "allocation ignores PFI: $lim"
rel=$(ctl jobs a | awk -F': ' '/"predicted_rel"/ { sub(/,$/, "", $2); print $2 }')
awk -v r="$rel" 'BEGIN { exit !(r >= 0.8995) }' || fail "job a predicted at $rel of its throughput, below its SLA"

# ---- many random reallocations under the fixed cut budget ----
# 20 rounds of 4 changes: with the changes before and after, under the daemon's burst of 100
# (SRV_CHANGE_BURST), so no request is throttled however fast this machine sends them.
awk 'BEGIN { srand(8); for (i = 0; i < 20; i++) printf "%.2f %.2f %.1f\n", 0.05 + rand(), 0.05 + rand(), 0.5 + 3 * rand() }' >"$dir/rand"
# (curl rather than pfi ctl here: 80 requests, and a sanitized pfi is slow to start)
req() { curl -sf -o /dev/null -H "$AUTH" -X "$1" ${3:+-d "$3"} "http://$ADDR$2"; }
while read -r pb pc w; do
    req DELETE /v1/jobs/b && req POST /v1/jobs "{\"id\":\"b\",\"gpus\":[4,5],\"pfi30\":$pb,\"weight\":$w}" &&
        req DELETE /v1/jobs/c && req POST /v1/jobs "{\"id\":\"c\",\"gpus\":[6,7],\"pfi30\":$pc}" ||
        fail "reallocation ($pb $pc $w) refused"
done <"$dir/rand"
s=$(sum_limits)
le "$s" $CUT || fail "after reallocations the limits sum to $s W > $CUT W"

# ---- the audit log: each decision, and what a cut cost the job that reported ----
ctl job throughput c 4321 >/dev/null || fail "throughput report"
if command -v sqlite3 >/dev/null; then
    n=$(sqlite3 "$dir/serve.db" "SELECT count(*) FROM serve_decisions")
    [ "$n" -ge 80 ] || fail "only $n decisions in the audit log"
    row=$(sqlite3 "$dir/serve.db" "SELECT d.budget_w, j.cap_w, j.observed_tps FROM serve_decisions d
        JOIN serve_decision_jobs j ON j.decision_id = d.id WHERE j.job = 'c' ORDER BY d.id DESC LIMIT 1")
    echo "$row" | awk -F'|' -v c=$CUT '{ exit !($1 == c && $2 > 0 && $3 == 4321) }' ||
        fail "audit row of job c: '$row'"
    note "audit log: $n decisions; latest for job c: budget|cap|observed = $row"
else
    note "sqlite3 CLI missing: audit rows not inspected (scripts/install-deps.sh test)"
fi

# ---- bad requests: 4xx, nothing changed ----
before=$(limits)
code() { curl -s -o "$dir/body" -w '%{http_code}' "$@"; }
[ "$(code -X PUT -H "$AUTH" -d '{"watts": 500}' "http://$ADDR/v1/budget")" = 409 ] || fail "infeasible budget: $(cat "$dir/body")"
grep -q EINFEASIBLE "$dir/body" || fail "infeasible budget body: $(cat "$dir/body")"
[ "$(code -X POST -H "$AUTH" -d '{"id": "x", "gpus": [0' "http://$ADDR/v1/jobs")" = 400 ] || fail "malformed JSON accepted"
[ "$(code -X POST -H "$AUTH" -d '{"id": "x", "gpus": [42]}' "http://$ADDR/v1/jobs")" = 400 ] || fail "unknown GPU accepted"
for u in '"seq_len": 0' '"seq_len": 2048.5' '"seq_len": "2048"' '"tokens_per_step": -1'; do
    [ "$(code -X POST -H "$AUTH" -d "{\"id\": \"x\", \"gpus\": [0], $u}" "http://$ADDR/v1/jobs")" = 400 ] &&
        grep -q "${u%%\"*:*}" "$dir/body" || fail "a job with $u accepted: $(cat "$dir/body")"
done
[ "$(code -X PUT -d '{"watts": 5000}' "http://$ADDR/v1/budget")" = 401 ] || fail "change without token accepted"
[ "$(code -X PUT -H "Authorization: Bearer wrong-token-0123456789" -d '{"watts": 5000}' "http://$ADDR/v1/budget")" = 401 ] || fail "wrong token accepted"
# A query parameter the route does not take, one given twice or a bad value: 400 naming it
# (GET /v1/history?sinse=10 answered the whole hour with 200, silently).
for q in "history?sinse=10 sinse" "history?since=10&since=20 since" "history?since= since" \
         "events?limit=0 limit" "gpus?limit=5 limit"; do
    [ "$(code "http://$ADDR/v1/${q% *}")" = 400 ] && grep -qF "${q#* }" "$dir/body" ||
        fail "GET /v1/${q% *}: $(cat "$dir/body")"
done
[ "$(code -X PUT -H "$AUTH" -d '{"watts": 4000}' "http://$ADDR/v1/budget?ramp_s=60")" = 400 ] ||
    fail "a budget with a query parameter accepted: $(cat "$dir/body")"
[ "$(code "http://$ADDR/v1/history?since=10")" = 200 ] || fail "since=10 refused: $(cat "$dir/body")"
head -c 200000 /dev/zero | tr '\0' ' ' >"$dir/big"
[ "$(code -X POST -H "$AUTH" --data-binary @"$dir/big" "http://$ADDR/v1/jobs")" = 413 ] || fail "oversized body accepted"
[ "$(limits)" = "$before" ] || fail "a refused request changed limits: $before -> $(limits)"

# ---- the budget restored ----
set_allowed $NOMINAL
ctl budget set 100% >/dev/null || fail "budget restore refused"
all_at 700 || fail "after restoring the budget: $(limits)"

# ---- what the sampler saw ----
: >"$dir/sampled.stop"
wait "$SAMPLE"
SAMPLE=""
read -r _ samples _ viol _ maxsum _ over <"$dir/sampled" || fail "no sampler output: $(cat "$dir/sampler.log")"
note "sampler: $samples instants, largest sum $maxsum W, $viol over the budget"
[ "$viol" = 0 ] || fail "the sum of limits exceeded the budget at $viol sampled instants ($(cat "$dir/sampler.log"))"
[ "$samples" -gt 100 ] || fail "only $samples samples taken"

# ---- metrics ----
curl -sf "http://$ADDR/metrics" >"$dir/metrics" || fail "GET /metrics"
grep -q '^pfi_node_budget_watts 5600' "$dir/metrics" || fail "no budget in /metrics"
grep -q '^pfi_job_cap_watts{job_id="a",Hostname="' "$dir/metrics" || fail "no job cap in /metrics"
grep -q '^pfi_gpu_power_watts{gpu="7"' "$dir/metrics" || fail "no GPU power in /metrics"
command -v promtool >/dev/null || fail "promtool is missing (scripts/install-deps.sh test installs prometheus)"
promtool check metrics <"$dir/metrics" >"$dir/promtool.out" 2>&1 || fail "promtool check metrics: $(cat "$dir/promtool.out")"
note "promtool check metrics: ok"

# ---- SIGTERM restores the original limits ----
ctl budget set 70% >/dev/null || fail "second cut"
le "$(sum_limits)" $CUT || fail "second cut not applied"
stop_serve TERM || fail "pfi serve exited with an error on SIGTERM"
all_at 700 || fail "SIGTERM did not restore the limits: $(limits)"
[ ! -e "$PFI_JOURNAL" ] || fail "journal left after a clean stop"
note "SIGTERM: limits restored"

# ---- kill -9 with a budget in force: the next start comes back holding it (never above it),
# with the originals still journaled; a clean stop then restores them ----
start_serve "unix:$dir/serve.sock"
ctl budget set 70% >/dev/null || fail "cut over the Unix socket"
le "$(sum_limits)" $CUT || fail "cut over the Unix socket not applied"
stop_serve KILL
all_at 700 && fail "limits back at 700 W although the daemon was killed"
[ -e "$PFI_JOURNAL" ] || fail "no journal after kill -9"
# ... a read-only daemon started now changes nothing and touches no journal, but reports the
# journaled originals and says they are not in force (it said the GPUs ran at their original
# limits and reported the dead daemon's caps as the originals)
killed=$(limits)
start_serve "unix:$dir/ro.sock" --read-only
ctl gpus | grep -q '"original_limit_w": 700' || fail "read-only: the originals were not read from the journal: $(ctl gpus | grep original_limit_w | head -n 2)"
ctl events --limit 50 | grep -q "journal $PFI_JOURNAL (pid [0-9]*) holds the original limits of 8 GPU(s), never restored" ||
  fail "read-only: the unrestored journal not said: $(ctl events --limit 50 | grep -i journal)"
stop_serve TERM || fail "read-only stop"
[ "$(limits)" = "$killed" ] && [ -e "$PFI_JOURNAL" ] || fail "a read-only daemon changed the limits or the journal"
# ... a start with another journal path is refused: it journaled the held caps as the
# originals (so a clean stop "restored" the GPUs to their caps for good).  Nothing is touched.
held=$(limits)
refused_exit() { # pid, what: waits up to 5 s for a start that must be refused to exit; its status
  i=0
  while kill -0 "$1" 2>/dev/null; do
    i=$((i + 1)); [ $i -gt 100 ] && { kill -TERM "$1"; wait "$1"; fail "$2 was not refused"; return 0; }
    sleep 0.05
  done
  wait "$1"
}
"$PFI_BIN" serve $HW --listen "unix:$dir/other.sock" --token-file "$dir/token" --db "$dir/serve.db" \
    --journal "$dir/other.journal" $SERVE_OPTS >"$dir/other.out" 2>&1 &
other=$!
refused_exit $other "a held start without its journal"; rc=$?
[ $rc -ne 0 ] || fail "a held start without its journal exited 0: $(cat "$dir/other.out")"
grep -q "no journal at $dir/other.journal holds the GPUs' original limits" "$dir/other.out" ||
  fail "a held start without its journal: $(cat "$dir/other.out")"
# ... and it names the option that gives the old one (not a placeholder of the config file's)
grep -q "the previous daemon used (--journal FILE" "$dir/other.out" ||
  fail "a held start without its journal does not say how to give it: $(cat "$dir/other.out")"
[ ! -e "$dir/other.journal" ] || fail "a refused held start wrote a journal"
[ "$(limits)" = "$held" ] || fail "a refused held start changed the limits: $held -> $(limits)"
# ... a start with another journal AND another state database is refused too: the GPUs' locks
# name the journal the held daemon left, which lists them (it would journal the held caps as
# the originals), and the way out is said.
"$PFI_BIN" serve $HW --listen "unix:$dir/other.sock" --token-file "$dir/token" --db "$dir/other.db" \
    --journal "$dir/other.journal" $SERVE_OPTS >"$dir/other1.out" 2>&1 &
other=$!
refused_exit $other "a start with another journal and db over a held journal" && fail "a start with another journal and db over a held journal exited 0"
grep -q "whose journal $dir/journal is still there: .*pfi restore --journal $dir/journal" "$dir/other1.out" ||
  fail "a start with another journal and db over a held journal: $(cat "$dir/other1.out")"
[ "$(limits)" = "$held" ] || fail "a refused start changed the limits: $held -> $(limits)"
# ... once the locks are gone (a reboot empties /run/lock) it cannot see the hold: it starts,
# journals the limits it finds as the originals, and says which sit below their defaults and
# how to get the old originals back.  It changes nothing, and its clean stop leaves them so.
rm -f "$PFI_SIM_STATE.locks"/*
"$PFI_BIN" serve $HW --listen "unix:$dir/other.sock" --token-file "$dir/token" --db "$dir/other.db" \
    --journal "$dir/other.journal" $SERVE_OPTS >"$dir/other2.out" 2>&1 &
other=$!
i=0
until grep -q "listen: API on" "$dir/other2.out"; do
  i=$((i + 1)); [ $i -gt 200 ] && { kill -TERM $other; wait $other; fail "a fresh start with another journal and db did not come up: $(cat "$dir/other2.out")"; }
  kill -0 $other 2>/dev/null || fail "a fresh start with another journal and db exited: $(cat "$dir/other2.out")"
  sleep 0.05
done
kill -TERM $other
wait $other || fail "a fresh start with another journal and db did not stop cleanly: $(cat "$dir/other2.out")"
below=$(echo "$held" | awk '{ for (i = 1; i <= NF; i++) n += ($i < 699.5); print n + 0 }')
[ "$below" -gt 0 ] || fail "nothing was held below 700 W: $held"
grep -q "original_below_default: $below GPU(s) below their default limit, journaled in $dir/other.journal" "$dir/other2.out" ||
  fail "a fresh start over held limits did not say which sit below their defaults: $(cat "$dir/other2.out")"
grep "original_below_default" "$dir/other2.out" | grep -q "pfi restore --journal" ||
  fail "the warning does not say how to get the originals back: $(grep original_below_default "$dir/other2.out")"
[ "$(limits)" = "$held" ] || fail "a fresh start with another journal and db changed the limits: $held -> $(limits)"
note "another journal and db: $(grep -o 'original_below_default: .*' "$dir/other2.out")"
start_serve "unix:$dir/serve.sock"
le "$(sum_limits)" $CUT || fail "restart after kill -9 raised the limits over the budget: $(limits)"
ctl events --limit 50 | grep -q 'limits held from before the restart' || fail "no hold event at the restart"
ctl gpus | grep -q '"original_limit_w": 700' || fail "the originals were not taken from the journal"
ctl jobs | grep -q '"id": "c"' || fail "jobs not reloaded after restart"
stop_serve TERM || fail "final stop"
all_at 700 || fail "final stop: $(limits)"
[ ! -e "$PFI_JOURNAL" ] || fail "journal left after the final clean stop"
# Restored cleanly, nothing is held any more: the next start is at the originals.
start_serve "unix:$dir/serve.sock"
all_at 700 || fail "a start after a clean stop changed the limits: $(limits)"
stop_serve TERM || fail "stop after the clean start"
note "kill -9 + restart: the budget held, then restored at a clean stop"

# ---- a GPU lost mid-change (fake NVML fault injection) ----
if [ "${HW#--backend nvml}" != "$HW" ]; then
    export PFI_FAKENVML_FAULTS="nvmlDeviceSetPowerManagementLimit@5=GPU_IS_LOST"
    start_serve 127.0.0.1:0
    unset PFI_FAKENVML_FAULTS
    ctl budget set 70% >"$dir/lost.json" || fail "cut with GPU 5 lost"
    grep -q '"failed": 1' "$dir/lost.json" || fail "the lost GPU is not reported: $(cat "$dir/lost.json")"
    lim=$(limits)
    echo "$lim" | awk '{ exit !($6 == 700) }' || fail "GPU 5 moved although lost: $lim"
    s=$(sum_limits)
    le "$s" $CUT || fail "with GPU 5 stuck at 700 W the limits sum to $s W > $CUT W: $lim"
    ctl events --limit 50 | grep -q '"replanned"' || fail "no re-plan around the lost GPU"
    stop_serve TERM || fail "stop with GPU 5 lost"
    all_at 700 || fail "stop with GPU 5 lost: $(limits)"
    note "GPU 5 lost mid-change: the others re-planned, $s W <= $CUT W"
fi
[ -z "$skipped" ] || { echo "it_serve: the rest ok, skipped${skipped#;}"; exit 77; }
echo "it_serve: ok"
