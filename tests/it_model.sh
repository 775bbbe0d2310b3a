#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Integration test of the predictor's model file and what is told about a prediction and its
# training: a damaged model file refused at load, naming the file and the field; a forced kind
# said as such; runs without baseline telemetry left out of training, counted; a prediction
# outside what the model was trained on marked.
# Needs $PFI_BIN (tests/run.sh sets it).
set -u
PFI=${PFI_BIN:?PFI_BIN not set}
T=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/it_model.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "it_model: FAIL: $*"; exit 1; }
command -v jq >/dev/null 2>&1 || fail "jq missing"

command -v sqlite3 >/dev/null 2>&1 || fail "sqlite3 missing (scripts/install-deps.sh test)"
"$PFI" model train --fleet small --out "$T/m.json" --save-db "$T/s.db" > "$T/train" 2>&1 ||
  fail "model train: $(cat "$T/train")"

# A null coefficient loaded, then every run failed with "point 2 of the curve is not a number"
# after the table's header (and a daemon would never predict): refused at load, exit 2.
jq '.ridge.coef[2][0] = null' "$T/m.json" > "$T/coefnull.json"
jq '.ridge.intercept[1] = null' "$T/m.json" > "$T/icpt.json"
jq '.depths = [0.05, 0.1, 0.15, 0.2, 0.25]' "$T/m.json" > "$T/depths.json"
jq '.format = "1"' "$T/m.json" > "$T/fmt.json"
for c in "coefnull.json:ridge.coef[2][0] is not a number (null)" \
         "icpt.json:ridge.intercept[1] is not a number (null)" \
         "depths.json:depths[0] is 0.05; this pfi predicts at depths 0.1" \
         "fmt.json:format is a string, not an integer; this pfi reads format 1"; do
  f=${c%%:*} msg=${c#*:}
  "$PFI" predict --live --backend sim --duration 1s --model "$T/$f" > "$T/out" 2> "$T/err"
  [ $? -eq 2 ] || fail "$f: exit not 2: $(cat "$T/err")"
  [ ! -s "$T/out" ] || fail "$f: printed: $(cat "$T/out")"
  grep -qF "pfi predict: $T/$f: $msg" "$T/err" || fail "$f: $(cat "$T/err")"
  "$PFI" serve --backend sim --listen 127.0.0.1:0 --model "$T/$f" > "$T/out" 2> "$T/err"
  [ $? -eq 2 ] && grep -qF "$T/$f: $msg" "$T/err" || fail "serve --model $f: $(cat "$T/err")"
done

# A forced kind runs no cross-validation: it printed "CV MAE ... ridge nan, physics nan".
for k in ridge physics; do
  "$PFI" model train --fleet small --kind $k --out "$T/$k.json" > "$T/out" 2>&1 || fail "train --kind $k: $(cat "$T/out")"
  grep -qx "forced: $k (no cross-validation)" "$T/out" && ! grep -qi "nan" "$T/out" ||
    fail "train --kind $k: $(cat "$T/out")"
done
grep -q "^5-fold CV MAE of PFI30: ridge 0\.[0-9]*, physics 0\.[0-9]* -> " "$T/train" ||
  fail "train without --kind: $(cat "$T/train")"

# Leave-one-job-out holds a job's reruns out with it: a rerun on H100 whose model name differs
# in case only (QWEN2.5-7B) is the same job, so the figures do not move; a run with no model
# name is its own job, and eval says so.
cp "$T/s.db" "$T/case.db"
sqlite3 "$T/case.db" "update runs set model = upper(model) where gpu_type like 'H100%'" || fail "sqlite3 case.db"
"$PFI" model eval --db "$T/s.db" --json > "$T/eval_s" || fail "eval on s.db"
"$PFI" model eval --db "$T/case.db" --json > "$T/eval_case" || fail "eval on case.db"
[ "$(jq -c '[.lojo_mae_pfi30, .lojo_r2_pfi30]' "$T/eval_s")" = "$(jq -c '[.lojo_mae_pfi30, .lojo_r2_pfi30]' "$T/eval_case")" ] ||
  fail "a rerun whose model name differs in case was left in while its job was held out: $(jq -c .lojo_mae_pfi30 "$T/eval_s") vs $(jq -c .lojo_mae_pfi30 "$T/eval_case")"
jq -e '.untagged_runs == 0' "$T/eval_s" > /dev/null || fail "untagged_runs on s.db: $(cat "$T/eval_s")"
cp "$T/s.db" "$T/untagged.db"
sqlite3 "$T/untagged.db" "update runs set model = '' where id in (1, 2)" || fail "sqlite3 untagged.db"
"$PFI" model eval --db "$T/untagged.db" > "$T/out" || fail "eval on untagged.db"
grep -q "note: 2 runs carry no model name (pfi sweep --tag model=NAME)" "$T/out" ||
  fail "eval does not say that 2 runs have no model name: $(cat "$T/out")"

# Runs whose baseline has only power (as imported public sweeps) are no training examples: the
# model was trained and evaluated on them (R2 0.04) without a word.  Counted by reason, and
# fewer than 5 left is refused (exit 2) by model train, model eval and evaluate --probes 0.
notel() { # store, SQL condition on run_id
  cp "$T/s.db" "$T/$1"
  sqlite3 "$T/$1" "update levels set sm_clock_mhz = NULL, sm_active = NULL, tensor_active = NULL,
                   dram_active = NULL where $2" || fail "sqlite3 $1"
}
notel mix.db "run_id in (1, 2, 3)"
notel few.db "run_id > 4"
"$PFI" model train --db "$T/mix.db" --out "$T/mix.json" > "$T/out" || fail "train on mix.db"
grep -q "^trained on $T/mix.db: 9 runs (3 skipped: 3 without GPU telemetry at the baseline)$" "$T/out" ||
  fail "train on mix.db: $(cat "$T/out")"
"$PFI" model eval --db "$T/mix.db" --json > "$T/out" || fail "eval on mix.db"
jq -e '.n_runs == 9 and .skipped == 3 and .skipped_no_telemetry == 3' "$T/out" > /dev/null ||
  fail "eval on mix.db: $(cat "$T/out")"
"$PFI" evaluate --db "$T/mix.db" --probes 0 --cuts 0.3 > "$T/out" || fail "evaluate --probes 0 on mix.db"
grep -q "; 3 job(s) without GPU telemetry at the baseline not trained on" "$T/out" ||
  fail "evaluate --probes 0 on mix.db: $(cat "$T/out")"
for c in "model train --out $T/few.json" "model eval" "evaluate --probes 0 --cuts 0.3"; do
  "$PFI" $c --db "$T/few.db" > "$T/out" 2> "$T/err"
  [ $? -eq 2 ] && [ ! -s "$T/out" ] || fail "$c on few.db: exit not 2: $(cat "$T/out" "$T/err")"
  grep -q "only 4 of the 12 \(runs of $T/few.db\|jobs\) have GPU telemetry at their baseline" "$T/err" &&
    grep -q "needs at least 5" "$T/err" || fail "$c on few.db: $(cat "$T/err")"
done
[ ! -e "$T/few.json" ] || fail "model train wrote a model from 4 runs"

# A model records the GPU types and feature ranges it was trained on, and a prediction outside
# them is marked: trained on H200 and H100, it predicted an A100 job's PFI30 0.26 (true 0.76)
# with no word.  Its own training runs are not marked (the file keeps 10 digits of a bound).
jq -e '.gpu_types == ["H200-SXM", "H100-SXM"] and (.feature_range.min | length) == 19' "$T/m.json" >/dev/null ||
  fail "model file lacks gpu_types or feature_range: $(jq -c '.gpu_types, .feature_range' "$T/m.json")"
"$PFI" predict $(seq 1 12) --db "$T/s.db" --model "$T/m.json" --json > "$T/out" || fail "predict the training runs"
jq -e '[.runs[] | .extrapolated == [] and .training_range_known] | length == 12 and all' "$T/out" >/dev/null ||
  fail "training runs marked as extrapolated: $(jq -c '[.runs[].extrapolated]' "$T/out")"
"$PFI" predict 1 --db "$T/s.db" --model "$T/m.json" > "$T/out" || fail "predict (text)"
! grep -q "extrapolated" "$T/out" || fail "a training run marked: $(cat "$T/out")"
! grep -q "default limit" "$T/out" || fail "a run read at its default limit marked: $(cat "$T/out")"
# A stored run whose default-limit level has no rate is predicted from a capped level, and says
# so (its prediction and "measured" moved with nothing said).
cp "$T/s.db" "$T/nobase.db"
sqlite3 "$T/nobase.db" "UPDATE levels SET tput = NULL WHERE run_id = 1 AND cap_w = \
  (SELECT default_limit_w FROM runs WHERE id = 1)" || fail "sqlite3"
"$PFI" predict 1 --db "$T/nobase.db" --model "$T/m.json" --json > "$T/out" || fail "predict, no base"
jq -e '.runs[0].baseline_at_default == false and (.runs[0].baseline_note |
       test("no usable level at its [0-9]+ W default limit: predicted from its [0-9]+ W level"))' \
  "$T/out" >/dev/null || fail "a capped baseline not said: $(cat "$T/out")"
