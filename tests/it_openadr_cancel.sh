#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# What a VTN's change or withdrawal of an event already under way does in `pfi serve`:
# - a SIMPLE (cut) event in force whose priority alone the VTN changes keeps the baseline it
#   was first taken with (it was measured again, on the hour the cut itself had curtailed, so
#   each change cut again from there: a 30% shed became 38%, and the compliance report judged
#   the whole window against the last target);
# - an event the VTN withdraws in its ramp-down stops falling where the ramp has brought the
#   budget and is restored from there (it went on down to its target, held it, and was
#   restored over its whole ramp: ~48 more minutes of a deeper cut); it keeps its OpenADR
#   provenance (the openadr block was dropped from an event cancelled in force).
# pfi's clock runs 100 times faster (util/clock.h): ~30 s of real time.
# Needs $PFI_BIN, $PFI_FAKENVML, $PFI_TEST_TMP (tests/run.sh sets them).
# await expands its message when it fails, so the messages are single-quoted.
# shellcheck disable=SC2016
set -u

name=it_openadr_cancel
SCALE=100
# shellcheck shell=sh source=tests/support/openadr_env.sh
. "$(dirname "$0")/support/openadr_env.sh"

start_vtn pfi-node node-dr --no-vens
MAX=$(sum_limits)
serve_openadr --listen "unix:$dir/serve.sock" --set openadr_poll=20s --set openadr_ramp=10m
await 600 'pfi serve did not start' served
field() { get "/v1/grid/events/oadr-$1" | tr ',{}' '\n\n\n' | sed -n "s/^ *\"$2\": *//p" | head -n 1; }
has_priority() { [ "$(field "$1" priority)" = "$2" ]; }
phase_is() { [ "$(field "$1" phase)" = "\"$2\"" ]; }
cancelled() { [ "$(ven_num events_cancelled)" = "$1" ]; }
limits_are() { [ "$(sum_limits)" = "$1" ]; }
# An hour of the node's draw recorded first, so that a cut's baseline is that hour's mean.
sleep_until "$(awk -v t="$(now)" 'BEGIN { printf "%.0f", t + 600 }')"

# ---- a cut in force, its priority changed on the VTN: same baseline, same target ----
NOW=$(now | cut -d. -f1)
S=$((NOW + 900))
simple() { oadr_event cut SIMPLE 3 "$S" "" "\"priority\": $1, "; }
publish "$(simple 5)"
await 400 'event cut not taken: $(get /v1/grid/openadr)' held cut-0
b1=$(field cut-0 baseline_w) t1=$(field cut-0 target_w)
sleep_until $((S + 600)) # ten minutes into the cut, after its ten-minute ramp
curl -sf -o /dev/null -X PUT -d "$(simple 4)" "$VTN/_test/events/cut" || fail "changing event cut"
await 400 'event cut'\''s priority changed to 4 on the VTN, not here: $(get /v1/grid/events/oadr-cut-0)' has_priority cut-0 -4
b2=$(field cut-0 baseline_w) t2=$(field cut-0 target_w)
[ "$b1" = "$b2" ] && [ "$t1" = "$t2" ] ||
    fail "event cut's priority changed: baseline $b1 -> $b2 W, target $t1 -> $t2 W"
field cut-0 baseline_method | grep -q 'before the event was posted' ||
    fail "event cut's baseline method: $(get /v1/grid/events/oadr-cut-0)"
note "a cut in force, its priority changed: baseline $b2 W and target $t2 W kept"
c0=$(ven_num events_cancelled)
curl -sf -o /dev/null -X DELETE "$VTN/_test/events/cut" || fail "DELETE event cut"
await 400 'event cut not cancelled: $(get /v1/grid/openadr)' cancelled $((c0 + 1))
b3=$(field cut-0 baseline_w)
[ "$b3" = "$b1" ] || fail "event cut cancelled in force: baseline $b1 -> $b3 W"
field cut-0 baseline_method | grep -q 'before the event was posted' && get /v1/grid/events/oadr-cut-0 | grep -q '"openadr"' ||
    fail "event cut cancelled in force lost its baseline method or provenance: $(get /v1/grid/events/oadr-cut-0)"
note "a cut withdrawn in force: ended with its baseline, its method and its OpenADR fields"
await 600 'limits not restored after event cut: $(limits)' limits_are "$MAX"

# ---- a limit withdrawn halfway down its ramp: stops there, restored from there ----
cap_target 0.6
NOW=$(now | cut -d. -f1)
S=$((NOW + 1500)) # its ramp starts at S - 600
publish "$(oadr_event wd IMPORT_CAPACITY_LIMIT "$KW" "$S")"
await 400 'event wd not taken: $(get /v1/grid/openadr)' held wd-0
# A sixth into its ramp: the node plans 3 s of real time (300 s at this scale) ahead, so its
# limits are about two thirds down.
sleep_until $((S - 500))
c0=$(ven_num events_cancelled)
s0=$(sum_limits) # the limits the node holds, its ramp planned ahead of the line
curl -sf -o /dev/null -X DELETE "$VTN/_test/events/wd" || fail "DELETE event wd"
await 400 'event wd not cancelled in its ramp: $(get /v1/grid/openadr)' cancelled $((c0 + 1))
lim=$(field wd-0 limit_w)
awk -v l="$lim" -v t="$TARGET" -v m="$MAX" 'BEGIN { exit !(l > t + 100 && l < m - 100) }' ||
    fail "event wd withdrawn halfway down its ramp: limit $lim W (target $TARGET W, site $MAX W): $(get /v1/grid/events/oadr-wd-0)"
awk -v r="$(field wd-0 ramp_down_s)" 'BEGIN { exit !(r == 0) }' || fail "event wd's ramp-down once withdrawn: $(get /v1/grid/events/oadr-wd-0)"
# Held where the node's limits had got to, not at the ramp's line at that moment, which the
# node runs ahead of (the limits stepped up at the withdrawal, then restored).
awk -v l="$lim" -v s="$s0" 'BEGIN { exit !(l <= s + 1) }' ||
    fail "event wd withdrawn in its ramp is held at $lim W, above the $s0 W the node's limits had reached"
get /v1/grid/events/oadr-wd-0 | grep -q '"openadr"' || fail "event wd lost its OpenADR fields: $(get /v1/grid/events/oadr-wd-0)"
# From now on the limits never go below where the ramp had brought them.
lowest=$MAX
k=0
until limits_are "$MAX"; do
    s=$(sum_limits)
    lowest=$(awk -v a="$s" -v b="$lowest" 'BEGIN { print (a < b) ? a : b }')
    k=$((k + 1)); [ $k -gt 600 ] && fail "limits not restored after event wd was withdrawn: $(limits)"
    sleep 0.05
done
awk -v a="$lowest" -v l="$lim" 'BEGIN { exit !(a + 0.5 >= l - 8 * 1) }' ||
    fail "after event wd was withdrawn the limits fell to $lowest W, below the $lim W its ramp had reached"
note "a limit withdrawn halfway down its ramp: held at $lim W (target $TARGET W), restored from there (lowest sum seen $lowest W)"
echo "it_openadr_cancel: ok"
