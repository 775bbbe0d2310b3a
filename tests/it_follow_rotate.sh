#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Integration test of a job's log rotated by rename while `pfi serve` follows it (logrotate's
# create and compress, Python's RotatingFileHandler): the daemon must follow the path to the
# new file, as tail -F does, and let go of the old one.  It kept reading the renamed file, which
# no longer grows: the job's rate stayed at its last value for good, and the deleted file's
# space stayed held.  A job registered with --log on the simulator; a writer appends a
# torchtitan line every 0.1 s (tokens/s per GPU, 2 GPUs).  A second job writes through the
# descriptor it opened once (`> train.log`): logrotate's create leaves it writing to the renamed
# file (copytruncate is for such jobs), which must go on being read, not the new, empty one.
set -u
fail() { echo "it_follow_rotate: FAIL: $*"; [ -f "$dir/serve.log" ] && tail -n 20 "$dir/serve.log"; exit 1; }
. "$(dirname "$0")/support/wait_listening.sh"
[ -n "${PFI_BIN:-}" ] && [ -x "$PFI_BIN" ] || { echo "it_follow_rotate: PFI_BIN is not set"; exit 1; }
command -v curl >/dev/null && command -v jq >/dev/null && command -v gzip >/dev/null ||
    { echo "it_follow_rotate: needs curl, jq and gzip"; exit 77; }
