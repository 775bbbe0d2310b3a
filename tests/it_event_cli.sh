#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# it_event_cli.sh: an event id given to `pfi event rm` or `report` names an event, never another
# path.  It goes into the path percent-encoded: libcurl resolves dot segments, so
# `pfi event rm ../../budget` went out as DELETE /v1/budget and removed the node's budget (every
# GPU back to its original limit); the events "." and ".." (ids the daemon takes) could not be
# reached.  Needs $PFI_BIN (tests/run.sh sets it), jq.
set -u
PFI=${PFI_BIN:?PFI_BIN not set}
T=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/it_event_cli.XXXXXX")
SRV=""
cleanup() { [ -n "$SRV" ] && kill "$SRV" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() { echo "it_event_cli: FAIL: $*"; exit 1; }
command -v jq >/dev/null || fail "jq is needed (scripts/install-deps.sh)"
unset PFI_SERVE_URL PFI_SERVE_TOKEN_FILE PFI_READ_ONLY PFI_JOURNAL
export PFI_SIM_STATE="$T/sim.state" PFI_STATE_DIR="$T"

head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$T/token"
chmod 600 "$T/token"
"$PFI" serve --backend sim --sim h200x8-idle --listen "unix:$T/n.sock" --port-file "$T/n.port" \
  --token-file "$T/token" --db "$T/n.db" --journal "$T/n.journal" --sample-interval 100ms \
  >"$T/serve.log" 2>&1 &
SRV=$!
i=0
until [ -s "$T/n.port" ]; do
  i=$((i + 1))
  kill -0 $SRV 2>/dev/null || fail "pfi serve: $(cat "$T/serve.log")"
  [ $i -gt 300 ] && fail "pfi serve did not start"
  sleep 0.05
done
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
