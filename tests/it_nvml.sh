#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The NVML code path end to end through pfi's own fake libnvidia-ml ($PFI_FAKENVML):
#   - without a driver, `pfi gpus --backend nvml` says "no NVIDIA driver found" and fails;
#   - pfi gpus / pfi monitor list and read every GPU through NVML, GPM fields included;
#   - a lost GPU is reported by name while the others are still listed;
#   - pfi sweep --backend nvml sets caps through NVML while a separate process (pfi sim job)
#     trains on the same simulated node (PFI_SIM_STATE): it must measure the simulator's
#     ground truth and restore the limits.
set -u
[ -n "${PFI_BIN:-}" ] && [ -x "$PFI_BIN" ] || { echo "PFI_BIN is not an executable"; exit 77; }
[ -n "${PFI_FAKENVML:-}" ] && [ -f "$PFI_FAKENVML" ] || { echo "PFI_FAKENVML is not built"; exit 77; }
command -v jq >/dev/null 2>&1 || { echo "jq is not installed (scripts/install-deps.sh test)"; exit 77; }
tmp=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/it_nvml.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset PFI_SIM_STATE PFI_SIM_SPEED PFI_BACKEND PFI_READ_ONLY PFI_JOURNAL PFI_NVML_LIBRARY \
      PFI_FAKENVML_FAULTS PFI_FAKENVML_FAULTS_FILE PFI_FAKENVML_GPM PFI_FAKENVML_SIM
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# --- no driver
"$PFI_BIN" gpus --backend nvml --nvml-lib "$tmp/none/libnvidia-ml.so.1" >"$tmp/o" 2>"$tmp/e" &&
  bad "gpus without a driver exited 0"
grep -q "no NVIDIA driver found" "$tmp/e" || { bad "no 'no NVIDIA driver found' message"; cat "$tmp/e"; }
# The default soname too, where this machine has no real driver.
if ! ldconfig -p 2>/dev/null | grep -q 'libnvidia-ml\.so\.1'; then
  "$PFI_BIN" gpus --backend nvml >"$tmp/o" 2>"$tmp/e" && bad "gpus --backend nvml exited 0 without a driver"
  grep -q "no NVIDIA driver found (libnvidia-ml.so.1" "$tmp/e" || { bad "default soname message"; cat "$tmp/e"; }
fi
# The default backend (auto) is NVML: without a driver every GPU command fails (exit 1) and says
# how to ask for the simulator; it never falls back to it.
for cmd in "gpus" "monitor --count 1" "sweep -- true" "predict --live --duration 1s" \
           "serve --listen 127.0.0.1:0"; do
  # shellcheck disable=SC2086
  PFI_NVML_LIBRARY="$tmp/none/libnvidia-ml.so.1" "$PFI_BIN" $cmd >"$tmp/o" 2>"$tmp/e"
  rc=$?
  [ $rc -eq 1 ] || bad "pfi $cmd without a driver: exit $rc, expected 1"
  grep -q "no NVIDIA driver found.*use --backend sim for the simulator" "$tmp/e" ||
    { bad "pfi $cmd without a driver: message"; cat "$tmp/e"; }
done

# --- list through the fake (the library named by the environment)
export PFI_NVML_LIBRARY="$PFI_FAKENVML"
"$PFI_BIN" gpus --backend nvml --json >"$tmp/gpus.json" 2>"$tmp/e" || { bad "gpus via fake"; cat "$tmp/e"; }
# The fake library says it serves simulated GPUs: the output says so.
[ "$(jq -r '.backend' "$tmp/gpus.json")" = nvml-sim ] || bad "backend is not nvml-sim"
[ "$(jq '.simulated and ([.gpus[].simulated] | all)' "$tmp/gpus.json")" = true ] ||
  bad "the fake's GPUs are not marked simulated"
# auto picks NVML when it lists a GPU.
"$PFI_BIN" gpus --json >"$tmp/auto.json" 2>"$tmp/e" || { bad "gpus (auto) via fake"; cat "$tmp/e"; }
[ "$(jq -r '.backend' "$tmp/auto.json")" = nvml-sim ] || bad "auto did not pick NVML"
[ "$(jq '.gpus | length' "$tmp/gpus.json")" -eq 8 ] || bad "not 8 GPUs"
[ "$(jq -r '[.gpus[].name] | unique | .[0]' "$tmp/gpus.json")" = "NVIDIA H200" ] || bad "names"
[ "$(jq '[.gpus[] | select(.power_w > 50 and .limit_w == 700 and .min_limit_w == 200)] | length' \
  "$tmp/gpus.json")" -eq 8 ] || bad "power or limits wrong: $(jq -c '.gpus[0]' "$tmp/gpus.json")"

