#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# pfi restore without --journal looks at every default location: the simulated node's
# ($PFI_SIM_STATE.journal, where a sweep over the fake NVML journals), the per-user one, and
# /var/lib/pfi's; it restores each journal it finds, names one it cannot use (non-zero exit),
# and says "nothing to restore" only when there is none.  Before, it looked at one (the
# per-user one, or /var/lib/pfi as root): after a killed sweep over the fake NVML it said
# "nothing to restore", exit 0, with every GPU still capped.
set -u
[ -n "${PFI_BIN:-}" ] && [ -x "$PFI_BIN" ] || { echo "PFI_BIN is not an executable"; exit 77; }
[ -n "${PFI_FAKENVML:-}" ] && [ -f "$PFI_FAKENVML" ] || { echo "PFI_FAKENVML is not built"; exit 77; }
command -v jq >/dev/null 2>&1 || { echo "jq is not installed (scripts/install-deps.sh test)"; exit 77; }
# pfi restore looks at /var/lib/pfi too: a journal there belongs to this machine's GPUs, and a
# test must neither restore nor count it.
for f in /var/lib/pfi/journal /var/lib/pfi/journal-sim; do
  [ -e "$f" ] && { echo "$f exists on this machine: pfi restore's default locations cannot be tested here"; exit 77; }
done
tmp=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/it_restore.XXXXXX") || exit 1
trap 'kill -9 $pid 2>/dev/null; rm -rf "$tmp"' EXIT
unset PFI_BACKEND PFI_READ_ONLY PFI_JOURNAL PFI_FAKENVML_FAULTS PFI_FAKENVML_FAULTS_FILE \
      PFI_FAKENVML_GPM PFI_FAKENVML_SIM PFI_DB XDG_STATE_HOME
export HOME="$tmp/home" PFI_NVML_LIBRARY="$PFI_FAKENVML" PFI_SIM_SPEED=10 \
       PFI_SIM_STATE="$tmp/node.state"
USERJ="$HOME/.local/state/pfi/journal"
P=$PFI_BIN
pid=""
fail=0
bad() { echo "FAIL: $*"; fail=1; }
"$P" gpus --backend sim >/dev/null || { echo "cannot create the simulated node"; exit 1; }
lim() { "$P" gpus --backend sim --json | jq -c '[.gpus[].limit_w]'; }
ORIG=$(lim)

