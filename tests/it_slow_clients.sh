#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Slow clients must not starve the controller: `pfi serve` with a watchdog armed by heartbeats,
# `control_listen` on a Unix socket, and a small `max_connections` so that the attack fits in
# make check; SLOW_CONNS connections from 127.0.0.1, each sending one more byte of an unfinished
# header every SLOW_DRIP seconds (tests/slow_clients.py), while heartbeats go to the controller
# socket.  Every heartbeat must be answered, the watchdog must never fire, one client address
# must hold at most max_client_connections, and another client (127.0.0.2) must still be
# answered.  The full attack of docs/serve.md:
#   SLOW_CONNS=1100 SLOW_SECONDS=120 SLOW_MAXCONN=1024 sh tests/it_slow_clients.sh
# Needs $PFI_BIN, $PFI_TEST_TMP (tests/run.sh sets them), python3 and jq.
set -u
fail() { echo "it_slow_clients: FAIL: $*"; [ -f "$dir/serve.log" ] && tail -n 20 "$dir/serve.log"; exit 1; }
note() { echo "it_slow_clients: $*"; }

[ -n "${PFI_BIN:-}" ] && [ -x "$PFI_BIN" ] || { echo "it_slow_clients: PFI_BIN is not set"; exit 1; }
for t in python3 jq curl; do
    command -v $t >/dev/null || { echo "it_slow_clients: FAIL: $t is missing (scripts/install-deps.sh test)"; exit 1; }
done
CONNS=${SLOW_CONNS:-300}
SECS=${SLOW_SECONDS:-15}
DRIP=${SLOW_DRIP:-10}
MAXCONN=${SLOW_MAXCONN:-200}
PERIP=${SLOW_PERIP:-32}
here=$(cd "$(dirname "$0")" && pwd)

dir=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/it_slow.XXXXXX") || exit 1
SERVE=""
cleanup() {
    [ -n "$SERVE" ] && kill -9 "$SERVE" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
export PFI_SIM_STATE="$dir/sim.state" PFI_JOURNAL="$dir/journal"
unset PFI_SERVE_URL PFI_SERVE_TOKEN_FILE PFI_READ_ONLY
head -c 32 /dev/urandom | base64 > "$dir/token"
chmod 600 "$dir/token"
ulimit -n 4096 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null

"$PFI_BIN" serve --backend sim --listen 127.0.0.1:0 --port-file "$dir/port" \
    --token-file "$dir/token" --db "$dir/serve.db" --sample-interval 100ms \
    --watchdog-timeout 3s --set control_listen="unix:$dir/ctl.sock" \
    --set max_connections="$MAXCONN" --set max_client_connections="$PERIP" \
    >"$dir/serve.log" 2>&1 &
SERVE=$!
i=0
while [ ! -s "$dir/port" ] || [ ! -S "$dir/ctl.sock" ]; do
    kill -0 "$SERVE" 2>/dev/null || fail "pfi serve exited at start"
    i=$((i + 1)); [ $i -gt 600 ] && fail "pfi serve did not start listening"
    sleep 0.05
done
ADDR=$(cat "$dir/port")
# The controller's socket is the owner's (and group's) alone.
mode=$(stat -c %a "$dir/ctl.sock")
[ "$mode" = 660 ] || fail "control socket mode $mode, expected 660"
# slow_clients.py's first heartbeat arms the watchdog (a heartbeat sent from here would leave
# the watchdog armed while python starts, which on a loaded machine can take longer than 3 s).
python3 "$here/slow_clients.py" --api "$ADDR" --control "unix:$dir/ctl.sock" \
    --token-file "$dir/token" --conns "$CONNS" --drip "$DRIP" --seconds "$SECS" \
    >"$dir/result.json" || fail "slow_clients.py failed"
note "$(cat "$dir/result.json")"
r=$(cat "$dir/result.json")
sent=$(echo "$r" | jq .heartbeats_sent)
failed=$(echo "$r" | jq .heartbeats_failed)
held=$(echo "$r" | jq .attacker_held_max)
other_fail=$(echo "$r" | jq .other_client_failed)
[ "$sent" -ge 10 ] || fail "only $sent heartbeats sent"
grep -q "watchdog: armed by slow-client-test" "$dir/serve.log" || fail "the watchdog was never armed"
[ "$failed" -eq 0 ] || fail "$failed of $sent heartbeats not answered"
[ "$held" -le "$PERIP" ] || fail "one client address held $held connections (limit $PERIP)"
[ "$held" -ge 1 ] || fail "the attack held no connection at all (nothing was tested)"
[ "$other_fail" -eq 0 ] || fail "another client address was refused $other_fail times"
trips=$(echo "$r" | jq .watchdog_trips)
[ "$trips" = 0 ] || fail "the watchdog fired ($trips trips) while heartbeats were sent"
[ "$(echo "$r" | jq .safe_mode)" = 0 ] || fail "the node went to its safe budget"
kill -TERM "$SERVE"; wait "$SERVE"; st=$?; SERVE=""
[ $st -eq 0 ] || fail "pfi serve exited $st on SIGTERM"
[ ! -e "$dir/ctl.sock" ] || fail "the controller socket was left behind"
note "ok: $CONNS slow connections, $sent heartbeats answered, p99 $(echo "$r" | jq .heartbeat_p99_ms) ms, 0 watchdog trips"
