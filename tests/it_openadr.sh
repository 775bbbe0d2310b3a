#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Integration test of the OpenADR 3.0 client (issue 15): a test VTN (tests/vtn.py) publishes an
# IMPORT_CAPACITY_LIMIT event for the program; `pfi cluster serve` (its VEN polling the VTN with
# an OAuth 2.0 client-credentials token) over one `pfi serve` on the fake NVML picks it up, is at
# the target by the start and holds it for the whole window (an independent process samples the
# sum of the limits at single instants), restores afterwards, and posts a report with USAGE and
# DEMAND per interval; an event with an unknown payload type is counted as an error and changes
# nothing; revoked tokens are fetched again.
# The limit is 75% of the site's draw when the event is published.  Times are seconds, not the 20
# minutes of the issue's example: the daemons run in real time.
# Needs $PFI_BIN, $PFI_FAKENVML, $PFI_TEST_TMP (tests/run.sh sets them).
set -u

fail() {
    echo "it_openadr: FAIL: $*"
    for f in serve cluster vtn; do [ -f "$dir/$f.log" ] && { echo "-- $f"; tail -n 15 "$dir/$f.log"; }; done
    exit 1
}
note() { echo "it_openadr: $*"; }

[ -n "${PFI_BIN:-}" ] && [ -x "$PFI_BIN" ] || { echo "it_openadr: PFI_BIN is not set"; exit 1; }
SAMPLER=$(dirname "$PFI_BIN")/tests/test_serve_sampler
[ -x "$SAMPLER" ] || { echo "it_openadr: $SAMPLER is not built"; exit 1; }
command -v curl >/dev/null || { echo "it_openadr: curl is missing (scripts/install-deps.sh test)"; exit 77; }
command -v python3 >/dev/null || { echo "it_openadr: python3 is missing (scripts/install-deps.sh test)"; exit 77; }
here=$(cd "$(dirname "$0")" && pwd)

dir=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/it_openadr.XXXXXX") || exit 1
pids=""
cleanup() {
    for p in $pids; do kill -9 "$p" 2>/dev/null; done
    [ -n "${KEEP:-}" ] || rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

export PFI_SIM_STATE="$dir/sim.state" PFI_JOURNAL="$dir/journal"
unset PFI_SERVE_URL PFI_SERVE_TOKEN_FILE PFI_READ_ONLY
if [ -n "${PFI_FAKENVML:-}" ] && [ -f "$PFI_FAKENVML" ]; then
    HW="--backend nvml --nvml-lib $PFI_FAKENVML"
else
    note "fake NVML not built ($PFI_FAKENVML): running on the sim backend over the same state"
    HW="--backend sim"
fi
head -c 32 /dev/urandom | base64 >"$dir/token"
head -c 32 /dev/urandom | base64 >"$dir/secret"
chmod 600 "$dir/token" "$dir/secret"
wait_file() { # $1 file, $2 what
    i=0
    while [ ! -s "$1" ]; do
        i=$((i + 1)); [ $i -gt 600 ] && fail "$2 did not start"
        sleep 0.05
    done
}

# ---- the VTN, a node daemon, the controller with its VEN ----
python3 "$here/vtn.py" --port-file "$dir/vtn.port" --client-id pfi-site --secret-file "$dir/secret" \
    --program site-dr >"$dir/vtn.log" 2>&1 &
pids="$pids $!"
wait_file "$dir/vtn.port" "the VTN"
VTN=http://127.0.0.1:$(cat "$dir/vtn.port")
# shellcheck disable=SC2086
"$PFI_BIN" serve $HW --listen "unix:$dir/n1.sock" --port-file "$dir/serve.port" \
    --token-file "$dir/token" --db "$dir/serve.db" --sample-interval 100ms >"$dir/serve.log" 2>&1 &
pids="$pids $!"
wait_file "$dir/serve.port" "pfi serve"
echo '{"nodes": [{"name": "n1", "gpus": 8}], "jobs": []}' >"$dir/topo.json"
cat >"$dir/ven.conf" <<EOF
vtn_url = $VTN
client_id = pfi-site
secret_file = $dir/secret
program = site-dr
poll = 300ms
ramp = 3s
EOF
"$PFI_BIN" cluster serve --listen 127.0.0.1:0 --port-file "$dir/cluster.port" --token "$dir/token" \
    --node-url "unix:$dir/%n.sock" --node-token "$dir/token" --topology "$dir/topo.json" \
    --heartbeat 1s --db "$dir/cluster.db" --openadr "$dir/ven.conf" >"$dir/cluster.log" 2>&1 &
pids="$pids $!"
wait_file "$dir/cluster.port" "pfi cluster serve"
CL=http://127.0.0.1:$(cat "$dir/cluster.port")

limits() {
    # shellcheck disable=SC2086
    "$PFI_BIN" gpus $HW --read-only --json | awk -F': ' '/"limit_w"/ { sub(/,$/, "", $2); printf "%s ", $2 }'
}
sum_limits() { limits | awk '{ s = 0; for (i = 1; i <= NF; i++) s += $i; printf "%.1f\n", s }'; }
set_allowed() { echo "$1" >"$dir/allowed.tmp" && mv "$dir/allowed.tmp" "$dir/allowed"; }
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b + 0.5) }'; }
now() { date +%s.%N | cut -c1-14; }
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
sleep_until() { while awk -v a="$(now)" -v b="$1" 'BEGIN { exit !(a < b) }'; do sleep 0.05; done; }
publish() { curl -sf -o /dev/null -X POST -d "$1" "$VTN/_test/events" || fail "publishing $1"; }
ven() { curl -sf "$CL/v1/grid/openadr"; }

