# SPDX-License-Identifier: Apache-2.0
# Sourced by the tests that run node daemons under a cluster controller (it_restart.sh,
# it_chaos.sh): three `pfi serve` daemons on the fake NVML, each over its own simulated node
# (n1..n3: state, database, journal and log $dir/nK.*), with their API on 127.0.0.1 and the
# controller's path on a Unix socket (control_listen = unix:$dir/nK.sock); one job on all eight
# GPUs of each; then `pfi cluster serve` over them.
# The caller sets $name, $dir and fail(), kills $N1 $N2 $N3 $CLU at exit, and may set before
# sourcing:
#   CL_NODE_OPTS  more options for every node daemon (word-split)
#   CL_N1_OPTS    more options for n1 only (word-split)
#   CL_TTL        the controller's --node-ttl, the nodes' watchdog (default 30s)
# Sets HW, TOK (the token), N1..N3 (pids), NODE_ADDR1..3 (HOST:PORT of the API), CL (the
# controller's URL), CLU (its pid), ORIG1..3 (each node's original limits, JSON arrays), SITE
# (their sum, W).  Functions: start_controller (sets CL and CLU again), start_node K, node K METHOD PATH [BODY] (through the controller's
# socket), limits K, restart_node K (SIGKILL, start again, wait until the controller counted
# the restart), node_metric K NAME, restore_site (the controller stopped, each daemon still
# running stopped with SIGTERM, which holds its caps under a controller, then `pfi restore`
# from each journal must bring back every original limit).
[ -n "${PFI_BIN:-}" ] && [ -x "$PFI_BIN" ] || { echo "$name: PFI_BIN is not set"; exit 1; }
for t in curl jq; do
    command -v $t >/dev/null || fail "$t is missing (scripts/install-deps.sh test)"
done
unset PFI_SERVE_URL PFI_SERVE_TOKEN_FILE PFI_READ_ONLY PFI_FAKENVML_FAULTS PFI_FAKENVML_FAULTS_FILE
if [ -n "${PFI_FAKENVML:-}" ] && [ -f "$PFI_FAKENVML" ]; then
    HW="--backend nvml --nvml-lib $PFI_FAKENVML"
else
    echo "$name: fake NVML not built: the sim backend over the same states"
    HW="--backend sim"
fi
[ -s "$dir/token" ] || { head -c 32 /dev/urandom | base64 >"$dir/token"; chmod 600 "$dir/token"; }
TOK=$(cat "$dir/token")
N1="" N2="" N3="" CLU=""

start_node() { # K: pfi serve for node nK; sets NK and NODE_ADDRK
    rm -f "$dir/n$1.port"
    extra=""
    [ "$1" = 1 ] && extra=${CL_N1_OPTS:-}
    # shellcheck disable=SC2086
    PFI_SIM_STATE="$dir/n$1.state" "$PFI_BIN" serve $HW --listen 127.0.0.1:0 \
        --set control_listen="unix:$dir/n$1.sock" --port-file "$dir/n$1.port" \
        --token-file "$dir/token" --db "$dir/n$1.db" --journal "$dir/n$1.journal" \
        --sample-interval 100ms ${CL_NODE_OPTS:-} $extra >>"$dir/n$1.log" 2>&1 &
    eval "N$1=$!"
    i=0
    while [ ! -s "$dir/n$1.port" ] || [ ! -S "$dir/n$1.sock" ]; do
        i=$((i + 1)); [ $i -gt 600 ] && fail "pfi serve for n$1 did not start"
        sleep 0.05
    done
    eval "NODE_ADDR$1=$(cat "$dir/n$1.port")"
}
node() { # K METHOD PATH [BODY]
    curl -s --max-time 10 --unix-socket "$dir/n$1.sock" -H "Authorization: Bearer $TOK" \
        -X "$2" ${4:+-d "$4"} "http://localhost$3"
}
node_metric() { # K NAME: the value of metric NAME on node K
    node "$1" GET /metrics | awk -v m="$2" '$1 == m { print $2; exit }'
}
limits() { # K: the node's limits, as its simulated state has them
    # shellcheck disable=SC2086
    PFI_SIM_STATE="$dir/n$1.state" "$PFI_BIN" gpus $HW --read-only --json | jq -c '[.gpus[].limit_w]'
}
restarts_of() { # K: the restarts of nK the controller counted
    curl -s "$CL/v1/nodes" | jq ".nodes[] | select(.name == \"n$1\") | .restarts"
}
restart_node() { # K: SIGKILL, then started again at once (as systemd would)
    eval "p=\$N$1"
    before=$(restarts_of "$1")
    kill -KILL "$p"; wait "$p" 2>/dev/null
    start_node "$1"
    i=0
    until [ "$(restarts_of "$1")" -gt "$before" ] 2>/dev/null; do
        i=$((i + 1)); [ $i -gt 300 ] && fail "the controller never saw n$1 restart: $(curl -s "$CL/v1/nodes" | jq -c ".nodes[$(($1 - 1))]")"
        sleep 0.1
    done
}
restore_site() {
    kill -TERM "$CLU"; wait "$CLU" 2>/dev/null; CLU=""
    for k in 1 2 3; do
        eval "p=\$N$k"
        [ -n "$p" ] || continue
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
}

for k in 1 2 3; do start_node $k; done
for k in 1 2 3; do eval "ORIG$k='$(limits $k)'"; done
for k in 1 2 3; do
    p=$(echo "0.25 0.5 0.8" | cut -d' ' -f$k)
    node $k POST /v1/jobs "{\"id\":\"j$k\",\"gpus\":[0,1,2,3,4,5,6,7],\"pfi30\":$p}" | grep -q '"id"' ||
        fail "job j$k on n$k not registered"
done
cat >"$dir/topo.json" <<EOF
{"nodes": [{"name": "n1", "gpus": 8}, {"name": "n2", "gpus": 8}, {"name": "n3", "gpus": 8}],
 "jobs": [{"id": "j1", "parts": [{"node": "n1", "gpus": [0,1,2,3,4,5,6,7]}]},
          {"id": "j2", "parts": [{"node": "n2", "gpus": [0,1,2,3,4,5,6,7]}]},
          {"id": "j3", "parts": [{"node": "n3", "gpus": [0,1,2,3,4,5,6,7]}]}]}
EOF
start_controller() { # (again after a crash: the same command, the same --db)
    rm -f "$dir/cluster.port"
    "$PFI_BIN" cluster serve --listen 127.0.0.1:0 --port-file "$dir/cluster.port" --token-file "$dir/token" \
        --node-url "unix:$dir/%n.sock" --node-token-file "$dir/token" --topology "$dir/topo.json" \
        --heartbeat 1s --node-ttl "${CL_TTL:-30s}" --db "$dir/cluster.db" >>"$dir/cluster.log" 2>&1 &
    CLU=$!
    i=0
    until [ -s "$dir/cluster.port" ] && [ "$(curl -s "http://127.0.0.1:$(cat "$dir/cluster.port")/v1/nodes" 2>/dev/null | jq '[.nodes[] | select(.up)] | length' 2>/dev/null)" = 3 ]; do
        i=$((i + 1)); [ $i -gt 300 ] && fail "the controller does not see three nodes up"
        sleep 0.1
    done
    CL=http://127.0.0.1:$(cat "$dir/cluster.port")
}
start_controller
sum_of() { echo "$1" | jq 'add'; }
SITE=$(( $(sum_of "$ORIG1" | cut -d. -f1) + $(sum_of "$ORIG2" | cut -d. -f1) + $(sum_of "$ORIG3" | cut -d. -f1) ))
