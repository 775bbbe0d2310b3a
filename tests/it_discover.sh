#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Integration test of job discovery in `pfi serve` (no registration call): the daemon runs on
# the fake NVML over a shared simulated node (h200x8-mixed: three jobs), two simulated jobs
# run as processes (pfi sim job), and a /proc tree stands in for the node's: one job's process
# is in a Slurm cgroup (job_4242), the other in a plain process group.  The daemon must list
# the GPUs' processes, map them to jobs, register both with their GPUs, follow the Slurm job's
# log (its stdout, fd/1, a regular file) and build its curve from the tokens/s it observes at
# the caps it sets, then retire each job when its process ends.  A third job, in Slurm job
# 4343's cgroup with a stdout that is not a file, is followed through the output file Slurm
# states for it (`scontrol show job`, answered by a stand-in printing Slurm 22.05's layout).
# The process-group job's stdout and stderr are two files ("> job1.out 2> job1.err"): its
# stdout holds plain lines only; its torchtitan metric lines (Python's logging) reach stderr
# only after it was discovered (first metrics after start-up), so stderr is the file followed
# from then on; later they move to its stdout, which is then followed.
set -u
fail() { echo "it_discover: FAIL: $*"; [ -f "$dir/serve.log" ] && tail -n 20 "$dir/serve.log"; exit 1; }
. "$(dirname "$0")/support/wait_listening.sh"
[ -n "${PFI_BIN:-}" ] && [ -x "$PFI_BIN" ] || { echo "it_discover: PFI_BIN is not set"; exit 1; }
[ -n "${PFI_FAKENVML:-}" ] && [ -f "$PFI_FAKENVML" ] || { echo "it_discover: PFI_FAKENVML is not built"; exit 77; }
command -v curl >/dev/null && command -v jq >/dev/null || { echo "it_discover: needs curl and jq"; exit 77; }
dir=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/it_discover.XXXXXX") || exit 1
SERVE="" J0="" J1="" J2="" TAILP=""
cleanup() {
    for p in $SERVE $J0 $J1 $J2 $TAILP; do kill -9 "$p" 2>/dev/null; done
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
unset PFI_SERVE_URL PFI_SERVE_TOKEN_FILE PFI_READ_ONLY PFI_BACKEND
export PFI_SIM_STATE="$dir/sim.state" PFI_JOURNAL="$dir/journal"
"$PFI_BIN" sim init --state "$PFI_SIM_STATE" --sim h200x8-mixed --speed 20 >/dev/null || fail "sim init"
head -c 32 /dev/urandom | base64 > "$dir/token"
chmod 600 "$dir/token"

# Two simulated jobs, each writing its log to a regular file.
"$PFI_BIN" sim job --job 0 --log-format torchtitan >"$dir/job0.log" 2>&1 &
J0=$!
"$PFI_BIN" sim job --job 1 --log-format torchtitan >"$dir/job1.sim" 2>&1 &
J1=$!
"$PFI_BIN" sim job --job 2 --log-format megatron >"$dir/job2.log" 2>&1 &
J2=$!
# The /proc the daemon reads: job 0 in Slurm job 4242's cgroup (cgroup v2 path), job 1 in its
# own process group; each with its command line and its stdout.
mkproc() { # pid cgroup-line comm
    mkdir -p "$dir/proc/$1/fd"
    printf '%s\n' "$2" >"$dir/proc/$1/cgroup"
    printf 'python\000train.py\000--job\000%s\000' "$3" >"$dir/proc/$1/cmdline"
    printf '%s (python) S 1 %s %s 0 -1 4194560\n' "$1" "$1" "$1" >"$dir/proc/$1/stat"
    : >"$dir/proc/$1/environ"
}
mkproc "$J0" "0::/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0" 0
ln -s "$dir/job0.log" "$dir/proc/$J0/fd/1"
mkproc "$J1" "0::/user.slice/user-1000.slice/session-3.scope" 1
printf 'loading checkpoint from step 0\nbuilding model\n' >"$dir/job1.out"
printf 'UserWarning: TypedStorage is deprecated\n' >"$dir/job1.err"
ln -s "$dir/job1.out" "$dir/proc/$J1/fd/1"
ln -s "$dir/job1.err" "$dir/proc/$J1/fd/2"
mkproc "$J2" "0::/system.slice/slurmstepd.scope/job_4343/step_batch/user/task_0" 2
ln -s /dev/null "$dir/proc/$J2/fd/1"
# Slurm's scontrol as the daemon runs it (on PATH): job 4343 only, in the layout Slurm 22.05
# prints (tests/fixtures/slurm/scontrol-22.05.txt), its StdOut the job's log.
mkdir -p "$dir/bin"
fixture=$(cd "$(dirname "$0")" && pwd)/fixtures/slurm/scontrol-22.05.txt
cat >"$dir/bin/scontrol" <<EOF
#!/bin/sh
[ "\$*" = "show job 4343" ] || { echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1; }
sed -e 's|^JobId=5 |JobId=4343 |' -e 's|StdOut=.*|StdOut=$dir/job2.log|' "$fixture"
EOF
chmod 755 "$dir/bin/scontrol"

PATH="$dir/bin:$PATH" "$PFI_BIN" serve --backend nvml --nvml-lib "$PFI_FAKENVML" --listen 127.0.0.1:0 \
    --port-file "$dir/port" --token-file "$dir/token" --db "$dir/serve.db" \
    --sample-interval 100ms --set proc_root="$dir/proc" --set reoptimize_interval=1s \
    --set min_change_interval=1s --set log_switch_after=1s >"$dir/serve.log" 2>&1 &
SERVE=$!
wait_listening "$SERVE" "$dir/port" "pfi serve"
URL="http://$(cat "$dir/port")"
jobs_json() { curl -sf --max-time 5 "$URL/v1/jobs"; }

# Both jobs are found with their GPUs (h200x8-mixed: job 0 on GPUs 0-3, job 1 on 4-5).
i=0
until jobs_json | jq -e '[.jobs[] | select(.id == "slurm-4242" and (.gpus | length) == 4)] | length == 1' >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -gt 100 ] && fail "slurm-4242 not discovered: $(jobs_json)"
    sleep 0.1
