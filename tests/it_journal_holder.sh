#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A sweep over a journal another live process holds fails before changing anything: the error
# names the holder (pid and command line), and the sweep does not claim that limits were left
# unrestored (it changed none).  A simulated sweep's default journal is never the real one.
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

# The default journal of a simulated sweep is beside the simulated node's state.
"$PFI_BIN" sweep --backend sim --gpus 0 --levels 100% --db "$tmp/pfi2.db" --quiet --no-log \
    --dwell 2s --settle 0s -- "$PFI_BIN" sim job --log-format pfi --duration 20s >"$tmp/out2" 2>&1 &
S=$!
i=0
while [ $i -lt 200 ] && [ ! -e "$PFI_SIM_STATE.journal" ]; do sleep 0.05; i=$((i + 1)); done
[ -e "$PFI_SIM_STATE.journal" ] || fail "no journal at $PFI_SIM_STATE.journal while a simulated sweep runs"
[ "$(stat -c %a "$PFI_SIM_STATE.journal")" = 600 ] || fail "the journal is not mode 600"
wait "$S"
echo "it_journal_holder: ok"