i=0
until ven | grep -q '"program_id": "p1"'; do
    i=$((i + 1)); [ $i -gt 200 ] && fail "the VEN did not find its program: $(ven)"
    sleep 0.1
done
note "VEN: $(ven | tr -d '\n ')"

# ---- a bad event: unknown payload type, nothing taken ----
T=$(( $(now | cut -d. -f1) + 3600 ))
publish "{\"eventName\": \"bad\", \"priority\": 1, \"intervalPeriod\": {\"start\": \"$(iso $T)\", \"duration\": \"PT10M\"}, \"intervals\": [{\"id\": 0, \"payloads\": [{\"type\": \"CHOCOLATE\", \"values\": [3]}]}]}"
i=0
until ven | grep -q 'unknown payload type CHOCOLATE'; do
    i=$((i + 1)); [ $i -gt 100 ] && fail "no error for an unknown payload type: $(ven)"
    sleep 0.1
done
curl -sf "$CL/v1/grid/events" | grep -q '"id"' && fail "an event with an unknown payload was taken"

# ---- SIMPLE level 2: a cut of the configured 20% (an hour from now: binds nothing here) ----
publish "{\"eventName\": \"simple\", \"priority\": 2, \"intervalPeriod\": {\"start\": \"$(iso $T)\", \"duration\": \"PT10M\"}, \"intervals\": [{\"id\": 0, \"payloads\": [{\"type\": \"SIMPLE\", \"values\": [2]}]}]}"
i=0
until curl -sf "$CL/v1/grid/events/oadr-2-0" >"$dir/simple.json" 2>/dev/null; do
    i=$((i + 1)); [ $i -gt 100 ] && fail "SIMPLE level 2 not taken: $(ven)"
    sleep 0.1
done
grep -q '"cut": 0.2' "$dir/simple.json" && grep -q '"priority": -2' "$dir/simple.json" &&
    grep -q '"duration_s": 600' "$dir/simple.json" || fail "SIMPLE level 2 mapped to $(cat "$dir/simple.json")"

