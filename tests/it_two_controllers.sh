#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Two cluster controllers over the same nodes (a test instance left running, both halves of a
# failover): the second is refused by every node while the first holds their caps, and says
# so; the site never goes over the first's budget.  Before, both named themselves
# "pfi-cluster", the nodes took turns with them at every heartbeat and the site sat 5,000 W
# over the lower budget for 0.12-0.18 s of every second, neither controller saying a word.
# Three `pfi serve` daemons on the fake NVML under controller A (cut 40%); controller B, its
# own database, over the same nodes with the site at 100%.  A separate process
# (tests/test_serve_sampler --sample-site) reads the three simulated nodes' states throughout
# and must never find the sum of limits over A's budget.
set -u

name=it_two_controllers
fail() { echo "$name: FAIL: $*"; for f in "$dir"/*.log; do echo "== $f"; tail -n 8 "$f"; done; exit 1; }
note() { echo "$name: $*"; }

. "$(dirname "$0")/support/sampler.sh"
dir=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/$name.XXXXXX") || exit 1
N1="" N2="" N3="" CLU="" CLB="" SAMPLE=""
cleanup() {
    for p in $N1 $N2 $N3 $CLU $CLB $SAMPLE; do kill -9 "$p" 2>/dev/null; done
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
unset PFI_JOURNAL PFI_SIM_STATE
. "$(dirname "$0")/support/cluster_env.sh"
set_allowed() { echo "$1" >"$dir/allowed.tmp" && mv "$dir/allowed.tmp" "$dir/allowed"; }
set_allowed "$SITE"
sampler_start "$dir/sampled" --sample-site "$dir/allowed" "$dir/sampled" "$dir/n1.state" \
    "$dir/n2.state" "$dir/n3.state"
curl -s --max-time 30 -X PUT -H "Authorization: Bearer $TOK" -d '{"budget": "cut=40%"}' \
    "$CL/v1/budget" >"$dir/cut.json"
BUDGET=$(jq -r '.budget_w' "$dir/cut.json")
[ "$BUDGET" != null ] && [ -n "$BUDGET" ] || fail "cut 40%: $(cat "$dir/cut.json")"
set_allowed "$BUDGET"
note "controller A: site ${SITE} W cut 40% to $BUDGET W"
sleep 1.2

# Controller B: its own database and address, the same nodes, the site at 100%.
rm -f "$dir/b.port"
"$PFI_BIN" cluster serve --listen 127.0.0.1:0 --port-file "$dir/b.port" --token-file "$dir/token" \
    --node-url "unix:$dir/%n.sock" --node-token-file "$dir/token" --topology "$dir/topo.json" \
    --heartbeat 1s --node-ttl 30s --db "$dir/cluster-b.db" --budget 100% >>"$dir/cluster-b.log" 2>&1 &
CLB=$!
i=0
until [ -s "$dir/b.port" ]; do
    i=$((i + 1)); [ $i -gt 300 ] && fail "controller B did not start"
    sleep 0.1
done
CLBURL=http://127.0.0.1:$(cat "$dir/b.port")
# Five of B's heartbeats.
sleep 5
refused=$(curl -s "$CLBURL/v1/nodes" | jq '[.nodes[] | select((.up | not) and (.why | test("held by controller pfi-cluster@")))] | length')
[ "$refused" = 3 ] || fail "controller B does not show the three nodes held by A: $(curl -s "$CLBURL/v1/nodes" | jq -c '[.nodes[] | {name, up, why}]')"
grep -q "is held by another controller" "$dir/cluster-b.log" ||
    fail "controller B's log does not say the nodes are held by another controller"
grep -q "refused pfi-cluster@" "$dir/n1.log" || fail "n1's events do not say B was refused"
# A cut through B is refused (nothing B holds can be capped), saying why: the nodes are held
# by another controller (it said they refused the token).
code=$(curl -s --max-time 30 -X PUT -H "Authorization: Bearer $TOK" -d '{"budget": "cut=50%"}' \
    -o "$dir/bcut.json" -w '%{http_code}' "$CLBURL/v1/budget")
[ "$code" != 200 ] && grep -q "held by another controller" "$dir/bcut.json" &&
    ! grep -q "refused the token" "$dir/bcut.json" || fail "a cut through B: $code $(cat "$dir/bcut.json")"
a=$(curl -s "$CL/v1/nodes" | jq '[.nodes[] | select(.up)] | length')
[ "$a" = 3 ] || fail "controller A lost its nodes: $(curl -s "$CL/v1/nodes" | jq -c '[.nodes[] | {name, up, why}]')"
held=$(( $(limits 1 | jq 'add | floor') + $(limits 2 | jq 'add | floor') + $(limits 3 | jq 'add | floor') ))
[ "$held" -le "${BUDGET%.*}" ] || fail "with B beside A the site holds $held W, over A's $BUDGET W"
# A still steers: a raise through A is taken while B runs.
up=$(( ${BUDGET%.*} + 800 ))
set_allowed "$up" # a raise may land before its answer
code=$(curl -s --max-time 30 -X PUT -H "Authorization: Bearer $TOK" -d "{\"watts\": $up}" \
    -o "$dir/up.json" -w '%{http_code}' "$CL/v1/budget")
[ "$code" = 200 ] || fail "A's raise to $up W with B beside it: $code $(cat "$dir/up.json")"
sleep 2
sampler_stop "$dir/sampled"
[ "$viol" = 0 ] || fail "the site went over A's budget $viol times (largest sum $maxsum W, $over W over)"
note "B refused by 3 of 3 nodes over 5 s of its heartbeats; A raised to $up W meanwhile; $samples site instants, largest sum $maxsum W, 0 over"
kill -TERM "$CLB"; wait "$CLB" 2>/dev/null; CLB=""
restore_site
exit 0