"$PFI" predict 1 --db "$T/nobase.db" --model "$T/m.json" > "$T/out" || fail "predict, no base (text)"
grep -q "no usable level at its .* default limit" "$T/out" || fail "a capped baseline not said: $(cat "$T/out")"
# pfi index says it too: every figure of that run is relative to a capped job's.
"$PFI" index 1 --db "$T/nobase.db" --boot 0 > "$T/out" 2>&1 || fail "index, no base: $(cat "$T/out")"
grep -q "baseline at [0-9]* W, not the default [0-9]* W" "$T/out" || fail "index: a capped baseline not said: $(cat "$T/out")"
"$PFI" index 1 --db "$T/nobase.db" --boot 0 --json > "$T/out" || fail "index --json, no base"
jq -e '.runs[0].baseline_at_default == false' "$T/out" > /dev/null || fail "index JSON: $(cat "$T/out")"
"$PFI" index 1 --db "$T/s.db" --boot 0 --json > "$T/out" || fail "index --json"
jq -e '.runs[0].baseline_at_default == true' "$T/out" > /dev/null || fail "index JSON at the default: $(cat "$T/out")"
# One telemetry feature missing is said (it was only past half of them; the SM clock alone
# moved a PFI30 by 15%).
cp "$T/s.db" "$T/noclock.db"
sqlite3 "$T/noclock.db" "UPDATE levels SET sm_clock_mhz = NULL WHERE run_id = 1" || fail "sqlite3"
"$PFI" predict 1 --db "$T/noclock.db" --model "$T/m.json" > "$T/out" || fail "predict, no clock"
grep -q "(1 of [0-9]* telemetry features missing at the baseline" "$T/out" ||
  fail "one missing feature not said: $(cat "$T/out")"
