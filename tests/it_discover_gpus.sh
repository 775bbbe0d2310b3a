#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Integration test of discovery when a job's GPUs change and when a GPU cannot be listed, on
# the fake NVML over a simulated node whose eight one-GPU jobs stand for the workers of
# torchrun jobs (each its own process on its own GPU), in a made-up /proc.
#  1. Slurm job 777's worker on GPU 0 starts, then its workers on GPUs 1-3: the job, registered
#     on GPU 0 when first seen, now holds GPUs 0-3 (it kept GPU 0 only, the other three planned
#     as idle: 380 W against its 700 W under a 60% budget); a worker ending is given back after
#     a few rounds.
#  2. GPU 7's process listing fails (GPU_IS_LOST) and Slurm job 31 on GPUs 4-5 ends: it is
#     retired all the same (one unlisted GPU kept every ended job of the node at its caps).
#  4. The Slurm prolog's registration of job 88 (SLA 10%) after discovery registered it as
#     slurm-88 takes it over (it was refused as busy: no SLA could be attached); a discovered
#     job removed through the API is not registered again while it runs (it came back within a
#     round).
#  5. Slurm job 55's output file, asked of Slurm (its stdout is no file), is asked again after a
#     slurmctld timeout (it was asked once a job: one timeout left it unmeasured for life), and
#     the message keeps scontrol's failure beside squeue's.
#  6. A GPU process the daemon cannot see in /proc (a container's PID namespace, hidepid) is a
#     job of its own, pid-P (its GPU was planned as idle, a running job sent to its minimum).
#  7. Two trainings started from one script share a process group and write two files: one job,
#     one log read, and that is said (the second log was ignored without a word).
#  8. A job discovery registered, reloaded by a restart, is retired when its processes end, and
#     at the start when they ended while the daemon was down.
#  3. A process whose /proc/PID/fd cannot be read (another user's, and a daemon without
#     CAP_SYS_PTRACE: here its directory is mode 000 and the daemon runs without
#     CAP_DAC_OVERRIDE) is said to have no log, and why (it was silent).
set -u
fail() { echo "it_discover_gpus: FAIL: $*"; [ -f "$dir/serve.log" ] && tail -n 25 "$dir/serve.log"; exit 1; }
. "$(dirname "$0")/support/wait_listening.sh"
[ -n "${PFI_BIN:-}" ] && [ -x "$PFI_BIN" ] || { echo "it_discover_gpus: PFI_BIN is not set"; exit 1; }
[ -n "${PFI_FAKENVML:-}" ] && [ -f "$PFI_FAKENVML" ] || { echo "it_discover_gpus: PFI_FAKENVML is not built"; exit 77; }
command -v curl >/dev/null && command -v jq >/dev/null || { echo "it_discover_gpus: needs curl and jq"; exit 77; }
dir=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/it_discover_gpus.XXXXXX") || exit 1
PIDS=""
cleanup() {
    for p in $PIDS; do kill -9 "$p" 2>/dev/null; done
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
unset PFI_SERVE_URL PFI_SERVE_TOKEN_FILE PFI_READ_ONLY PFI_BACKEND SLURM_JOB_ID
export PFI_SIM_STATE="$dir/sim.state" PFI_JOURNAL="$dir/journal"
"$PFI_BIN" sim config --sim h200x8-mixed |
    jq '.name = "split8" | .jobs = [range(0; 8) as $k | (.jobs[0] | .gpus = 1 | .dp = 1 |
        .global_batch = 8 | .first_gpu = $k | .name = ("w\($k)"))]' >"$dir/split8.json" ||
    fail "sim config"