# --- monitor: every field after the first (windowed) round; read-only mode reads fine
PFI_READ_ONLY=1 "$PFI_BIN" monitor --backend nvml --format jsonl --interval 150ms --count 3 \
  --gpus 0,5 >"$tmp/mon.jsonl" 2>"$tmp/e" || { bad "monitor via fake"; cat "$tmp/e"; }
[ "$(wc -l <"$tmp/mon.jsonl")" -eq 6 ] || bad "monitor: not 6 lines"
nulls=$(tail -n 2 "$tmp/mon.jsonl" | jq -r 'to_entries[] | select(.value == null) | .key' | sort -u)
[ -z "$nulls" ] || bad "monitor: fields missing after the first round: $nulls"
[ "$(head -n 1 "$tmp/mon.jsonl" | jq '.sm_active')" = null ] || bad "first round has a GPM value"

# --- --interval is the period: each power read taking 4 ms (8 GPUs, ~32 ms a round), rounds
# start 200 ms apart still (a sleep after each round made it ~232 ms)
PFI_FAKENVML_FAULTS="nvmlDeviceGetPowerUsage=SUCCESS;delay=0.004" "$PFI_BIN" monitor --backend nvml \
  --format csv --interval 200ms --duration 2s >"$tmp/per.csv" 2>"$tmp/e" || { bad "monitor, slow reads"; cat "$tmp/e"; }
per=$(awk -F, 'NR > 1 && $2 == 0 { print $1 }' "$tmp/per.csv" |
  awk 'NR == 1 { a = $1 } { b = $1; n = NR } END { if (n > 1) printf "%.4f %d", (b - a) / (n - 1), n }')
echo "$per" | awk '{ exit !($1 >= 0.195 && $1 <= 0.215 && $2 >= 9) }' ||
  bad "monitor --interval 200ms with 32 ms rounds: mean period and rounds $per"
# --- SIGINT while a GPU's reads block (2 s each): stops after the read under way, not after the
# round's 8 (it took 14 s), status 0
PFI_FAKENVML_FAULTS="nvmlDeviceGetPowerUsage=SUCCESS;delay=2" "$PFI_BIN" monitor --backend nvml \
  --format csv --interval 1s >"$tmp/int.csv" 2>"$tmp/e" &
mon=$!
sleep 3
t0=$(date +%s.%N)
kill -INT "$mon"
wait "$mon"
rc=$?
el=$(echo "$(date +%s.%N) $t0" | awk '{ printf "%.2f", $1 - $2 }')
[ "$rc" -eq 0 ] && echo "$el" | awk '{ exit !($1 < 2.5) }' || bad "monitor after SIGINT: status $rc, $el s"

# --- an --interval past what a sleep takes (1e19 s) waits, not a busy loop (no sleep at all:
# 500,000 rows in 3 s)
"$PFI_BIN" monitor --backend nvml --format csv --interval 1e19s --gpus 0 >"$tmp/huge.csv" 2>"$tmp/e" &
mon=$!
sleep 1
kill "$mon"
wait "$mon"
[ "$(wc -l <"$tmp/huge.csv")" -le 2 ] || bad "monitor --interval 1e19s: $(wc -l <"$tmp/huge.csv") lines in 1 s"

# --- a read refused (the device files' permissions) is said as such, not "needs root"
PFI_FAKENVML_FAULTS="nvmlInit_v2=NO_PERMISSION" "$PFI_BIN" gpus --backend nvml >"$tmp/o" 2>"$tmp/e" &&
  bad "gpus with NVML refusing its init exited 0"
grep -q "this user cannot read the GPUs: check the permissions of /dev/nvidiactl" "$tmp/e" &&
  ! grep -q "needs root" "$tmp/e" || { bad "a read refused: $(cat "$tmp/e")"; }

