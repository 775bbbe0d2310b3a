#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Integration test of the OpenADR 3.0 client (issue 15): a test VTN (tests/vtn.py) publishes an
# IMPORT_CAPACITY_LIMIT event for the program at 75% of the site's draw, for 20 minutes with
# 5 minute ramps; `pfi cluster serve` (its VEN polling the VTN with an OAuth 2.0
# client-credentials token) over one `pfi serve` on the fake NVML picks it up, is at the target
# by the start and holds it for the whole window, then restores in the ramp's steps (an
# independent process samples the sum of the limits at single instants against the target, then
# against each restore step), posts a report with USAGE and DEMAND per interval, and the event's
# compliance report shows 0 W over, 0 s over the target and the ramps kept.  An event with an
# unknown payload type is counted as an error and changes nothing; revoked tokens are fetched
# again.  A randomizeStart moves a SIMPLE event by the offset drawn (shown beside the VTN's
# start), the same after the controller restarts, and leaves a limit on time; a report sent
# before a restart is not sent again.
# Every process runs on pfi's clock scaled SCALE times (PFI_CLOCK_SCALE, util/clock.h): at 100,
# the 30 minutes of the ramps and the window take 18 s of real time.  The controller plans 3.4 s
# of real time ahead (340 s on this clock), so it is at the target before the ramp-down line
# asks (allowed: the line is a ceiling); the restore's steps are not planned ahead.
# Needs $PFI_BIN, $PFI_FAKENVML, $PFI_TEST_TMP (tests/run.sh sets them).
# shellcheck disable=SC2016 # await messages are expanded when they are shown
set -u

name=it_openadr
# shellcheck disable=SC2034 # read by fail (support/openadr_env.sh)
logs="serve cluster vtn"
# shellcheck source=tests/support/openadr_env.sh
. "$(dirname "$0")/support/openadr_env.sh"
# A malformed scaled clock is refused before anything starts.
for bad in "PFI_CLOCK_SCALE=fast PFI_CLOCK_ORIGIN=1" "PFI_CLOCK_SCALE=60"; do
    # shellcheck disable=SC2086
    env -u PFI_CLOCK_SCALE -u PFI_CLOCK_ORIGIN $bad "$PFI_BIN" gpus --backend sim >"$dir/bad.out" 2>&1
    st=$?
    [ $st = 2 ] && grep -q "PFI_CLOCK_" "$dir/bad.out" || fail "$bad: exit $st: $(cat "$dir/bad.out")"
done

# ---- the VTN, a node daemon, the controller with its VEN ----
start_vtn pfi-site site-dr --no-subscriptions
# shellcheck disable=SC2086
"$PFI_BIN" serve $HW --listen "unix:$dir/n1.sock" --port-file "$dir/serve.port" \
    --token-file "$dir/token" --db "$dir/serve.db" --sample-interval 5s >"$dir/serve.log" 2>&1 &
pids="$pids $!"
wait_file "$dir/serve.port" "pfi serve"
echo '{"nodes": [{"name": "n1", "gpus": 8}], "jobs": []}' >"$dir/topo.json"
cat >"$dir/ven.conf" <<EOF
vtn_url = $VTN   # the VTN's API base (a comment after a value, as docs/cluster.md shows)
client_id = pfi-site
secret_file = $dir/secret
program = site-dr        # programName
poll = 20s               # default 10 s
ramp = 5m
callback_url = http://127.0.0.1:9
randomize_seed = 11
EOF
# The controller on its store and settings (started again the same way to restart it).
start_cluster() {
    rm -f "$dir/cluster.port"
    "$PFI_BIN" cluster serve --listen 127.0.0.1:0 --port-file "$dir/cluster.port" --token-file "$dir/token" \
        --node-url "unix:$dir/%n.sock" --node-token-file "$dir/token" --topology "$dir/topo.json" \
        --heartbeat 6s --node-ttl 1h --db "$dir/cluster.db" --openadr "$dir/ven.conf" >>"$dir/cluster.log" 2>&1 &
    CL_PID=$!
    pids="$pids $CL_PID"
    wait_file "$dir/cluster.port" "pfi cluster serve"
    CL=http://127.0.0.1:$(cat "$dir/cluster.port")
}
start_cluster

ven() { curl -sf "$CL/v1/grid/openadr"; }

i=0
until ven | grep -q '"program_id": "p1"'; do
    i=$((i + 1)); [ $i -gt 200 ] && fail "the VEN did not find its program: $(ven)"
    sleep 0.1
done
note "VEN: $(ven | tr -d '\n ')"
# This VTN offers no subscriptions: said once, and the client polls alone.
i=0
until ven | grep -q 'subscriptions not offered by the VTN (POST /subscriptions: HTTP 404)'; do
    i=$((i + 1)); [ $i -gt 100 ] && fail "no word of the missing subscriptions: $(ven)"
    sleep 0.1
