#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A stop while the OpenADR client waits on a stalled VTN (tests/vtn.py's /_test/stall: the
# connection open, no answer): SIGTERM stops `pfi serve` and `pfi cluster serve` at once, their
# request to the VTN given up, not waited out to its timeout (10 minutes here) and then followed
# by the poll's next requests, as it was; nothing more is sent, the stop is no error of the
# VTN's, and the limits are as a stop leaves them: held under the event's target by the node
# daemon alone (on_stop auto holds while an event applies; pfi restore puts them back), held by
# a node under the controller (the site within the event's target).  The bound on the stop (60 s) is far from both: well under a second when the request
# is given up, ten minutes when it is waited out.
# pfi's clock runs 100 times faster (util/clock.h): the events are taken within a few seconds.
# Needs $PFI_BIN, $PFI_FAKENVML, $PFI_TEST_TMP (tests/run.sh sets them).
# await expands its message when it fails, so the messages are single-quoted.
# shellcheck disable=SC2016
set -u

name=it_openadr_stop
# shellcheck disable=SC2034 # read by fail (support/openadr_env.sh)
logs="serve node cluster vtn"
# shellcheck source=tests/support/openadr_env.sh
. "$(dirname "$0")/support/openadr_env.sh"

start_vtn pfi-node dr --no-vens --no-subscriptions
MAX=$(sum_limits)

