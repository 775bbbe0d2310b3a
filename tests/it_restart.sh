#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A node daemon that restarts under a cluster controller must not raise power behind its back.
# Three `pfi serve` daemons, each over its own simulated node behind the fake NVML, and
# `pfi cluster serve` over them; the site is cut 40%.  Then one daemon is killed with SIGKILL
# and started again, and another is stopped with SIGTERM (on_stop's default under a
# controller: hold).  A separate process (tests/test_serve_sampler --sample-site) reads the
# three simulated nodes' shared states throughout and must never find the site's sum of limits
# over the budget in force (compared in whole milliwatts): 0 W of overshoot.  The controller
# must see the restart (a new boot id), the restarted daemon must keep the true originals (its
# journal taken over, not restored), and `pfi restore` must still put every original back.
# RESTART_KILLS: how many SIGKILL + restart rounds (default 1; make soak runs more).
set -u

name=it_restart
fail() { echo "it_restart: FAIL: $*"; for f in "$dir"/*.log; do echo "== $f"; tail -n 8 "$f"; done; exit 1; }
note() { echo "it_restart: $*"; }

. "$(dirname "$0")/support/sampler.sh"
KILLS=${RESTART_KILLS:-1}

dir=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/it_restart.XXXXXX") || exit 1
N1="" N2="" N3="" CLU="" SAMPLE=""
cleanup() {
    for p in $N1 $N2 $N3 $CLU $SAMPLE; do kill -9 "$p" 2>/dev/null; done
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
unset PFI_JOURNAL PFI_SIM_STATE
# Three node daemons under `pfi cluster serve --heartbeat 1s --node-ttl 30s`.
. "$(dirname "$0")/support/cluster_env.sh"
set_allowed() { echo "$1" >"$dir/allowed.tmp" && mv "$dir/allowed.tmp" "$dir/allowed"; }
set_allowed "$SITE"
"$SAMPLER" --sample-site "$dir/allowed" "$dir/sampled" "$dir/n1.state" "$dir/n2.state" \
    "$dir/n3.state" 2>>"$dir/sampler.log" &
SAMPLE=$!
curl -s --max-time 30 -X PUT -H "Authorization: Bearer $TOK" -d '{"budget": "cut=40%"}' \
    "$CL/v1/budget" >"$dir/cut.json"
BUDGET=$(jq -r '.budget_w' "$dir/cut.json")
[ "$BUDGET" != null ] && [ -n "$BUDGET" ] || fail "cut 40%: $(cat "$dir/cut.json")"
set_allowed "$BUDGET" # lowered only once answered: every node acknowledged
note "site ${SITE} W cut 40% to $BUDGET W"
sleep 1.5

r=0
while [ $r -lt "$KILLS" ]; do
    r=$((r + 1))
    # The daemon of n2 killed with SIGKILL, then started again at once (as systemd would).
    restart_node 2
    sleep 1.2
done
node 2 GET /v1/gpus >"$dir/n2gpus.json"
[ "$(jq -c '[.gpus[].original_limit_w]' "$dir/n2gpus.json")" = "$ORIG2" ] ||
    fail "the restarted n2 lost its originals: $(jq -c '[.gpus[].original_limit_w]' "$dir/n2gpus.json"), were $ORIG2"
mode=$(node 2 GET /v1/budget | jq -r '.mode')
[ "$mode" = external ] || fail "the restarted n2 is in mode $mode, not external (the controller's caps)"

restarts=$(curl -s "$CL/v1/allocation" | jq ".node_restarts") # counted by this controller

# The controller crashes and is started again (systemd's Restart=on-failure, no --budget): the
# site budget set through its API is in force again (kept in its --db); it was forgotten, and
# the API said there was none.
kill -9 "$CLU"
wait "$CLU" 2>/dev/null
start_controller
cb=$(curl -s "$CL/v1/allocation" | jq -r '.budget_w')
awk -v a="$cb" -v b="$BUDGET" 'BEGIN { exit !(a == b) }' ||
    fail "after the controller's restart its budget is $cb, not $BUDGET: $(tail -n 5 "$dir/cluster.log")"
grep -q "saved before the restart.*is in force again" "$dir/cluster.log" ||
    fail "the restarted controller does not say it took its budget back: $(tail -n 5 "$dir/cluster.log")"
sleep 1.2

# The one-shot `pfi cluster budget` beside the running controller is refused and changes
# nothing: it took the nodes over (the site at 100% for a heartbeat, the sampler above).
"$PFI_BIN" cluster budget 100% --node-url "unix:$dir/%n.sock" --node-token-file "$dir/token" \
    --topology "$dir/topo.json" >"$dir/oneshot.out" 2>&1
rc=$?
[ $rc = 1 ] && grep -q "holds the caps of a running controller (pfi-cluster" "$dir/oneshot.out" &&
    grep -q "no longer counted 60 s after its last heartbeat" "$dir/oneshot.out" ||
    fail "a one-shot budget beside the running controller: exit $rc: $(cat "$dir/oneshot.out")"
"$PFI_BIN" cluster status --node-url "unix:$dir/%n.sock" --node-token-file "$dir/token" \
    --topology "$dir/topo.json" >"$dir/status.out" 2>&1 ||
    fail "pfi cluster status beside the running controller: $(cat "$dir/status.out")"
grep -q "budget held by a running controller" "$dir/status.out" ||
    fail "pfi cluster status says the site has no budget while the controller holds one: $(cat "$dir/status.out")"

# A controller restarted after its wall clock was stepped back (NTP, a standby host behind):
# the nodes hold caps of epochs from the clock before, and a wave numbered from the clock alone
# was refused as stale (409) by every node, the site over its new budget until the clock caught
# up.  Run 60 s ahead, raise the budget (the nodes take its epochs), restart on the true clock,
# cut: the cut is met at once.
put_budget() { curl -s --max-time 30 -X PUT -H "Authorization: Bearer $TOK" -d "{\"watts\": $1}" \
    -o "$dir/put.json" -w '%{http_code}' "$CL/v1/budget"; }
kill -9 "$CLU"; wait "$CLU" 2>/dev/null
export PFI_CLOCK_SCALE=1.0001 PFI_CLOCK_ORIGIN=$(($(date +%s) - 600000))
start_controller
unset PFI_CLOCK_SCALE PFI_CLOCK_ORIGIN
up=$((BUDGET + 600))
set_allowed "$up"
[ "$(put_budget "$up")" = 200 ] || fail "budget $up W from the controller 60 s ahead: $(cat "$dir/put.json")"
sleep 1.2
kill -9 "$CLU"; wait "$CLU" 2>/dev/null
start_controller
down=$((BUDGET - 600))
[ "$(put_budget "$down")" = 200 ] ||
    fail "a cut to $down W after the clock went back 60 s is not met: $(cat "$dir/put.json") $(curl -s "$CL/v1/nodes" | jq -c '[.nodes[] | {name, up, why}]')"
set_allowed "$down"
BUDGET=$down
held=$(( $(limits 1 | jq 'add | floor') + $(limits 2 | jq 'add | floor') + $(limits 3 | jq 'add | floor') ))
[ "$held" -le "$down" ] || fail "after the cut the site holds $held W, over $down W"
note "a controller restarted after its clock went back 60 s: a cut to $down W met at once ($held W held)"

# SIGTERM under the controller: on_stop defaults to hold there; the journal stays.
before3=$(limits 3)
kill -TERM "$N3"
wait "$N3" || fail "n3's daemon exited with an error on SIGTERM"
N3=""
after3=$(limits 3)
[ "$after3" = "$before3" ] || fail "SIGTERM under the controller changed n3: $before3 -> $after3"
[ -s "$dir/n3.journal" ] || fail "SIGTERM with hold removed n3's journal"
sleep 0.5

: >"$dir/sampled.stop"
wait "$SAMPLE"
SAMPLE=""
read -r _ samples _ viol _ maxsum _ over <"$dir/sampled" || fail "no sampler output: $(cat "$dir/sampler.log")"
note "$KILLS SIGKILL+restart of n2, SIGTERM (hold) of n3: $samples site instants sampled, largest sum $maxsum W against $BUDGET W, $viol over (largest excess $over W); controller counted $restarts restart(s)"
[ "$viol" = 0 ] || fail "the site's sum of limits exceeded the budget at $viol sampled instants ($(cat "$dir/sampler.log"))"
[ "$samples" -gt 100 ] || fail "only $samples site samples taken"
[ "$restarts" -ge "$KILLS" ] 2>/dev/null || fail "the controller counted $restarts restarts, not $KILLS"

# The end: the controller goes, the daemons stop (holding), and pfi restore puts every
# original back from their journals.
restore_site
note "pfi restore after the holds: every original limit back"
