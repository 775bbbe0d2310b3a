#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Safety of pfi sweep: a sweep killed with SIGKILL leaves its journal, and `pfi restore` puts
# every journaled limit back; SIGTERM restores by itself; bad input (a command that does not
# exist, one that exits at once, one that never prints throughput, caps out of range) fails
# with a message, non-zero, limits as they were.
set -u
[ -n "${PFI_BIN:-}" ] && [ -x "$PFI_BIN" ] || { echo "PFI_BIN is not an executable"; exit 77; }
command -v jq >/dev/null 2>&1 || { echo "jq is not installed (scripts/install-deps.sh test)"; exit 77; }
tmp=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/it_sweep_safety.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset PFI_BACKEND PFI_READ_ONLY PFI_JOURNAL
export PFI_SIM_STATE="$tmp/sim.state" PFI_SIM_SPEED=20
J="$tmp/journal"
fail=0

limits() { "$PFI_BIN" gpus --backend sim --json | jq -c '[.gpus[0:4][] | .limit_w]'; }
orig=$(limits) || { echo "cannot read the simulated GPUs"; exit 1; }

sweep() {
  "$PFI_BIN" sweep --backend sim --gpus 0-3 --db "$tmp/pfi.db" --journal "$J" --quiet \
      --log "$tmp/job.log" "$@"
}

# A sweep of a simulated job in the background ($pid), returned from once it has lowered a
# limit (the journal of the originals comes before that) or after 15 s.  The baseline level
# lasts 31 virtual seconds (1.5 s of wall time at PFI_SIM_SPEED=20): the job must print its
# first throughput within it, and a sanitizer build started on a loaded machine once took
# longer than the 11 s (0.55 s) it had before.
sweep_until_capped() { # JOB-DURATION OUTPUT
  "$PFI_BIN" sweep --backend sim --gpus 0-3 --db "$tmp/pfi.db" --journal "$J" --quiet --no-log \
      --levels 50,40% --settle 1s --dwell 30s -- "$PFI_BIN" sim job --log-format pfi --duration "$1" \
      >"$2" 2>&1 &
  pid=$!
  i=0
  while [ $i -lt 300 ]; do
    if [ -s "$J" ] && [ "$(limits)" != "$orig" ]; then break; fi
    sleep 0.05; i=$((i + 1))
  done
}

# --- SIGKILL mid-sweep (after the baseline, while the first lower cap is applied), then
# pfi restore.  The simulated job ends by itself shortly after (its own process group).
sweep_until_capped 120s "$tmp/kill.out"
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
capped=$(limits)
[ "$capped" != "$orig" ] || { echo "FAIL: the sweep never changed a limit before the kill"; fail=1; }
[ -s "$J" ] || { echo "FAIL: no journal after SIGKILL"; fail=1; }
journaled=$(awk '$1 == "gpu" { printf "%s%s", sep, $6 + 0; sep = "," }' "$J")
# The run the killed sweep was writing stays "running" until pfi restore, which the journal
# tells where it is, marks it interrupted.
run_status() { "$PFI_BIN" runs --db "$tmp/pfi.db" --json | jq -r '.runs[-1].status'; }
[ "$(run_status)" = "running" ] || { echo "FAIL: the killed sweep's run is '$(run_status)'"; fail=1; }
grep -q "^run " "$J" || { echo "FAIL: the journal does not name the sweep's run"; cat "$J"; fail=1; }
"$PFI_BIN" restore --journal "$J" >"$tmp/restore.out" 2>&1 || { echo "FAIL: pfi restore failed"; cat "$tmp/restore.out"; fail=1; }
[ "$(run_status)" = "interrupted" ] ||
  { echo "FAIL: after pfi restore the killed sweep's run is '$(run_status)', not interrupted"; fail=1; }
grep -q "marked interrupted" "$tmp/restore.out" || { echo "FAIL: restore does not say it marked the run"; cat "$tmp/restore.out"; fail=1; }
after=$(limits)
[ "$after" = "$orig" ] || { echo "FAIL: after restore limits are $after, originals $orig"; fail=1; }
[ "$(echo "$after" | jq -c 'map(floor)')" = "[$journaled]" ] \
  || { echo "FAIL: restored $after, journal said [$journaled]"; fail=1; }