"$PFI_BIN" sim init --state "$PFI_SIM_STATE" --sim "$dir/split8.json" --speed 20 >/dev/null || fail "sim init"
head -c 32 /dev/urandom | base64 >"$dir/token"
chmod 600 "$dir/token"
mkdir -p "$dir/proc"
# worker K of Slurm job JOB: a simulated job on GPU K, its process in the job's cgroup
worker() { # K JOB [STDOUT [PGRP]]
    "$PFI_BIN" sim job --job "$1" --log-format torchtitan >"$dir/w$1.log" 2>&1 &
    p=$!
    PIDS="$PIDS $p"
    eval "W$1=$p"
    mkdir -p "$dir/proc/$p/fd"
    if [ "$2" = none ]; then
        printf '0::/user.slice/user-1000.slice/session-3.scope\n' >"$dir/proc/$p/cgroup"
    else
        printf '0::/system.slice/slurmstepd.scope/job_%s/step_0/user/task_%s\n' "$2" "$1" >"$dir/proc/$p/cgroup"
    fi
    printf 'python\000train.py\000--rank\000%s\000' "$1" >"$dir/proc/$p/cmdline"
    printf '%s (python) S 1 %s %s 0 -1 4194560\n' "$p" "${4:-$p}" "${4:-$p}" >"$dir/proc/$p/stat"
    : >"$dir/proc/$p/environ"
    ln -s "${3:-$dir/w$1.log}" "$dir/proc/$p/fd/1"
}
stop_worker() { # K
    eval "p=\$W$1"
    kill "$p" 2>/dev/null
    wait "$p" 2>/dev/null
    rm -rf "$dir/proc/$p"
}
# Slurm's tools as the daemon runs them: scontrol times out the first time, then answers (the
# layout of tests/fixtures/slurm/scontrol-22.05.txt); squeue always fails.
mkdir -p "$dir/bin"
fixture=$(cd "$(dirname "$0")" && pwd)/fixtures/slurm/scontrol-22.05.txt
cat >"$dir/bin/scontrol" <<EOF
#!/bin/sh
[ "\$*" = "show job 55" ] || exit 1
if [ ! -e "$dir/scontrol.once" ]; then
    : >"$dir/scontrol.once"
    echo "slurm_load_jobs error: Socket timed out on send/recv operation" >&2
    exit 1
fi
sed -e 's|^JobId=5 |JobId=55 |' -e 's|StdOut=.*|StdOut=$dir/w2.log|' "$fixture"
EOF
printf '#!/bin/sh\nexit 1\n' >"$dir/bin/squeue"
chmod 755 "$dir/bin/scontrol" "$dir/bin/squeue"
# A daemon as root reads any mode-000 directory: it runs without CAP_DAC_OVERRIDE here.
DROP=""
if [ "$(id -u)" = 0 ]; then
    command -v setpriv >/dev/null || fail "setpriv (util-linux) is needed to run the daemon without CAP_DAC_OVERRIDE as root"
    DROP="setpriv --inh-caps=-dac_override,-dac_read_search --bounding-set=-dac_override,-dac_read_search"
fi
# GPU 7 falls off the bus 4 s after the daemon starts: its processes cannot be listed again.
start_serve() { # FAULTS
    rm -f "$dir/port"
    PATH="$dir/bin:$PATH" PFI_FAKENVML_FAULTS="$1" \
        $DROP "$PFI_BIN" serve --backend nvml --nvml-lib "$PFI_FAKENVML" --listen 127.0.0.1:0 \
        --port-file "$dir/port" --token-file "$dir/token" --db "$dir/serve.db" \
        --sample-interval 200ms --set proc_root="$dir/proc" --set reoptimize_interval=1s \
        --set min_change_interval=1s >>"$dir/serve.log" 2>&1 &
    SERVE=$!
    PIDS="$PIDS $SERVE"
    wait_listening "$SERVE" "$dir/port" "pfi serve"
    U="http://$(cat "$dir/port")"
}
start_serve "nvmlDeviceGetComputeRunningProcesses_v3@7=GPU_IS_LOST;at=4"
jobs_now() { curl -sf "$U/v1/jobs" | jq -c '[.jobs[] | {id, gpus}] | sort_by(.id)'; }
wait_for() { # jq-test description
    i=0
    until curl -sf "$U/v1/jobs" | jq -e "$1" >/dev/null; do
        i=$((i + 1)); [ $i -gt 100 ] && fail "$2: $(jobs_now)"
        sleep 0.1
    done
}

worker 0 777
wait_for '[.jobs[] | select(.id == "slurm-777" and .discovered)] | length == 1' "job 777 not discovered"
sleep 0.6
worker 1 777; worker 2 777; worker 3 777
wait_for '.jobs[] | select(.id == "slurm-777") | .gpus == [0, 1, 2, 3]' \
    "job 777 does not hold the GPUs its workers started on"
grep -q 'job_gpus_changed: job slurm-777 (pid [0-9]*) now on GPUs 0,1,2,3 (was 0[,0-9]*)' "$dir/serve.log" ||
    fail "no job_gpus_changed event: $(grep job_ "$dir/serve.log")"
# ... and saved so: a restart brought it back on GPU 0 alone, its other GPUs planned as idle for
# a round and what was measured of it forgotten.
saved=$(sqlite3 "$dir/serve.db" "SELECT spec FROM serve_jobs WHERE id = 'slurm-777'" | jq -c .gpus)
[ "$saved" = "[0,1,2,3]" ] || fail "job 777 saved on GPUs $saved"
# its log (worker 0's stdout) gives tokens/s per GPU: the job's is four times it
i=0
while :; do
    per=$(grep -o 'tps: [0-9,]*' "$dir/w0.log" | tail -1 | tr -d 'tps:, ')
    obs=$(curl -sf "$U/v1/jobs" | jq '.jobs[] | select(.id == "slurm-777") | .observed_tokens_per_s // 0')
    [ -n "$per" ] && awk -v o="$obs" -v p="$per" 'BEGIN { exit !(o > 3.9 * p && o < 4.1 * p) }' && break
    i=$((i + 1)); [ $i -gt 100 ] && fail "job 777 observed at $obs tokens/s, its log says $per per GPU on 4 GPUs"
    sleep 0.1
