#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# it_serve_held_restart.sh: a package upgrade's restart keeps a standalone node's budget.  The
# postinst writes JOURNAL.hold-next-stop and then try-restarts the daemon (SIGTERM, a start):
# that stop holds the limits even with on_stop = auto and no controller, removes the file, and
# the start takes the hold and its budget back (resume = no).  Before, the stop restored the
# originals and the new daemon came back without a budget, saying nothing.  Without the file a
# stop restores as before, and the start says that the saved budget is not in force.  A file
# left while no daemon ran is removed at start: a later stop restores.
# Needs $PFI_BIN (tests/run.sh sets it), jq.
set -u
name=it_serve_held_restart
. "$(dirname "$0")/support/node_env.sh"
ctl() { "$PFI" ctl --socket "$T/n.sock" --token-file "$T/token" "$@"; }
limits() { "$PFI" gpus $SERVE_HW --read-only --json | jq -c '[.gpus[].limit_w]'; }
marker=$T/n.journal.hold-next-stop
orig=$(limits) || fail "pfi gpus"

# ---- the held restart: the marker, SIGTERM, a start ----
start_node n
ctl budget set 60% >/dev/null || fail "budget set 60%"
budget=$(ctl allocation | jq -r .budget_w)
sleep 0.5
capped=$(limits)
[ "$capped" != "$orig" ] || fail "60% did not lower the limits: $capped"
: >"$marker"
stop_serve TERM || fail "SIGTERM with the marker: exit $?"
[ ! -e "$marker" ] || fail "the stop left $marker"
[ "$(limits)" = "$capped" ] || fail "the stop with the marker changed the limits: $capped -> $(limits)"
[ -s "$T/n.journal" ] || fail "the held stop removed the journal"
grep -q "power limits held at stop (a held restart asked by $marker" "$T/serve.log" ||
  fail "the stop does not say it held for the marker"
start_node n
[ "$(limits)" = "$capped" ] || fail "the start after a held stop changed the limits: $capped -> $(limits)"
[ "$(ctl allocation | jq -r .budget_w)" = "$budget" ] ||
  fail "the budget after the held restart: $(ctl allocation | jq -r .budget_w), was $budget"
[ "$(ctl gpus | jq -c '[.gpus[].original_limit_w]')" = "$orig" ] ||
  fail "the held restart lost the originals: $(ctl gpus | jq -c '[.gpus[].original_limit_w]')"

# ---- without the marker: the stop restores (on_stop = auto, standalone), as before ----
stop_serve TERM || fail "SIGTERM without the marker: exit $?"
[ "$(limits)" = "$orig" ] || fail "a stop without the marker did not restore: $(limits)"
[ ! -e "$T/n.journal" ] || fail "the restoring stop left its journal"
start_node n
[ "$(ctl allocation | jq -r .budget_w)" = null ] || fail "resume = no took the budget back"
grep -q "the budget of $(printf %.0f "$budget") W saved before the stop is not in force (resume = no)" "$T/serve.log" ||
  fail "the start does not say the saved budget was dropped: $(grep budget "$T/serve.log" | tail -n 3)"
stop_serve TERM || fail "SIGTERM: exit $?"

# ---- a marker left while no daemon ran asks nothing of a later stop ----
: >"$marker"
start_node n
[ ! -e "$marker" ] || fail "the start left $marker"
grep -q "hold-next-stop found at start, removed" "$T/serve.log" || fail "the start does not say it removed the marker"
ctl budget set 60% >/dev/null || fail "budget set 60% (second)"
sleep 0.5
stop_serve TERM || fail "SIGTERM after a stale marker: exit $?"
[ "$(limits)" = "$orig" ] || fail "a stale marker made a later stop hold: $(limits)"
echo "$name: held restart kept $budget W and the limits; without the marker the stop restored"