done
# Registered as a VEN with its resource (the VTN offers it).
i=0
until ven | grep -q '"ven_id": *"ven1"'; do
    i=$((i + 1)); [ $i -gt 100 ] && fail "the VEN did not register: $(ven)"
    sleep 0.1
done
curl -sf "$VTN/_test/vens" | "$PY" -c '
import json, sys
v = json.load(sys.stdin)
assert len(v) == 1 and v[0]["venName"] == "pfi-site", v
assert [r["resourceName"] for r in v[0]["resources"]] == ["site"], v' || fail "registration: $(curl -sf "$VTN/_test/vens")"

# ---- a bad event: unknown payload type, nothing taken ----
T=$(( $(now | cut -d. -f1) + 86400 ))
publish "{\"eventName\": \"bad\", \"priority\": 1, \"intervalPeriod\": {\"start\": \"$(iso $T)\", \"duration\": \"PT10M\"}, \"intervals\": [{\"id\": 0, \"payloads\": [{\"type\": \"CHOCOLATE\", \"values\": [3]}]}]}"
i=0
until ven | grep -q 'unknown payload type CHOCOLATE'; do
    i=$((i + 1)); [ $i -gt 100 ] && fail "no error for an unknown payload type: $(ven)"
    sleep 0.1
done
curl -sf "$CL/v1/grid/events" | grep -q '"id"' && fail "an event with an unknown payload was taken"

# ---- SIMPLE level 2: a cut of the configured 20% (a day from now: binds nothing here) ----
publish "{\"eventName\": \"simple\", \"priority\": 2, \"intervalPeriod\": {\"start\": \"$(iso $T)\", \"duration\": \"PT10M\"}, \"intervals\": [{\"id\": 0, \"payloads\": [{\"type\": \"SIMPLE\", \"values\": [2]}]}]}"
i=0
until curl -sf "$CL/v1/grid/events/oadr-2-0" >"$dir/simple.json" 2>/dev/null; do
    i=$((i + 1)); [ $i -gt 100 ] && fail "SIMPLE level 2 not taken: $(ven)"
    sleep 0.1
done
grep -q '"cut": 0.2' "$dir/simple.json" && grep -q '"priority": -2' "$dir/simple.json" &&
    grep -q '"duration_s": 600' "$dir/simple.json" || fail "SIMPLE level 2 mapped to $(cat "$dir/simple.json")"

# ---- the event: 75% of the site's draw now, for 20 minutes, 5 minute ramps ----
cap_target 0.75
note "site draw $draw W: limit $KW kW"
MAX=5600 # the site's maximum: 8 GPUs at 700 W, the level the restore returns to
# Published 10 minutes ahead: the ramp starts 5 minutes later (3 s of real time to take it).
START=$(( $(now | cut -d. -f1) + 600 ))
END=$((START + 1200))
# What the sampler allows when (util/clock.h time): the maximum, the target from the start, then
# the restore's 5 equal steps of a minute (the first still at the target), each from its start.
{
    echo schedule
    echo "0 $MAX"
    echo "$START $TARGET"
    for k in 1 2 3 4 5; do
        echo "$((END + 60 * k)) $(awk -v t=$TARGET -v m=$MAX -v k=$k 'BEGIN { printf "%.3f", t + (m - t) * k / 5 }')"
    done
} >"$dir/allowed"
publish_cap "$START" PT20M
i=0
until curl -sf "$CL/v1/grid/events/oadr-3-0" >"$dir/event.json" 2>/dev/null; do
    i=$((i + 1)); [ $i -gt 60 ] && fail "the VEN did not take the event: $(ven)"
    sleep 0.1
done
grep -q '"ramp_down_s": 300' "$dir/event.json" && grep -q '"ramp_up_s": 300' "$dir/event.json" ||
    fail "the event's ramps: $(cat "$dir/event.json")"
note "event taken: $(tr -d '\n' <"$dir/event.json" | cut -c1-160)"
check_start "$START"
# A revoked token mid-event: the VEN fetches a new one and carries on.
curl -sf -o /dev/null -X POST "$VTN/_test/revoke" || fail "revoke"
sleep_until $((END + 300))
check_restored $MAX

# ---- the reports: the one posted to the VTN, and the event's compliance report ----
i=0
until curl -sf "$VTN/_test/reports" | grep -q '"USAGE"'; do
    i=$((i + 1)); [ $i -gt 150 ] && fail "no report reached the VTN: $(ven)"
    sleep 0.1
done
curl -sf "$VTN/_test/reports" >"$dir/reports.json" || fail "GET /_test/reports"
curl -sf "$VTN/_test/stats" >"$dir/stats.json" || fail "GET /_test/stats"
"$PFI_BIN" event --url "$CL" report oadr-3-0 --json >"$dir/report.json" 2>"$dir/report.err" ||
    fail "pfi event report: $(cat "$dir/report.err")"
