#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# pfi sweep and pfi restore on the NVML code path (--backend nvml over the project's fake
# libnvidia-ml, a shared simulated node of 8 H200s) where the GPUs' limits are not what a sweep
# expects: a GPU whose limit constraints cannot be read, one whose limit cannot be set (not
# root, a persistent driver error), limits in force below the default, an out-of-band cap; and
# the messages and exit statuses of a sweep that fails or is interrupted.  The node's own state
# is read independently through the simulator (pfi gpus --backend sim on the same state).
set -u
[ -n "${PFI_BIN:-}" ] && [ -x "$PFI_BIN" ] || { echo "PFI_BIN is not an executable"; exit 77; }
[ -n "${PFI_FAKENVML:-}" ] && [ -f "$PFI_FAKENVML" ] || { echo "PFI_FAKENVML is not built"; exit 77; }
command -v jq >/dev/null 2>&1 || { echo "jq is not installed (scripts/install-deps.sh test)"; exit 77; }
tmp=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/it_sweep_limits.XXXXXX") || exit 1
pid=""
trap 'kill -9 $pid 2>/dev/null; rm -rf "$tmp"' EXIT
unset PFI_BACKEND PFI_READ_ONLY PFI_JOURNAL PFI_FAKENVML_FAULTS PFI_FAKENVML_FAULTS_FILE \
      PFI_FAKENVML_GPM PFI_FAKENVML_SIM PFI_DB
export PFI_NVML_LIBRARY="$PFI_FAKENVML" PFI_SIM_SPEED=10 PFI_SIM_STATE="$tmp/node.state"
P=$PFI_BIN
fail=0
bad() { echo "FAIL: $*"; fail=1; }
"$P" gpus --backend sim >/dev/null || { echo "cannot create the simulated node"; exit 1; }
lim() { "$P" gpus --backend sim --json | jq -c '[.gpus[].limit_w]'; }
ORIG=$(lim)
[ "$ORIG" = "[700,700,700,700,700,700,700,700]" ] || { echo "the node starts at $ORIG"; exit 1; }
F="--backend nvml --settle 0.3s --min-window 0.5s --no-log --db $tmp/pfi.db"
# The job leaves a mark when it starts, so a sweep refused before it can be told from one that
# launched it and then failed.
JOB="$tmp/job.sh"
printf '#!/bin/sh\n: >"%s/launched"\nexec "%s" sim job "$@"\n' "$tmp" "$P" >"$JOB"
chmod +x "$JOB"
# refused WHAT RC PATTERN sweep-args...: the sweep exits RC saying PATTERN, its job never
# started, no journal left, the node's limits as they were.
refused() {
  what=$1 want=$2 pat=$3
  shift 3
  rm -f "$tmp/launched" "$tmp/j"
  # shellcheck disable=SC2086
  "$P" sweep $F --journal "$tmp/j" "$@" -- "$JOB" >"$tmp/r.out" 2>"$tmp/r.err"
  rc=$?
  [ $rc -eq "$want" ] || bad "$what: exit $rc, expected $want: $(cat "$tmp/r.err")"
  grep -q -- "$pat" "$tmp/r.err" || bad "$what: no '$pat' in: $(cat "$tmp/r.err")"
  [ ! -e "$tmp/launched" ] || bad "$what: the job was launched"
  [ ! -e "$tmp/j" ] || bad "$what: a journal was left"
  [ "$(lim)" = "$ORIG" ] || bad "$what: limits now $(lim)"
}

# --- a GPU whose limit constraints cannot be read: refused before anything, naming it and why
export PFI_FAKENVML_FAULTS='nvmlDeviceGetPowerManagementLimitConstraints@2=NOT_SUPPORTED'
refused "unknown constraints" 1 \
  "GPU 2's power-limit range cannot be read (nvmlDeviceGetPowerManagementLimitConstraints: Not Supported" \
  --gpus 2,3 --levels 100,80%
refused "unknown constraints, a cap far above any GPU's" 1 "GPU 2's power-limit range cannot be read" \
  --gpus 2 --caps 5000:4000:1000
unset PFI_FAKENVML_FAULTS

