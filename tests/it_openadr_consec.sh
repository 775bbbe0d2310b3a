#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# An OpenADR event of two back-to-back intervals on `pfi serve` (tests/vtn.py): an
# IMPORT_CAPACITY_LIMIT at 75% of the node's draw for 10 minutes each, 2-minute ramps, after an
# hour of record.  Each interval is a grid event with its own report; interval 1's compliance
# baseline is the draw before interval 0, not interval 0's curtailed draw (its energy shed came
# out about 0), and the two reports posted to the VTN do not share a second (each covered its
# ramps, so the minutes where interval 0's restore met interval 1's ramp were counted twice
# under the one eventID): they meet at the boundary of the intervals and cover from interval
# 0's ramp to interval 1's restore between them.
# pfi's clock runs 200 times faster (util/clock.h): ~25 s of real time (faster, the record
# has gaps, and without half of the hour before a ramp recorded a report has no baseline).
# Needs $PFI_BIN, $PFI_FAKENVML, $PFI_TEST_TMP (tests/run.sh sets them).
# await expands its message when it fails, so the messages are single-quoted.
# shellcheck disable=SC2016
set -u

name=it_openadr_consec
SCALE=200
# shellcheck shell=sh source=tests/support/openadr_env.sh
. "$(dirname "$0")/support/openadr_env.sh"

start_vtn pfi-node node-dr --no-vens
serve_openadr --listen "unix:$dir/serve.sock" --set openadr_poll=1m --set openadr_ramp=2m \
    --set openadr_max_skew=10m
await 600 'pfi serve did not start' served
reports_of() { [ "$(curl -sf "$VTN/_test/reports" | grep -o "\"eventID\": *\"$1\"" | wc -l)" -ge "$2" ]; }
cap_target 0.75
START=$(( $(now | cut -d. -f1) + 3900 ))
publish "{\"id\": \"two\", \"intervalPeriod\": {\"start\": \"$(iso "$START")\", \"duration\": \"PT10M\"}, \"payloadDescriptors\": [{\"payloadType\": \"IMPORT_CAPACITY_LIMIT\", \"units\": \"KW\"}], \"intervals\": [{\"id\": 0, \"payloads\": [{\"type\": \"IMPORT_CAPACITY_LIMIT\", \"values\": [$KW]}]}, {\"id\": 1, \"payloads\": [{\"type\": \"IMPORT_CAPACITY_LIMIT\", \"values\": [$KW]}]}]}"
await 300 'interval 1 not taken: $(get /v1/grid/openadr)' held two-1
note "node draw $draw W: two intervals of 10 min at $TARGET W from $(iso "$START")"
sleep_until $((START + 1200 + 120))
await 600 'not both reports reached the VTN: $(get /v1/grid/openadr)' reports_of two 2
curl -sf "$VTN/_test/reports" >"$dir/reports.json" || fail "GET /_test/reports"
for k in 0 1; do
    get "/v1/grid/events/oadr-two-$k/report" >"$dir/report$k.json" || fail "the report of interval $k"
done
"$PY" - "$dir/reports.json" "$dir/report0.json" "$dir/report1.json" "$START" <<'EOF' ||
import datetime, json, sys
start = float(sys.argv[4])
posted = [r for r in json.load(open(sys.argv[1])) if r["eventID"] == "two"]
assert len(posted) == 2, posted
spans = []
for r in posted:
    for x in r["resources"][0]["intervals"]:
        t0 = datetime.datetime.fromisoformat(x["intervalPeriod"]["start"].replace("Z", "+00:00")).timestamp()
        spans.append((t0, t0 + float(x["intervalPeriod"]["duration"][2:-1]), r["reportName"]))
spans.sort()
for a, b in zip(spans, spans[1:]):
    assert b[0] >= a[1] - 1e-6, "reported twice: %s and %s" % (a, b)
# Between them, from interval 0's ramp to interval 1's restore (two 60 s steps), meeting at the
# boundary: interval 0 reported up to it, interval 1 from it.
r0 = [s for s in spans if "oadr-two-0" in s[2]]
r1 = [s for s in spans if "oadr-two-1" in s[2]]
assert abs(r0[0][0] - (start - 120)) < 1 and abs(r0[-1][1] - (start + 600)) < 1e-6, (r0[0], r0[-1])
assert abs(r1[0][0] - (start + 600)) < 1e-6 and abs(r1[-1][1] - (start + 1200 + 120)) < 1, (r1[0], r1[-1])
c0 = json.load(open(sys.argv[2]))["compliance"]
c1 = json.load(open(sys.argv[3]))["compliance"]
assert abs(c1["baseline_w"] - c0["baseline_w"]) < 0.01 * c0["baseline_w"], (c0["baseline_w"], c1["baseline_w"], c1["baseline_method"])
assert "outside other events" in c1["baseline_method"], c1["baseline_method"]
assert c1["energy_shed_kwh"] > 0.8 * c0["energy_shed_kwh"] > 0, (c0["energy_shed_kwh"], c1["energy_shed_kwh"])
print("it_openadr_consec: reports %d + %d minutes, none shared; baselines %.0f W and %.0f W (%s); "
      "shed %.3f and %.3f kWh" % (len(r0), len(r1), c0["baseline_w"], c1["baseline_w"],
                                  c1["baseline_method"], c0["energy_shed_kwh"], c1["energy_shed_kwh"]))
EOF
    fail "reports: $(cat "$dir/reports.json") $(cat "$dir/report1.json")"
echo "it_openadr_consec: ok"
