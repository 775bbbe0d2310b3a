#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Integration test of job discovery for a job launched as most are by hand: its stdout and
# stderr down a pipe to tee ("train.py 2>&1 | tee -a train.log"), so neither is a file.  The
# daemon (pfi serve on the sim backend, the node's real /proc) must find the process reading
# that pipe, take the file it writes as the job's log, say so, and observe the job's tokens/s
# from it.  A job whose pipe's reader writes no file gets no log, said once.
set -u
name=it_discover_pipe
[ -n "${PFI_BIN:-}" ] && [ -x "$PFI_BIN" ] || { echo "$name: PFI_BIN is not set"; exit 1; }
command -v curl >/dev/null && command -v jq >/dev/null || { echo "$name: needs curl and jq"; exit 77; }
[ -d /proc/self/fd ] && command -v setsid >/dev/null || { echo "$name: needs /proc and setsid"; exit 77; }
dir=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/$name.XXXXXX") || exit 1
fail() { echo "$name: FAIL: $*"; [ -f "$dir/serve.log" ] && tail -n 20 "$dir/serve.log"; exit 1; }
SERVE="" TEEP="" CATP=""
cleanup() {
    for p in $SERVE $TEEP $CATP $(cat "$dir"/job*.pid 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
unset SLURM_JOB_ID PFI_BACKEND # its process group is its job here
export PFI_SIM_STATE="$dir/sim.state" PFI_JOURNAL="$dir/journal"
"$PFI_BIN" sim init --state "$PFI_SIM_STATE" --sim h200x8-mixed --speed 20 >/dev/null || fail "sim init"
SERVE_HW="--backend sim"
. "$(dirname "$0")/support/serve_env.sh"

# Simulated job N under setsid (its own process group: a job of its own), its pid in
# $dir/jobN.pid (exec: the pid the simulator records for it).
simjob() { # N FORMAT
    setsid sh -c 'echo $$ >"$1"; shift; exec "$@" 2>&1' sh "$dir/job$1.pid" "$PFI_BIN" sim job --job "$1" \
        --log-format "$2"
}
simjob 0 torchtitan | tee -a "$dir/train.log" >/dev/null &
TEEP=$!
# Job 1's output goes down a pipe to a reader that writes no file.
simjob 1 torchtitan | cat >/dev/null &
CATP=$!

start_serve 127.0.0.1:0 --sample-interval 100ms
URL="http://$ADDR"
jobs_json() { curl -sf --max-time 5 "$URL/v1/jobs"; }
events() { curl -sf --max-time 5 "$URL/v1/events?limit=200" | jq -r '.events[].message'; }
i=0
until [ "$(jobs_json | jq '.jobs | length')" = 2 ]; do
    i=$((i + 1)); [ $i -gt 150 ] && fail "the two jobs not discovered: $(jobs_json)"
    sleep 0.1
done
# The job on GPUs 0-3 (h200x8-mixed's job 0) is the one piped to tee.
id=$(jobs_json | jq -r '.jobs[] | select(.gpus == [0,1,2,3]) | .id')
id1=$(jobs_json | jq -r '.jobs[] | select(.gpus == [4,5]) | .id')
[ -n "$id" ] && [ -n "$id1" ] || fail "no job on GPUs 0-3 and 4-5: $(jobs_json)"
i=0
until events | grep -qxF "job $id: its stdout is a pipe to tee (pid $TEEP), which writes $dir/train.log: that file is followed"; do
    i=$((i + 1)); [ $i -gt 100 ] && fail "no job_log event naming tee and its file: $(events | grep job)"
    sleep 0.1
done
echo "$name: $id's log found through the pipe to tee (pid $TEEP): $dir/train.log"
i=0
until jobs_json | jq -e --arg id "$id" '.jobs[] | select(.id == $id) | .observed_tokens_per_s > 0' >/dev/null 2>&1; do
    i=$((i + 1)); [ $i -gt 150 ] && fail "$id: no tokens/s from tee's file: $(jobs_json)"
    sleep 0.1
done
echo "$name: $id observed at $(jobs_json | jq --arg id "$id" '.jobs[] | select(.id == $id) | .observed_tokens_per_s') tokens/s from it"
events | grep -qxF "job $id1: its stdout is a pipe, and no process reading it writes a file: no log" ||
    fail "$id1: no event saying its pipe's reader writes no file: $(events | grep job)"
[ "$(events | grep -c "^job $id1: its stdout is a pipe")" = 1 ] || fail "$id1: its pipe looked at more than once"
echo "$name: $id1, piped to cat, has no log, said once"
stop_serve TERM || fail "pfi serve exited with status $? at SIGTERM"
exit 0