# ---- the event: 75% of the site's draw now, for 6 s, 3 s ramps ----
draw=$("$PFI_BIN" gpus $HW --read-only --json | awk -F': ' '/"power_w"/ { sub(/,$/, "", $2); s += $2 } END { printf "%.0f", s }')
TARGET=$(awk -v d="$draw" 'BEGIN { printf "%.0f", 0.75 * d }')
KW=$(awk -v t="$TARGET" 'BEGIN { printf "%.3f", t / 1000 }')
note "site draw $draw W: limit $KW kW"
set_allowed 5600
"$SAMPLER" --sample "$PFI_SIM_STATE" "$dir/allowed" "$dir/sampled" 2>>"$dir/sampler.log" &
SAMPLE=$!
pids="$pids $SAMPLE"
START=$(( $(now | cut -d. -f1) + 5 ))
END=$((START + 6))
publish "{\"eventName\": \"cap\", \"priority\": 0, \"intervalPeriod\": {\"start\": \"$(iso $START)\", \"duration\": \"PT6S\"}, \"payloadDescriptors\": [{\"payloadType\": \"IMPORT_CAPACITY_LIMIT\", \"units\": \"KW\"}], \"intervals\": [{\"id\": 0, \"payloads\": [{\"type\": \"IMPORT_CAPACITY_LIMIT\", \"values\": [$KW]}]}]}"
i=0
until curl -sf "$CL/v1/grid/events/oadr-3-0" >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -gt 60 ] && fail "the VEN did not take the event: $(ven)"
    sleep 0.1
done
note "event taken: $(curl -sf "$CL/v1/grid/events" | grep -m1 '"id": "oadr')"
sleep_until "$START"
set_allowed $TARGET
s=$(sum_limits)
le "$s" $TARGET || fail "at the start the limits sum to $s W > $TARGET W"
note "at the start: limits sum $s W"
# A revoked token mid-event: the VEN fetches a new one and carries on.
curl -sf -o /dev/null -X POST "$VTN/_test/revoke" || fail "revoke"
sleep_until "$END"
set_allowed 5600
i=0
until [ "$(sum_limits)" = "5600.0" ]; do
    i=$((i + 1)); [ $i -gt 200 ] && fail "limits not restored after the event: $(limits)"
    sleep 0.1
done
: >"$dir/sampled.stop"
wait "$SAMPLE"
read -r _ samples _ viol _ maxsum _ over <"$dir/sampled" || fail "no sampler output"
note "sampler: $samples instants, largest sum $maxsum W, $viol over the target"
[ "$viol" = 0 ] || fail "the limits exceeded the event's target at $viol sampled instants"

# ---- the report ----
i=0
until curl -sf "$VTN/_test/reports" | grep -q '"USAGE"'; do
    i=$((i + 1)); [ $i -gt 150 ] && fail "no report reached the VTN: $(ven)"
    sleep 0.1
done
curl -sf "$VTN/_test/reports" >"$dir/reports.json"
python3 - "$dir/reports.json" <<'EOF' || fail "report: $(cat "$dir/reports.json")"
import json, sys
r = json.load(open(sys.argv[1]))[0]
assert r["programID"] == "p1" and r["eventID"] == "3", r
iv = r["resources"][0]["intervals"]
types = {p["type"] for x in iv for p in x["payloads"]}
assert {"USAGE", "DEMAND"} <= types, types
assert all(p["values"][0] >= 0 for x in iv for p in x["payloads"])
assert "max excess 0 W" in r["reportName"], r["reportName"]
EOF
stats=$(curl -sf "$VTN/_test/stats")
echo "$stats" | python3 -c 'import json,sys; s=json.load(sys.stdin); sys.exit(0 if s["token_requests"] >= 2 else 1)' ||
    fail "the VEN did not fetch a new token after the revocation: $stats"
note "report: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[0]["reportName"])' "$dir/reports.json"); VTN $stats"
echo "it_openadr: ok"