done
"$PFI_BIN" ctl --url "$U" --token-file "$dir/token" budget set 60% >/dev/null || fail "budget set"
# a registration naming one GPU of the running job is not that job: refused as busy (taken
# over, the job's other GPUs went to the idle minimum while it trained on them)
code=$(curl -s -o "$dir/reg.out" -w '%{http_code}' -H "Authorization: Bearer $(cat "$dir/token")" \
    -X POST -d '{"id":"x1","gpus":[1]}' "$U/v1/jobs")
[ "$code" = 409 ] || fail "a registration on one GPU of job 777: HTTP $code $(cat "$dir/reg.out")"
jobs_now | jq -e '[.[] | select(.id == "slurm-777")] == [{"id": "slurm-777", "gpus": [0, 1, 2, 3]}]' >/dev/null ||
    fail "job 777 changed by a refused registration: $(jobs_now)"
caps=$(curl -sf "$U/v1/gpus" | jq -c '[.gpus[0:4][] | .limit_w] | unique')
[ "$(echo "$caps" | jq 'length')" = 1 ] || fail "job 777's GPUs under one budget have caps $caps"
# a worker ends: its GPU is given back after a few rounds
stop_worker 3
wait_for '.jobs[] | select(.id == "slurm-777") | .gpus == [0, 1, 2]' "GPU 3 not given back"

# job 31 on GPUs 4-5 starts; GPU 7 is lost by now; job 31 ends and is retired all the same
worker 4 31; worker 5 31
wait_for '.jobs[] | select(.id == "slurm-31") | .gpus == [4, 5]' "job 31 not discovered"
i=0
until grep -q "discovery_error: GPU 7: its processes cannot be listed" "$dir/serve.log"; do
    i=$((i + 1)); [ $i -gt 100 ] && fail "GPU 7's listing failure not said"
    sleep 0.1
done
stop_worker 4; stop_worker 5
wait_for '[.jobs[] | select(.id == "slurm-31")] | length == 0' \
    "job 31 not retired while GPU 7 could not be listed"
[ "$(grep -c "discovery_error: GPU 7" "$dir/serve.log")" = 1 ] || fail "GPU 7's failure said more than once"
# job 88 on GPU 4: discovered, then registered by the prolog with an SLA
worker 4 88
wait_for '.jobs[] | select(.id == "slurm-88") | .gpus == [4]' "job 88 not discovered"
T="Authorization: Bearer $(cat "$dir/token")"
code=$(curl -s -o "$dir/reg.out" -w '%{http_code}' -H "$T" -X POST -d '{"id":"88","gpus":[4],"sla":0.1}' "$U/v1/jobs")
[ "$code" = 201 ] || fail "the prolog's registration of job 88 after discovery: HTTP $code $(cat "$dir/reg.out")"
jobs_now | jq -e '[.[] | select(.id == "88" or .id == "slurm-88")] == [{"id": "88", "gpus": [4]}]' >/dev/null ||
    fail "job 88 not taken over: $(jobs_now)"
curl -sf "$U/v1/jobs" | jq -e '.jobs[] | select(.id == "88") | .sla == 0.1 and (.discovered | not)' >/dev/null ||
    fail "job 88's SLA, or shown as discovered"
grep -q "job_matched: job 88 takes over job slurm-88, which discovery had registered" "$dir/serve.log" ||
    fail "the take-over not said"
sleep 1
jobs_now | jq -e '[.[] | select(.id == "slurm-88")] | length == 0' >/dev/null || fail "slurm-88 registered again: $(jobs_now)"
# job 99 on GPU 3: discovered, then removed through the API while it runs
worker 3 99
wait_for '.jobs[] | select(.id == "slurm-99") | .gpus == [3]' "job 99 not discovered"
curl -sf -o /dev/null -H "$T" -X DELETE "$U/v1/jobs/slurm-99" || fail "DELETE slurm-99"
sleep 1.5
jobs_now | jq -e '[.[] | select(.id == "slurm-99")] | length == 0' >/dev/null ||
    fail "a discovered job removed through the API registered again: $(jobs_now)"
grep -q "job slurm-99 was removed through the API: not registered again while its processes run" "$dir/serve.log" ||
    fail "the removal not said"