dir=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/it_follow_rotate.XXXXXX") || exit 1
SERVE="" WRITER="" WRITER2=""
cleanup() {
    for p in $SERVE $WRITER $WRITER2; do kill -9 "$p" 2>/dev/null; done
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
unset PFI_SERVE_URL PFI_SERVE_TOKEN_FILE PFI_READ_ONLY PFI_BACKEND
export PFI_SIM_STATE="$dir/sim.state" PFI_JOURNAL="$dir/journal"
"$PFI_BIN" sim init --state "$PFI_SIM_STATE" --sim h200x8-idle >/dev/null || fail "sim init"
head -c 32 /dev/urandom | base64 >"$dir/token"
chmod 600 "$dir/token"
echo 1,000 >"$dir/tps"
cat >"$dir/writer.sh" <<'EOF'
i=0
while :; do
    i=$((i + 1))
    printf '[rank0]:[titan] 2026-12-03 18:00:00,000 - root - INFO - step: %d  loss:  3.00000  memory: 60.00GiB(42.55%%)  tps: %s  tflops: 0.00  mfu: 0.00%%\n' "$i" "$(cat "$1/tps")" >>"$1/run.log"
    sleep 0.1
done
EOF
sh "$dir/writer.sh" "$dir" &
WRITER=$!
echo 1,000 >"$dir/tps2"
cat >"$dir/writer2.sh" <<'EOF'
exec >"$1/held.log"
i=0
while :; do
    i=$((i + 1))
    printf '[rank0]:[titan] 2026-12-03 18:00:00,000 - root - INFO - step: %d  loss:  3.00000  memory: 60.00GiB(42.55%%)  tps: %s  tflops: 0.00  mfu: 0.00%%\n' "$i" "$(cat "$1/tps2")"
    sleep 0.1
done
EOF
sh "$dir/writer2.sh" "$dir" &
WRITER2=$!
"$PFI_BIN" serve --backend sim --listen 127.0.0.1:0 --port-file "$dir/port" --token-file "$dir/token" \
    --db "$dir/serve.db" --sample-interval 200ms --set discover=no >"$dir/serve.log" 2>&1 &
SERVE=$!
wait_listening "$SERVE" "$dir/port" "pfi serve"
U="http://$(cat "$dir/port")"
"$PFI_BIN" ctl --url "$U" --token-file "$dir/token" job add j1 --gpus 0,1 --log "$dir/run.log" >/dev/null ||
    fail "job add"
"$PFI_BIN" ctl --url "$U" --token-file "$dir/token" job add j2 --gpus 2,3 --log "$dir/held.log" >/dev/null ||
    fail "job add j2"
observed_is() { # job tokens/s description
    i=0
    until [ "$(curl -sf "$U/v1/jobs" | jq ".jobs[] | select(.id == \"$1\") | .observed_tokens_per_s")" = "$2" ]; do
        i=$((i + 1)); [ $i -gt 100 ] && fail "$3: $(curl -sf "$U/v1/jobs" | jq -c ".jobs[] | select(.id == \"$1\") | {observed_tokens_per_s, observed_age_s}")"
        sleep 0.1
    done
}
observed_is j1 2000 "before the rotation"
observed_is j2 2000 "j2 before the rotation"
mv "$dir/held.log" "$dir/held.log.1"
: >"$dir/held.log"
echo 3,000 >"$dir/tps2"
observed_is j2 6000 "a job writing through its old descriptor not read after the rotation"
# Another user's file put at the path (a symlink to /etc/shadow was opened after a 2 s pause,
# and the log the job still wrote no longer read): a new file of another owner is not taken.
# Root alone can make a file of another user's here.
if [ "$(id -u)" = 0 ]; then
    printf '[rank0]:[titan] 2026-12-03 18:00:00,000 - root - INFO - step: 1  loss:  3.00000  memory: 60.00GiB(42.55%%)  tps: 9,000  tflops: 0.00  mfu: 0.00%%\n' >"$dir/decoy"
    chown 65534 "$dir/decoy"
    rm -f "$dir/held.log"
    ln -s "$dir/decoy" "$dir/held.log"
    kill -STOP "$WRITER2"
    sleep 1.5
    kill -CONT "$WRITER2"
    echo 5,000 >"$dir/tps2"
    observed_is j2 10000 "after a pause, another user's file at the path taken for j2's log"
    ls -l "/proc/$SERVE/fd" 2>/dev/null | grep -q "$dir/decoy" && fail "the daemon opened another user's file"
    echo "it_follow_rotate: another user's file put at the path is not followed; the job's own still is"
    grep -q "job_log: job j2: $dir/held.log names a new file of another owner, or a symbolic link" "$dir/serve.log" ||
        fail "a new file not followed is not said: $(grep job_log "$dir/serve.log")"
fi
# A symbolic link put where the log was a file, to a file of the same owner (a job run as root
# pointing its log path at /etc/shadow): not followed either (it was opened).
printf '[rank0]:[titan] 2026-12-03 18:00:00,000 - root - INFO - step: 1  loss:  3.00000  memory: 60.00GiB(42.55%%)  tps: 7,000  tflops: 0.00  mfu: 0.00%%\n' >"$dir/decoy2"
rm -f "$dir/held.log"
ln -s "$dir/decoy2" "$dir/held.log"
kill -STOP "$WRITER2"
sleep 1.5
kill -CONT "$WRITER2"
echo 4,000 >"$dir/tps2"
observed_is j2 8000 "after a pause, a symbolic link at the log's path taken for j2's log"
ls -l "/proc/$SERVE/fd" 2>/dev/null | grep -q "$dir/decoy2" && fail "the daemon opened the file a symbolic link at the log's path names"
echo "it_follow_rotate: a symbolic link put where the log was a file is not followed"
mv "$dir/run.log" "$dir/run.log.1"
gzip "$dir/run.log.1"
echo 3,000 >"$dir/tps"
observed_is j1 6000 "the new run.log (after a rotation by rename) not followed"
grep -q "job_log: job j1: $dir/run.log names a new file (the log was rotated)" "$dir/serve.log" ||
    fail "the rotation not said: $(grep job_log "$dir/serve.log")"
# the old file, renamed and deleted by gzip, is not held open
if ls -l "/proc/$SERVE/fd" 2>/dev/null | grep -q 'run.log.1 (deleted)'; then
    fail "the rotated file is still held open"
fi
echo "it_follow_rotate: ok"
