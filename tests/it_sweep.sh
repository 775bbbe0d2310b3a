#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# End to end: pfi sweep --backend sim launches `pfi sim job` (a simulated training job printing
# the progress lines of a real framework), parses its log, steps the cap, and must measure the
# simulator's ground truth (pfi sim job --truth) within its confidence interval, for several
# log formats; the limits are restored and every level is in the store.
set -u
[ -n "${PFI_BIN:-}" ] && [ -x "$PFI_BIN" ] || { echo "PFI_BIN is not an executable"; exit 77; }
command -v jq >/dev/null 2>&1 || { echo "jq is not installed (scripts/install-deps.sh test)"; exit 77; }
tmp=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/it_sweep.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset PFI_SIM_STATE PFI_BACKEND PFI_READ_ONLY PFI_JOURNAL
preset=h200x1-small
fail=0
nruns=0

# check NAME FORMAT CAPS: the sweep's JSON ($tmp/NAME.json) against the truth at CAPS.
check() {
  name=$1 fmt=$2 caps=$3
  out="$tmp/$name.json" truth="$tmp/$name.truth"
  "$PFI_BIN" sim job --sim $preset --truth "$caps" --json >"$truth" || { echo "FAIL $name: truth"; fail=1; return; }
  n=$(jq '.truth | length' "$truth")
  got=$(jq -r '.log_format' "$out")
  [ "$got" = "$fmt" ] || { echo "FAIL $name: detected format '$got'"; fail=1; }
  [ "$(jq -r '.restored' "$out")" = true ] || { echo "FAIL $name: limits not restored"; fail=1; }
  [ "$(jq '.levels | length' "$out")" -eq "$n" ] || { echo "FAIL $name: not $n levels"; fail=1; }
  # Truth inside the CI; the 0.2% slack covers what the CI cannot see: lines are stamped when
  # they arrive, a few real milliseconds after the job printed them, times the speed-up.
  bad=$(jq -rn --slurpfile m "$out" --slurpfile t "$truth" '
    [ range(0; $t[0].truth | length) as $i | $m[0].levels[$i] as $l | $t[0].truth[$i] as $g
      | select(($l.cap_w - $g.cap_w | fabs) > 0.5
               or ($l.tput_lo == null) or ($l.tput_hi == null)
               or ($g.tokens_per_s < $l.tput_lo - 0.002 * $g.tokens_per_s)
               or ($g.tokens_per_s > $l.tput_hi + 0.002 * $g.tokens_per_s))
      | "\($l.cap_w) W: measured \($l.tput) [\($l.tput_lo), \($l.tput_hi)], truth \($g.tokens_per_s)" ]
    | .[]')
  if [ -n "$bad" ]; then
    echo "FAIL $name: $bad"; fail=1
  else
    echo "ok $name: $(jq -c '[.levels[] | (.tput | floor)]' "$out") tokens/s, truth $(jq -c '[.truth[] | (.tokens_per_s | floor)]' "$truth")"
  fi
}

# run NAME FORMAT SPEED LEVELS CAPS [extra sweep options]
run() {
  name=$1 fmt=$2 speed=$3 levels=$4 caps=$5
  shift 5
  out="$tmp/$name.json"
  "$PFI_BIN" sweep --backend sim --sim $preset --speed "$speed" --levels "$levels" \
      --db "$tmp/pfi.db" --journal "$tmp/journal" --log "$tmp/$name.log" --json --quiet "$@" \
      -- "$PFI_BIN" sim job --log-format "$fmt" --sim $preset >"$out" 2>"$tmp/$name.err"
  rc=$?
  nruns=$((nruns + 1))
  if [ $rc -ne 0 ]; then
    echo "FAIL $name: sweep exited $rc"; tail -5 "$tmp/$name.err"; fail=1; return
  fi
  check "$name" "$fmt" "$caps"
  # The job's output went through to the log file unchanged.
  grep -q . "$tmp/$name.log" || { echo "FAIL $name: empty job log"; fail=1; }
}

# Formats whose lines carry their own timing (a count with t=, a rate, an iteration time).
run pfi pfi 40 100,70,50% 700,490,350
run torchtitan torchtitan 40 100,70,50% 700,490,350
run megatron megatron 40 100,70,50% 700,490,350
run llmc llmc 40 100,70,50% 700,490,350
run deepspeed deepspeed 40 100,50% 700,350 --seq-len 4096
run nanogpt nanogpt 40 100,50% 700,350
# Progress bars give only a step counter, timed by arrival: the speed-up multiplies the
# arrival jitter, so these run slower.
run hf hf 20 100,50% 700,350 --seq-len 4096
run lightning lightning 20 100,50% 700,350 --tokens-per-step 65536
# --restart: a fresh job for every level.
run restart pfi 40 100,50% 700,350 --restart

# What the sweep cost: per level GPU-seconds = duration x GPUs, work lost against the top
# level's rate, totals their sums; pfi show gives the same figures from each level's stored
# start and end.
jq -e '. as $d | ([.levels[] | select((.gpu_s - .duration_s * $d.n_gpus | fabs) > 1e-6
        or ((.lost - ($d.cost.baseline_rate - .tput) * .duration_s) | fabs) > 1e-3)] | length) == 0
      and (([.levels[].gpu_s] | add) - .cost.gpu_s | fabs) < 1e-6
      and (([.levels[].lost] | add) - .cost.lost | fabs) < 1e-3
      and .cost.baseline_rate == .levels[0].tput and .levels[0].lost == 0
      and .cost.gpu_s > 0 and .cost.lost > 0' "$tmp/pfi.json" >/dev/null ||
  { echo "FAIL cost: $(jq -c '.cost, [.levels[] | [.duration_s, .gpu_s, .lost]]' "$tmp/pfi.json")"; fail=1; }
