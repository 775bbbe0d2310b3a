#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# How events from an OpenADR 3.0 VTN (tests/vtn.py) end in `pfi serve`: an event the VTN still
# lists after its window is over is not taken (it was refused as ended, an error at every
# poll); an event in force whose end the VTN moves into the past ends here at once (it held on
# to its old end, the change refused as ended); and a finished event is let go an hour after
# its restore, its report sent and kept as history (nothing deleted them: the node's 64 events
# filled within days of a VTN's daily schedule and every later event was refused; deleted, its
# report was gone), and is not taken again while
# the VTN still lists it; and an event targeted at another VEN (VEN_NAME) is not taken here, one
# retargeted away is cancelled (every event of the program was applied, whoever it was for); an
# event from "now" (0001-01-01) until further notice (P9999Y) is held until the VTN deletes it;
# a limit above the site's maximum is not taken and is no error; a change of priority alone is
# taken; a VTN whose pages hold fewer events than asked is read to its empty page however many
# (past 40 pages too), one that ignores skip is caught at its second page, and a listing that
# never ends (cut at 1000 pages) or is cut short by a failing page withdraws nothing; a day ahead
# in 96 quarter-hours is held whole; an event one listing leaves out is withdrawn only when the
# next listing, asked for at once, leaves it out too.
# pfi's clock runs 1000 times faster (util/clock.h): ~15 s of real time
# (the clocks' tolerance is 10 minutes: the Date header's whole second is 1000 s here).
# Needs $PFI_BIN, $PFI_FAKENVML, $PFI_TEST_TMP (tests/run.sh sets them).
# await expands its message when it fails, so the messages are single-quoted.
# shellcheck disable=SC2016
set -u

name=it_openadr_ends
SCALE=1000
# shellcheck shell=sh source=tests/support/openadr_env.sh
. "$(dirname "$0")/support/openadr_env.sh"

start_vtn pfi-node node-dr --no-vens
MAX=$(sum_limits)
serve_openadr --listen "unix:$dir/serve.sock" --set openadr_poll=2m --set openadr_ramp=0s \
    --set openadr_max_skew=10m
# What the steps below wait for (await, openadr_env.sh, and its served, held, polled).
held_to() { get "/v1/grid/events/oadr-$1" >"$2" 2>/dev/null; }
has_priority() { get "/v1/grid/events/oadr-$1" 2>/dev/null | grep -q "\"priority\": *$2,"; }
cancelled() { [ "$(ven_num events_cancelled)" = "$1" ]; }
limits_are() { [ "$(sum_limits)" = "$1" ]; }
under_target() { le "$(sum_limits)" "$TARGET"; }
await 600 'pfi serve did not start' served
event() {
    printf '{"id": "%s", "intervalPeriod": {"start": "%s", "duration": "%s"}, "payloadDescriptors": [{"payloadType": "IMPORT_CAPACITY_LIMIT", "units": "KW"}], "intervals": [{"id": 0, "payloads": [{"type": "IMPORT_CAPACITY_LIMIT", "values": [%s]}]}]}' \
        "$1" "$(iso "$2")" "$3" "$KW"
}
cap_target 0.75

# ---- an event over two hours ago, still listed, and one to come ----
NOW=$(now | cut -d. -f1)
START=$((NOW + 900))
curl -sf -o /dev/null -X POST -d "$(event past $((NOW - 7200)) PT30M)" "$VTN/_test/events" ||
    fail "publishing event past"
curl -sf -o /dev/null -X POST -d "$(event long $START PT2H)" "$VTN/_test/events" ||
    fail "publishing event long"
await 200 'event long not taken: $(get /v1/grid/openadr)' held long-0
polls 3
get /v1/grid/events/oadr-past-0 >/dev/null 2>&1 && fail "event past taken: $(get /v1/grid/events)"
# The one error: this VTN offers no registration.
[ "$(ven_num errors)" = 1 ] || fail "event past counted as an error: $(get /v1/grid/openadr)"
note "an event over 2 h ago, still listed: not taken, no error over $(($(ven_num polls) - p0)) polls"

