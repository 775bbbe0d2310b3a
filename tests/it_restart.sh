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

fail() { echo "it_restart: FAIL: $*"; for f in "$dir"/*.log; do echo "== $f"; tail -n 8 "$f"; done; exit 1; }
note() { echo "it_restart: $*"; }

[ -n "${PFI_BIN:-}" ] && [ -x "$PFI_BIN" ] || { echo "it_restart: PFI_BIN is not set"; exit 1; }
SAMPLER=$(dirname "$PFI_BIN")/tests/test_serve_sampler
[ -x "$SAMPLER" ] || { echo "it_restart: $SAMPLER is not built"; exit 1; }
command -v curl >/dev/null || { echo "it_restart: curl is missing (scripts/install-deps.sh test)"; exit 1; }
command -v jq >/dev/null || { echo "it_restart: jq is missing (scripts/install-deps.sh test)"; exit 1; }
KILLS=${RESTART_KILLS:-1}

dir=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/it_restart.XXXXXX") || exit 1
N1="" N2="" N3="" CLU="" SAMPLE=""
cleanup() {
    for p in $N1 $N2 $N3 $CLU $SAMPLE; do kill -9 "$p" 2>/dev/null; done
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
unset PFI_SERVE_URL PFI_SERVE_TOKEN_FILE PFI_READ_ONLY PFI_FAKENVML_FAULTS PFI_FAKENVML_FAULTS_FILE \
    PFI_JOURNAL PFI_SIM_STATE
if [ -n "${PFI_FAKENVML:-}" ] && [ -f "$PFI_FAKENVML" ]; then
    HW="--backend nvml --nvml-lib $PFI_FAKENVML"
else
    note "fake NVML not built: the sim backend over the same states"
    HW="--backend sim"
fi
head -c 32 /dev/urandom | base64 >"$dir/token"
chmod 600 "$dir/token"
TOK=$(cat "$dir/token")

# start_node K: pfi serve for node nK on its own simulated state; sets NK to its pid.
start_node() {
    rm -f "$dir/n$1.port"
    # shellcheck disable=SC2086
    PFI_SIM_STATE="$dir/n$1.state" "$PFI_BIN" serve $HW --listen "unix:$dir/n$1.sock" \
        --port-file "$dir/n$1.port" --token-file "$dir/token" --db "$dir/n$1.db" \
        --journal "$dir/n$1.journal" --sample-interval 100ms >>"$dir/n$1.log" 2>&1 &
    eval "N$1=$!"
    i=0
    while [ ! -s "$dir/n$1.port" ]; do
        i=$((i + 1)); [ $i -gt 600 ] && fail "pfi serve for n$1 did not start"
        sleep 0.05
    done
}
node() { # K METHOD PATH [BODY]
    curl -s --max-time 10 --unix-socket "$dir/n$1.sock" -H "Authorization: Bearer $TOK" \
        -X "$2" ${4:+-d "$4"} "http://localhost$3"
}
limits() { # K: the node's limits, as its simulated state has them
    # shellcheck disable=SC2086
    PFI_SIM_STATE="$dir/n$1.state" "$PFI_BIN" gpus $HW --read-only --json | jq -c '[.gpus[].limit_w]'
}
sum_of() { echo "$1" | jq 'add'; }
set_allowed() { echo "$1" >"$dir/allowed.tmp" && mv "$dir/allowed.tmp" "$dir/allowed"; }

for k in 1 2 3; do start_node $k; done
for k in 1 2 3; do eval "ORIG$k='$(limits $k)'"; done
pfi30s="0 0.25 0.5 0.8"
for k in 1 2 3; do
    p=$(echo $pfi30s | cut -d' ' -f$((k + 1)))
    node $k POST /v1/jobs "{\"id\":\"j$k\",\"gpus\":[0,1,2,3,4,5,6,7],\"pfi30\":$p}" | grep -q '"id"' ||
        fail "job j$k on n$k not registered"
done
cat >"$dir/topo.json" <<EOF
{"nodes": [{"name": "n1", "gpus": 8}, {"name": "n2", "gpus": 8}, {"name": "n3", "gpus": 8}],
 "jobs": [{"id": "j1", "parts": [{"node": "n1", "gpus": [0,1,2,3,4,5,6,7]}]},
          {"id": "j2", "parts": [{"node": "n2", "gpus": [0,1,2,3,4,5,6,7]}]},
          {"id": "j3", "parts": [{"node": "n3", "gpus": [0,1,2,3,4,5,6,7]}]}]}
EOF
"$PFI_BIN" cluster serve --listen 127.0.0.1:0 --port-file "$dir/cluster.port" --token "$dir/token" \
    --node-url "unix:$dir/%n.sock" --node-token "$dir/token" --topology "$dir/topo.json" \
    --heartbeat 1s --node-ttl 30s >"$dir/cluster.log" 2>&1 &
CLU=$!
i=0
until [ -s "$dir/cluster.port" ] && [ "$(curl -s "http://127.0.0.1:$(cat "$dir/cluster.port")/v1/nodes" 2>/dev/null | jq '[.nodes[] | select(.up)] | length' 2>/dev/null)" = 3 ]; do
    i=$((i + 1)); [ $i -gt 300 ] && fail "the controller does not see three nodes up"
    sleep 0.1
done
CL=http://127.0.0.1:$(cat "$dir/cluster.port")

SITE=$(( $(sum_of "$ORIG1" | cut -d. -f1) + $(sum_of "$ORIG2" | cut -d. -f1) + $(sum_of "$ORIG3" | cut -d. -f1) ))
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
    kill -KILL "$N2"; wait "$N2" 2>/dev/null
    start_node 2
    i=0
    until [ "$(curl -s "$CL/v1/nodes" | jq '.nodes[] | select(.name == "n2") | .restarts')" -ge "$r" ] 2>/dev/null; do
        i=$((i + 1)); [ $i -gt 150 ] && fail "the controller never saw n2's restart $r: $(curl -s "$CL/v1/nodes" | jq -c '.nodes[1]')"
        sleep 0.1
    done
    sleep 1.2
done
node 2 GET /v1/gpus >"$dir/n2gpus.json"
[ "$(jq -c '[.gpus[].original_limit_w]' "$dir/n2gpus.json")" = "$ORIG2" ] ||
    fail "the restarted n2 lost its originals: $(jq -c '[.gpus[].original_limit_w]' "$dir/n2gpus.json"), were $ORIG2"
mode=$(node 2 GET /v1/budget | jq -r '.mode')
[ "$mode" = external ] || fail "the restarted n2 is in mode $mode, not external (the controller's caps)"

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
restarts=$(curl -s "$CL/v1/allocation" | jq ".node_restarts")
note "$KILLS SIGKILL+restart of n2, SIGTERM (hold) of n3: $samples site instants sampled, largest sum $maxsum W against $BUDGET W, $viol over (largest excess $over W); controller counted $restarts restart(s)"
[ "$viol" = 0 ] || fail "the site's sum of limits exceeded the budget at $viol sampled instants ($(cat "$dir/sampler.log"))"
[ "$samples" -gt 100 ] || fail "only $samples site samples taken"
[ "$restarts" -ge "$KILLS" ] 2>/dev/null || fail "the controller counted $restarts restarts, not $KILLS"

# The end: the controller goes, the daemons stop (holding), and pfi restore puts every
# original back from their journals.
kill -TERM "$CLU"; wait "$CLU" 2>/dev/null; CLU=""
for k in 1 2; do
    eval "p=\$N$k"
    kill -TERM "$p"; wait "$p" || fail "n$k's daemon exited with an error on SIGTERM"
    eval "N$k=''"
done
for k in 1 2 3; do
    # shellcheck disable=SC2086
    PFI_SIM_STATE="$dir/n$k.state" "$PFI_BIN" restore $HW --journal "$dir/n$k.journal" \
        >>"$dir/restore.log" 2>&1 || fail "pfi restore of n$k"
    eval "o=\$ORIG$k"
    [ "$(limits $k)" = "$o" ] || fail "n$k after pfi restore: $(limits $k), originals $o"
done
note "pfi restore after the holds: every original limit back"