"$PY" - "$dir/reports.json" "$dir/report.json" "$dir/stats.json" "$TARGET" <<'EOF' ||
import json, sys
# What the VTN received: DEMAND and USAGE per interval, the outcome in its name.
r = json.load(open(sys.argv[1]))[0]
assert r["programID"] == "p1" and r["eventID"] == "3", r
iv = r["resources"][0]["intervals"]
types = {p["type"] for x in iv for p in x["payloads"]}
assert {"USAGE", "DEMAND"} <= types, types
assert all(p["values"][0] >= 0 for x in iv for p in x["payloads"])
assert "max excess 0 W" in r["reportName"], r["reportName"]
# A new token after the revocation: one request refused, then a second token.
st = json.load(open(sys.argv[3]))
assert st["token_requests"] >= 2 and st["unauthorized"] >= 1, st
# The compliance report, from the site power the controller recorded.
rep = json.load(open(sys.argv[2]))
c, ev = rep["compliance"], rep["event"]
assert abs(c["target_w"] - float(sys.argv[4])) < 1, c["target_w"]
assert c["max_excess_w"] == 0 and c["seconds_over_target"] == 0, c
ramp = c["ramp"]
assert ramp["ok"] and ramp["ramp_down_max_excess_w"] == 0 and ramp["restore_max_excess_w"] == 0, ramp
assert ramp["at_target_s_before_start"] > 0, ramp
assert c["window_s"] == 1200 and c["covered_s"] >= 0.9 * 1200, (c["window_s"], c["covered_s"])
win = [x for x in c["intervals"] if ev["start_s"] <= x["t0"] < ev["end_s"]]
assert len(win) == 20 and all(x["max_w"] <= c["target_w"] for x in win), win
print("it_openadr: compliance: target %.0f W, max excess %g W, %g s over, ramp ok (at target %.0f s "
      "before the start), %.0f%% of the window covered, %d one-minute intervals in it, highest "
      "minute %.0f W" % (c["target_w"], c["max_excess_w"], c["seconds_over_target"],
                         ramp["at_target_s_before_start"], 100 * c["covered_s"] / c["window_s"],
                         len(win), max(x["max_w"] for x in win)))
print("it_openadr: VTN report '%s', %d intervals; VTN %s" % (r["reportName"], len(iv), st))
EOF
    fail "reports: $(cat "$dir/reports.json") $(cat "$dir/report.json") $(cat "$dir/stats.json")"
# ---- randomizeStart PT30M on the controller: a SIMPLE event starts the drawn offset after the
# VTN's start (seed 11, venName pfi-site), shown beside it; a limit starts on time; after a
# restart both are as they were, from the store, and not taken again ----
RS=$((T + 7200))
publish "$(oadr_event rshed SIMPLE 1 "$RS" PT30M)"
publish "$(oadr_event rcap IMPORT_CAPACITY_LIMIT "$KW" "$RS" PT30M)"
taken() { curl -sf "$CL/v1/grid/events/oadr-$1-0" >"$dir/$1.json"; }
await 200 'event rshed not taken: $(ven)' taken rshed
await 200 'event rcap not taken: $(ven)' taken rcap
late=$(randomized_by "$dir/rshed.json" "$RS" 1800 11 pfi-site) ||
    fail "the controller's event rshed (randomizeStart PT30M from $RS): $(cat "$dir/rshed.json")"
[ "$late" != 0 ] || fail "event rshed not randomized (seed 11 draws a non-zero offset)"
randomized_by "$dir/rcap.json" "$RS" 1800 11 pfi-site limit >/dev/null ||
    fail "the controller's limit rcap (randomizeStart PT30M from $RS): $(cat "$dir/rcap.json")"
cp "$dir/rshed.json" "$dir/rshed-before.json"
kill "$CL_PID" && wait "$CL_PID" 2>/dev/null
start_cluster
# shellcheck disable=SC2034 # read by ven_num and polled (openadr_env.sh): the controller's routes are the node's
NODE_URL=$CL
await 200 'the restarted controller did not poll 3 times: $(ven)' polled 3
taken rshed && taken rcap || fail "events rshed, rcap not held after a restart: $(curl -sf "$CL/v1/grid/events")"
again=$(randomized_by "$dir/rshed.json" "$RS" 1800 11 pfi-site) && [ "$again" = "$late" ] ||
    fail "event rshed after a restart (was $late s late): $(cat "$dir/rshed.json")"
randomized_by "$dir/rcap.json" "$RS" 1800 11 pfi-site limit >/dev/null ||
    fail "limit rcap after a restart: $(cat "$dir/rcap.json")"
[ "$(ven_num events_taken)" = 0 ] || fail "held events taken again after a restart: $(ven)"
# The report of event 3, sent before the restart, is not sent again (the set of sent reports
# was kept in memory: a restart within the hour after an event posted its report again).
n3=$(curl -sf "$VTN/_test/reports" | "$PY" -c 'import json, sys; print(sum(r["eventID"] == "3" for r in json.load(sys.stdin)))')
[ "$n3" = 1 ] || fail "event 3 reported $n3 times after a restart"
note "randomizeStart PT30M on the controller: SIMPLE event $late s late (seed 11), the same after a restart; a limit on time"
echo "it_openadr: ok"