# ---- event long in force; the VTN moves its end into the past: ended here at once ----
sleep_until $((START + 300))
s=$(sum_limits)
le "$s" "$TARGET" || fail "event long in force: limits sum $s W > $TARGET W"
curl -sf -o /dev/null -X PUT -d "$(event long $START PT1M)" "$VTN/_test/events/long" ||
    fail "changing event long"
await 200 'event long ended early on the VTN, not here: $(get /v1/grid/openadr) $(get /v1/grid/events/oadr-long-0)' cancelled 1
end=$(get /v1/grid/events/oadr-long-0 | sed -n 's/.*"end_s": *\([0-9.]*\).*/\1/p')
# Its end: a second of real time (SCALE s here) after the change was seen.
awk -v e="$end" -v n="$(now)" -v s="$START" -v k="$SCALE" 'BEGIN { exit !(e > s + 300 && e <= n + k) }' ||
    fail "event long's end $end, not between its change and a second after now: $(get /v1/grid/events/oadr-long-0)"
await 200 'limits not restored after event long ended: $(limits)' limits_are "$MAX"
[ "$(ven_num errors)" = 1 ] || fail "ending event long counted an error: $(get /v1/grid/openadr)"
note "event long, in force, its end moved into the past on the VTN: ended here at $end, limits back to $MAX W"

# ---- an hour after its restore, event long is let go, its report sent, not taken again ----
await 300 'event long not let go an hour after its end: $(get /v1/grid/events)' not held long-0
awk -v e="$end" -v n="$(now)" 'BEGIN { exit !(n >= e + 3600) }' || fail "event long let go before an hour passed"
polls 3
get /v1/grid/events/oadr-long-0 >/dev/null 2>&1 && fail "event long taken again: $(get /v1/grid/events)"
[ "$(ven_num reports_posted)" = 1 ] && [ "$(ven_num events_taken)" = 1 ] && [ "$(ven_num errors)" = 1 ] ||
    fail "after letting event long go: $(get /v1/grid/openadr)"
curl -sf "$VTN/_test/reports" | grep -q '"eventID": *"long"' || fail "no report of event long: $(curl -sf "$VTN/_test/reports")"
# ... and kept as history: its report still there (it was deleted with the event: 404), by
# the API and by pfi event, saying until when it is kept
get /v1/grid/events/oadr-long-0/report >"$dir/long-report.json" 2>&1 ||
    fail "event long's report gone once it was let go: $(cat "$dir/long-report.json")"
grep -q '"state": *"complete"' "$dir/long-report.json" && grep -q '"kept_until"' "$dir/long-report.json" ||
    fail "event long's report once let go: $(cat "$dir/long-report.json")"
"$PFI_BIN" event --socket "$dir/serve.sock" report oadr-long-0 --out "$dir/long-report" >"$dir/long-report.txt" 2>&1 &&
    [ -s "$dir/long-report/report.md" ] ||
    fail "pfi event report oadr-long-0 once let go: $(cat "$dir/long-report.txt")"
grep -q 'let go' "$dir/serve.log" && grep -q 'its report kept as history' "$dir/serve.log" ||
    fail "letting event long go not logged"
note "event long let go an hour after its end, its report sent and kept, not taken again over 3 polls"

# ---- targets: an event for another VEN is not taken; one retargeted away is cancelled ----
targeted() {
    event "$1" "$2" PT1H | sed "s/^{/{\"targets\": [{\"type\": \"VEN_NAME\", \"values\": [\"$3\"]}], /"
}
LATER=$(( $(now | cut -d. -f1) + 7200 ))
curl -sf -o /dev/null -X POST -d "$(targeted theirs $LATER other-ven)" "$VTN/_test/events" ||
    fail "publishing event theirs"
