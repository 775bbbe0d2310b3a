#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# it_event_cli.sh: an event id given to `pfi event rm` or `report` names an event, never another
# path.  It goes into the path percent-encoded: libcurl resolves dot segments, so
# `pfi event rm ../../budget` went out as DELETE /v1/budget and removed the node's budget (every
# GPU back to its original limit); the events "." and ".." (ids the daemon takes) could not be
# reached.  A report says what it can in every state of its event (not started, running,
# deleted, finished, finished without samples, an unknown or malformed id, a store without the
# event tables), never in gnuplot's words.  Needs $PFI_BIN (tests/run.sh sets it), jq.
set -u
name=it_event_cli
. "$(dirname "$0")/support/node_env.sh"
start_node n
ev() { "$PFI" event --socket "$T/n.sock" --token-file "$T/token" "$@"; }
budget() { "$PFI" ctl --socket "$T/n.sock" allocation | jq -r .budget_w; }

"$PFI" ctl --socket "$T/n.sock" --token-file "$T/token" budget set 4kW >/dev/null ||
  fail "budget set 4kW"
ev add --id e1 --start now+1h --duration 1h --limit 3kW >/dev/null 2>"$T/err" || fail "event add e1"
[ -s "$T/err" ] && fail "a new event's add said: $(cat "$T/err")"
# The same id again replaces it, and says so (it replaced it without a word)
ev add --id e1 --start now+1h --duration 1h --limit 3kW >/dev/null 2>"$T/err" || fail "event add e1 again"
grep -q "^pfi event: event e1 replaced: the daemon held an event of that id" "$T/err" ||
  fail "a replace is not said: $(cat "$T/err")"

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

# ---- a report in every state an event can be in says what it can, never in gnuplot's words ----
# `pfi event report` of an event not started yet printed gnuplot's "warning: Skipping data file
# with no valid points" four times and a report saying "Ramps: NOT complied" beside an empty
# figure.  report ID [ARGS] writes under $T/r.ID; $T/out and $T/err get its stdout and stderr.
rep() {
  ev report "$@" >"$T/out" 2>"$T/err"
  st=$?
  ! grep -qi "gnuplot\|warning" "$T/err" || fail "report $*: gnuplot on stderr: $(cat "$T/err")"
  return $st
}
state() { ev report "$1" --json | jq -r '.state + "|" + .state_message'; }
# expect ID STATE WORDS: report ID exits 0, says WORDS, and its JSON has STATE.
expect() {
  rm -rf "$T/r.$1"
  rep "$1" --out "$T/r.$1" || fail "report $1: exit $st: $(cat "$T/out" "$T/err")"
  grep -q "$3" "$T/out" || fail "report $1 does not say '$3': $(cat "$T/out")"
  grep -q "$3" "$T/r.$1/report.md" || fail "report.md of $1 does not say '$3'"
  s=$(state "$1")
  [ "${s%%|*}" = "$2" ] || fail "report $1 --json: state '${s%%|*}', not $2 ($s)"
}
HAVE_GP=$(command -v gnuplot)
# not started: nothing to report, no figure, no verdict
expect e1 not_started "starts at .*: nothing to report yet"
[ ! -e "$T/r.e1/power.png" ] || fail "report of e1 drew a figure"
! grep -q "complied" "$T/r.e1/report.md" || fail "report of e1 judges the ramps: $(cat "$T/r.e1/report.md")"
# running: a partial report, marked so, its figure drawn with the draw so far
ev add --id run1 --start now --duration 1h --limit 3500W >/dev/null || fail "event add run1"
sleep 2
expect run1 partial "is in force until .*: partial report"
[ -z "$HAVE_GP" ] || [ -s "$T/r.run1/power.png" ] || fail "report of run1: no figure: $(cat "$T/out")"
grep -q "^- Ramps: .*complied so far (" "$T/r.run1/report.md" ||
  fail "a partial report judges the ramps for good: $(grep Ramps "$T/r.run1/report.md")"
# cancelled (deleted): a clear error, exit 1
ev rm run1 >/dev/null || fail "event rm run1"
rep run1 --out "$T/r.x"
[ $st = 1 ] && grep -q "no grid event 'run1'" "$T/err" || fail "report of a deleted event: exit $st: $(cat "$T/out" "$T/err")"
# finished: a complete report
ev add --id done1 --start now+1s --duration 2s --limit 3500W >/dev/null || fail "event add done1"
i=0
until ev list | jq -e '.events[] | select(.id == "done1" and .phase == "done")' >/dev/null; do
  i=$((i + 1)); [ $i -gt 200 ] && fail "done1 never done: $(ev list)"
  sleep 0.1
