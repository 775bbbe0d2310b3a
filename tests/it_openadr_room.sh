#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The room for grid events is bounded (256 on a node): the intervals of a poll are taken
# soonest first, whatever the VTN's listing order.  A day-ahead event of 300 one-minute SIMPLE
# intervals, listed first, took all the room and an IMPORT_CAPACITY_LIMIT due in two minutes
# was refused at every poll ("256 grid events are held"), not held when it started.
# Needs $PFI_BIN, $PFI_FAKENVML, $PFI_TEST_TMP (tests/run.sh sets them).
# await expands its message when it fails, so the messages are single-quoted.
# shellcheck disable=SC2016
set -u

name=it_openadr_room
# shellcheck shell=sh source=tests/support/openadr_env.sh
. "$(dirname "$0")/support/openadr_env.sh"

start_vtn pfi-node node-dr --no-vens
serve_openadr --listen "unix:$dir/serve.sock" --set openadr_poll=1s
await 600 'pfi serve did not start' served
cap_target 0.75
NOW=$(now | cut -d. -f1)
ivs=$("$PY" -c 'import json; print(json.dumps([{"id": k, "payloads": [{"type": "SIMPLE", "values": [1]}]} for k in range(300)]))')
publish "{\"id\": \"dayahead\", \"intervalPeriod\": {\"start\": \"$(iso $((NOW + 86400)))\", \"duration\": \"PT1M\"}, \"intervals\": $ivs}"
publish "{\"id\": \"urgent\", \"intervalPeriod\": {\"start\": \"$(iso $((NOW + 120)))\", \"duration\": \"PT10M\"}, \"payloadDescriptors\": [{\"payloadType\": \"IMPORT_CAPACITY_LIMIT\", \"units\": \"KW\"}], \"intervals\": [{\"id\": 0, \"payloads\": [{\"type\": \"IMPORT_CAPACITY_LIMIT\", \"values\": [$KW]}]}]}"
await 600 'the limit due in two minutes not taken: $(get /v1/grid/openadr)' held urgent-0
await 600 'the day-ahead intervals not taken as far as the room goes: $(get /v1/grid/openadr)' held dayahead-254
held dayahead-299 && fail "more events held than the room"
note "limit due in 2 min held beside 255 day-ahead intervals (the rest refused for room)"
exit 0