# journal FILE GPU W...: a journal of the node's GPUs at those limits, its writer gone.
journal() {
  f=$1; shift
  { printf 'pfi-journal 1\npid 1\nbackend nvml\nsim_state %s\n' "$PFI_SIM_STATE"
    while [ $# -ge 2 ]; do
      printf 'gpu %s uuid %s limit_w %s\n' "$1" "$("$P" gpus --backend sim --json | jq -r ".gpus[$1].uuid")" "$2"
      shift 2
    done; } >"$f"
}

# --- a restore the driver refuses is a failure (exit 1), not bad input (2)
"$P" sim set --gpus 1 --cap 500 >/dev/null
journal "$tmp/j" 1 700.000
PFI_FAKENVML_FAULTS='nvmlDeviceSetPowerManagementLimit@1=INVALID_ARGUMENT' \
  "$P" restore --journal "$tmp/j" >"$tmp/o" 2>"$tmp/e"
rc=$?
[ $rc -eq 1 ] || bad "a restore NVML refuses: exit $rc, expected 1: $(cat "$tmp/e")"
[ -e "$tmp/j" ] || bad "a restore NVML refused removed the journal"
"$P" restore --journal "$tmp/j" >"$tmp/o" 2>"$tmp/e" || bad "pfi restore: $(cat "$tmp/e")"
[ "$(lim)" = "$ORIG" ] || bad "after pfi restore: $(lim)"

# --- not root: found before the job is launched, said, exit 1, nothing changed or left
export PFI_FAKENVML_FAULTS=not-root
refused "not root" 1 "needs root (or CAP_SYS_ADMIN)" --levels 100,80%
unset PFI_FAKENVML_FAULTS
PFI_FAKENVML_FAULTS='nvmlDeviceSetPowerManagementLimit@5=UNKNOWN' \
  refused "a GPU whose sets fail for good" 1 "GPU 5's power limit cannot be set" --levels 100,80%
PFI_FAKENVML_FAULTS='nvmlDeviceSetPowerManagementLimit@5=NOT_SUPPORTED' \
  refused "a GPU that does not support sets" 1 "GPU 5's power limit cannot be set" --gpus 4,5 --levels 80%

# --- GPUs whose limits cannot be set (not root): a journal of limits they still have is restored
# without a set, one they no longer have is not
journal "$tmp/j" 0 700.000 1 700.000
PFI_FAKENVML_FAULTS=not-root "$P" restore --journal "$tmp/j" >"$tmp/o" 2>"$tmp/e" ||
  bad "not root, GPUs at their journaled limits: pfi restore failed: $(cat "$tmp/e")"
[ ! -e "$tmp/j" ] || bad "not root, GPUs at their journaled limits: the journal was kept"
journal "$tmp/j" 0 700.000 1 650.125
PFI_FAKENVML_FAULTS=not-root "$P" restore --journal "$tmp/j" >"$tmp/o" 2>"$tmp/e" &&
  bad "not root, GPU 1 not at its journaled 650.125 W: pfi restore exited 0"
# The limit as journaled, not rounded (it said 650 W of a 650.125 W limit).
# Every GPU's outcome is said: the one left capped with its reason on stderr, the one restored on
# stdout as a full restore says it.
grep -q "^pfi restore: GPU 1 (GPU-[0-9a-f-]*): NOT restored to 650.125 W: nvmlDeviceSetPowerManagementLimit: Insufficient Permissions" "$tmp/e" &&
  grep -q "^GPU 0 (GPU-[0-9a-f-]*): limit restored to 700 W$" "$tmp/o" ||
  bad "not root: each GPU's outcome is not said: $(cat "$tmp/o" "$tmp/e")"
[ -e "$tmp/j" ] || bad "not root, GPU 1 not restored: the journal was removed"
rm -f "$tmp/j"
# A GPU whose UUID cannot be read may be the journaled one: said so, the journal kept (it was
# "not on this node ... remove the journal", which left the GPU capped for good)
"$P" sim set --gpus 0 --cap 500 >/dev/null
journal "$tmp/j" 0 700.000
PFI_FAKENVML_FAULTS="nvmlDeviceGetUUID@0=NOT_SUPPORTED" "$P" restore --journal "$tmp/j" >"$tmp/o" 2>"$tmp/e" &&
  bad "GPU 0's UUID unreadable: pfi restore exited 0"
grep -q "GPU 0's UUID could not be read, and it may be that GPU; keep the journal" "$tmp/e" &&
  ! grep -q "not on this node" "$tmp/e" || bad "GPU 0's UUID unreadable: $(cat "$tmp/e")"
[ -e "$tmp/j" ] || bad "GPU 0's UUID unreadable: the journal was removed"
"$P" restore --journal "$tmp/j" >/dev/null 2>&1 || bad "the same journal, UUIDs readable: not restored"
rm -f "$tmp/j"

# --- a GPU whose lowering fails for good (its first set passes): the sweep fails at the first
# lowering, and the GPU it never changed counts as restored: the journal goes, the next sweep runs
rm -f "$tmp/j"
# shellcheck disable=SC2086
PFI_FAKENVML_FAULTS='nvmlDeviceSetPowerManagementLimit@5=UNKNOWN;after=1' \
  "$P" sweep $F --journal "$tmp/j" --json --levels 100,80% -- "$P" sim job >"$tmp/o.json" 2>"$tmp/e"
rc=$?
[ $rc -eq 1 ] || bad "GPU 5's set failing: exit $rc, expected 1: $(tail -3 "$tmp/e")"
[ "$(jq -r .restored "$tmp/o.json")" = true ] || bad "GPU 5's set failing: restored is $(jq -r .restored "$tmp/o.json")"
grep -q "NOT all restored" "$tmp/e" && bad "GPU 5's set failing: $(grep 'NOT all restored' "$tmp/e")"
[ ! -e "$tmp/j" ] || bad "GPU 5's set failing: the journal was kept"
[ "$(lim)" = "$ORIG" ] || bad "GPU 5's set failing: limits now $(lim)"
# The GPU and the limit are said once ("setting GPU 5 to 560 W: setting GPU 5's power limit to
# 560 W: nvml..." before).
grep -q "^pfi sweep: setting GPU 5 to 560 W: nvmlDeviceSetPowerManagementLimit: Unknown Error" "$tmp/e" &&
  [ "$(grep -o 'GPU 5' "$tmp/e" | wc -l)" -eq 1 ] ||
  bad "GPU 5's set failing: the message: $(grep '^pfi sweep: setting' "$tmp/e")"

# --- limits in force below the default (an operator's 500 W, 450 W on GPU 3): the default
# baseline raises them, said before the job starts; --baseline current never goes above them
"$P" sim set --cap 500 >/dev/null && "$P" sim set --gpus 3 --cap 450 >/dev/null
HELD=$(lim)
# shellcheck disable=SC2086
"$P" sweep $F --journal "$tmp/j" --json --quiet --levels 80,60% -- "$P" sim job >"$tmp/o.json" 2>"$tmp/e" ||
  bad "a sweep from limits held at 500 W failed: $(tail -3 "$tmp/e")"
grep -q "warning: the baseline level (the default limit) raises GPUs 0-2,4-7 from 500 W to 700 W, GPU 3 from 450 W to 700 W, above the limits in force, and 1 later level is above them too" "$tmp/e" ||
  bad "no warning that the baseline raises the GPUs: $(grep -v '^pfi: tokens' "$tmp/e")"
[ "$(jq -c '[.levels[].cap_w]' "$tmp/o.json")" = "[700,560,420]" ] || bad "default baseline: caps $(jq -c '[.levels[].cap_w]' "$tmp/o.json")"
[ "$(lim)" = "$HELD" ] || bad "default baseline: limits after $(lim), before $HELD"
# shellcheck disable=SC2086
"$P" sweep $F --journal "$tmp/j" --json --quiet --baseline current --levels 100,80,60,50% -- "$P" sim job \
  >"$tmp/o.json" 2>"$tmp/e" || bad "--baseline current failed: $(tail -3 "$tmp/e")"
grep -q "warning: the baseline" "$tmp/e" && bad "--baseline current: $(grep 'warning: the baseline' "$tmp/e")"
grep -q -- "--baseline current: 2 levels above the limits in force left out: 100%, 80%" "$tmp/e" ||
  bad "--baseline current does not say which levels it left out: $(grep -v '^pfi: tokens' "$tmp/e")"
# The baseline is the limits in force (a mean of 500 W and GPU 3's 450 W), no level above them.
[ "$(jq -c '[.levels[].cap_w]' "$tmp/o.json")" = "[493.75,420,350]" ] ||
  bad "--baseline current: caps $(jq -c '[.levels[].cap_w]' "$tmp/o.json")"
[ "$(lim)" = "$HELD" ] || bad "--baseline current: limits after $(lim), before $HELD"
# shellcheck disable=SC2086
"$P" sweep $F --journal "$tmp/j" --baseline highest -- "$P" sim job >/dev/null 2>"$tmp/e"
[ $? -eq 2 ] && grep -q "unknown --baseline 'highest' (default or current)" "$tmp/e" ||
  bad "--baseline highest: $(cat "$tmp/e")"
"$P" sim set --cap 700 >/dev/null
# A limit in force off the watt (an operator's 512.5 W) is said as it is, not rounded to 512 W.
"$P" sim set --gpus 2 --cap 512.5 >/dev/null
# shellcheck disable=SC2086
"$P" sweep $F --journal "$tmp/j" --json --quiet --levels 60% -- "$P" sim job >/dev/null 2>"$tmp/e" ||
  bad "a sweep from 512.5 W failed: $(tail -3 "$tmp/e")"
grep -q "raises GPU 2 from 512.5 W to 700 W, above the limits in force" "$tmp/e" ||
  bad "a limit of 512.5 W: $(grep 'warning: the baseline' "$tmp/e")"
"$P" sim set --cap 700 >/dev/null

# --- a GPU lost at open is named; a journal that cannot be written is refused before the job
# starts (it was launched, then killed), with nothing on stdout (an empty table was printed)
PFI_FAKENVML_FAULTS='*@5=GPU_IS_LOST' \
  refused "a GPU lost at open" 1 "GPU 5: nvmlDeviceGetHandleByIndex_v2: GPU is lost" --levels 100,80%
rm -f "$tmp/launched"
# shellcheck disable=SC2086
"$P" sweep $F --journal /proc/pfi-journal --levels 100,80% -- "$JOB" >"$tmp/o" 2>"$tmp/e"
rc=$?
[ $rc -eq 1 ] && grep -q "cannot write journal /proc/pfi-journal" "$tmp/e" ||
  bad "a journal that cannot be written: exit $rc: $(cat "$tmp/e")"
[ ! -e "$tmp/launched" ] || bad "a journal that cannot be written: the job was launched"
[ ! -s "$tmp/o" ] || bad "a sweep refused before any level printed on stdout: $(cat "$tmp/o")"

# --- a job that printed throughput and then fell silent is said to be hung, not told to name
# its log format (every line of it had been read as throughput)
# shellcheck disable=SC2086
"$P" sweep $F --journal "$tmp/j" --levels 100,80,60% --timeout 2s \
  -- sh -c "\"$P\" sim job --duration 15s; exec sleep 60" >"$tmp/o" 2>"$tmp/e"
[ $? -eq 1 ] || bad "a job gone silent: the sweep did not fail"
grep -q "^pfi sweep: the job printed no throughput for 2 s, after [1-9][0-9]* lines read as throughput (the last [0-9]* s into the sweep): is it hung?" "$tmp/e" ||
  bad "a job gone silent: $(grep '^pfi sweep: ' "$tmp/e" | grep -v 'level\|warning')"
grep -q -- "--log-format" "$tmp/e" && bad "a job gone silent is told to name its log format"
[ "$(lim)" = "$ORIG" ] || bad "a job gone silent: limits now $(lim)"

# --- a fixed --dwell measures that long by design: its levels are not "not steady"
"$P" sweep --backend nvml --settle 0.3s --no-log --db "$tmp/pfi.db" --journal "$tmp/j" --levels 100% --dwell 1s \
  -- "$P" sim job >/dev/null 2>"$tmp/e" ||
  bad "a fixed-dwell sweep failed: $(tail -3 "$tmp/e")"
grep -q "level 1/1 .*(fixed dwell)" "$tmp/e" && ! grep -q "not steady" "$tmp/e" ||
  bad "a fixed-dwell level: $(grep 'level 1/1' "$tmp/e")"

# --- interrupted: 128 + the signal once the limits are back (it was 1 for all of them).  The
# node is held at 500 W, so the baseline level (700 W) shows the sweep has changed the limits.
"$P" sim set --cap 500 >/dev/null
HELD=$(lim)
# Slurm's --signal=USR1@90 and Ctrl-\ (QUIT) too: a sweep they killed left its GPUs capped.
# (A background job of a non-interactive shell starts with QUIT ignored: its default is put
# back through python before the exec.)
for sig in INT:130 HUP:129 USR1:138 USR2:140 QUIT:131 ALRM:142; do
  python3 -c 'import os, signal, sys; signal.signal(signal.SIGQUIT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])' \
      "$P" sweep --backend nvml --no-log --db "$tmp/pfi.db" --journal "$tmp/j" --quiet --levels 50% \
      --settle 0.3s --dwell 60s -- "$P" sim job >/dev/null 2>"$tmp/e" &
  pid=$!
  i=0
  while [ "$(lim)" = "$HELD" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
  kill -"${sig%:*}" $pid
  wait $pid
  rc=$?
  [ $rc -eq "${sig#*:}" ] || bad "SIG${sig%:*}: exit $rc, expected ${sig#*:}: $(tail -2 "$tmp/e")"
  [ "$(lim)" = "$HELD" ] || bad "SIG${sig%:*}: limits now $(lim), before $HELD"
  [ ! -e "$tmp/j" ] || bad "SIG${sig%:*}: the journal was kept"
done
pid=""
"$P" sim set --cap 700 >/dev/null

# --- an out-of-band cap below the asked cap (450 W on GPU 3): said once per level it holds the
# GPU below, and the level records its lowest enforced limit beside the mean (which hid it)
# shellcheck disable=SC2086
PFI_FAKENVML_FAULTS='oob-cap@3=450' "$P" sweep $F --journal "$tmp/j" --json --quiet --levels 100,80,60% \
  -- "$P" sim job >"$tmp/o.json" 2>"$tmp/e" || bad "a sweep under an oob-cap failed: $(tail -3 "$tmp/e")"
[ "$(grep -c '^pfi sweep: warning: level [12]: GPU 3: asked [57][06]0 W, the device enforces 450 W$' "$tmp/e")" -eq 2 ] &&
  [ "$(grep -c 'the device enforces' "$tmp/e")" -eq 2 ] ||
  bad "an oob-cap on GPU 3: warnings $(grep 'enforces' "$tmp/e")"
[ "$(jq -c '[.levels[] | [.cap_w, .enforced_w, .enforced_min_w]]' "$tmp/o.json")" = "[[700,668.75,450],[560,546.25,450],[420,420,420]]" ] ||
  bad "an oob-cap on GPU 3: levels $(jq -c '[.levels[] | [.cap_w, .enforced_w, .enforced_min_w]]' "$tmp/o.json")"
run=$(jq .run_id "$tmp/o.json")
[ "$("$P" runs show "$run" --db "$tmp/pfi.db" --json | jq -c '[.levels[].enforced_min_w]')" = "[450,450,420]" ] ||
  bad "an oob-cap on GPU 3: stored $("$P" runs show "$run" --db "$tmp/pfi.db" --json | jq -c '[.levels[].enforced_min_w]')"
# The in-band limit the next process reads is the one asked, not the cap (the fake's own
# bookkeeping, docs/nvml.md): a later sweep journals 700 W as GPU 3's original.
[ "$("$P" gpus --backend nvml --json | jq -c '.gpus[3] | [.limit_w, .enforced_limit_w]')" = "[700,450]" ] ||
  bad "after the oob-cap sweep GPU 3 reads $("$P" gpus --backend nvml --json | jq -c '.gpus[3]')"
"$P" sim set --cap 700 >/dev/null

[ $fail -eq 0 ] && echo "ok: it_sweep_limits"
exit $fail