# --- pfi gpus shows power: a reading it does not show failing (a temperature's timeout) keeps
# the power read and the exit status (it blanked the power and exited 1); a power read failing
# still fails
PFI_FAKENVML_FAULTS="nvmlDeviceGetTemperature@2=TIMEOUT;count=1" "$PFI_BIN" gpus --backend nvml \
  --json >"$tmp/o" 2>"$tmp/e" || bad "gpus with GPU 2's temperature timing out exited non-zero: $(cat "$tmp/e")"
[ "$(jq '.gpus[2].power_w != null' "$tmp/o")" = true ] && grep -q "GPU 2: warning: .*power was read" "$tmp/e" ||
  bad "gpus with GPU 2's temperature timing out: $(cat "$tmp/e") $(jq -c '.gpus[2]' "$tmp/o")"
PFI_FAKENVML_FAULTS="nvmlDeviceGetPowerUsage@2=TIMEOUT;count=1" "$PFI_BIN" gpus --backend nvml \
  --json >"$tmp/o" 2>"$tmp/e" && bad "gpus with GPU 2's power timing out exited 0"
[ "$(jq '.gpus[2].power_w' "$tmp/o")" = null ] || bad "gpus with GPU 2's power timing out: $(jq -c '.gpus[2]' "$tmp/o")"

# --- monitor with a GPU lost a second in: said once (it was said every round), its rows kept
# with every field blank (they vanished from CSV), the others read; a transient fault says when
# the GPU reads again
PFI_FAKENVML_FAULTS="*@5=GPU_IS_LOST;at=1" "$PFI_BIN" monitor --backend nvml --format csv \
  --interval 200ms --duration 2s >"$tmp/lost.csv" 2>"$tmp/e" && bad "monitor, a GPU lost: exit 0"
[ "$(grep -c 'GPU 5: .*GPU is lost' "$tmp/e")" -eq 1 ] || bad "monitor, a GPU lost, said: $(cat "$tmp/e")"
[ "$(awk -F, 'NR > 1 && $2 == 5' "$tmp/lost.csv" | wc -l)" -eq "$(awk -F, 'NR > 1 && $2 == 0' "$tmp/lost.csv" | wc -l)" ] ||
  bad "monitor, a GPU lost: its rows are missing"
awk -F, 'NR > 1 && $2 == 5 && $3 == "" { n++ } END { exit !(n >= 3) }' "$tmp/lost.csv" ||
  bad "monitor, a GPU lost: no blank rows: $(grep ',5,' "$tmp/lost.csv" | tail -2)"
PFI_FAKENVML_FAULTS="nvmlDeviceGetPowerUsage@2=TIMEOUT;after=2;count=3" "$PFI_BIN" monitor --backend nvml \
  --format csv --interval 100ms --count 8 --gpus 2 >/dev/null 2>"$tmp/e"
[ "$(grep -c 'GPU 2: nvmlDeviceGetPowerUsage: Timeout' "$tmp/e")" -eq 1 ] && grep -q "GPU 2: read again" "$tmp/e" ||
  bad "monitor, a transient fault: $(cat "$tmp/e")"

# --- a lost GPU: named, non-zero exit, the others listed
PFI_FAKENVML_FAULTS="nvmlDeviceGetPowerUsage@2=GPU_IS_LOST" \
  "$PFI_BIN" gpus --backend nvml >"$tmp/o" 2>"$tmp/e" && bad "gpus with a lost GPU exited 0"
grep -q "GPU 2: nvmlDeviceGetPowerUsage: GPU is lost" "$tmp/e" || { bad "lost GPU message"; cat "$tmp/e"; }
[ "$(grep -c 'NVIDIA H200' "$tmp/o")" -eq 8 ] || bad "a lost GPU hid the others"

# --- a GPU without an enforced limit (an older driver): listed, the value unknown, not "nan";
# --json dropped that GPU without a word (JSON has no NaN) and printed "nanW" in the table
PFI_FAKENVML_FAULTS="nvmlDeviceGetEnforcedPowerLimit@2=NOT_SUPPORTED" \
  "$PFI_BIN" gpus --backend nvml --json >"$tmp/ne.json" 2>"$tmp/e" || { bad "gpus, no enforced limit"; cat "$tmp/e"; }
[ "$(jq '.gpus | length' "$tmp/ne.json")" = 8 ] || bad "no enforced limit: $(jq '.gpus | length' "$tmp/ne.json") GPUs listed"
[ "$(jq '.gpus[2].enforced_limit_w' "$tmp/ne.json")" = null ] && [ "$(jq '.gpus[2].limit_w' "$tmp/ne.json")" = 700 ] ||
  bad "GPU 2 without an enforced limit: $(jq -c '.gpus[2]' "$tmp/ne.json")"