[ ! -e "$J" ] || { echo "FAIL: journal kept after a successful restore"; fail=1; }
"$PFI_BIN" restore --journal "$J" >/dev/null 2>&1 || { echo "FAIL: restore without a journal must succeed"; fail=1; }
echo "SIGKILL: capped $capped, restored $after"

# --- SIGTERM: the sweep stops the job, restores, records what it had, exits non-zero.
sweep_until_capped 200s "$tmp/term.out"
# A second sweep on the same GPUs with its own journal is refused before its job starts: it
# journaled the first's caps as the originals, and the GPUs stayed capped when both ended.
capped=$(limits)
"$PFI_BIN" sweep --backend sim --gpus 2-5 --db "$tmp/pfi.db" --journal "$tmp/journal2" --quiet \
    --no-log --levels 80% -- sh -c "touch '$tmp/second-ran'; exec '$PFI_BIN' sim job --log-format pfi" \
    >"$tmp/second.out" 2>&1
rc=$?
[ $rc -ne 0 ] && grep -q "GPU 2's power limit is being changed by pid $pid" "$tmp/second.out" ||
  { echo "FAIL: a second sweep on GPUs the first changes (own journal): exit $rc"; cat "$tmp/second.out"; fail=1; }
[ ! -e "$tmp/second-ran" ] || { echo "FAIL: the refused sweep launched its job"; fail=1; }
[ ! -e "$tmp/journal2" ] || { echo "FAIL: the refused sweep left a journal"; fail=1; }
[ "$(limits)" = "$capped" ] || { echo "FAIL: the refused sweep changed limits: $capped -> $(limits)"; fail=1; }
# On other GPUs it runs.
"$PFI_BIN" sweep --backend sim --gpus 6 --db "$tmp/pfi.db" --journal "$tmp/journal3" --quiet \
    --no-log --levels 100% --settle 0.3s --min-window 0.5s -- "$PFI_BIN" sim job --log-format pfi --duration 30s \
    >"$tmp/third.out" 2>&1 || { echo "FAIL: a sweep on another GPU beside the first"; cat "$tmp/third.out"; fail=1; }
kill -TERM $pid
wait $pid
rc=$?
# 128 + SIGTERM's 15, as shells and Slurm tell an interruption from a failure (it was 1).
[ $rc -eq 143 ] || { echo "FAIL: a sweep stopped by SIGTERM exited $rc, not 143"; fail=1; }
[ "$(limits)" = "$orig" ] || { echo "FAIL: SIGTERM left limits $(limits)"; fail=1; }
[ ! -e "$J" ] || { echo "FAIL: SIGTERM left the journal"; fail=1; }
grep -q "interrupted" "$tmp/term.out" || { echo "FAIL: no 'interrupted' message"; grep "pfi sweep" "$tmp/term.out"; fail=1; }

# --- A limit changed under the sweep by another process (nvidia-smi -pl by hand): the level is
# refused, not stored as a point at its cap; the sweep restores the originals and says why.
sweep_until_capped 200s "$tmp/changed.out"
"$PFI_BIN" sim set --cap 600 --gpus 1 >/dev/null || { echo "FAIL: pfi sim set"; fail=1; }
wait $pid
rc=$?
[ $rc -ne 0 ] && grep -q "GPU 1's power limit read 600 W during its 350 W level: another process changed it" "$tmp/changed.out" ||
  { echo "FAIL: a limit changed under the sweep: exit $rc"; grep "pfi sweep" "$tmp/changed.out"; fail=1; }
[ "$(limits)" = "$orig" ] || { echo "FAIL: after a limit changed under it the sweep left $(limits)"; fail=1; }
[ ! -e "$J" ] || { echo "FAIL: the journal stayed"; fail=1; rm -f "$J"; }

