#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# What `pfi serve` takes of an OpenADR 3.0 VTN's listing (tests/vtn.py): only its program's
# events when the VTN ignores GET /events?programID= (the filter is optional for a VTN; another
# program's events were applied as this one's), said once, nothing of its own cancelled; and
# OpenADR's randomizeStart (it was ignored): a SIMPLE event starts a drawn share of it late,
# the same at every poll, shown as its start in the event and its report; a limit starts on
# time; a randomizeStart that is no duration is refused and changes nothing (logged once an
# hour, not at every poll); the units of the program's payload descriptors hold for an event
# that gives none (a limit in W was read in kW).
# pfi's clock runs 1000 times faster (util/clock.h): a few seconds of real time (the clocks'
# tolerance is an hour, 3.6 s here: nothing here is about skew, and a loaded machine's answers
# late by a second made one).
# Needs $PFI_BIN, $PFI_FAKENVML, $PFI_TEST_TMP (tests/run.sh sets them).
# await expands its message when it fails, so the messages are single-quoted.
# shellcheck disable=SC2016
set -u

name=it_openadr_program
SCALE=1000
# shellcheck shell=sh source=tests/support/openadr_env.sh
. "$(dirname "$0")/support/openadr_env.sh"

start_vtn pfi-node node-dr --no-vens --program-units W
serve_openadr --listen "unix:$dir/serve.sock" --set openadr_poll=2m --set openadr_ramp=0s \
    --set openadr_max_skew=1h --set openadr_randomize_seed=7
await 600 'pfi serve did not start' served
cap_target 0.75
LATER=$(( $(now | cut -d. -f1) + 36000 ))
# An IMPORT_CAPACITY_LIMIT of $KW kW from LATER for an hour: id, extra fields, randomizeStart.
limit() { oadr_event "$1" IMPORT_CAPACITY_LIMIT "$KW" "$LATER" "${3:-}" "${2:-}"; }

# ---- a VTN that ignores the programID filter: the other programs' events are not taken, this
# program's are kept (none cancelled), and it is said once ----
publish "$(limit ours)"
await 200 'event ours not taken: $(get /v1/grid/openadr)' held ours-0
c0=$(ven_num events_cancelled) t0=$(ven_num events_taken)
curl -sf -o /dev/null -X POST -d '{"program": false}' "$VTN/_test/filter" || fail "POST /_test/filter"
publish "$(limit theirs '"programID": "p2", ')"
publish "$(limit unclaimed '"programID": null, ')"
polls 3
held theirs-0 && fail "event theirs (program p2) taken: $(get /v1/grid/events)"
held unclaimed-0 && fail "event unclaimed (no programID) taken: $(get /v1/grid/events)"
held ours-0 || fail "event ours no longer held: $(get /v1/grid/openadr)"
[ "$(ven_num other_program_events)" = 2 ] || fail "the other programs' events not counted: $(get /v1/grid/openadr)"
[ "$(ven_num events_cancelled)" = "$c0" ] && [ "$(ven_num events_taken)" = "$t0" ] &&
    [ "$(ven_num errors)" = 1 ] || fail "with other programs' events listed: $(get /v1/grid/openadr)"
n=$(grep -c 'does not honour the programID filter' "$dir/serve.log")
[ "$n" = 1 ] || fail "the ignored filter logged $n times (once wanted)"
grep 'does not honour the programID filter' "$dir/serve.log" | grep -q 'event theirs of program p2' ||
    fail "the log does not name the other program's event: $(grep programID "$dir/serve.log")"
note "a VTN ignoring the programID filter: 2 other events listed, not taken, ours kept, said once"
# ---- randomizeStart PT30M: a SIMPLE event starts a drawn share of it late (its hour kept),
# the same over the polls; a limit starts on time; both said in the log ----
start_of() { get "/v1/grid/events/oadr-$1" | sed -n 's/.*"start_s": *\([0-9.]*\).*"end_s": *\([0-9.]*\).*/\1 \2/p'; }
shed() { oadr_event "$1" SIMPLE 1 "$LATER" "$2"; }
t0=$(ven_num events_taken)
publish "$(shed shed PT30M)"
publish "$(limit cap '' PT30M)"
await 200 'event shed not taken: $(get /v1/grid/openadr)' held shed-0
await 200 'event cap not taken: $(get /v1/grid/openadr)' held cap-0
s1=$(start_of shed-0 | cut -d' ' -f1) e1=$(start_of shed-0 | cut -d' ' -f2)
late=$(awk -v s="$s1" -v l="$LATER" 'BEGIN { printf "%.0f", s - l }')
awk -v s="$s1" -v e="$e1" -v l="$LATER" 'BEGIN { exit !(s >= l && s <= l + 1800 && e - s == 3600) }' ||
    fail "event shed (randomizeStart PT30M from $LATER): window $s1-$e1"
[ "$late" != 0 ] || fail "event shed not randomized (seed 7 draws a non-zero share): $(get /v1/grid/events/oadr-shed-0)"
grep -q "event oadr-shed-0: start randomized $late s late (randomizeStart 1800 s)" "$dir/serve.log" ||
    fail "event shed's randomized start not logged: $(grep oadr-shed "$dir/serve.log")"
