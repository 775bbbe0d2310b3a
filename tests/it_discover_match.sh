#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Integration test of two things `pfi serve` must not read from a discovered job's log:
#  - a process that shares GPUs with a registered job but runs on others too (registered with
#    GPU 4, the process on 4 and 5) is matched to it, yet its log is not that job's measure: its
#    per-GPU rate would be scaled by the wrong GPU count and its slowed rate taken as the
#    registered job's baseline.  A job_matched event says which GPUs differ, once;
#  - a log that gives samples/s without a sequence length (DeepSpeed's) gives no curve point
#    or baseline as if it were tokens/s (a 4-GPU job at 4.6 "tokens/s" was sent to 200 W); a
#    job_log event says so, once.
# The daemon runs on the fake NVML over a simulated node (h200x8-mixed: job 0 on GPUs 0-3, job 1
# on 4-5) with a /proc tree standing in for the node's.
set -u
fail() { echo "it_discover_match: FAIL: $*"; [ -f "$dir/serve.log" ] && tail -n 20 "$dir/serve.log"; exit 1; }
. "$(dirname "$0")/support/wait_listening.sh"
[ -n "${PFI_BIN:-}" ] && [ -x "$PFI_BIN" ] || { echo "it_discover_match: PFI_BIN is not set"; exit 1; }
[ -n "${PFI_FAKENVML:-}" ] && [ -f "$PFI_FAKENVML" ] || { echo "it_discover_match: PFI_FAKENVML is not built"; exit 77; }
command -v curl >/dev/null && command -v jq >/dev/null || { echo "it_discover_match: needs curl and jq"; exit 77; }
dir=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/it_discover_match.XXXXXX") || exit 1
SERVE="" J0="" J1="" J2=""
cleanup() {
    for p in $SERVE $J0 $J1 $J2; do kill -9 "$p" 2>/dev/null; done
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
unset PFI_SERVE_URL PFI_SERVE_TOKEN_FILE PFI_READ_ONLY PFI_BACKEND
export PFI_SIM_STATE="$dir/sim.state" PFI_JOURNAL="$dir/journal"
"$PFI_BIN" sim init --state "$PFI_SIM_STATE" --sim h200x8-mixed --speed 20 >/dev/null || fail "sim init"
head -c 32 /dev/urandom | base64 > "$dir/token"
chmod 600 "$dir/token"

"$PFI_BIN" sim job --job 0 --log-format deepspeed >"$dir/job0.log" 2>&1 &
J0=$!
mkproc() { # pid cgroup-line job
    mkdir -p "$dir/proc/$1/fd"
    printf '%s\n' "$2" >"$dir/proc/$1/cgroup"
    printf 'python\000train.py\000--job\000%s\000' "$3" >"$dir/proc/$1/cmdline"
    printf '%s (python) S 1 %s %s 0 -1 4194560\n' "$1" "$1" "$1" >"$dir/proc/$1/stat"
    : >"$dir/proc/$1/environ"
}
mkproc "$J0" "0::/system.slice/slurmstepd.scope/job_5151/step_0/user/task_0" 0
ln -s "$dir/job0.log" "$dir/proc/$J0/fd/1"

"$PFI_BIN" serve --backend nvml --nvml-lib "$PFI_FAKENVML" --listen 127.0.0.1:0 \
    --port-file "$dir/port" --token-file "$dir/token" --db "$dir/serve.db" \
    --sample-interval 100ms --set proc_root="$dir/proc" \
    --set reoptimize_interval=1s --set min_change_interval=1s >"$dir/serve.log" 2>&1 &
SERVE=$!
wait_listening "$SERVE" "$dir/port" "pfi serve"
URL="http://$(cat "$dir/port")"
AUTH="Authorization: Bearer $(cat "$dir/token")"
jobs_json() { curl -sf --max-time 5 "$URL/v1/jobs"; }
events() { curl -sf --max-time 5 "$URL/v1/events?limit=500"; }

# Registered with GPU 4 only (its own registration, say a prolog that lists one GPU); its process
# then shows up in /proc on GPUs 4 and 5.
curl -sf -X POST -H "$AUTH" -d '{"id":"reg","gpus":[4]}' "$URL/v1/jobs" >/dev/null || fail "register reg"
# Started only now, as a prolog registers before the job runs: a GPU process two discovery
# rounds without its /proc entry would be a job of its own (pid-P) holding GPUs 4-5.
"$PFI_BIN" sim job --job 1 --log-format torchtitan >"$dir/job1.log" 2>&1 &
J1=$!
mkproc "$J1" "0::/system.slice/slurmstepd.scope/job_5252/step_0/user/task_0" 1
ln -s "$dir/job1.log" "$dir/proc/$J1/fd/1"
i=0
until events | grep -q "job slurm-5252 (pid $J1) runs on GPUs 4,5, the registered job reg holds 4: its log is not read as reg's throughput"; do
    i=$((i + 1)); [ $i -gt 150 ] && fail "no job_matched event for the GPUs that differ: $(events | tail -c 1500)"
    sleep 0.1
done
echo "it_discover_match: a process on GPUs 4,5 matched to reg (GPU 4) is said to differ"

# The samples/s job: said once, and no curve point however long it runs steady.
i=0
until events | grep -q "job slurm-5151: its log gives samples/s, not tokens/s (no sequence length in it, its registration or its command line): no curve point or baseline is taken from it"; do
    i=$((i + 1)); [ $i -gt 300 ] && fail "no job_log event for a samples/s log: $(jobs_json) $(events | tail -c 1500)"
    sleep 0.1
done
echo "it_discover_match: a samples/s log is said to give no tokens/s"
# Several seconds more at 20x: reg is still not measured from the other job's log, and neither
# job has a point.
sleep 3
jobs_json | jq -e '.jobs[] | select(.id == "reg") | .log_followed == null and (.observed_tokens_per_s == null or .observed_tokens_per_s == 0)' >/dev/null ||
    fail "reg is measured from the log of a process on other GPUs: $(jobs_json | jq -c '.jobs[] | select(.id == "reg")')"
n=$(events | jq '[.events[] | select(.kind == "curve_point")] | length')
[ "$n" = 0 ] || fail "$n curve points taken: $(events | jq -c '[.events[] | select(.kind == "curve_point")]')"
# (Were J1 seen on its GPUs two rounds before its /proc entry is made, it would be a job of its
# own, pid-J1, until then; those events are not the two counted here.)
n=$(events | jq '[.events[] | select((.kind == "job_matched" and (.message | test("^job (pid-[0-9]+ |reg takes over)") | not)) or (.kind == "job_log" and (.message | contains("samples/s"))))] | length')
[ "$n" = 2 ] || fail "the two events are not said once each ($n)"
jobs_json | jq -e '.jobs[] | select(.id == "slurm-5151") | .curve_source != "observed"' >/dev/null ||
    fail "the samples/s job has an observed curve: $(jobs_json)"
echo "it_discover_match: no curve point, no baseline, each event said once"

# The same DeepSpeed log from a job whose command line states its sequence length
# (Megatron-DeepSpeed's --seq-length): its samples/s read as tokens/s, samples x 4096.
"$PFI_BIN" sim job --job 2 --log-format deepspeed >"$dir/job2.log" 2>&1 &
J2=$!
mkproc "$J2" "0::/system.slice/slurmstepd.scope/job_5353/step_0/user/task_0" 2
printf 'python\000pretrain_gpt.py\000--micro-batch-size\0004\000--seq-length\0004096\000' >"$dir/proc/$J2/cmdline"
ln -s "$dir/job2.log" "$dir/proc/$J2/fd/1"
i=0
until jobs_json | jq -e '.jobs[] | select(.id == "slurm-5353") | .observed_tokens_per_s > 0' >/dev/null 2>&1; do
  i=$((i + 1)); [ $i -gt 300 ] && fail "slurm-5353 (--seq-length 4096) has no tokens/s: $(jobs_json | jq -c '.jobs[] | select(.id == "slurm-5353")')"
  sleep 0.1
done
jobs_json | jq -e '.jobs[] | select(.id == "slurm-5353") | .seq_len == 4096' >/dev/null ||
  fail "slurm-5353's seq_len: $(jobs_json | jq -c '.jobs[] | select(.id == "slurm-5353")')"
sps=$(grep -o 'CurrSamplesPerSec=[0-9.]*' "$dir/job2.log" | tail -n 1 | cut -d= -f2)
tps=$(jobs_json | jq '.jobs[] | select(.id == "slurm-5353") | .observed_tokens_per_s')
awk -v t="$tps" -v s="$sps" 'BEGIN { exit !(s > 0 && t > 0.9 * s * 4096 && t < 1.1 * s * 4096) }' ||
  fail "slurm-5353 read at $tps tokens/s, its log says $sps samples/s (x 4096)"
echo "it_discover_match: a samples/s log with --seq-length on the command line reads as tokens/s ($tps)"
# The same job registered by the plugin (its id, its GPUs) with no sequence length takes over
# from discovery, and takes the one its process's command line states.
curl -sf -X POST -H "$AUTH" -d '{"id":"5353","gpus":[6,7]}' "$URL/v1/jobs" >/dev/null || fail "register 5353"
i=0
until jobs_json | jq -e '.jobs[] | select(.id == "5353") | .seq_len == 4096' >/dev/null 2>&1; do
  i=$((i + 1)); [ $i -gt 300 ] && fail "5353 (registered without seq_len) did not take its command line's: $(jobs_json | jq -c '.jobs[] | select(.id == "5353")')"
  sleep 0.1
done
echo "it_discover_match: a registered job without seq_len takes its process's --seq-length"
kill -TERM "$SERVE"; wait "$SERVE" 2>/dev/null; SERVE=""
exit 0