vtn() { curl -sf -X POST -d "$2" "$VTN/_test/$1" >/dev/null || fail "POST /_test/$1 $2"; }
vtn_stat() { curl -sf "$VTN/_test/stats" | "$PY" -c 'import json, sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
stalled() { [ "$(vtn_stat stalled_now)" -ge 1 ]; }
under() { le "$(sum_limits)" "$TARGET"; }
# An IMPORT_CAPACITY_LIMIT of $KW kW from a minute from now (pfi's clock) for ten hours.
publish_limit() {
    vtn events "{\"id\": \"$1\", \"intervalPeriod\": {\"start\": \"$(iso $(( $(now | cut -d. -f1) + 60 )))\", \"duration\": \"PT10H\"}, \"payloadDescriptors\": [{\"payloadType\": \"IMPORT_CAPACITY_LIMIT\", \"units\": \"KW\"}], \"intervals\": [{\"id\": 0, \"payloads\": [{\"type\": \"IMPORT_CAPACITY_LIMIT\", \"values\": [$KW]}]}]}"
}
# stop_within PID WHAT LOG: SIGTERM to PID, waited for 60 s at most; fails unless it exits 0
# within that, and when LOG tells of a failed VTN request (none fails here: the one the stop
# gave up must not be told as one).  Sets took (seconds, for the notes).
stop_within() {
    _t0=$(date +%s.%N) _k=0
    kill -TERM "$1"
    # A child that ended is reaped by the shell's next foreground command (the sleep).
    while kill -0 "$1" 2>/dev/null; do
        _k=$((_k + 1))
        [ $_k -gt 1200 ] && fail "$2 still running 60 s after SIGTERM while the VTN stalls"
        sleep 0.05
    done
    wait "$1"
    _st=$?
    took=$(awk -v a="$_t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
    [ "$_st" = 0 ] || fail "$2 exited $_st on SIGTERM"
    ! grep -E 'openadr: .*(cancelled|Timeout|cut short)' "$3" || fail "$2 took its own stop for a VTN error"
}

# ---- pfi serve, its limits lowered by an event, stopped while the second page of the
# listing stalls ----
# shellcheck disable=SC2086
"$PFI_BIN" serve $HW --listen "unix:$dir/serve.sock" --token-file "$dir/token" \
    --db "$dir/serve.db" --sample-interval 4s \
    --set openadr_vtn_url="$VTN" --set openadr_client_id=pfi-node \
    --set openadr_secret_file="$dir/secret" --set openadr_program=dr \
    --set openadr_poll=10s --set openadr_ramp=0s --set openadr_timeout=10m >"$dir/serve.log" 2>&1 &
SERVE=$!
pids="$pids $SERVE"
taken() { get "/v1/grid/events/oadr-$1" >/dev/null 2>&1; }
await 600 'pfi serve did not start' served
cap_target 0.75
publish_limit cap
await 400 'the event not in force: limits $(limits), target $TARGET W, $(get /v1/grid/openadr)' under
# One event a page, and a second event: the listing has a second page, which stalls.
vtn page '{"max": 1}'
vtn events "{\"id\": \"calm\", \"intervalPeriod\": {\"start\": \"$(iso $(( $(now | cut -d. -f1) + 86400 )))\", \"duration\": \"PT10M\"}, \"intervals\": [{\"id\": 0, \"payloads\": [{\"type\": \"SIMPLE\", \"values\": [1]}]}]}"
await 400 'event calm not taken: $(get /v1/grid/openadr)' taken calm-0
vtn stall '{"seconds": 3600, "count": 1000, "min_skip": 1}'
await 400 'no request stalled: $(curl -sf "$VTN/_test/stats")' stalled
sent=$(vtn_stat requests)
stop_within "$SERVE" "pfi serve" "$dir/serve.log"
# The event is in force: the stop holds its limits (on_stop auto), as a commitment to the grid.
under || fail "pfi serve stopped during the event with limits $(limits), over its target $TARGET W"
[ "$(vtn_stat requests)" = "$sent" ] || fail "pfi serve sent $(( $(vtn_stat requests) - sent )) requests to the VTN after the stall"
note "pfi serve: stopped in $took s (exit 0) while GET /events?skip=1 stalled (openadr_timeout 10m); limits held under the event's $TARGET W, no request after it"
# shellcheck disable=SC2086
"$PFI_BIN" restore $HW --journal "$PFI_JOURNAL" >"$dir/restore.out" 2>&1 || fail "pfi restore after the held stop: $(cat "$dir/restore.out")"
[ "$(sum_limits)" = "$MAX" ] || fail "pfi restore left $(limits), not $MAX W"

# ---- pfi cluster serve over a node, the site under an event, stopped while every request
# to the VTN stalls ----
vtn stall '{"seconds": 0, "count": 0}'
vtn page '{"max": 50}'
curl -sf -o /dev/null -X DELETE "$VTN/_test/events/calm" || fail "DELETE /_test/events/calm"
# shellcheck disable=SC2086
"$PFI_BIN" serve $HW --listen "unix:$dir/n1.sock" --port-file "$dir/node.port" \
    --token-file "$dir/token" --db "$dir/node.db" --sample-interval 5s >"$dir/node.log" 2>&1 &
NODE=$!
pids="$pids $NODE"
wait_file "$dir/node.port" "the node's pfi serve"
echo '{"nodes": [{"name": "n1", "gpus": 8}], "jobs": []}' >"$dir/topo.json"
printf 'vtn_url = %s\nclient_id = pfi-node\nsecret_file = %s\nprogram = dr\npoll = 10s\nramp = 0s\ntimeout = 10m\n' \
    "$VTN" "$dir/secret" >"$dir/ven.conf"
"$PFI_BIN" cluster serve --listen 127.0.0.1:0 --port-file "$dir/cluster.port" --token-file "$dir/token" \
    --node-url "unix:$dir/%n.sock" --node-token-file "$dir/token" --topology "$dir/topo.json" \
    --heartbeat 6s --node-ttl 1h --db "$dir/cluster.db" --openadr "$dir/ven.conf" >"$dir/cluster.log" 2>&1 &
CLU=$!
pids="$pids $CLU"
wait_file "$dir/cluster.port" "pfi cluster serve"
CL=http://127.0.0.1:$(cat "$dir/cluster.port")
ven() { curl -sf "$CL/v1/grid/openadr"; }
await 400 'the site not under the event: limits $(limits), target $TARGET W, $(ven)' under
vtn stall '{"seconds": 3600, "count": 1000}'
await 400 'no request stalled: $(curl -sf "$VTN/_test/stats")' stalled
held=$(limits)
sent=$(vtn_stat requests)
stop_within "$CLU" "pfi cluster serve" "$dir/cluster.log"
[ "$(limits)" = "$held" ] || fail "the controller's stop changed the limits: $(limits) (held $held)"
under || fail "the controller's stop left the site over the event's target: $(limits), target $TARGET W"
[ "$(vtn_stat requests)" = "$sent" ] || fail "pfi cluster serve sent $(( $(vtn_stat requests) - sent )) requests to the VTN after the stall"
note "pfi cluster serve: stopped in $took s (exit 0) while the VTN stalled (timeout 10m); the node holds $(sum_limits) W <= $TARGET W, no request after it"
echo "it_openadr_stop: ok"