PFI_FAKENVML_FAULTS="nvmlDeviceGetEnforcedPowerLimit@2=NOT_SUPPORTED" \
  "$PFI_BIN" gpus --backend nvml >"$tmp/o" 2>"$tmp/e" || bad "gpus table, no enforced limit"
grep -qi nan "$tmp/o" && bad "gpus table prints nan: $(grep -i nan "$tmp/o")"
[ "$(awk '$1 == 2 { print $7 }' "$tmp/o")" = N/A ] || bad "GPU 2's enforced limit is not N/A: $(grep '^2 ' "$tmp/o")"

# --- a sweep through NVML; the job is another process on the same simulated node
export PFI_SIM_STATE="$tmp/node.state" PFI_SIM_SPEED=20 PFI_FAKENVML_SIM=h200x1-small
"$PFI_BIN" sweep --backend nvml --no-log --levels 100,70% --db "$tmp/pfi.db" --journal "$tmp/journal" \
  --json --quiet --settle 1s --min-window 2s \
  -- "$PFI_BIN" sim job --log-format pfi --sim h200x1-small >"$tmp/sweep.json" 2>"$tmp/e" ||
  { bad "sweep --backend nvml"; tail -5 "$tmp/e"; }
[ "$(jq -r '.restored' "$tmp/sweep.json")" = true ] || bad "sweep did not restore"
"$PFI_BIN" gpus --backend nvml --json | jq -e '.gpus[0].limit_w == 700' >/dev/null ||
  bad "limit not 700 W after the sweep"
[ "$(jq '.telemetry_errors' "$tmp/sweep.json")" = 0 ] || bad "telemetry errors in a clean sweep: $(jq -c '.telemetry_errors' "$tmp/sweep.json")"
# A swept GPU's power lost mid-sweep: the sweep goes on over the others, and says so (it said
# "done" and nothing else; the levels' means had quietly left that GPU out)
PFI_FAKENVML_FAULTS="nvmlDeviceGetPowerUsage@0=GPU_IS_LOST;at=2" \
  "$PFI_BIN" sweep --backend nvml --no-log --levels 70% --db "$tmp/pfi.db" --journal "$tmp/journal" \
  --json --quiet --settle 1s --dwell 2s \
  -- "$PFI_BIN" sim job --log-format pfi --sim h200x1-small >"$tmp/lost.json" 2>"$tmp/e" ||
  { bad "sweep with GPU 0's power lost"; tail -5 "$tmp/e"; }
jq -e '.telemetry_errors > 0 and (.telemetry_error | test("GPU is lost"))' "$tmp/lost.json" >/dev/null &&
  grep -q 'telemetry readings failed' "$tmp/e" ||
  bad "a lost GPU's telemetry not said: $(jq -c '{telemetry_errors, telemetry_error}' "$tmp/lost.json") $(tail -2 "$tmp/e")"
unset PFI_SIM_STATE
"$PFI_BIN" sim job --sim h200x1-small --truth 700,490 --json >"$tmp/truth.json" || bad "truth"
off=$(jq -rn --slurpfile m "$tmp/sweep.json" --slurpfile t "$tmp/truth.json" '
  [ range(0; 2) as $i | $m[0].levels[$i] as $l | $t[0].truth[$i] as $g
    | select(($l.cap_w - $g.cap_w | fabs) > 0.5 or ($l.enforced_w - $g.cap_w | fabs) > 0.5
             or ($l.tput - $g.tokens_per_s | fabs) > 0.005 * $g.tokens_per_s
             or ($l.power_w - $g.power_w | fabs) > 0.02 * $g.power_w)
    | "\($l.cap_w) W: measured \($l.tput) tok/s \($l.power_w) W, truth \($g.tokens_per_s) \($g.power_w)" ]
  | .[]')
[ -z "$off" ] || bad "sweep through NVML differs from the truth: $off"
[ $fail -eq 0 ] && echo "ok: no driver, list, monitor, lost GPU, sweep through NVML ($(jq -c '[.levels[] | (.tput | floor)]' "$tmp/sweep.json") tokens/s)"
exit $fail