curl -sf -o /dev/null -X POST -d "$(targeted mine $LATER pfi-node)" "$VTN/_test/events" ||
    fail "publishing event mine"
await 200 'event mine (targeted at this VEN) not taken: $(get /v1/grid/openadr)' held mine-0
get /v1/grid/events/oadr-theirs-0 >/dev/null 2>&1 && fail "event theirs (another VEN's) taken: $(get /v1/grid/events)"
c0=$(ven_num events_cancelled)
curl -sf -o /dev/null -X PUT -d "$(targeted mine $LATER other-ven)" "$VTN/_test/events/mine" ||
    fail "retargeting event mine"
await 200 'event mine, retargeted at another VEN, still held: $(get /v1/grid/openadr)' not held mine-0
get /v1/grid/events/oadr-theirs-0 >/dev/null 2>&1 && fail "event theirs (another VEN's) taken: $(get /v1/grid/events)"
[ "$(ven_num events_cancelled)" = $((c0 + 1)) ] && [ "$(ven_num errors)" = 1 ] ||
    fail "after retargeting event mine: $(get /v1/grid/openadr)"
note "an event targeted at another VEN not taken; one retargeted at another VEN cancelled"

# ---- an event from "now" (start 0001-01-01) until further notice (P9999Y): taken once, its
# start kept over the polls (it moved with every poll), held until the VTN deletes it ----
t0=$(ven_num events_taken)
curl -sf -o /dev/null -X POST -d "{\"id\": \"urgent\", \"intervalPeriod\": {\"start\": \"0001-01-01\", \"duration\": \"P9999Y\"}, \"intervals\": [{\"id\": 0, \"payloads\": [{\"type\": \"IMPORT_CAPACITY_LIMIT\", \"values\": [$KW]}]}]}" \
    "$VTN/_test/events" || fail "publishing event urgent"
await 200 'event urgent (from now) not taken: $(get /v1/grid/openadr)' held_to urgent-0 "$dir/urgent.json"
polls 3
start1=$(sed -n 's/.*"start_s": *\([0-9.]*\).*/\1/p' "$dir/urgent.json")
start2=$(get /v1/grid/events/oadr-urgent-0 | sed -n 's/.*"start_s": *\([0-9.]*\).*/\1/p')
[ "$(ven_num events_taken)" = $((t0 + 1)) ] && [ "$start1" = "$start2" ] ||
    fail "event urgent over 3 polls: start $start1 then $start2, $(get /v1/grid/openadr)"
get /v1/grid/events/oadr-urgent-0 | grep -q '"end": *"9999-12-31T23:59:59Z"' ||
    fail "event urgent's end: $(get /v1/grid/events/oadr-urgent-0)"
await 200 'event urgent: limits sum $(sum_limits) W > $TARGET W' under_target
curl -sf -o /dev/null -X DELETE "$VTN/_test/events/urgent" || fail "DELETE event urgent"
await 300 'limits not restored after event urgent was deleted: $(limits)' limits_are "$MAX"
[ "$(ven_num errors)" = 1 ] || fail "event urgent counted an error: $(get /v1/grid/openadr)"
note "an event from now until further notice: taken once at $start2, held, ended when the VTN deleted it"
# ---- a limit above the site's maximum (10 MW) cannot bind: not taken, no error; a held one
# the VTN raises that far is cancelled (it was refused at every poll, the old limit kept) ----
big() {
    printf '{"id": "%s", "intervalPeriod": {"start": "%s", "duration": "PT1H"}, "payloadDescriptors": [{"objectType": "EVENT_PAYLOAD_DESCRIPTOR", "payloadType": "IMPORT_CAPACITY_LIMIT", "units": "%s"}], "intervals": [{"id": 0, "payloads": [{"type": "IMPORT_CAPACITY_LIMIT", "values": [%s]}]}]}' \
        "$1" "$(iso "$LATER")" "$2" "$3"
}
LATER=$(( $(now | cut -d. -f1) + 36000 ))
c0=$(ven_num events_cancelled)
curl -sf -o /dev/null -X POST -d "$(big huge MW 10)" "$VTN/_test/events" || fail "publishing event huge"
curl -sf -o /dev/null -X POST -d "$(big raised KW "$KW")" "$VTN/_test/events" || fail "publishing event raised"
await 200 'event raised not taken: $(get /v1/grid/openadr)' held raised-0
curl -sf -o /dev/null -X PUT -d "$(big raised MW 10)" "$VTN/_test/events/raised" || fail "raising event raised"
await 200 'event raised to 10 MW still held: $(get /v1/grid/events/oadr-raised-0) $(get /v1/grid/openadr)' not held raised-0
polls 3
get /v1/grid/events/oadr-huge-0 >/dev/null 2>&1 && fail "event huge (10 MW) taken: $(get /v1/grid/events)"
[ "$(ven_num errors)" = 1 ] && [ "$(ven_num events_cancelled)" = $((c0 + 1)) ] ||
    fail "limits of 10 MW: $(get /v1/grid/openadr)"
