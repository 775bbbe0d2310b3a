#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The room for grid events is bounded (256 on a node): the intervals of a poll are taken
# soonest first, whatever the VTN's listing order.  A day-ahead event of 300 one-minute SIMPLE
# intervals, listed first, took all the room and an IMPORT_CAPACITY_LIMIT due in two minutes
# was refused at every poll ("256 grid events are held"), not held when it started.  A page
# with an integer past 64 bits is read (it was "not JSON", none of its events taken).  With the
# room full of intervals taken at earlier polls, a limit due in minutes takes the place of the
# latest day-ahead interval (it was refused at every poll).
# Needs $PFI_BIN, $PFI_FAKENVML, $PFI_TEST_TMP (tests/run.sh sets them).
# await expands its message when it fails, so the messages are single-quoted.
# shellcheck disable=SC2016
set -u

name=it_openadr_room
# shellcheck shell=sh source=tests/support/openadr_env.sh
. "$(dirname "$0")/support/openadr_env.sh"

start_vtn pfi-node node-dr --no-vens
# Published before the node starts, so that its first poll sees them all (a poll between two
# publications would hold the first before the second is listed).
NOW=$(now | cut -d. -f1)
ivs=$("$PY" -c 'import json; print(json.dumps([{"id": k, "payloads": [{"type": "SIMPLE", "values": [1]}]} for k in range(300)]))')
publish "{\"id\": \"dayahead\", \"intervalPeriod\": {\"start\": \"$(iso $((NOW + 86400)))\", \"duration\": \"PT1M\"}, \"intervals\": $ivs}"
publish "{\"id\": \"urgent\", \"intervalPeriod\": {\"start\": \"$(iso $((NOW + 120)))\", \"duration\": \"PT10M\"}, \"payloadDescriptors\": [{\"payloadType\": \"IMPORT_CAPACITY_LIMIT\", \"units\": \"KW\"}], \"intervals\": [{\"id\": 0, \"payloads\": [{\"type\": \"IMPORT_CAPACITY_LIMIT\", \"values\": [4.5]}]}]}"
# An integer past 64 bits is JSON all the same: a priority of 10^20 made the whole page "not
# JSON", none of its events taken
publish "{\"id\": \"bigprio\", \"priority\": 100000000000000000000, \"intervalPeriod\": {\"start\": \"$(iso $((NOW + 300)))\", \"duration\": \"PT10M\"}, \"intervals\": [{\"id\": 0, \"payloads\": [{\"type\": \"SIMPLE\", \"values\": [1]}]}]}"
serve_openadr --listen "unix:$dir/serve.sock" --set openadr_poll=1s
await 600 'pfi serve did not start' served
await 600 'the limit due in two minutes not taken: $(get /v1/grid/openadr)' held urgent-0
await 600 'the event of priority 10^20 not taken: $(get /v1/grid/openadr)' held bigprio-0
await 600 'the day-ahead intervals not taken as far as the room goes: $(get /v1/grid/openadr)' held dayahead-253
held dayahead-254 && fail "more events held than the room"
note "limit due in 2 min and an event of priority 10^20 held beside 254 day-ahead intervals (the rest refused for room)"
# The room full of intervals taken at earlier polls: a limit due in minutes published now is
# taken, the latest day-ahead interval let go in its place (it was refused at every poll).
publish "{\"id\": \"later\", \"intervalPeriod\": {\"start\": \"$(iso $((NOW + 600)))\", \"duration\": \"PT10M\"}, \"payloadDescriptors\": [{\"payloadType\": \"IMPORT_CAPACITY_LIMIT\", \"units\": \"KW\"}], \"intervals\": [{\"id\": 0, \"payloads\": [{\"type\": \"IMPORT_CAPACITY_LIMIT\", \"values\": [4.5]}]}]}"
await 600 'a limit due in 10 min not taken with the room full of day-ahead intervals: $(get /v1/grid/openadr)' held later-0
held dayahead-253 && fail "the latest day-ahead interval not let go for the sooner limit"
held dayahead-252 || fail "an earlier day-ahead interval let go too"
grep -q "event oadr-dayahead-253 let go to make room for the sooner oadr-later-0" "$dir/serve.log" ||
    fail "letting the day-ahead interval go was not said"
polls 3
held later-0 && ! held dayahead-253 || fail "the room changed hands again over 3 polls"
note "the room full: a limit due in 10 min taken, the latest day-ahead interval let go in its place, stable over 3 polls"
exit 0