# What an audit against the VTN needs: the VTN's start and the offset beside the start held,
# in the event and in its report (the window the report judges, moved by that offset).
get /v1/grid/events/oadr-shed-0 >"$dir/shed.json"
r=$(randomized_by "$dir/shed.json" "$LATER" 1800 7 pfi-node) && [ "$r" = "$late" ] ||
    fail "event shed's openadr fields (randomized by $late s): $(cat "$dir/shed.json")"
get /v1/grid/events/oadr-cap-0 >"$dir/cap.json"
r=$(randomized_by "$dir/cap.json" "$LATER" 1800 7 pfi-node limit) ||
    fail "limit cap's openadr fields: $(cat "$dir/cap.json")"
get /v1/grid/events/oadr-shed-0/report >"$dir/shed-report.json"
"$PY" - "$dir/shed-report.json" "$s1" "$late" "$(iso "$LATER")" <<'EOF' ||
import json, sys
rep, s1, late = json.load(open(sys.argv[1])), float(sys.argv[2]), float(sys.argv[3])
w, o = rep["judged_window"], rep["event"]["openadr"]
assert rep["event"]["start_s"] == s1 and w["start_s"] == s1 and w["end_s"] == s1 + 3600, w
assert w["randomized_s"] == late and w["vtn_start"] == sys.argv[4] and o["randomized_s"] == late, w
EOF
    fail "event shed's report does not show its window $s1, $late s after the VTN's: $(cut -c1-800 "$dir/shed-report.json")"
"$PFI_BIN" event --socket "$dir/serve.sock" report oadr-shed-0 --out "$dir/shed-report" \
    >"$dir/report.out" 2>&1 ||
    fail "pfi event report oadr-shed-0: $(cat "$dir/report.out")"
grep -q "^- OpenADR: VTN event shed interval 0; the window judged is the one held, moved $late s after the VTN's start $(iso "$LATER") by its randomizeStart (1800 s)" \
    "$dir/shed-report/report.md" || fail "event shed's report.md: $(head -5 "$dir/shed-report/report.md")"
c1=$(start_of cap-0 | cut -d' ' -f1)
awk -v s="$c1" -v l="$LATER" 'BEGIN { exit !(s == l) }' || fail "limit cap (randomizeStart PT30M) starts at $c1, not $LATER"
grep -q "event oadr-cap-0: randomizeStart 1800 s not applied to a limit" "$dir/serve.log" ||
    fail "limit cap's randomizeStart not said: $(grep oadr-cap "$dir/serve.log")"
polls 3
[ "$(start_of shed-0)" = "$s1 $e1" ] || fail "event shed moved over 3 polls: $s1 $e1, now $(start_of shed-0)"
[ "$(ven_num events_taken)" = $((t0 + 2)) ] && [ "$(ven_num errors)" = 1 ] ||
    fail "randomized events taken again or counted as errors: $(get /v1/grid/openadr)"
note "randomizeStart PT30M: SIMPLE event started $late s late (seed 7), kept over 3 polls; a limit on time"

# ---- a randomizeStart that is no ISO 8601 duration: refused, named, nothing else changes ----
pw=$(ven_num polls)
publish "$(shed wrong PT5Q)"
curl -sf -o /dev/null -X PUT -d "$(shed shed 5M)" "$VTN/_test/events/shed" || fail "changing event shed"
await 200 'randomizeStart 5M not refused: $(get /v1/grid/openadr)' \
    grep -q 'event shed interval 0: randomizeStart 5M is not an ISO 8601 duration' "$dir/serve.log"
polls 3
grep -q 'event wrong interval 0: randomizeStart PT5Q is not an ISO 8601 duration' "$dir/serve.log" ||
    fail "randomizeStart PT5Q not refused by name: $(get /v1/grid/openadr)"
held wrong-0 && fail "event wrong (randomizeStart PT5Q) taken: $(get /v1/grid/events/oadr-wrong-0)"
# Refused at every poll, logged once an hour (of pfi's clock): it was a line a poll.
k=$(($(ven_num polls) - pw)) lines=$(grep -c 'randomizeStart PT5Q is not' "$dir/serve.log")
[ $((2 * lines)) -le "$k" ] || fail "event wrong's refusal logged $lines times over $k polls"
[ "$(start_of shed-0)" = "$s1 $e1" ] || fail "event shed changed by a bad randomizeStart: $(get /v1/grid/events/oadr-shed-0)"
[ "$(ven_num events_taken)" = $((t0 + 2)) ] || fail "a bad randomizeStart took something: $(get /v1/grid/openadr)"
note "randomizeStart PT5Q and 5M: refused by name, event shed kept as it was"
# ---- an event without descriptors takes the program's units (W here; kW without any) ----
limit_of() { get "/v1/grid/events/oadr-$1" | tr ',{}' '\n\n\n' | sed -n 's/^ *"limit_w": *//p'; }
publish "{\"id\": \"watts\", \"intervalPeriod\": {\"start\": \"$(iso "$LATER")\", \"duration\": \"PT1H\"}, \"intervals\": [{\"id\": 0, \"payloads\": [{\"type\": \"IMPORT_CAPACITY_LIMIT\", \"values\": [$TARGET]}]}]}"
await 200 'event watts (the program says W) not taken: $(get /v1/grid/openadr)' held watts-0
awk -v a="$(limit_of watts-0)" -v b="$TARGET" 'BEGIN { exit !(a == b) }' ||
    fail "event watts: limit $(limit_of watts-0) W, the program's units give $TARGET W"
note "an event without descriptors: $TARGET in the program's units, W"
echo "it_openadr_program: ok"