stop_worker 3; stop_worker 4
# a worker of job 777 on GPU 4, which job 88 holds: said once, not every round
worker 4 777
sleep 1.5
n=$(grep -c "discovery_error: job slurm-777 runs on GPUs .*not changed: GPU 4 already belongs to job 88" "$dir/serve.log")
[ "$n" = 1 ] || fail "a GPU set that cannot follow its processes said $n times"
stop_worker 4
# job 55 on GPU 3, its stdout no file: its log is asked of Slurm, again after a failure
worker 3 55 /dev/null
i=0
until grep -q "job_log: job slurm-55: no log from Slurm: scontrol failed (exit 1); squeue failed (exit 1) (asked again in 10 s)" "$dir/serve.log"; do
    i=$((i + 1)); [ $i -gt 100 ] && fail "Slurm's failure not said with both tools: $(grep slurm-55 "$dir/serve.log")"
    sleep 0.1
done
i=0
until grep -q "job_log: job slurm-55: following $dir/w2.log, its output as Slurm states it" "$dir/serve.log"; do
    i=$((i + 1)); [ $i -gt 200 ] && fail "Slurm not asked again: $(grep slurm-55 "$dir/serve.log")"
    sleep 0.1
done
stop_worker 3
# a process on GPU 3 with no /proc entry
"$PFI_BIN" sim job --job 3 --log-format torchtitan >/dev/null 2>&1 &
HID=$!
PIDS="$PIDS $HID"
wait_for ".jobs[] | select(.id == \"pid-$HID\") | .gpus == [3]" "a process not in /proc not planned as a job"
grep -q "job_discovered: job pid-$HID (not in /proc, pid $HID) on 1 GPU(s): a GPU process the daemon cannot see" "$dir/serve.log" ||
    fail "the unseen process not said: $(grep "pid-$HID" "$dir/serve.log")"
kill "$HID"; wait "$HID" 2>/dev/null
wait_for "[.jobs[] | select(.id == \"pid-$HID\")] | length == 0" "the unseen process's job not retired"
# worker 6, in its own process group, with an fd directory the daemon cannot read
worker 6 none
chmod 000 "$dir/proc/$W6/fd"
i=0
until grep -q "job_log: job pg-$W6: its stdout and stderr cannot be looked at in /proc/$W6/fd (Permission denied: another user's process; the daemon needs CAP_SYS_PTRACE" "$dir/serve.log"; do
    i=$((i + 1)); [ $i -gt 100 ] && fail "an unreadable /proc/PID/fd not said: $(grep "pg-$W6" "$dir/serve.log")"
    sleep 0.1
done
chmod 755 "$dir/proc/$W6/fd"
# the daemon restarts while job 777 runs: the discovered job it reloads is still its own, and
# is retired when its processes end (it was taken for a registered one and never retired)
# and job 66, discovered, ends while the daemon is down: it is retired at the start (it stayed
# planned for good, and the next job on its GPU was taken for it)
worker 5 66
wait_for '.jobs[] | select(.id == "slurm-66") | .gpus == [5]' "job 66 not discovered"
kill "$SERVE"; wait "$SERVE" 2>/dev/null
stop_worker 5
start_serve ""
wait_for '[.jobs[] | select(.id == "slurm-66")] | length == 0' "job 66, ended while the daemon was down, not retired"
sleep 1
wait_for '.jobs[] | select(.id == "slurm-777") | .gpus == [0, 1, 2]' "job 777 not back after the restart"
for k in 0 1 2 6; do stop_worker $k; done
# two processes of process group 4000, each with its own stdout file
worker 5 none "" 4000; worker 6 none "" 4000
wait_for '.jobs[] | select(.id == "pg-4000") | .gpus == [5, 6]' "process group 4000 not one job"
i=0
until grep -q "job_log: job pg-4000: its processes write different files (pid $W5 $dir/w5.log, pid $W6 $dir/w6.log): only" "$dir/serve.log"; do
    i=$((i + 1)); [ $i -gt 100 ] && fail "two logs in one process group not said: $(grep pg-4000 "$dir/serve.log")"
    sleep 0.1
done
stop_worker 5; stop_worker 6
# job 88, registered by the prolog, stays until its epilog removes it; the others are retired
wait_for '[.jobs[] | .id] == ["88"]' "job 777 not retired"
# a retired job leaves no state behind (a sla_seen row of every discovered job stayed for good)
left=$(sqlite3 "$dir/serve.db" "SELECT group_concat(key) FROM serve_state WHERE key LIKE 'sla_seen:%' AND key != 'sla_seen:88'")
[ -z "$left" ] || fail "retired jobs left state rows: $left"
echo "it_discover_gpus: ok"
