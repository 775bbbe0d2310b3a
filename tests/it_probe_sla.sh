#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A probe of a job with an SLA goes no deeper than the SLA, and never blocks the node's budget.
# The job (8 GPUs, SLA 10%, probe depth 40%) has no curve yet; planned as throughput in
# proportion to power, a probe shedding 40% fits no plan that keeps its SLA: every budget change
# was refused (409) for the probe's whole length, a grid event held "the least that can, 0 W",
# and under a budget in force the probe was never applied yet reported as run and charged.  Now
# the probe runs 10% deep (said in its event), and a budget set while it runs is taken.
# Needs $PFI_BIN, $PFI_FAKENVML.
set -u
name=it_probe_sla
fail() { echo "$name: FAIL: $*"; [ -f "$dir/serve.log" ] && tail -n 15 "$dir/serve.log"; exit 1; }
. "$(dirname "$0")/support/wait_listening.sh"
[ -n "${PFI_BIN:-}" ] && [ -x "$PFI_BIN" ] || { echo "$name: PFI_BIN is not set"; exit 1; }
[ -n "${PFI_FAKENVML:-}" ] && [ -f "$PFI_FAKENVML" ] || { echo "$name: PFI_FAKENVML is not built"; exit 1; }
command -v curl >/dev/null && command -v jq >/dev/null || { echo "$name: needs curl and jq"; exit 1; }
dir=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/$name.XXXXXX") || exit 1
SERVE="" JOB=""
cleanup() {
    for p in $SERVE $JOB; do kill -9 "$p" 2>/dev/null; done
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
unset PFI_SERVE_URL PFI_SERVE_TOKEN_FILE PFI_READ_ONLY PFI_BACKEND
export PFI_SIM_STATE="$dir/sim.state" PFI_JOURNAL="$dir/journal"
"$PFI_BIN" sim init --state "$PFI_SIM_STATE" --sim h200x8-dense >/dev/null || fail "sim init"
head -c 32 /dev/urandom | base64 >"$dir/token"
chmod 600 "$dir/token"
"$PFI_BIN" serve --backend nvml --nvml-lib "$PFI_FAKENVML" --listen 127.0.0.1:0 \
    --port-file "$dir/port" --token-file "$dir/token" --db "$dir/serve.db" \
    --sample-interval 200ms --set discover=no >"$dir/serve.log" 2>&1 &
SERVE=$!
wait_listening "$SERVE" "$dir/port" "pfi serve"
U="http://$(cat "$dir/port")"
api() { curl -s -X "$1" -H "Authorization: Bearer $(cat "$dir/token")" ${3:+--data-binary "$3"} "$U$2"; }
"$PFI_BIN" sim job --log-format pfi --duration 10m --interval 0.5s >"$dir/job.log" 2>&1 &
JOB=$!
api POST /v1/jobs "{\"id\":\"s\",\"gpus\":\"0-7\",\"sla\":0.1,\"log\":\"$dir/job.log\",\"probe\":{\"depth\":0.4,\"duration_s\":60}}" |
    jq -e '.jobs // .decision // .id' >/dev/null || fail "job s not registered"
i=0
until [ "$(api GET /v1/jobs/s | jq -r .probe.state)" = running ]; do
    i=$((i + 1)); [ $i -gt 600 ] && fail "the probe did not start: $(api GET /v1/jobs/s | jq -c .probe)"
    sleep 0.1
done
base=$(api GET /v1/jobs/s | jq .baseline_power_w)
cap=$(api GET /v1/jobs/s | jq .probe.cap_w)
awk -v c="$cap" -v b="$base" 'BEGIN { exit !(c >= 0.9 * b - 0.5) }' ||
    fail "probe cap $cap W sheds more than the SLA's 10% of the baseline draw $base W"
grep -q "probe: job s: probe at [0-9]* W started, 10% deep, the job's SLA (40% asked)" "$dir/serve.log" ||
    fail "the probe's depth lowered to the SLA not said: $(grep 'probe:' "$dir/serve.log")"
code=$(curl -s -o "$dir/put.json" -w '%{http_code}' -X PUT -H "Authorization: Bearer $(cat "$dir/token")" \
    --data-binary '{"watts": 5300}' "$U/v1/budget")
[ "$code" = 200 ] || fail "a budget of 5300 W during the probe: $code $(cat "$dir/put.json")"
echo "$name: probe of an SLA-10% job run at $cap W (baseline $base W), not 40% deep; a budget during it taken"
exit 0
