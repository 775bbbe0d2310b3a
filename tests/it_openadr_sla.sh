#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# An OpenADR IMPORT_CAPACITY_LIMIT below what the jobs' SLAs allow, on `pfi serve`: taken (it
# was refused whole, with a hint to send "sla": "yield" that a VTN cannot follow, and the node
# went on drawing its full power) and held at the least the node can hold with the SLAs kept
# (openadr_sla = keep, the default): a grid_infeasible event, "feasible": false in its GET, the
# limits at that least while it binds, and the shortfall in its report and in the reportName
# posted to the VTN.  With openadr_sla = yield the SLAs give way and the node goes down to the
# limit; a limit of 0 kW is taken too, and held at the GPUs' minimum limits.
# pfi's clock runs 100 times faster (util/clock.h): ~15 s of real time.
# Needs $PFI_BIN, $PFI_FAKENVML, $PFI_TEST_TMP (tests/run.sh sets them).
# await expands its message when it fails, so the messages are single-quoted.
# shellcheck disable=SC2016
set -u

name=it_openadr_sla
SCALE=100
# shellcheck shell=sh source=tests/support/openadr_env.sh
. "$(dirname "$0")/support/openadr_env.sh"

start_vtn pfi-node node-dr --no-vens
MAX=$(sum_limits)
serve_openadr --listen "unix:$dir/serve.sock" --set openadr_poll=10s --set openadr_ramp=1m
SERVE=${pids##* }
await 600 'pfi serve did not start' served
AUTH="Authorization: Bearer $(cat "$dir/token")"
post_job() {
    curl -sf -o /dev/null --unix-socket "$dir/serve.sock" -H "$AUTH" \
        -d '{"id": "a", "gpus": [0,1,2,3,4,5,6,7], "sla": 0.05}' http://node/v1/jobs
}
field() { get "/v1/grid/events/oadr-$1" | tr ',{}' '\n\n\n' | sed -n "s/^ *\"$2\": *//p" | head -n 1; }
reported() { curl -sf "$VTN/_test/reports" | grep -q "\"eventID\": *\"$1\""; }
limits_at_most() { le "$(sum_limits)" "$1"; }
limit() { # ID KW S: an IMPORT_CAPACITY_LIMIT of KW kW from S (pfi's clock) for 10 minutes
    printf '{"id": "%s", "intervalPeriod": {"start": "%s", "duration": "PT10M"}, "payloadDescriptors": [{"payloadType": "IMPORT_CAPACITY_LIMIT", "units": "KW"}], "intervals": [{"id": 0, "payloads": [{"type": "IMPORT_CAPACITY_LIMIT", "values": [%s]}]}]}' \
        "$1" "$(iso "$3")" "$2"
}

# ---- openadr_sla = keep (the default): held at the least the SLAs allow ----
post_job || fail "registering job a"
S=$(( $(now | cut -d. -f1) + 120 ))
publish "$(limit cap1 3.0 "$S")"
await 400 'event cap1 not taken: $(get /v1/grid/openadr)' held cap1-0
[ "$(field cap1-0 feasible)" = false ] || fail "event cap1's GET: $(get /v1/grid/events/oadr-cap1-0)"
ACH=$(field cap1-0 achievable_w)
awk -v a="$ACH" -v m="$MAX" 'BEGIN { exit !(a > 3000 && a < m - 100) }' ||
    fail "event cap1: achievable_w $ACH W (site $MAX W): $(get /v1/grid/events/oadr-cap1-0)"
get /v1/events | grep -q '"grid_infeasible"' || fail "no grid_infeasible event: $(get /v1/events)"
sleep_until $((S + 60))
s=$(sum_limits)
le "$s" "$ACH" || fail "event cap1 in force: limits sum $s W, above the least the SLAs allow, $ACH W"
note "VTN limit 3000 W below the SLAs' floor: taken, held at $s W (achievable $ACH W, site $MAX W)"
get /v1/grid/openadr | grep -q 'yield' && fail "the VTN path was told to send sla yield: $(get /v1/grid/openadr)"
grep -q 'refused' "$dir/serve.log" && fail "an event was refused: $(grep refused "$dir/serve.log")"
await 1200 'no report of event cap1 reached the VTN: $(get /v1/grid/openadr)' reported cap1
get /v1/grid/events/oadr-cap1-0/report >"$dir/report.json" || fail "GET the report of event cap1"
curl -sf "$VTN/_test/reports" >"$dir/reports.json" || fail "GET /_test/reports"
"$PY" - "$dir/report.json" "$dir/reports.json" "$ACH" <<'EOF' || fail "the report of event cap1: $(cat "$dir/report.json")"
import json, sys
rep, posted, ach = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), float(sys.argv[3])
c = rep["compliance"]
h = c.get("held_above_target")
assert h and abs(h["budget_w"] - ach) < 1 and h["seconds"] > 500, h
assert c["seconds_over_target"] > 500, c["seconds_over_target"]  # the shortfall, as excess
names = [r["reportName"] for r in posted if r["eventID"] == "cap1"]
assert len(names) == 1 and "held at up to %.0f W" % ach in names[0], names
print(names[0])
EOF
note "report of cap1: $(sed -n 's/.*"reportName": *"\([^"]*\)".*/\1/p' "$dir/reports.json" | head -n 1)"

# ---- openadr_sla = yield: the SLAs give way, down to the limit ----
kill "$SERVE"
wait "$SERVE" 2>/dev/null
serve_openadr --listen "unix:$dir/serve.sock" --set openadr_poll=10s --set openadr_ramp=1m \
    --set openadr_sla=yield
await 600 'pfi serve did not start again' served
get /v1/jobs | grep -q '"id": *"a"' || fail "job a not reloaded after the restart: $(get /v1/jobs)"
S=$(( $(now | cut -d. -f1) + 120 ))
publish "$(limit cap2 3.0 "$S")"
await 400 'event cap2 not taken: $(get /v1/grid/openadr)' held cap2-0
[ "$(field cap2-0 sla)" = '"yield"' ] || fail "event cap2's sla: $(get /v1/grid/events/oadr-cap2-0)"
[ "$(field cap2-0 feasible)" = true ] || fail "event cap2's GET: $(get /v1/grid/events/oadr-cap2-0)"
sleep_until $((S + 60))
await 200 'event cap2 in force with openadr_sla=yield: limits $(sum_limits) W above 3000 W' limits_at_most 3000
note "openadr_sla=yield: held at $(sum_limits) W under the 3000 W limit"

# ---- a limit of 0 kW (import nothing): taken, and held at the least the node can hold, the
# GPUs' minimum limits with the SLAs yielding (it was refused as a target of 0 W, and the node
# went on at full power) ----
MIN=$(get /v1/gpus | tr ',{}' '\n\n\n' | sed -n 's/^ *"min_limit_w": *//p' | awk '{ s += $1 } END { printf "%.1f", s }')
S=$(( $(now | cut -d. -f1) + 720 ))
publish "$(limit zero 0 "$S")"
await 400 'a limit of 0 kW not taken: $(get /v1/grid/openadr)' held zero-0
[ "$(field zero-0 feasible)" = false ] || fail "event zero's GET: $(get /v1/grid/events/oadr-zero-0)"
grep -q 'event oadr-zero-0: import limit 0 W taken as 1 W: held, while it binds, at the least' "$dir/serve.log" ||
    fail "the limit of 0 kW taken without a word: $(grep openadr "$dir/serve.log" | tail -n 3)"
sleep_until $((S + 60))
await 200 'event zero in force: limits $(sum_limits) W, not the GPUs'\'' minimum $MIN W' limits_at_most "$MIN"
note "a limit of 0 kW: taken, held at $(sum_limits) W (the GPUs' minimum, $MIN W)"
echo "it_openadr_sla: ok"
