#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# it_event_cli.sh: an event id given to `pfi event rm` or `report` names an event, never another
# path.  It goes into the path percent-encoded: libcurl resolves dot segments, so
# `pfi event rm ../../budget` went out as DELETE /v1/budget and removed the node's budget (every
# GPU back to its original limit); the events "." and ".." (ids the daemon takes) could not be
# reached.  Needs $PFI_BIN (tests/run.sh sets it), jq.
set -u
name=it_event_cli
. "$(dirname "$0")/support/node_env.sh"
start_node n
ev() { "$PFI" event --socket "$T/n.sock" --token-file "$T/token" "$@"; }
budget() { "$PFI" ctl --socket "$T/n.sock" allocation | jq -r .budget_w; }

"$PFI" ctl --socket "$T/n.sock" --token-file "$T/token" budget set 4kW >/dev/null ||
  fail "budget set 4kW"
ev add --id e1 --start now+1h --duration 1h --limit 3kW >/dev/null || fail "event add e1"

# ---- an event id is an event id, never another path ----
for id in ../../budget ../../../v1/budget ./../../budget; do
  ev rm "$id" >"$T/out" 2>&1 && fail "event rm $id succeeded: $(cat "$T/out")"
  [ "$(budget)" = 4000 ] || fail "event rm $id changed the budget: $(budget) W ($(cat "$T/out"))"
done
ev report ../e1 --json >"$T/out" 2>&1 && fail "event report ../e1 answered: $(cat "$T/out")"
[ "$(ev list | jq -r '[.events[].id] | join(",")')" = e1 ] || fail "e1 is gone: $(ev list)"

# ---- the ids "." and ".." are events like any other ----
for id in . ..; do
  ev add --id "$id" --start now+2h --duration 1h --limit 3kW >/dev/null || fail "event add '$id'"
  ev report "$id" --json >"$T/out" 2>&1 || fail "event report '$id': $(cat "$T/out")"
  [ "$(jq -r .event.id "$T/out")" = "$id" ] || fail "event report '$id': $(cat "$T/out")"
  ev rm "$id" >"$T/out" 2>&1 || fail "event rm '$id': $(cat "$T/out")"
  [ "$(jq -r .deleted "$T/out")" = "$id" ] || fail "event rm '$id': $(cat "$T/out")"
done
[ "$(ev list | jq -r '[.events[].id] | join(",")')" = e1 ] || fail "events after rm: $(ev list)"
[ "$(budget)" = 4000 ] || fail "budget after: $(budget) W"
# ---- a cut is above 0% and below 100%, and says so; --json with --out is refused ----
for c in 0% 100% cut=100% -100% 150%; do
  ev add --id c1 --start now+3h --duration 1h --cut "$c" >"$T/out" 2>&1
  st=$?
  [ $st = 2 ] || fail "event add --cut $c: exit $st, not 2: $(cat "$T/out")"
  grep -q "below 100%\|less than 100%" "$T/out" || fail "event add --cut $c: $(cat "$T/out")"
done
ev add --id c1 --start now+3h --duration 1h --cut 25% --baseline 5kW >/dev/null ||
  fail "event add --cut 25%"
ev report c1 --json --out "$T/rep" >"$T/out" 2>&1
st=$?
[ $st = 2 ] && [ ! -e "$T/rep" ] || fail "report --json --out: exit $st: $(cat "$T/out")"
ev report c1 --out "$T/rep" >"$T/out" 2>&1 || fail "report --out: $(cat "$T/out")"
[ -d "$T/rep" ] || fail "report --out wrote nothing: $(cat "$T/out")"
ev rm c1 >/dev/null || fail "event rm c1"
echo "it_event_cli: ok"