done
i=0
until jobs_json | jq -e --arg id "pg-$J1" '[.jobs[] | select(.id == $id and (.gpus | length) == 2)] | length == 1' >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -gt 100 ] && fail "pg-$J1 not discovered: $(jobs_json)"
    sleep 0.1
done
curl -sf "$URL/v1/events?limit=100" | grep -q "job_discovered" || fail "no job_discovered event"
curl -sf "$URL/v1/gpus" | jq -e '.simulated == true' >/dev/null || fail "/v1/gpus does not say simulated"
echo "it_discover: both jobs discovered with their GPUs, no registration call"

# The process-group job is measured from its stderr, the file that shows throughput, once its
# metric lines come (both files showed none when it was discovered).
tail -n +1 -f "$dir/job1.sim" >>"$dir/job1.err" &
TAILP=$!
i=0
until jobs_json | jq -e --arg id "pg-$J1" '.jobs[] | select(.id == $id) | .observed_tokens_per_s > 0' >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -gt 150 ] && fail "pg-$J1: no tokens/s from its stderr file: $(jobs_json) $(curl -sf "$URL/v1/events?limit=100" | grep -o '"job pg-[^"]*"')"
    sleep 0.1
done
curl -sf "$URL/v1/events?limit=200" | grep -q "job pg-$J1: following its stderr $dir/job1.err (its stdout $dir/job1.out shows no throughput)" ||
    fail "no event naming the stderr file followed"
echo "it_discover: pg-$J1 followed through its stderr file (its stdout shows no throughput)"

# Its metric lines move to its stdout (later metrics print()ed, or a relaunch with another
# logger): once its stderr has shown none for log_switch_after (1s here) while its stdout shows
# some, the stdout is followed, said in a job_log event, and read from there.
kill "$TAILP"; wait "$TAILP" 2>/dev/null
tail -n 0 -f "$dir/job1.sim" >>"$dir/job1.out" &
TAILP=$!
i=0
until curl -sf "$URL/v1/events?limit=500" | grep -q "job pg-$J1: following its stdout $dir/job1.out from now on: it shows throughput, and its stderr $dir/job1.err has shown none for 1s"; do
    i=$((i + 1)); [ $i -gt 150 ] && fail "pg-$J1: no switch to its stdout: $(curl -sf "$URL/v1/events?limit=100" | grep -o '"job pg-[^"]*"')"
    sleep 0.1
done
# What is read from now on is its stdout's: lines of another rate there (12,345 tokens/s per GPU,
# 2 GPUs) become the job's observed tokens/s.
kill "$TAILP"; wait "$TAILP" 2>/dev/null; TAILP=""
i=0
until jobs_json | jq -e --arg id "pg-$J1" '.jobs[] | select(.id == $id) | .observed_tokens_per_s == 24690' >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -gt 150 ] && fail "pg-$J1: its stdout's lines are not what is read after the switch: $(jobs_json)"
    printf '[rank0]:[titan] 2026-12-03 18:00:00,000 - root - INFO - step: %d  loss:  3.00000  memory: 60.00GiB(42.55%%)  tps: 12,345  tflops: 0.00  mfu: 0.00%%\n' "$i" >>"$dir/job1.out"
    sleep 0.1
done
echo "it_discover: pg-$J1 followed through its stdout once its metric lines moved there"

# The third job's log comes from Slurm: followed, its tokens/s observed.
i=0
until jobs_json | jq -e '.jobs[] | select(.id == "slurm-4343") | .observed_tokens_per_s > 0' >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -gt 150 ] && fail "slurm-4343: no tokens/s from the log Slurm states: $(jobs_json) $(curl -sf "$URL/v1/events?limit=100" | grep -o '"job slurm-4343[^"]*"')"
    sleep 0.1
done
curl -sf "$URL/v1/events?limit=200" | grep -q "job slurm-4343: following $dir/job2.log, its output as Slurm states it" ||
    fail "no event naming the log Slurm gave"
echo "it_discover: slurm-4343 followed through its output file as scontrol states it"
# It ends before the budget steps below, which are sized for the other two.
kill "$J2"; wait "$J2" 2>/dev/null; J2=""
i=0
until jobs_json | jq -e '[.jobs[] | select(.id == "slurm-4343")] | length == 0' >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -gt 100 ] && fail "slurm-4343 was not retired: $(jobs_json)"
    sleep 0.1