note "a limit of 10 MW (above the site's $MAX W): not taken, no error; a held limit raised to it cancelled"

# ---- a change of priority alone is taken (OpenADR 4 -> pfi -4, then 1 -> -1) ----
prio() { big "$1" KW "$KW" | sed "s/^{/{\"priority\": $2, /"; }
curl -sf -o /dev/null -X POST -d "$(prio ranked 4)" "$VTN/_test/events" || fail "publishing event ranked"
await 200 'event ranked (priority 4) not taken as -4: $(get /v1/grid/events/oadr-ranked-0)' has_priority ranked-0 -4
curl -sf -o /dev/null -X PUT -d "$(prio ranked 1)" "$VTN/_test/events/ranked" || fail "changing event ranked"
await 200 'event ranked'\''s priority changed to 1 on the VTN, not here: $(get /v1/grid/events/oadr-ranked-0)' has_priority ranked-0 -1
note "a change of priority alone taken"

# ---- paging: a VTN that answers 2 events a page (OpenADR's limit is a request) is read to its
# empty page (the client stopped at its first short page: the events after it were not taken,
# and those held were cancelled as withdrawn) ----
held_or_fail() { get "/v1/grid/events/oadr-$1-0" >/dev/null 2>&1 || fail "$2: $(get /v1/grid/openadr) $(get /v1/grid/events)"; }
c0=$(ven_num events_cancelled)
curl -sf -o /dev/null -X POST -d '{"max": 2}' "$VTN/_test/page" || fail "POST /_test/page"
curl -sf -o /dev/null -X POST -d "$(big paged KW "$KW")" "$VTN/_test/events" || fail "publishing event paged"
await 200 'event paged (the VTN'\''s 4th page of 2) not taken: $(get /v1/grid/openadr)' held paged-0
polls 3
held_or_fail ranked "event ranked (on the VTN's 4th page of 2) not held"
[ "$(ven_num events_cancelled)" = "$c0" ] || fail "pages of 2: events cancelled: $(get /v1/grid/openadr)"
note "pages of 2 events: read to the empty page, the 8th event taken, none cancelled over 3 polls"

# ---- a listing longer than 40 pages (here 42 events in pages of 1) is read to its empty page:
# the 42nd event is taken, no error (the client stopped at 40 pages, so a VTN keeping three
# weeks of quarter-hours had every new event past its 2000th never read) ----
e0=$(ven_num errors)
curl -sf -o /dev/null -X POST -d '{"max": 1}' "$VTN/_test/page" || fail "POST /_test/page"
"$PY" - "$VTN" "$(iso "$LATER")" <<'EOF' || fail "publishing 33 calm events"
import json, sys, urllib.request
for k in range(33):
    ev = {"id": "calm%d" % k, "intervalPeriod": {"start": sys.argv[2], "duration": "PT10M"},
          "intervals": [{"id": 0, "payloads": [{"type": "SIMPLE", "values": [0]}]}]}
    urllib.request.urlopen(sys.argv[1] + "/_test/events", data=json.dumps(ev).encode()).read()
