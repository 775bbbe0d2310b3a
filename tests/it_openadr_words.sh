#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# What the OpenADR client says of what it takes from a VTN without a word otherwise, and of the
# VTN itself: an event id listed twice with other contents (the first taken, a lower second
# limit was dropped silently); a priority that is not a whole number (taken as none); targets
# whose values are not a list (cannot be judged: taken, where one naming this VEN was dropped);
# an access token longer than 2 KB (taken; one past what pfi holds is refused by its length,
# not as "HTTP 200"); the VTN answering again after 503s (said in the log; last_error carries
# its time, vtn_down_since is cleared); 40 different refusals at every poll (each logged once,
# where past 32 the log said every one at every poll); a client secret sent over plain http to
# another host (warned at the start).
# Needs $PFI_BIN, $PFI_FAKENVML, $PFI_TEST_TMP (tests/run.sh sets them).
# await expands its message when it fails, so the messages are single-quoted.
# shellcheck disable=SC2016
set -u

name=it_openadr_words
# shellcheck shell=sh source=tests/support/openadr_env.sh
. "$(dirname "$0")/support/openadr_env.sh"

logged() { grep -q "$1" "$dir/serve.log"; }
gone() { ! kill -0 "$1" 2>/dev/null; }
up_again() { get /v1/grid/openadr | grep -q '"vtn_down_since": *null'; }
log_count() { grep -c "$1" "$dir/serve.log"; }

start_vtn pfi-node node-dr --no-vens --no-subscriptions
curl -sf -o /dev/null -X POST -d '{"length": 6000}' "$VTN/_test/token" || fail "token length"
NOW=$(now | cut -d. -f1)
AT=$((NOW + 7200))
publish "$(oadr_event dup IMPORT_CAPACITY_LIMIT 3 $AT)"
publish "$(oadr_event dup IMPORT_CAPACITY_LIMIT 1 $AT)"
publish "$(oadr_event prio SIMPLE 1 $AT "" '"priority": "high", ')"
publish "$(oadr_event tgt SIMPLE 1 $AT "" '"targets": [{"type": "VEN_NAME", "values": "pfi-node"}], ')"
k=0
while [ $k -lt 40 ]; do
    publish "{\"id\": \"bad$k\", \"intervalPeriod\": {\"start\": \"$(iso $AT)\", \"duration\": \"PT1Q\"}, \"intervals\": [{\"id\": 0, \"payloads\": [{\"type\": \"SIMPLE\", \"values\": [1]}]}]}"
    k=$((k + 1))
done
serve_openadr --listen "unix:$dir/serve.sock" --set openadr_poll=1s
SERVE=$!
await 600 'pfi serve did not start' served
await 600 'the events not taken with a 6000-byte token: $(get /v1/grid/openadr)' held tgt-0
{ held dup-0 && held prio-0; } || fail "dup or prio not held: $(get /v1/grid/openadr)"
note "6000-byte token taken; targets with a string of values taken"
get /v1/grid/events/oadr-dup-0 | grep -q '"limit_w": *3000[,.}]' ||
    fail "dup: not the first listing's 3 kW: $(get /v1/grid/events/oadr-dup-0)"
await 200 'the twice-listed id not said' logged "event dup listed twice in one listing, with other contents"
await 200 'the priority not said' logged "event oadr-prio-0: its priority is not a whole number"
note "an id listed twice with other contents and a priority of \"high\" said in the log"

# 40 refusals at every poll: each logged once (the throttle remembered 32, and logged every
# one at every poll past that).
polls 5
n=$(log_count "PT1Q")
[ "$n" = 40 ] || fail "40 refused intervals logged $n times over 5 polls or more (want 40)"
note "40 different refusals logged once each over 5 polls or more"

# A token past what pfi holds is refused by its length; a normal one again is taken.
curl -sf -o /dev/null -X POST -d '{"length": 20000}' "$VTN/_test/token" || fail "token length"
curl -sf -o /dev/null -X POST "$VTN/_test/revoke" || fail "revoke"
await 600 'a 20000-byte token not refused by its length: $(get /v1/grid/openadr)' \
    logged "its access_token is 20000 bytes, longer than the 16383 pfi takes"
curl -sf -o /dev/null -X POST -d '{"length": 32}' "$VTN/_test/token" || fail "token length"
note "a 20000-byte token refused by its length"

# The VTN down (503), then answering: said, and the outage's time shown.
curl -sf -o /dev/null -X POST -d '{"status": 503, "count": 5}' "$VTN/_test/fail" || fail "fail"
await 600 'the VTN answering again not said: $(get /v1/grid/openadr)' logged "the VTN answers again (not since "
await 200 'vtn_down_since not cleared: $(get /v1/grid/openadr)' up_again
get /v1/grid/openadr | grep -Eq '"last_error_at": *"[0-9]{4}-[0-9]{2}-[0-9]{2}T' ||
    fail "last_error_at not a time: $(get /v1/grid/openadr)"
# Down again and back within the hour: not said again (a flapping VTN said it at every
# recovery).
curl -sf -o /dev/null -X POST -d '{"status": 503, "count": 5}' "$VTN/_test/fail" || fail "fail"
polls 8
await 200 'vtn_down_since not cleared after the second outage: $(get /v1/grid/openadr)' up_again
n=$(grep -c "the VTN answers again" "$dir/serve.log")
[ "$n" = 1 ] || fail "'answers again' said $n times over two recoveries within the hour"
note "503s then answers: 'answers again' logged, last_error_at $(get /v1/grid/openadr | sed -n 's/.*"last_error_at": *"\([^"]*\)".*/\1/p')"

# A client secret over plain http to another host: warned at the start (the daemon is stopped
# at once; the address is TEST-NET-1, never answered).  The first daemon is stopped first: the
# GPUs are one daemon's at a time.
grep -q "over plain http" "$dir/serve.log" && fail "warned for a VTN on this host"
kill "$SERVE"
await 600 'the first daemon did not stop' gone "$SERVE"
# shellcheck disable=SC2086
"$PFI_BIN" serve $HW --token-file "$dir/token" --db "$dir/far.db" --listen "unix:$dir/far.sock" \
    --set openadr_vtn_url=http://192.0.2.10:18 --set openadr_client_id=pfi-node \
    --set openadr_secret_file="$dir/secret" --set openadr_program=node-dr \
    --set openadr_poll=1h >"$dir/far.log" 2>&1 &
far=$!
pids="$pids $far"
await 600 'no warning for a secret over plain http: $(cat "$dir/far.log")' \
    grep -q "warning: the client secret goes to http://192.0.2.10:18/auth/token over plain http" "$dir/far.log"
kill "$far"
await 600 'the second daemon did not stop' gone "$far"
note "plain http to another host warned, to this host not"
exit 0
