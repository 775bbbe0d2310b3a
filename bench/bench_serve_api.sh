#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# API throughput and latency of `pfi serve` on loopback while it is controlling: a daemon on a
# shared simulated node (fake NVML when built, else the sim backend), three jobs, the budget
# changed every 0.2 s by another client throughout, and wrk (Debian's) loading read endpoints.
# Target (issue 8): 1,000 requests/s sustained with p99 < 10 ms.  Prints figures; asserts nothing.
#   bench/bench_serve_api.sh PFI_BINARY [SECONDS]
set -u
PFI=${1:-build/pfi}
SECS=${2:-10}
command -v wrk >/dev/null || sh "$(dirname "$0")/../scripts/install-deps.sh" optional >/dev/null 2>&1 || true
command -v wrk >/dev/null || { echo "bench_serve_api: wrk is not installed (apt-get install wrk); skipped"; exit 0; }
dir=$(mktemp -d /tmp/pfi-bench-api.XXXXXX)
SERVE=""; LOOP=""
trap '[ -n "$LOOP" ] && kill $LOOP 2>/dev/null; [ -n "$SERVE" ] && kill $SERVE 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT
trap 'exit 1' INT TERM HUP PIPE
export PFI_SIM_STATE="$dir/sim.state" PFI_JOURNAL="$dir/journal"
FAKE=$(dirname "$PFI")/lib/libnvidia-ml.so.1
if [ -f "$FAKE" ] && [ -z "${PFI_BENCH_SIM:-}" ]; then HW="--backend nvml --nvml-lib $FAKE"; else HW="--backend sim"; fi
head -c 32 /dev/urandom | base64 >"$dir/token"; chmod 600 "$dir/token"
# shellcheck disable=SC2086
"$PFI" serve $HW --listen 127.0.0.1:0 --port-file "$dir/port" --token-file "$dir/token" \
    --db "$dir/serve.db" --sample-interval 100ms --set threads=4 2>"$dir/log" &
SERVE=$!
i=0; while [ ! -s "$dir/port" ] && [ $i -lt 300 ]; do sleep 0.05; i=$((i + 1)); done
[ -s "$dir/port" ] || { echo "bench_serve_api: pfi serve did not start"; cat "$dir/log"; exit 1; }
ADDR=$(cat "$dir/port")
ctl() { "$PFI" ctl --url "http://$ADDR" --token-file "$dir/token" "$@" >/dev/null; }
ctl job add a --gpus 0-3 --sla 0.1; ctl job add b --gpus 4,5 --pfi30 0.25; ctl job add c --gpus 6,7 --pfi30 0.8
# "While controlling": budget changes keep coming during the whole measurement.
# (It stops by itself if this script dies without its clean-up.)
main=$$
# A change refused is counted, not printed: at 32 connections wrk holds every connection the
# daemon allows one address (max_client_connections, 32), so the loop's own connection from the same
# address is turned away by design; the count is printed at the end.
: >"$dir/refused"
setb() { ctl budget set "$1" 2>/dev/null || echo x >>"$dir/refused"; }
( while kill -0 $main 2>/dev/null; do setb 70%; sleep 0.1; setb 85%; sleep 0.1; done ) &
LOOP=$!
echo "bench_serve_api: pfi serve ($HW) on $ADDR, budget changed every 0.1 s, wrk ${SECS}s each"
# The target's load: ~1,000 requests/s (12 connections, each waiting 10 ms between requests; wrk
# times each request from its send, so the wait is not in the latency), mixed endpoints.
cat >"$dir/paced.lua" <<'LUA'
local paths = {"/v1/allocation", "/metrics", "/v1/jobs", "/v1/gpus", "/healthz"}
local i = 0
request = function()
  i = i + 1
  return wrk.format("GET", paths[(i % #paths) + 1])
end
delay = function() return 10 end
LUA
out=$(wrk -t 2 -c 12 -d "$((SECS * 2))s" --latency -s "$dir/paced.lua" "http://$ADDR" 2>&1)
rps=$(echo "$out" | awk '/^Requests\/sec/ { print $2 }')
p50=$(echo "$out" | awk '$1 == "50%" { print $2 }')
p99=$(echo "$out" | awk '$1 == "99%" { print $2 }')
errs=$(echo "$out" | awk '/Non-2xx|Socket errors/ { printf "%s ", $0 }')
printf "  paced mix of 5 read endpoints: %8s req/s  p50 %8s  p99 %8s  %s(target: 1000 req/s, p99 < 10 ms)\n" "$rps" "$p50" "$p99" "$errs"
echo "  at full load (as fast as wrk can send):"
for path in /v1/allocation /metrics /v1/jobs /healthz; do
    for conns in 4 32; do
        out=$(wrk -t 2 -c $conns -d "${SECS}s" --latency "http://$ADDR$path" 2>&1)
        rps=$(echo "$out" | awk '/^Requests\/sec/ { print $2 }')
        p50=$(echo "$out" | awk '$1 == "50%" { print $2 }')
        p99=$(echo "$out" | awk '$1 == "99%" { print $2 }')
        errs=$(echo "$out" | awk '/Non-2xx|Socket errors/ { printf "%s ", $0 }')
        printf "  GET %-15s %2d connections: %9s req/s  p50 %8s  p99 %8s  %s\n" "$path" "$conns" "$rps" "$p50" "$p99" "$errs"
    done
done
kill $LOOP; LOOP=""
decisions=$(curl -s "http://$ADDR/metrics" | awk '/^pfi_decisions_total/ { print $2 }')
echo "  decisions applied during the run: $decisions; budget changes refused (the loop's address over its connection cap while wrk held 32): $(wc -l <"$dir/refused")"
kill $SERVE; wait $SERVE 2>/dev/null; SERVE=""