# --- Bad input.
expect_fail() { # WHAT PATTERN sweep-args...
  what=$1 pat=$2
  shift 2
  sweep "$@" >"$tmp/bad.out" 2>&1
  rc=$?
  [ $rc -ne 0 ] || { echo "FAIL: $what exited 0"; fail=1; }
  grep -q "$pat" "$tmp/bad.out" || { echo "FAIL: $what: no '$pat' in:"; cat "$tmp/bad.out"; fail=1; }
  [ "$(limits)" = "$orig" ] || { echo "FAIL: $what left limits $(limits)"; fail=1; }
  [ ! -e "$J" ] || { echo "FAIL: $what left the journal"; fail=1; rm -f "$J"; }
}
expect_fail "missing command" "cannot run" --levels 50% -- "$tmp/no-such-trainer"
expect_fail "command exiting at once" "exited with status 3" --levels 50% -- sh -c 'exit 3'
expect_fail "no throughput" "no throughput" --levels 50% --timeout 2s \
    -- sh -c 'while :; do echo "loss 2.3 garbage"; sleep 0.02; done'
expect_fail "cap below the minimum" "outside" --caps 150:100:50 -- "$PFI_BIN" sim job --log-format pfi
expect_fail "cap above the maximum" "outside" --caps 900:800:100 -- "$PFI_BIN" sim job --log-format pfi
expect_fail "level above 100%" "fraction" --levels 120% -- "$PFI_BIN" sim job --log-format pfi
expect_fail "read-only mode" "read-only" --read-only --levels 50% -- "$PFI_BIN" sim job --log-format pfi
# A store from a newer pfi, and one locked by another writer: refused before any change.
if command -v sqlite3 >/dev/null 2>&1; then
  sqlite3 "$tmp/newer.db" "PRAGMA user_version = 999;"
  expect_fail "store from a newer schema" "newer" --db "$tmp/newer.db" --levels 50% \
      -- "$PFI_BIN" sim job --log-format pfi
  (echo "BEGIN EXCLUSIVE;"; sleep 3; echo "COMMIT;") | sqlite3 "$tmp/pfi.db" &
  lockpid=$!
  sleep 0.5
  PFI_DB_BUSY_MS=200 expect_fail "locked store" "lock" --levels 50% -- "$PFI_BIN" sim job --log-format pfi
  wait $lockpid
  # A store locked mid-sweep, longer than the sweep waits: it fails, restores, and says which
  # level it measured but did not store and that the run's status was not recorded (it said
  # neither, and the run showed 'running' for good).  test_store_sink: the status once it clears.
  PFI_DB_BUSY_MS=200 "$PFI_BIN" sweep --backend sim --gpus 0-3 --db "$tmp/mid.db" --journal "$J" \
      --quiet --no-log --levels 90,80,70,60,50% --settle 1s --dwell 10s \
      -- "$PFI_BIN" sim job --log-format pfi >"$tmp/mid.out" 2>&1 &
  pid=$!
  i=0
  until "$PFI_BIN" runs --db "$tmp/mid.db" --json 2>/dev/null | grep -q '"status": "running"'; do
    [ $i -lt 600 ] || break
    sleep 0.05; i=$((i + 1))
  done
  mkfifo "$tmp/ctl"
  sqlite3 "$tmp/mid.db" <"$tmp/ctl" >/dev/null 2>&1 &
  holder=$!
  exec 3>"$tmp/ctl"
  printf '.timeout 20000\nBEGIN IMMEDIATE;\nINSERT INTO jobs(command) VALUES (NULL);\n.shell touch %s/held\n' "$tmp" >&3
  if wait $pid; then
    echo "FAIL mid-sweep lock: the sweep succeeded"; fail=1
  elif ! grep -q "pfi sweep: the level at [0-9]* W was measured but not stored in .*mid.db: .*locked" "$tmp/mid.out" ||
       ! grep -q "pfi sweep: the run's status 'failed' was not recorded in .*mid.db (run 1 stays 'running' there)" "$tmp/mid.out"; then
    echo "FAIL mid-sweep lock: $(grep "pfi sweep" "$tmp/mid.out")"; fail=1
  else
    echo "ok mid-sweep lock: the lost level and the unrecorded status said"
  fi
  [ -e "$tmp/held" ] || { echo "FAIL mid-sweep lock: the lock was never taken"; fail=1; }
  printf 'ROLLBACK;\n.quit\n' >&3
  exec 3>&-
  wait $holder
  [ "$(limits)" = "$orig" ] || { echo "FAIL mid-sweep lock: limits $(limits), not $orig"; fail=1; }
else
  echo "sqlite3 not installed (scripts/install-deps.sh test): the newer and locked store cases are not run"
  [ $fail -ne 0 ] || exit 77
fi
exit $fail
