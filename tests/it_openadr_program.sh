#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# What `pfi serve` takes of an OpenADR 3.0 VTN's listing (tests/vtn.py): only its program's
# events when the VTN ignores GET /events?programID= (the filter is optional for a VTN; another
# program's events were applied as this one's), said once, nothing of its own cancelled.
# pfi's clock runs 1000 times faster (util/clock.h): a few seconds of real time (the clocks'
# tolerance is an hour, 3.6 s here: nothing here is about skew, and a loaded machine's answers
# late by a second made one).
# Needs $PFI_BIN, $PFI_FAKENVML, $PFI_TEST_TMP (tests/run.sh sets them).
# await expands its message when it fails, so the messages are single-quoted.
# shellcheck disable=SC2016
set -u

fail() {
    echo "it_openadr_program: FAIL: $*"
    for f in serve vtn; do [ -f "$dir/$f.log" ] && { echo "-- $f"; tail -n 15 "$dir/$f.log"; }; done
    exit 1
}
note() { echo "it_openadr_program: $*"; }

name=it_openadr_program
SCALE=1000
# shellcheck shell=sh source=tests/support/openadr_env.sh
. "$(dirname "$0")/support/openadr_env.sh"

"$PY" "$here/vtn.py" --port-file "$dir/vtn.port" --client-id pfi-node --secret-file "$dir/secret" \
    --program node-dr --no-vens >"$dir/vtn.log" 2>&1 &
pids="$pids $!"
wait_file "$dir/vtn.port" "the VTN"
VTN=http://127.0.0.1:$(cat "$dir/vtn.port")

# shellcheck disable=SC2086
"$PFI_BIN" serve $HW --listen "unix:$dir/serve.sock" --token-file "$dir/token" \
    --db "$dir/serve.db" --sample-interval 4s \
    --set openadr_vtn_url="$VTN" --set openadr_client_id=pfi-node \
    --set openadr_secret_file="$dir/secret" --set openadr_program=node-dr \
    --set openadr_poll=2m --set openadr_ramp=0s --set openadr_max_skew=1h >"$dir/serve.log" 2>&1 &
pids="$pids $!"
get() { curl -sf --unix-socket "$dir/serve.sock" "http://node$1"; }
ven_num() { get /v1/grid/openadr | tr ',{}' '\n\n\n' | sed -n "s/^ *\"$1\": *//p"; }
served() { get /healthz >/dev/null 2>&1; }
held() { get "/v1/grid/events/oadr-$1" >/dev/null 2>&1; }
polled() { [ "$(ven_num polls)" -ge "$1" ]; }
polls() {
    p0=$(ven_num polls)
    await 200 'the VEN stopped polling: $(get /v1/grid/openadr)' polled $((p0 + $1))
}
publish() { curl -sf -o /dev/null -X POST -d "$1" "$VTN/_test/events" || fail "publishing $1"; }
await 600 'pfi serve did not start' served
cap_target 0.75
LATER=$(( $(now | cut -d. -f1) + 36000 ))
# An IMPORT_CAPACITY_LIMIT of $KW kW from LATER for an hour: id, then extra fields.
limit() {
    printf '{"id": "%s", %s"intervalPeriod": {"start": "%s", "duration": "PT1H"}, "payloadDescriptors": [{"payloadType": "IMPORT_CAPACITY_LIMIT", "units": "KW"}], "intervals": [{"id": 0, "payloads": [{"type": "IMPORT_CAPACITY_LIMIT", "values": [%s]}]}]}' \
        "$1" "${2:-}" "$(iso "$LATER")" "$KW"
}

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
echo "it_openadr_program: ok"