rid=$(jq -r '.run_id' "$tmp/pfi.json")
"$PFI_BIN" runs show "$rid" --db "$tmp/pfi.db" --json >"$tmp/show.json" || { echo "FAIL: pfi show $rid"; fail=1; }
jq -en --slurpfile a "$tmp/pfi.json" --slurpfile b "$tmp/show.json" '
    ($a[0].levels | length) == ($b[0].levels | length)
    and ([range($a[0].levels | length) as $i
          | ($a[0].levels[$i].duration_s - $b[0].levels[$i].duration_s) | fabs | select(. > 1e-6)]
         | length) == 0
    and (($a[0].cost.gpu_s - $b[0].cost.gpu_s) | fabs) < 1e-6
    and (($a[0].cost.lost - $b[0].cost.lost) | fabs) < 1e-3' >/dev/null ||
  { echo "FAIL cost in pfi show: $(jq -c .cost "$tmp/show.json") against $(jq -c .cost "$tmp/pfi.json")"; fail=1; }
"$PFI_BIN" runs show "$rid" --db "$tmp/pfi.db" | grep -Eq '^cost: [0-9]+ s on 1 GPUs = [0-9]+ GPU-s; [0-9]+ tokens lost' ||
  { echo "FAIL: no cost line in pfi show"; fail=1; }
"$PFI_BIN" runs --db "$tmp/pfi.db" --json | jq -e ".runs[] | select(.id == $rid) | .cost_gpu_s > 0" >/dev/null ||
  { echo "FAIL: no cost in pfi runs"; fail=1; }
echo "ok cost: $(jq -c .cost "$tmp/pfi.json")"

# --attach: a job that is already running, printing into its own log, followed like tail -F.
PFI_SIM_STATE="$tmp/attach.state" PFI_SIM_SPEED=40 "$PFI_BIN" sim job --sim $preset \
    --log-format torchtitan >"$tmp/attach.log" 2>&1 &
jobpid=$!
PFI_SIM_STATE="$tmp/attach.state" PFI_SIM_SPEED=40 "$PFI_BIN" sweep --backend sim --sim $preset \
    --levels 100,50% --attach --log "$tmp/attach.log" --db "$tmp/pfi.db" --journal "$tmp/journal" \
    --json --quiet >"$tmp/attach.json" 2>"$tmp/attach.err"
rc=$?
nruns=$((nruns + 1))
kill $jobpid 2>/dev/null
wait $jobpid 2>/dev/null
if [ $rc -ne 0 ]; then echo "FAIL attach: sweep exited $rc"; tail -5 "$tmp/attach.err"; fail=1
else check attach torchtitan 700,350; fi
grep -q "warning" "$tmp/attach.err" && { echo "FAIL attach: a warning on a tokens/s log"; cat "$tmp/attach.err"; fail=1; }

# --attach to a Megatron job whose argument block (seq_length) is already past: its lines give
# samples/s only.  The sweep says so in one line, naming --seq-len, and records samples/s.
PFI_SIM_STATE="$tmp/attmeg.state" PFI_SIM_SPEED=40 "$PFI_BIN" sim job --sim $preset \
    --log-format megatron >"$tmp/attmeg.log" 2>&1 &
jobpid=$!
i=0
while [ $i -lt 200 ] && ! grep -q "elapsed time per iteration" "$tmp/attmeg.log"; do
  sleep 0.05; i=$((i + 1))
done
grep -q "seq_length" "$tmp/attmeg.log" || { echo "FAIL attach megatron: no argument block in the job's log"; fail=1; }
PFI_SIM_STATE="$tmp/attmeg.state" PFI_SIM_SPEED=40 "$PFI_BIN" sweep --backend sim --sim $preset \
    --levels 100% --attach --log "$tmp/attmeg.log" --db "$tmp/pfi.db" --journal "$tmp/journal" \
    --json --quiet >"$tmp/attmeg.json" 2>"$tmp/attmeg.err"
