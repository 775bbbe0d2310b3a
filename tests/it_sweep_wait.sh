#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# pfi sweep --attach never waits for ever: a log that does not exist is refused at once, a log
# that gets no new line ends the sweep after --timeout with an error naming it, and SIGTERM or
# SIGINT end a sweep waiting on a silent log, with the limits restored.  The embedded simulator
# (virtual time, which only moves when slept) used to hang here, ignoring all three.  Every run
# is under `timeout -k`: a sweep that ignores SIGTERM is killed and reported, never left behind.
set -u
[ -n "${PFI_BIN:-}" ] && [ -x "$PFI_BIN" ] || { echo "PFI_BIN is not an executable"; exit 77; }
command -v jq >/dev/null 2>&1 || { echo "jq is not installed (scripts/install-deps.sh test)"; exit 77; }
tmp=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/it_sweep_wait.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset PFI_SIM_STATE PFI_BACKEND PFI_READ_ONLY PFI_JOURNAL
fail=0
: >"$tmp/empty.log"

# A bound far above what each case needs (seconds); exit 124/137 means it was not met.
LIMIT=${SWEEP_WAIT_LIMIT:-60}
attach() { # LOG [options...]: an attached sweep on the embedded simulator
  log=$1; shift
  timeout -k 5 $LIMIT "$PFI_BIN" sweep --backend sim --gpus 0-3 --levels 100,50% --attach \
      --log "$log" --db "$tmp/pfi.db" --journal "$tmp/journal" --json --quiet "$@"
}

# 1. A log that does not exist: refused at once, naming it, nothing journaled.
attach "$tmp/missing.log" >"$tmp/missing.json" 2>"$tmp/missing.err"
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $rc -ne 137 ] ||
  { echo "FAIL missing log: exit $rc"; cat "$tmp/missing.err"; fail=1; }
grep -q "cannot follow the log $tmp/missing.log" "$tmp/missing.err" ||
  { echo "FAIL missing log: no error naming it:"; cat "$tmp/missing.err"; fail=1; }
[ ! -e "$tmp/journal" ] || { echo "FAIL missing log: a journal was left"; fail=1; }
rm -f "$tmp/journal" # each case starts clean, whatever the one before left

# 2. A log with no new line and --timeout 2s: an error naming the log, limits restored.
attach "$tmp/empty.log" --timeout 2s >"$tmp/static.json" 2>"$tmp/static.err"
rc=$?
if [ $rc -eq 124 ] || [ $rc -eq 137 ] || [ $rc -eq 0 ]; then
  echo "FAIL static log: exit $rc (124/137: still waiting after ${LIMIT} s)"; cat "$tmp/static.err"; fail=1
fi
grep -q "the log $tmp/empty.log had no new line for 2 s" "$tmp/static.err" ||
  { echo "FAIL static log: no error naming the log:"; cat "$tmp/static.err"; fail=1; }
[ "$(jq -r '.restored' "$tmp/static.json" 2>/dev/null)" = true ] ||
  { echo "FAIL static log: limits not reported restored"; cat "$tmp/static.json"; fail=1; }
[ ! -e "$tmp/journal" ] || { echo "FAIL static log: journal left"; fail=1; }
rm -f "$tmp/journal"

# 3. SIGTERM and SIGINT to a sweep waiting on a silent log (default timeout, 300 s): it stops,
# says it was interrupted and restores the limits.
for sig in TERM INT; do
  timeout -k 5 $LIMIT "$PFI_BIN" sweep --backend sim --gpus 0-3 --levels 100,50% --attach \
      --log "$tmp/empty.log" --db "$tmp/pfi.db" --journal "$tmp/journal" --json --quiet \
      >"$tmp/$sig.json" 2>"$tmp/$sig.err" &
  pid=$!
  # The sweep is `timeout`'s child: signal it, not timeout.
  i=0; child=""
  while [ $i -lt 100 ] && [ -z "$child" ]; do
    child=$(pgrep -P $pid 2>/dev/null | head -n 1); sleep 0.05; i=$((i + 1))
  done
  sleep 1
  [ -n "$child" ] && kill -$sig "$child"
  wait $pid
  rc=$?
  [ $rc -ne 124 ] && [ $rc -ne 137 ] ||
    { echo "FAIL SIG$sig: ignored (still running after ${LIMIT} s)"; fail=1; }
  grep -q "interrupted" "$tmp/$sig.err" || { echo "FAIL SIG$sig: not reported interrupted:"; cat "$tmp/$sig.err"; fail=1; }
  [ "$(jq -r '.status' "$tmp/$sig.json" 2>/dev/null)" = interrupted ] &&
    [ "$(jq -r '.restored' "$tmp/$sig.json" 2>/dev/null)" = true ] ||
    { echo "FAIL SIG$sig: status/restored:"; cat "$tmp/$sig.json"; fail=1; }
  [ ! -e "$tmp/journal" ] || { echo "FAIL SIG$sig: journal left"; fail=1; }
  rm -f "$tmp/journal"
done

# 4. The same on a simulated node shared with other processes, where the limits can be read
# from outside: limits set to 500 W before, the sweep's baseline puts the default back, and
# SIGTERM must bring 500 W back.
export PFI_SIM_STATE="$tmp/sim.state"
"$PFI_BIN" sim init --state "$PFI_SIM_STATE" >/dev/null || { echo "FAIL: sim init"; exit 1; }
"$PFI_BIN" sim set --cap 500 --gpus 0-3 >/dev/null || { echo "FAIL: sim set"; exit 1; }
limits() { "$PFI_BIN" gpus --backend sim --json | jq -c '[.gpus[0:4][] | .limit_w]'; }
orig=$(limits)
timeout -k 5 $LIMIT "$PFI_BIN" sweep --backend sim --gpus 0-3 --levels 100,50% --attach \
    --log "$tmp/empty.log" --db "$tmp/pfi.db" --journal "$tmp/journal" --json --quiet \
    >"$tmp/shared.json" 2>"$tmp/shared.err" &
pid=$!
i=0; child=""; moved=0
while [ $i -lt 200 ]; do
  [ -z "$child" ] && child=$(pgrep -P $pid 2>/dev/null | head -n 1)
  if [ -n "$child" ] && [ "$(limits)" != "$orig" ]; then moved=1; break; fi
  sleep 0.05; i=$((i + 1))
done
[ $moved -eq 1 ] || { echo "FAIL shared: the sweep never set its baseline"; fail=1; }
[ -n "$child" ] && kill -TERM "$child"
wait $pid
rc=$?
[ $rc -ne 124 ] && [ $rc -ne 137 ] || { echo "FAIL shared: SIGTERM ignored"; fail=1; }
[ "$(limits)" = "$orig" ] || { echo "FAIL shared: limits $(limits), before $orig"; fail=1; }

[ $fail -eq 0 ] && echo "it_sweep_wait: missing log refused, silent log timed out, SIGTERM/SIGINT restore"
exit $fail