done

# The Slurm job's log (its stdout) is followed: observed tokens/s, then a steady point at the
# caps the daemon applied (no budget: the default limit) ...
ctl() { "$PFI_BIN" ctl --url "$URL" --token-file "$dir/token" "$@"; }
job0() { jobs_json | jq -c '.jobs[] | select(.id == "slurm-4242")'; }
i=0
until job0 | jq -e '.observed_tokens_per_s > 0' >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -gt 100 ] && fail "no tokens/s from the followed log: $(job0)"
    sleep 0.1
done
job0 | jq -e --arg f "$dir/job0.log" '.log == null and .log_followed == $f and .observed_age_s >= 0' >/dev/null ||
    fail "the API does not say which file the job is measured from, or how old its rate is: $(job0)"
i=0
until curl -sf "$URL/v1/events?limit=500" | grep -q "job slurm-4242: .* tokens/s at 700 W"; do
    i=$((i + 1)); [ $i -gt 150 ] && fail "no steady point at 700 W: $(curl -sf "$URL/v1/events?limit=500" | tail -c 1500)"
    sleep 0.2
done
# ... and one more at each budget that makes the daemon cap it: three levels make its curve.
npoints() { curl -sf "$URL/v1/events?limit=500" | jq '[.events[] | select(.kind == "curve_point" and (.message | startswith("job slurm-4242:")))] | length'; }
ctl budget set 60% >/dev/null || fail "budget set 60%"
i=0
until [ "$(npoints)" -ge 2 ]; do
    i=$((i + 1)); [ $i -gt 300 ] && fail "no steady point under a 60% budget"
    sleep 0.2
done
ctl budget set 45% >/dev/null || fail "budget set 45%"
i=0
until job0 | jq -e '.curve_source == "observed" and .pfi30 > 0' >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -gt 300 ] && fail "no observed curve: $(job0) $(curl -sf "$URL/v1/events?limit=500" | tail -c 1500)"
    sleep 0.2
done
# The observed points against the simulator's ground truth at the same caps (noise-free steady
# throughput): within 3% (the log's per-step rates are noisy; the CI rule is 1%).
pts=$(curl -sf "$URL/v1/events?limit=500" | jq -r '.events[] | select(.kind == "curve_point" and (.message | startswith("job slurm-4242:"))) | .message' |
      sed -n 's/.*: \([0-9]*\) tokens\/s at \([0-9]*\) W per GPU.*/\2 \1/p')
[ "$(printf '%s\n' "$pts" | wc -l)" -ge 3 ] || fail "fewer than three curve points: $pts"
printf '%s\n' "$pts" | while read -r cap tps; do
    truth=$("$PFI_BIN" sim job --sim h200x8-mixed --job 0 --truth "$cap" --json | jq '.truth[0].tokens_per_s')
    awk -v a="$tps" -v b="$truth" 'BEGIN { exit !(b > 0 && a > 0.97 * b && a < 1.03 * b) }' ||
        { echo "it_discover: FAIL: $tps tokens/s at $cap W, truth $truth"; exit 1; }
    echo "it_discover: observed $tps tokens/s at $cap W per GPU, truth $truth"
done || fail "observed points off the truth"
echo "it_discover: the Slurm job's curve was built from its log at the caps the daemon set"

# A job ends: it is retired.
kill "$J1"; wait "$J1" 2>/dev/null; J1=""
i=0
until jobs_json | jq -e '[.jobs[] | select(.id | startswith("pg-"))] | length == 0' >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -gt 100 ] && fail "the ended job was not retired: $(jobs_json)"
    sleep 0.1
done
echo "it_discover: the ended job was retired"
kill -TERM "$SERVE"; wait "$SERVE" 2>/dev/null; SERVE=""
exit 0