rc=$?
nruns=$((nruns + 1))
kill $jobpid 2>/dev/null
wait $jobpid 2>/dev/null
if [ $rc -ne 0 ]; then echo "FAIL attach megatron: sweep exited $rc"; tail -5 "$tmp/attmeg.err"; fail=1
else
  [ "$(jq -r '.unit' "$tmp/attmeg.json")" = "samples/s" ] ||
    { echo "FAIL attach megatron: unit $(jq -r '.unit' "$tmp/attmeg.json")"; fail=1; }
  [ "$(grep -c "warning" "$tmp/attmeg.err")" -eq 1 ] && grep "warning" "$tmp/attmeg.err" | grep -q -- "--seq-len" ||
    { echo "FAIL attach megatron: no one-line warning naming --seq-len:"; cat "$tmp/attmeg.err"; fail=1; }
  rid=$(jq -r '.run_id' "$tmp/attmeg.json")
  [ "$("$PFI_BIN" runs --db "$tmp/pfi.db" --json | jq -r ".runs[] | select(.id == $rid) | .unit_label")" = "samples/s" ] ||
    { echo "FAIL attach megatron: the store does not record samples/s"; fail=1; }
fi

# The real NVML code path, over the project's own libnvidia-ml (the simulator behind it, shared
# with the job through the state file).  NVML's clock is real time: short windows.
if [ -n "${PFI_FAKENVML:-}" ] && [ -f "$PFI_FAKENVML" ]; then
  PFI_SIM_STATE="$tmp/nvml.state" PFI_SIM_SPEED=10 PFI_FAKENVML_SIM=$preset "$PFI_BIN" sweep \
      --backend nvml --nvml-lib "$PFI_FAKENVML" --levels 100,50% --settle 0.3s --min-window 0.5s \
      --db "$tmp/pfi.db" --journal "$tmp/journal" --json --quiet --no-log \
      -- "$PFI_BIN" sim job --log-format pfi --sim $preset >"$tmp/nvml.json" 2>"$tmp/nvml.err"
  rc=$?
  nruns=$((nruns + 1))
  if [ $rc -ne 0 ]; then echo "FAIL nvml: sweep exited $rc"; tail -5 "$tmp/nvml.err"; fail=1
  else check nvml pfi 700,350; fi
else
  echo "note: PFI_FAKENVML not set, the NVML path is not swept here"
fi

# A real program swept on simulated GPUs: real tokens/s against simulated power.  It warns,
# the run's backend says so (runs, show, export), and the preset's model is not its label.
"$PFI_BIN" sweep --backend sim --sim $preset --levels 100% --dwell 1s --settle 0.2s \
    --db "$tmp/real.db" --journal "$tmp/journal" --no-log --quiet --json \
    -- sh -c 'i=0; while [ $i -lt 60 ]; do echo "pfi: tokens=$((i*1000)) t=$i"; i=$((i+1)); sleep 0.05; done' \
    >"$tmp/real.json" 2>"$tmp/real.err" || { echo "FAIL real on sim: exit $?"; cat "$tmp/real.err"; fail=1; }
grep -q "warning: the GPUs are simulated" "$tmp/real.err" || { echo "FAIL real on sim: no warning"; fail=1; }
[ "$(jq -r '.backend' "$tmp/real.json")" = "sim (simulated GPUs, real program)" ] &&
  [ "$(jq '.simulated' "$tmp/real.json")" = true ] || { echo "FAIL real on sim: $(cat "$tmp/real.json")"; fail=1; }
"$PFI_BIN" runs --db "$tmp/real.db" --json | jq -e '.runs[0].simulated == true' >/dev/null ||
  { echo "FAIL real on sim: runs does not mark it"; fail=1; }
"$PFI_BIN" runs show 1 --db "$tmp/real.db" | grep -q "Backend sim (simulated GPUs, real program)" ||
  { echo "FAIL real on sim: show"; fail=1; }
"$PFI_BIN" runs show 1 --db "$tmp/real.db" | grep -q "Model  *unknown" || { echo "FAIL real on sim: preset label"; fail=1; }
"$PFI_BIN" runs export --db "$tmp/real.db" --format json | jq -e '.[0].simulated == true' >/dev/null ||
  { echo "FAIL real on sim: export"; fail=1; }
# The simulated jobs' runs above are marked too.
"$PFI_BIN" runs --db "$tmp/pfi.db" --json | jq -e '[.runs[] | select(.backend == "sim" or .backend == "nvml-sim")] | length > 0' >/dev/null ||
  { echo "FAIL: simulated sweeps not marked by backend"; fail=1; }

# Every sweep is a run in the store.
runs=$("$PFI_BIN" runs --db "$tmp/pfi.db" --json | jq 'if type == "array" then length else (.runs | length) end')
[ "${runs:-0}" -eq "$nruns" ] || { echo "FAIL: the store holds ${runs:-no} runs, expected $nruns"; fail=1; }
[ ! -e "$tmp/journal" ] || { echo "FAIL: journal left behind after clean sweeps"; fail=1; }
exit $fail