EOF
curl -sf -o /dev/null -X POST -d "$(big tail KW "$KW")" "$VTN/_test/events" || fail "publishing event tail"
await 300 'event tail (the VTN'\''s 42nd, in pages of 1 event) not taken: $(get /v1/grid/openadr)' held tail-0
polls 2
[ "$(ven_num errors)" = "$e0" ] || fail "a listing of 42 pages counted as an error: $(get /v1/grid/openadr)"
note "42 events in pages of 1: read to the empty page, the 42nd taken, no error"

# ---- a VTN that ignores skip (its first events again on every page) is caught at its second
# page (it was read 40 times over): what was read is taken, nothing is withdrawn, and it is said;
# one whose pages never end is cut at 1000 pages, the same ----
stats_num() { curl -sf "$VTN/_test/stats" | grep -o "\"$1\": *[0-9]*" | grep -o '[0-9]*$'; }
curl -sf -o /dev/null -X POST -d '{"max": 50, "ignore_skip": true}' "$VTN/_test/page" || fail "POST /_test/page"
curl -sf -o /dev/null -X PUT -d "$(prio ranked 3)" "$VTN/_test/events/ranked" || fail "changing event ranked"
await 200 'skip ignored: event ranked'\''s change not taken: $(get /v1/grid/events/oadr-ranked-0)' has_priority ranked-0 -3
polls 1
r0=$(stats_num requests) p1=$(ven_num polls)
polls 3
r1=$(stats_num requests) p2=$(ven_num polls)
[ $((r1 - r0)) -le $((3 * (p2 - p1) + 3)) ] ||
    fail "skip ignored: $((r1 - r0)) requests over $((p2 - p1)) polls (pages read again and again)"
held_or_fail tail "skip ignored: event tail not held"
[ "$(ven_num events_cancelled)" = "$c0" ] || fail "skip ignored: events cancelled: $(get /v1/grid/openadr)"
get /v1/grid/openadr | grep -q 'lists only events already listed (the VTN ignores skip)' ||
    fail "skip ignored, not said: $(get /v1/grid/openadr)"
grep -q 'the VTN ignores skip' "$dir/serve.log" || fail "skip ignored, not logged"
note "a VTN ignoring skip: $((r1 - r0)) requests over $((p2 - p1)) polls, a change taken, none cancelled, said"
curl -sf -o /dev/null -X POST -d '{"max": 1, "endless": true}' "$VTN/_test/page" || fail "POST /_test/page"
await 900 'endless pages: not cut at 1000 pages: $(get /v1/grid/openadr)' sh -c "curl -sf --unix-socket $dir/serve.sock http://n/v1/grid/openadr | grep -q 'listing truncated at 1000 pages'"
polls 1
held_or_fail tail "endless pages: event tail not held"
[ "$(ven_num events_cancelled)" = "$c0" ] || fail "endless pages: events cancelled: $(get /v1/grid/openadr)"
grep -q 'events listing truncated' "$dir/serve.log" || fail "endless pages, not logged"
note "pages that never end: cut at 1000 pages, none cancelled, the truncation counted ($(ven_num errors) errors)"

# ---- a listing cut short (pages from the 40th event on fail): the same ----
curl -sf -o /dev/null -X POST -d '{"max": 2}' "$VTN/_test/page" || fail "POST /_test/page"
curl -sf -o /dev/null -X POST -d '{"status": 500, "count": 100000, "min_skip": 40}' "$VTN/_test/fail" ||
    fail "POST /_test/fail"