# killed_sweep GPUS [sweep options]: a sweep over the fake NVML on GPUS, killed with SIGKILL
# once it has capped them (within 30 s).
killed_sweep() {
  g=$1; shift
  before=$(lim)
  "$P" sweep --backend nvml --gpus "$g" --no-log --quiet --db "$tmp/pfi.db" --settle 0.3s \
      --min-window 0.5s --levels 100,80% "$@" -- "$P" sim job >/dev/null 2>&1 &
  pid=$!
  i=0
  while [ "$(lim)" = "$before" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
  kill -9 $pid 2>/dev/null
  wait $pid 2>/dev/null
  pid=""
  [ "$(lim)" != "$before" ] || bad "the sweep on GPUs $g never capped them"
}

# --- the review's case: a sweep's default journal, beside the simulated node
killed_sweep 0-7
[ -s "$PFI_SIM_STATE.journal" ] || bad "no journal at $PFI_SIM_STATE.journal"
"$P" restore --backend nvml >"$tmp/o" 2>"$tmp/e" || bad "pfi restore --backend nvml: $(cat "$tmp/e")"
grep -q "nothing to restore" "$tmp/o" && bad "pfi restore --backend nvml: $(cat "$tmp/o")"
[ "$(lim)" = "$ORIG" ] || bad "pfi restore --backend nvml left $(lim)"
[ ! -e "$PFI_SIM_STATE.journal" ] || bad "the restored journal was kept"

# --- a sweep with another journal over GPUs a killed sweep left capped is refused, every time
# (a refused start wrote over the lock file, and the same command run again took the caps for
# the originals, "restored" them at the end and left the GPUs capped); the restore then frees
# them
killed_sweep 2-3
capped=$(lim)
for try in 1 2 3; do
  "$P" sweep --backend nvml --gpus 2 --no-log --quiet --db "$tmp/pfi.db" --settle 0.3s --min-window 0.5s \
      --levels 100% --journal "$tmp/other.journal" -- "$P" sim job >"$tmp/o" 2>&1 &&
    bad "try $try: a sweep over a GPU a killed sweep left capped ran: $(cat "$tmp/o")"
  grep -q "whose journal $PFI_SIM_STATE.journal is still there" "$tmp/o" || bad "try $try said: $(cat "$tmp/o")"
done
[ "$(lim)" = "$capped" ] || bad "the refused sweeps changed the limits: $capped -> $(lim)"
"$P" restore --backend nvml >"$tmp/o" 2>"$tmp/e" || bad "pfi restore after the refusals: $(cat "$tmp/e")"
[ "$(lim)" = "$ORIG" ] || bad "pfi restore after the refusals left $(lim)"

# --- an original with a fraction of a watt (NVML keeps milliwatts) is said as journaled, 650.7 W,
# not "651 W"
"$P" sim set --cap 650.7 --gpus 0 >/dev/null
killed_sweep 0
"$P" restore --backend nvml >"$tmp/o" 2>"$tmp/e" || bad "pfi restore of 650.7 W: $(cat "$tmp/e")"
grep -q "GPU 0 (.*): limit restored to 650.7 W$" "$tmp/o" || bad "650.7 W restored as: $(cat "$tmp/o")"
"$P" sim set --cap 700 --gpus 0 >/dev/null

# --- two journals at two default locations: both restored
killed_sweep 0-3
killed_sweep 4-7 --journal "$USERJ"
[ -s "$PFI_SIM_STATE.journal" ] && [ -s "$USERJ" ] || bad "the two sweeps did not leave their journals"
"$P" restore >"$tmp/o" 2>"$tmp/e" || bad "pfi restore of two journals: $(cat "$tmp/e")"
[ "$(grep -c 'GPUs restored from' "$tmp/o")" -eq 2 ] || bad "pfi restore of two journals said: $(cat "$tmp/o")"
[ "$(lim)" = "$ORIG" ] || bad "pfi restore of two journals left $(lim)"
[ ! -e "$PFI_SIM_STATE.journal" ] && [ ! -e "$USERJ" ] || bad "a restored journal was kept"

# --- a journal found that cannot be used: named, non-zero, not "nothing to restore"
printf 'pfi-journal 1\ngpu 0 uuid X limit_w banana\n' >"$USERJ"
"$P" restore >"$tmp/o" 2>"$tmp/e"
rc=$?
[ $rc -eq 1 ] || bad "a damaged journal: pfi restore exited $rc, not 1 (the command line was right)"
"$P" restore --journal "$USERJ" >/dev/null 2>&1
rc=$?
[ $rc -eq 1 ] || bad "a damaged journal named: pfi restore --journal exited $rc, not 1"
grep -q "journal $USERJ line 2 is damaged" "$tmp/e" || bad "a damaged journal not named: $(cat "$tmp/e")"
grep -q "nothing to restore" "$tmp/o" && bad "a damaged journal: $(cat "$tmp/o")"
[ -e "$USERJ" ] || bad "a damaged journal was removed"
grep -q "set them back by hand if needed, then remove $USERJ" "$tmp/e" ||
  bad "a damaged journal: no way out said: $(cat "$tmp/e")"
# ... and a sweep over it says it cannot be used and the way out, not "pid -1 ... run pfi
# restore first" (which fails every time)
"$P" sweep --backend sim --journal "$USERJ" --no-log --db "$tmp/d.db" --levels 100% -- "$P" sim job \
  >"$tmp/o" 2>"$tmp/e" && bad "a sweep ran over a damaged journal"
grep -q "journal $USERJ is there but cannot be used (.*damaged.*): check the GPUs' limits" "$tmp/e" &&
  ! grep -q "pid -1" "$tmp/e" || bad "a sweep over a damaged journal said: $(cat "$tmp/e")"
rm -f "$USERJ"

# --- GPUs renumbered since the journal (a reboot): each is set by its UUID and named by the
# index it has now, the journaled one beside it (it said "GPU 0 ... 450 W" while GPU 0 got 300 W)
u() { "$P" gpus --backend nvml --json | jq -r ".gpus[$1].uuid"; }
printf 'pfi-journal 1\npid 1\nbackend nvml\nsim_state %s\ngpu 0 uuid %s limit_w 450.000\ngpu 3 uuid %s limit_w 300.000\n' \
  "$PFI_SIM_STATE" "$(u 3)" "$(u 0)" >"$tmp/renum"
"$P" restore --journal "$tmp/renum" >"$tmp/o" 2>"$tmp/e" || bad "pfi restore of a renumbered journal: $(cat "$tmp/e")"
grep -q "^GPU 3 (.*, GPU 0 when journaled): limit restored to 450 W$" "$tmp/o" &&
  grep -q "^GPU 0 (.*, GPU 3 when journaled): limit restored to 300 W$" "$tmp/o" ||
  bad "a renumbered journal said: $(cat "$tmp/o")"
[ "$("$P" gpus --backend sim --json | jq -c '[.gpus[0].limit_w, .gpus[3].limit_w]')" = "[300,450]" ] ||
  bad "a renumbered journal left $(lim)"
grep -q "1 GPUs" "$tmp/o" && bad "grammar: $(cat "$tmp/o")"
"$P" sim set --cap 700 --gpus 0,3 >/dev/null

# --- none anywhere: nothing to restore, exit 0, every place looked at named
"$P" restore >"$tmp/o" 2>"$tmp/e" || bad "pfi restore with no journal: exit $?: $(cat "$tmp/e")"
grep -q "no journal at $PFI_SIM_STATE.journal, $USERJ, .*/var/lib/pfi/journal.*: nothing to restore" "$tmp/o" ||
  bad "pfi restore with no journal said: $(cat "$tmp/o")"
# $PFI_JOURNAL, or --journal, names the one journal.
PFI_JOURNAL="$tmp/none" "$P" restore >"$tmp/o" 2>&1 && grep -q "^pfi restore: no journal at $tmp/none: nothing to restore$" "$tmp/o" ||
  bad "PFI_JOURNAL: $(cat "$tmp/o")"

[ $fail -eq 0 ] && echo "ok: it_restore"
exit $fail