done
expect done1 complete "ended at .*: complete report"
grep -q "^- Ramps: \(NOT \)\{0,1\}complied (" "$T/r.done1/report.md" ||
  fail "a complete report's ramps: $(grep Ramps "$T/r.done1/report.md")"
# finished while the daemon was down: no samples in its window, nothing to judge (a sample
# holds up to 5 s: the window starts later than that after the last one, and ends before the
# daemon is back)
ev add --id gap1 --start now+7s --duration 1s --limit 3500W >/dev/null || fail "event add gap1"
stop_serve TERM
sleep 9
start_node n
expect gap1 no_samples "no site power was recorded in its window"
[ ! -e "$T/r.gap1/power.png" ] || fail "report of gap1 drew a figure"

# ---- bad ids: exit 2, saying what an id is, nothing asked or changed; unknown ids: exit 1 ----
ev list | jq -S . >"$T/before"
for id in "" "a b" "../e1" "x/report" "e1?x" "$(printf 'e%.0s' $(seq 64))"; do
  for form in "--json" "--out $T/r.bad"; do
    # shellcheck disable=SC2086
    rep "$id" $form
    [ $st = 2 ] && grep -q "event id .* must be" "$T/err" ||
      fail "report '$id' $form: exit $st: $(cat "$T/out" "$T/err")"
    [ ! -e "$T/r.bad" ] || fail "report '$id' $form wrote $T/r.bad"
  done
  # rm the same: before, the id went to the daemon as a path ("../e1" a 404, exit 1)
  ev rm "$id" >"$T/out" 2>"$T/err"
  st=$?
  [ $st = 2 ] && grep -q "event id .* must be" "$T/err" ||
    fail "rm '$id': exit $st: $(cat "$T/out" "$T/err")"
done
rep nope --json
[ $st = 1 ] && grep -q "no grid event 'nope'" "$T/err" || fail "report nope: exit $st: $(cat "$T/err")"
ev list | jq -S . | cmp -s - "$T/before" || fail "a report changed the events: $(ev list)"

# ---- the token goes with reads too ----
# Before: --token-file was sent on changes only, so `pfi event list` (and report) of a daemon
# with read_auth = token got a bare "HTTP 401".  Restarted so (the same node and journal).
stop_serve TERM
start_serve "unix:$T/n.sock" --journal "$T/n.journal" --sample-interval 100ms --set read_auth=token
rev() { "$PFI" event --socket "$T/n.sock" "$@"; }
rev --token-file "$T/token" list >"$T/out" 2>"$T/err" ||
  fail "read_auth = token: list with the token: $(cat "$T/err")"
jq -e '[.events[].id] | index("e1")' "$T/out" >/dev/null || fail "list with the token: $(cat "$T/out")"
rev --token-file "$T/token" report e1 --json >"$T/out" 2>"$T/err" ||
  fail "read_auth = token: report with the token: $(cat "$T/err")"
[ "$(jq -r .event.id "$T/out")" = e1 ] || fail "report with the token: $(head -c 200 "$T/out")"
for c in list "report e1 --json"; do
  # shellcheck disable=SC2086
  rev $c >"$T/out" 2>"$T/err"
  rc=$?
  [ $rc = 1 ] && grep -q "HTTP 401" "$T/err" &&
    grep -q "requires its bearer token for reads.*pass --token-file FILE" "$T/err" ||
    fail "read_auth = token: $c without a token: exit $rc: $(cat "$T/err")"
done

# ---- a store without the event tables (one written before grid events): no such event ----
command -v python3 >/dev/null || { echo "it_event_cli: python3 missing: the store part not run"; exit 77; }
stop_serve TERM
python3 -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.executescript("DROP TABLE grid_events; DROP TABLE grid_power; DROP TABLE IF EXISTS grid_state; DROP TABLE IF EXISTS grid_event_revisions; DELETE FROM schema_layers WHERE layer = \"grid\";"); c.commit()' \
  "$T/serve.db" || fail "dropping the grid tables"
start_node n
rep e1 --out "$T/r.none"
[ $st = 1 ] && grep -q "no grid event 'e1'" "$T/err" || fail "report on a store without events: exit $st: $(cat "$T/out" "$T/err")"
[ "$(ev list | jq '.events | length')" = 0 ] || fail "events on a store without them: $(ev list)"
echo "it_event_cli: ok"