curl -sf -o /dev/null -X PUT -d "$(prio ranked 2)" "$VTN/_test/events/ranked" || fail "changing event ranked"
await 200 'listing cut short: event ranked'\''s change (read) not taken: $(get /v1/grid/events/oadr-ranked-0)' has_priority ranked-0 -2
polls 3
held_or_fail tail "listing cut short at 40 events: event tail (42nd, not read) not held"
[ "$(ven_num events_cancelled)" = "$c0" ] || fail "listing cut short: events cancelled: $(get /v1/grid/openadr)"
# ... with the failing page's own error, which it used to write over (an HTTP 500 then read
# only as "cut short")
get /v1/grid/openadr | grep -qF 'listing cut short at 40 events (GET /events?programID=' &&
    get /v1/grid/openadr | grep -qF '&skip=40&limit=50: HTTP 500)' ||
    fail "listing cut short, not said with its cause: $(get /v1/grid/openadr)"
curl -sf -o /dev/null -X POST -d '{"status": 500, "count": 0}' "$VTN/_test/fail" || fail "POST /_test/fail"
note "a listing cut short after 40 events: a change read taken, none cancelled, the failure counted"

# ---- a day ahead in 96 quarter-hours: every interval held at once, no error (the node held 64
# grid events: the rest were refused at every poll) ----
e0=$(ven_num errors)
DAY=$(( $(now | cut -d. -f1) + 172800 ))
"$PY" - "$VTN" "$(iso "$DAY")" "$KW" <<'EOF' || fail "publishing event dayahead"
import json, sys, urllib.request
ev = {"id": "dayahead", "intervalPeriod": {"start": sys.argv[2], "duration": "PT15M"},
      "payloadDescriptors": [{"payloadType": "IMPORT_CAPACITY_LIMIT", "units": "KW"}],
      "intervals": [{"id": k, "payloads": [{"type": "IMPORT_CAPACITY_LIMIT",
                                            "values": [float(sys.argv[3])]}]} for k in range(96)]}
urllib.request.urlopen(sys.argv[1] + "/_test/events", data=json.dumps(ev).encode()).read()
EOF
await 300 'event dayahead'\''s 96th interval not taken: $(get /v1/grid/openadr)' held dayahead-95
polls 3
n=$(get /v1/grid/events | grep -o '"id": *"oadr-dayahead-[0-9]*"' | sort -u | wc -l)
[ "$n" -eq 96 ] && [ "$(ven_num errors)" = "$e0" ] ||
    fail "event dayahead: $n of 96 intervals held: $(get /v1/grid/openadr)"
note "a day ahead in 96 quarter-hours: all held at once, no error over 3 polls"

# ---- an event one listing leaves out (read in pages, a listing skips one when another is
# deleted between two pages) is not withdrawn: it is asked for again at once and found (it
# was cancelled, and taken again only at the next poll) ----
c0=$(ven_num events_cancelled)
curl -sf -o /dev/null -X POST -d "$(big blink KW "$KW")" "$VTN/_test/events" || fail "publishing event blink"
await 300 'event blink not taken: $(get /v1/grid/openadr)' held blink-0
p1=$(ven_num polls)
curl -sf -o /dev/null -X POST -d '{"id": "blink", "count": 1}' "$VTN/_test/hide" || fail "POST /_test/hide"
polls 3
held_or_fail blink "event blink, left out of one listing, not held"
[ "$(ven_num events_cancelled)" = "$c0" ] || fail "event blink, left out of one listing, cancelled: $(get /v1/grid/openadr)"
note "an event left out of one listing: still held, none cancelled over $(($(ven_num polls) - p1)) polls"
# Left out of two listings in a row (the second asked for at once): withdrawn.
curl -sf -o /dev/null -X POST -d '{"id": "blink", "count": 2}' "$VTN/_test/hide" || fail "POST /_test/hide"
await 300 'event blink, left out of two listings in a row, not cancelled: $(get /v1/grid/openadr)' cancelled $((c0 + 1))
note "an event left out of two listings in a row: cancelled"
echo "it_openadr_ends: ok"
