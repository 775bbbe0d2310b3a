#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A VTN's change of an IMPORT_CAPACITY_LIMIT while it is in force, on `pfi serve`: the limit,
# 85% of the node's draw, is lowered to 70% halfway through its window.  The node keeps both
# definitions, each from when it took effect, and its compliance report judges each instant
# against the one in force then: the first half, under 85%, is not counted over the 70% asked
# only later (it was: the whole window was judged against the last target, and the report
# posted to the VTN said so); the report says the event was modified and when, in its JSON and
# in the reportName posted to the VTN.
# pfi's clock runs 100 times faster (util/clock.h): ~15 s of real time.
# Needs $PFI_BIN, $PFI_FAKENVML, $PFI_TEST_TMP (tests/run.sh sets them).
# await expands its message when it fails, so the messages are single-quoted.
# shellcheck disable=SC2016
set -u

name=it_openadr_modify
SCALE=100
# shellcheck shell=sh source=tests/support/openadr_env.sh
. "$(dirname "$0")/support/openadr_env.sh"

start_vtn pfi-node node-dr --no-vens
serve_openadr --listen "unix:$dir/serve.sock" --set openadr_poll=10s --set openadr_ramp=1m
await 600 'pfi serve did not start' served
field() { get "/v1/grid/events/oadr-$1" | tr ',{}' '\n\n\n' | sed -n "s/^ *\"$2\": *//p" | head -n 1; }
limit_is() { awk -v a="$(field mod-0 limit_w)" -v b="$1" 'BEGIN { exit !(a == b) }'; }
reported() { curl -sf "$VTN/_test/reports" | grep -q '"eventID": *"mod"'; }

cap_target 0.85
HI=$TARGET HI_KW=$KW
cap_target 0.7
LO=$TARGET LO_KW=$KW
NOW=$(now | cut -d. -f1)
S=$((NOW + 120))
body() {
    printf '{"id": "mod", "intervalPeriod": {"start": "%s", "duration": "PT10M"}, "payloadDescriptors": [{"payloadType": "IMPORT_CAPACITY_LIMIT", "units": "KW"}], "intervals": [{"id": 0, "payloads": [{"type": "IMPORT_CAPACITY_LIMIT", "values": [%s]}]}]}' \
        "$(iso "$S")" "$1"
}
publish "$(body "$HI_KW")"
await 400 'event mod not taken: $(get /v1/grid/openadr)' held mod-0
sleep_until $((S + 300))
curl -sf -o /dev/null -X PUT -d "$(body "$LO_KW")" "$VTN/_test/events/mod" || fail "changing event mod"
await 400 'event mod not lowered here: $(get /v1/grid/events/oadr-mod-0)' limit_is "$(awk -v k="$LO_KW" 'BEGIN { print k * 1000 }')"
note "event mod lowered from $HI W to $LO W halfway through its window"
await 1200 'no report of event mod reached the VTN: $(curl -sf "$VTN/_test/reports") $(get /v1/grid/openadr)' reported

get /v1/grid/events/oadr-mod-0/report >"$dir/report.json" || fail "GET the report of event mod"
curl -sf "$VTN/_test/reports" >"$dir/reports.json" || fail "GET /_test/reports"
"$PY" - "$dir/report.json" "$dir/reports.json" "$HI_KW" "$LO_KW" <<'EOF' || fail "the report of event mod: $(cat "$dir/report.json")"
import json, sys
rep, posted = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
hi, lo = float(sys.argv[3]) * 1000, float(sys.argv[4]) * 1000
c = rep["compliance"]
revs = c.get("revisions")
assert revs and len(revs) == 2, "revisions: %s" % revs
assert revs[0]["target_w"] == hi and revs[1]["target_w"] == lo, revs
assert revs[0]["from"] is None and revs[1]["from"], revs
# The first half was under its own target; over the later one only while the node came down.
assert revs[0]["seconds_over_target"] == 0, revs[0]
assert c["seconds_over_target"] < 60, "%s s over: judged against the later target" % c["seconds_over_target"]
assert "changed while under way at %s" % revs[1]["from"] in rep["state_message"], rep["state_message"]
names = [r["reportName"] for r in posted if r["eventID"] == "mod"]
assert len(names) == 1 and "modified under way at %s" % revs[1]["from"] in names[0], names
print("%s s over the target; reportName: %s" % (c["seconds_over_target"], names[0]))
EOF
note "$("$PY" -c 'import json, sys; c = json.load(open(sys.argv[1]))["compliance"]; print("report: %s s over the target, revisions %s" % (c["seconds_over_target"], [(r["from"], r["target_w"], r["seconds_over_target"]) for r in c["revisions"]]))' "$dir/report.json")"
echo "it_openadr_modify: ok"