A100="gpu_type A100-PCIE-80GB not in training (H200-SXM, H100-SXM)"
"$PFI" predict --live --backend sim --sim a100x4-gpt3xl --duration 2s --model "$T/m.json" --json > "$T/out" ||
  fail "predict --live on A100s"
jq -e --arg w "$A100" '.runs[0].extrapolated[0] == $w and .runs[0].training_range_known' "$T/out" >/dev/null ||
  fail "A100 prediction not marked: $(cat "$T/out")"
"$PFI" predict --live --backend sim --sim a100x4-gpt3xl --duration 2s --model "$T/m.json" > "$T/out" ||
  fail "predict --live on A100s (text)"
grep -qF "  (extrapolated, outside what the model was trained on: $A100" "$T/out" ||
  fail "A100 prediction not marked in text: $(cat "$T/out")"
# a feature beyond the training range is named with its value and the range
jq '.feature_range.min[5] = 0.1 | .feature_range.max[5] = 0.2' "$T/m.json" > "$T/narrow.json"
"$PFI" predict 1 --db "$T/s.db" --model "$T/narrow.json" --json > "$T/out" || fail "predict, narrow range"
jq -e '.runs[0].extrapolated | length == 1 and (.[0] | test("^sm_active 0\\.[0-9]+ outside 0\\.1-0\\.2$"))' \
  "$T/out" >/dev/null || fail "narrow sm_active range: $(jq -c '.runs[0].extrapolated' "$T/out")"
# pfi allocate --model says so too (its allocation stood on such predictions without a word)
"$PFI" allocate --db "$T/s.db" --model "$T/narrow.json" --budget cut=20% > "$T/out" 2> "$T/err" ||
  fail "allocate --model, narrow range: $(cat "$T/err")"
[ "$(grep -c "^pfi allocate: run .*: predicted outside what the model was trained on: sm_active 0\.[0-9]* outside 0\.1-0\.2$" "$T/err")" -ge 1 ] ||
  fail "allocate --model did not mark extrapolations: $(cat "$T/err")"
"$PFI" allocate --db "$T/s.db" --model "$T/m.json" --budget cut=20% > "$T/out" 2> "$T/err" ||
  fail "allocate --model: $(cat "$T/err")"
! grep -q "predicted outside" "$T/err" || fail "allocate --model marked training runs: $(cat "$T/err")"
# a file written before they were recorded (format 1 without the keys) reads, with no marks
jq 'del(.gpu_types, .feature_range)' "$T/m.json" > "$T/old.json"
"$PFI" predict --live --backend sim --sim a100x4-gpt3xl --duration 2s --model "$T/old.json" --json > "$T/out" ||
  fail "predict with a model without training ranges"
jq -e '.runs[0].extrapolated == [] and (.runs[0].training_range_known | not)' "$T/out" >/dev/null ||
  fail "old model file: $(cat "$T/out")"
# A GPU that does not answer its power limit (NOT_SUPPORTED through the real NVML path): the
# limit it enforces stands for it (it was "needs a positive baseline ... cap", exit 2).
[ -n "${PFI_FAKENVML:-}" ] && [ -f "$PFI_FAKENVML" ] || fail "PFI_FAKENVML is not built"
PFI_SIM_STATE="$T/nvml.state" "$PFI" sim init --state "$T/nvml.state" >/dev/null || fail "sim init"
PFI_SIM_STATE="$T/nvml.state" PFI_FAKENVML_FAULTS="nvmlDeviceGetPowerManagementLimit=NOT_SUPPORTED" \
  "$PFI" predict --live --backend nvml --nvml-lib "$PFI_FAKENVML" --duration 1s --model "$T/m.json" \
  --json > "$T/out" 2> "$T/err" || fail "predict --live, limit unreadable: $(cat "$T/err")"
jq -e '.runs[0].pfi30 > 0 and .runs[0].cap0_w > 0' "$T/out" >/dev/null ||
  fail "predict --live, limit unreadable: $(cat "$T/out")"

echo "it_model: ok"
