#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A sweep over a journal another live process holds fails before changing anything: the error
# names the holder (pid and command line), and the sweep does not claim that limits were left
# unrestored (it changed none).  A simulated sweep's default journal is never the real one, and
# its restore goes to the simulated node it names, never to another in the environment.
# Needs $PFI_BIN, $PFI_TEST_TMP (tests/run.sh sets them) and flock (util-linux).
set -u
fail() { echo "it_journal_holder: FAIL: $*"; exit 1; }
[ -n "${PFI_BIN:-}" ] && [ -x "$PFI_BIN" ] || fail "PFI_BIN is not set"
command -v flock >/dev/null || fail "flock is missing (util-linux)"
tmp=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/it_journal_holder.XXXXXX") || exit 1
HOLDER=""
trap '[ -n "$HOLDER" ] && kill "$HOLDER" 2>/dev/null; rm -rf "$tmp"' EXIT
unset PFI_BACKEND PFI_READ_ONLY PFI_JOURNAL
export PFI_SIM_STATE="$tmp/sim.state" HOME="$tmp/home"

# A live writer: a journal naming this holder, flocked by it.
flock "$tmp/journal" sh -c 'sleep 60' &
HOLDER=$!
i=0
while [ $i -lt 200 ] && flock -n "$tmp/journal" true; do sleep 0.05; i=$((i + 1)); done
flock -n "$tmp/journal" true && fail "the holder never took the lock"
printf 'pfi-journal 1\npid %s\nbackend sim\nsim_state -\ngpu 0 uuid - limit_w 700.000\n' \
    "$HOLDER" >"$tmp/journal.new"
cat "$tmp/journal.new" >"$tmp/journal" # same inode: the lock stays
"$PFI_BIN" sweep --backend sim --gpus 0 --levels 100% --db "$tmp/pfi.db" \
    --journal "$tmp/journal" --quiet --no-log -- "$PFI_BIN" sim job --log-format pfi --duration 5s \
    >"$tmp/out" 2>&1
rc=$?
[ $rc -ne 0 ] || fail "the sweep ran over a held journal"
grep -q "pid $HOLDER" "$tmp/out" || fail "the error does not name the holder's pid: $(cat "$tmp/out")"
grep -q "flock" "$tmp/out" || fail "the error does not name the holder's command: $(cat "$tmp/out")"
if grep -q "NOT all restored" "$tmp/out"; then
    fail "the sweep claims unrestored limits though it changed none: $(cat "$tmp/out")"
fi
# ... and it refuses before the job is launched (the job ran, then was killed)
"$PFI_BIN" sweep --backend sim --gpus 0 --levels 100% --db "$tmp/pfi.db" \
    --journal "$tmp/journal" --quiet --no-log -- sh -c "touch '$tmp/ran'" >"$tmp/out" 2>&1 &&
    fail "the sweep ran over a held journal"
[ ! -e "$tmp/ran" ] || fail "the job was launched before the held journal was refused"

# --force restores while the writer runs, and keeps the journal: the writer owns it and may
# change limits again (removed, a crash of the writer then left "nothing to restore").
"$PFI_BIN" restore --force --journal "$tmp/journal" >"$tmp/out" 2>&1 ||
    fail "restore --force over a live writer: $(cat "$tmp/out")"
[ -e "$tmp/journal" ] || fail "restore --force removed a live writer's journal"
grep -q "is kept: its writer (pid $HOLDER) still runs" "$tmp/out" ||
    fail "restore --force does not say the journal is kept: $(cat "$tmp/out")"

# The default journal of a simulated sweep is beside the simulated node's state.
"$PFI_BIN" sweep --backend sim --gpus 0 --levels 100% --db "$tmp/pfi2.db" --quiet --no-log \
    --dwell 2s --settle 0s -- "$PFI_BIN" sim job --log-format pfi --duration 20s >"$tmp/out2" 2>&1 &
S=$!
i=0
while [ $i -lt 200 ] && [ ! -e "$PFI_SIM_STATE.journal" ]; do sleep 0.05; i=$((i + 1)); done
[ -e "$PFI_SIM_STATE.journal" ] || fail "no journal at $PFI_SIM_STATE.journal while a simulated sweep runs"
[ "$(stat -c %a "$PFI_SIM_STATE.journal")" = 600 ] || fail "the journal is not mode 600"
wait "$S"

# A restore goes to the simulated node the journal names: with another node in the
# environment it is refused, and nothing changes on either (the other node's GPUs got the
# journaled limits, its UUIDs being every node's of its preset, and the node capped stayed so).
"$PFI_BIN" sim set --cap 300 --gpus 0 >/dev/null 2>&1 || fail "sim set on node A"
printf 'pfi-journal 1\npid 999999999\nbackend sim\nsim_state %s\ngpu 0 uuid - limit_w 700.000\n' \
    "$PFI_SIM_STATE" >"$tmp/a.journal"
"$PFI_BIN" sim init --state "$tmp/b.state" >/dev/null 2>&1 || fail "sim init of node B"
PFI_SIM_STATE="$tmp/b.state" "$PFI_BIN" sim set --cap 250 --gpus 0 >/dev/null 2>&1 || fail "sim set on node B"
PFI_SIM_STATE="$tmp/b.state" "$PFI_BIN" restore --journal "$tmp/a.journal" >"$tmp/out3" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "written against the simulated node $PFI_SIM_STATE" "$tmp/out3" ||
    fail "restore of node A's journal with node B in the environment: exit $rc, $(cat "$tmp/out3")"
[ -e "$tmp/a.journal" ] || fail "the refused restore deleted the journal"
limit0() { "$PFI_BIN" gpus --backend sim --read-only --json | awk -F': ' '/"limit_w"/ { sub(/,$/, "", $2); print $2; exit }'; }
[ "$(PFI_SIM_STATE="$tmp/b.state" limit0)" = 250.0 ] || fail "node B changed: $(PFI_SIM_STATE="$tmp/b.state" limit0)"
( unset PFI_SIM_STATE; "$PFI_BIN" restore --journal "$tmp/a.journal" >"$tmp/out4" 2>&1 ) ||
    fail "restore of node A's journal: $(cat "$tmp/out4")"
[ "$(limit0)" = 700.0 ] || fail "node A not restored: $(limit0)"
echo "it_journal_holder: ok"
