#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Integration test of the index, the predictor and probe estimation through the pfi binary:
# pfi help index, pfi index on the public sweeps, pfi model train/eval/probe-eval, pfi predict.
set -u
PFI=${PFI_BIN:?PFI_BIN not set}
T=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/it_pfi.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# First number after "KEY": in a JSON document on stdin.
num() { grep -m1 "\"$1\":" | sed 's/.*": *\([-0-9.eE+]*\).*/\1/'; }
between() { awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v != "" && v + 0 >= lo && v + 0 <= hi) }'; }

"$PFI" help index > "$T/help" || fail "pfi help index exited $?"
grep -q "pfi's definition" "$T/help" || fail "help index does not say it is pfi's definition"
grep -q "PFI(r)" "$T/help" || fail "help index has no PFI(r)"
"$PFI" help nosuchtopic 2> "$T/err" && fail "unknown help topic accepted"
grep -q "no topic" "$T/err" || fail "unknown topic message: $(cat "$T/err")"

# Without a store: a clear message and a failure status.
"$PFI" index --db "$T/none.db" 2> "$T/err" && fail "index on a missing store succeeded"
grep -q "no store" "$T/err" || fail "missing store message: $(cat "$T/err")"
"$PFI" index --public --depth 1.5 2> /dev/null; [ $? -eq 2 ] || fail "--depth 1.5 is not a usage error"
# The hint of a missing or empty store names only options the command takes: pfi model
# train, eval and probe-eval said "or pass --public", which none of them takes.
: > "$T/empty.db"
for c in "index" "model train" "model eval" "model probe-eval"; do
  "$PFI" $c --help > "$T/help" || fail "pfi $c --help exited $?"
  for db in none empty; do
    "$PFI" $c --db "$T/$db.db" > /dev/null 2> "$T/err" && fail "pfi $c on the $db store succeeded"
    grep -q "no store\|no runs" "$T/err" || fail "pfi $c, $db store: $(cat "$T/err")"
    grep -q -- "--[a-z]" "$T/err" || fail "pfi $c, $db store: no option named: $(cat "$T/err")"
    for o in $(grep -o -- "--[a-z][a-z-]*" "$T/err"); do
      grep -q -- "^  $o " "$T/help" || fail "pfi $c, $db store, names $o it does not take: $(cat "$T/err")"
    done
  done
done

# The rest needs the simulated fleet only...
"$PFI" model train --fleet small --out "$T/m.json" > "$T/train" || fail "model train exited $?"
grep -q '"pfi_model": "curve"' "$T/m.json" || fail "model file is not a pfi model"
ls "$T"/m.json.tmp.* >/dev/null 2>&1 && fail "model train left its temporary file"
# A model that cannot be written says why (it said only "cannot write the model to PATH"), and
# the one already there is kept whole.
cp "$T/m.json" "$T/m.keep"
mkdir "$T/dir.json"
"$PFI" model train --fleet small --out "$T/dir.json" >/dev/null 2>"$T/err" && fail "model written over a folder"
grep -qF "cannot write the model to $T/dir.json: Is a directory" "$T/err" || fail "model train into a folder: $(cat "$T/err")"
"$PFI" model train --fleet small --out "$T/no/such/m.json" >/dev/null 2>"$T/err" && fail "model written nowhere"
grep -qF "No such file or directory" "$T/err" || fail "model train into a missing folder: $(cat "$T/err")"
cmp -s "$T/m.json" "$T/m.keep" || fail "the model file changed"
"$PFI" predict --live --backend sim --duration 2s --model "$T/m.json" --json > "$T/pred" ||
  fail "predict --live exited $?"
v=$(num pfi30 < "$T/pred"); between "$v" 0.05 2 || fail "live predicted pfi30 '$v'"
# What the predictor reads is a job at the GPUs' default limit: idle GPUs (PFI30 1.13) and a job
# already capped (0.93 at every depth, 0.48 at its default limit) are refused, exit 1, nothing
# printed; --allow-capped predicts the capped one, marked.
"$PFI" predict --live --backend sim --sim h200x8-idle --duration 2s --model "$T/m.json" >"$T/out" 2>"$T/err"
[ $? -eq 1 ] && [ ! -s "$T/out" ] && grep -q "no job seems to run on the GPUs" "$T/err" ||
  fail "predict --live on idle GPUs: $(cat "$T/out" "$T/err")"
"$PFI" sim init --state "$T/capped.sim" --sim h200x8-dense >/dev/null || fail "sim init"
"$PFI" sim set --state "$T/capped.sim" --cap 420 >/dev/null || fail "sim set"
PFI_SIM_STATE="$T/capped.sim" "$PFI" predict --live --backend sim --duration 2s --model "$T/m.json" >"$T/out" 2>"$T/err"
[ $? -eq 1 ] && [ ! -s "$T/out" ] && grep -q "the GPUs are at 420 W, not their default 700 W" "$T/err" ||
  fail "predict --live on capped GPUs: $(cat "$T/out" "$T/err")"
PFI_SIM_STATE="$T/capped.sim" "$PFI" predict --live --backend sim --duration 2s --model "$T/m.json" --allow-capped --json >"$T/out" ||
  fail "predict --live --allow-capped"
grep -q '"baseline_at_default": false' "$T/out" || fail "a capped baseline is not marked: $(cat "$T/out")"
# --duration, --gpus and the backend's options sample a live job: without --live they were
# silently dropped; now a usage error that does nothing.  With --live, --duration is bounded at
# 1h (it was unbounded).
for o in "--duration 5s" "--gpus 0" "--backend sim" "--sim h200x8-dense" "--nvml-lib x.so" "--read-only"; do
  "$PFI" predict 1 --public $o --model "$T/m.json" > "$T/out" 2> "$T/err"
  [ $? -eq 2 ] || fail "predict RUN $o without --live: exit not 2: $(cat "$T/err")"
  [ -s "$T/out" ] && fail "predict RUN $o without --live printed: $(cat "$T/out")"
  grep -q -- "${o% *} is for sampling a live job (--live)" "$T/err" || fail "predict RUN $o: $(cat "$T/err")"
done
"$PFI" predict --live --backend sim --duration 3601s --model "$T/m.json" > "$T/out" 2> "$T/err"
[ $? -eq 2 ] && [ ! -s "$T/out" ] || fail "predict --live --duration 3601s: $(cat "$T/err")"
grep -q "maximum of 1h" "$T/err" || fail "predict --duration over the maximum: $(cat "$T/err")"
"$PFI" predict --live --backend sim --duration 1h --model "$T/m.json" > "$T/out" 2> "$T/err" ||
  fail "predict --live --duration 1h (the maximum) exited $?: $(cat "$T/err")"
"$PFI" predict --help | grep -q -- "--duration D .*at most 1h" || fail "predict --help states no maximum"
echo '{"pfi_model": "curve", "format": 99}' > "$T/bad.json"
"$PFI" predict --live --backend sim --duration 1s --model "$T/bad.json" 2> "$T/err" &&
  fail "predict accepted a bad model file"
grep -q "format 99" "$T/err" || fail "bad model message: $(cat "$T/err")"
# a model file that is not JSON is bad input (exit 2, with its line), as one that is not a
# model is (it exited 1, "cannot read", as for a missing file); a missing file exits 1
printf '{"pfi_model": "curve",' > "$T/cut.json"
"$PFI" predict --live --backend sim --duration 1s --model "$T/cut.json" 2> "$T/err"
[ $? -eq 2 ] && grep -q "cut.json:1: " "$T/err" || fail "a cut model file: $(cat "$T/err")"
"$PFI" predict --live --backend sim --duration 1s --model "$T/none.json" 2> "$T/err"
[ $? -eq 1 ] && grep -q "cannot read model" "$T/err" || fail "a missing model file: $(cat "$T/err")"
"$PFI" model eval --fleet small --json > "$T/eval" || fail "model eval exited $?"
for k in lojo_mae_pfi30 lojo_r2_pfi30 transfer_h200_to_h100_mae_pfi30 \
         transfer_h100_to_h200_mae_pfi30 importance; do
  grep -q "\"$k\"" "$T/eval" || fail "model eval JSON lacks $k"
done
v=$(num lojo_mae_pfi30 < "$T/eval"); between "$v" 0 0.5 || fail "lojo_mae_pfi30 '$v'"
# Scored against PFI30 as measured (pfi index's headline, runs whose sweep reaches a 30% shed),
# not the fit each run trains on: the reference's mean is the mean of pfi index's headlines.
"$PFI" index --fleet small --boot 0 --json > "$T/index" || fail "pfi index --fleet small"
python3 - "$T/eval" "$T/index" <<'PY' || fail "model eval is not scored against pfi index's headline"
import json, sys
ev, ix = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
head = [r["pfi30"] for r in ix["runs"] if r.get("pfi30_extrapolated") is False]
assert abs(ev["mean_pfi30"] - sum(head) / len(head)) < 1e-9, (ev["mean_pfi30"], head)
assert ev["lojo"]["n"] == len(head), (ev["lojo"]["n"], len(head))
assert ev["lojo_on_fit"]["n"] == ev["n_runs"], ev["lojo_on_fit"]
assert ev["lojo_mae_pfi30_on_fit"] > 0 and ev["lojo_mae_pfi30_on_fit"] != ev["lojo_mae_pfi30"], ev
PY
# importance: groups of standardized features permuted together, each run predicted by a
# model that never saw its job (not one feature at a time on the model that trained on it)
python3 - "$T/eval" <<'PY' || fail "model eval importance is not grouped and held out"
import json, sys
im = json.load(open(sys.argv[1]))["importance"]
assert im["method"] == "grouped permutation, held out", im
feats = [f for g in im["groups"] for f in g["features"]]
assert len(feats) == len(set(feats)) == 19, feats  # a partition of the features
assert im["mae_unpermuted"] > 0 and im["repeats"] >= 10 and 0 < im["corr_threshold"] < 1, im
PY
"$PFI" model eval --fleet small > "$T/eval.txt" 2>/dev/null || fail "model eval (text) exited $?"
grep -q "grouped permutation importance, held out" "$T/eval.txt" &&
  grep -q "caveat: this is what this fitted model uses" "$T/eval.txt" ||
  fail "model eval text lacks the grouped importance and its caveat: $(cat "$T/eval.txt")"

# ...and this part the public measured sweeps.
if [ ! -f "${PFI_DATA_DIR:-../shared/data}/perseus-sosp24/zeus_baseline/A40/zeus_global.csv" ]; then
  echo "public data not found under ${PFI_DATA_DIR:-../shared/data}: index and probe-eval checks skipped"
  exit 77
fi
# pfi predict's table: run names that differ past the 52nd character stay apart (two public
# runs, bs128 and bs16, read the same cut at 52), the columns line up under the header, and a
# run that does not exist leaves stdout empty (the header was printed before the error)
B="zeus-nsdi/RTX6000/bert_base_uncased sentiment140 bs"
"$PFI" predict --public --model "$T/m.json" "${B}128 adamw" "${B}16 adamw" > "$T/ptab" ||
  fail "predict of two public runs exited $?"
grep -q "^${B}128 adamw " "$T/ptab" && grep -q "^${B}16 adamw " "$T/ptab" ||
  fail "predict cut the run names: $(cat "$T/ptab")"
awk 'NR == 1 { e = index($0, "0.50") + 3 } NR > 1 && !/^  \(/ {
    if (substr($0, e, 1) !~ /[0-9]/ || substr($0, e + 1, 1) != " ") bad = 1 } END { exit bad }' \
  "$T/ptab" || fail "predict columns not under the header: $(cat "$T/ptab")"
"$PFI" predict --public --model "$T/m.json" "no such run" > "$T/ptab" 2>/dev/null &&
  fail "predict of a missing run succeeded"
[ ! -s "$T/ptab" ] || fail "predict of a missing run wrote to stdout: $(cat "$T/ptab")"
# predict's "measured PFI30" is pfi index's headline (the interpolation where the sweep reaches
# 0.30, else the fit marked as an extrapolation), not the fit's value: gpt3-2.7b read 0.554 (the
# fit) beside index's 0.506, and t5-3b's extrapolated 0.740 was not marked
for R in "perseus/A40/gpt3-2.7b dp1tp1pp8" "perseus/A40/t5-3b dp1tp1pp8"; do
  "$PFI" index --public --boot 0 --json "$R" > "$T/hidx" || fail "index $R exited $?"
  "$PFI" predict --public --model "$T/m.json" --json "$R" > "$T/hpred" || fail "predict $R exited $?"
  jq -e --slurpfile i "$T/hidx" '.runs[0] as $p | $i[0].runs[0] as $x |
      $p.measured_pfi30 == $x.pfi30 and $p.measured_pfi30_extrapolated == $x.pfi30_extrapolated
      and $p.measured_pfi30_source == $x.pfi30_source' "$T/hpred" >/dev/null ||
    fail "predict's measured PFI30 of $R is not index's: $(cat "$T/hpred")"
done
jq -e '.runs[0].measured_pfi30_extrapolated' "$T/hpred" >/dev/null || fail "t5-3b's PFI30 not extrapolated"
"$PFI" predict --public --model "$T/m.json" "perseus/A40/t5-3b dp1tp1pp8" > "$T/ptab" ||
  fail "predict t5-3b exited $?"
grep -q "^perseus/A40/t5-3b .* 0\.[0-9]*\*$" "$T/ptab" && grep -q "^  (\*: " "$T/ptab" ||
  fail "predict does not mark t5-3b's extrapolated PFI30: $(cat "$T/ptab")"
# a run named twice (by name, or by id and name) is indexed once
"$PFI" index --public --boot 0 --json "perseus/A40/gpt3-2.7b dp1tp1pp8" 8 "perseus/A40/gpt3-2.7b dp1tp1pp8" > "$T/idx2" ||
  fail "index of a run named twice exited $?"
[ "$(grep -c '"run": ' "$T/idx2")" -eq 1 ] && grep -q '"n_runs": 1,' "$T/idx2" ||
  fail "a run named twice was indexed $(grep -c '"run": ' "$T/idx2") times"
"$PFI" index --public --json "perseus/A40/gpt3-2.7b dp1tp1pp8" > "$T/idx" || fail "index exited $?"
p=$(num pfi30 < "$T/idx"); lo=$(num pfi30_lo < "$T/idx"); hi=$(num pfi30_hi < "$T/idx")
between "$p" 0.45 0.65 || fail "gpt3-2.7b PFI30 '$p' (measured ~0.55)"
between "$lo" 0 "$p" || fail "pfi30_lo '$lo' above pfi30 '$p'"
between "$hi" "$p" 2 || fail "pfi30_hi '$hi' below pfi30 '$p'"
# --depth's own line: "-" where the depth is left out (beyond the run's deepest measured shed,
# without --extrapolate) and no interval without a bootstrap; never "nan".
R="perseus/A100-PCIE-80GB/bert-huge-uncased dp1tp1pp4" # deepest measured shed 0.39
"$PFI" index --public --boot 0 --depth 0.6 "$R" > "$T/deep" || fail "index --depth 0.6 exited $?"
grep -q "^  PFI at 0.60: - (beyond the deepest measured shed 0.3[0-9]; --extrapolate reads the fit)$" "$T/deep" ||
  fail "index --depth 0.6 beyond the measured shed: $(cat "$T/deep")"
"$PFI" index --public --boot 0 --depth 0.6 --extrapolate "$R" > "$T/deep" || fail "index --extrapolate exited $?"
grep -q "^  PFI at 0.60: [0-9.]* (fit, extrapolated)$" "$T/deep" || fail "index --extrapolate --boot 0: $(cat "$T/deep")"
"$PFI" index --public --boot 50 --depth 0.2 "$R" > "$T/deep" || fail "index --depth 0.2 exited $?"
grep -q "^  PFI at 0.20: [0-9.]* \[[0-9.]*-[0-9.]*\]$" "$T/deep" || fail "index --depth 0.2: $(cat "$T/deep")"
for k in '"0.3":' shed_at_slowdown '"0.05":'; do
  grep -q "$k" "$T/idx" || fail "index JSON lacks $k"
done
# on a terminal (script): progress on stderr, the table on stdout free of it
command -v script >/dev/null 2>&1 || fail "script (util-linux) missing: progress on a terminal not tested"
script -qec "\"$PFI\" index --public >\"$T/all\"" "$T/tty" >/dev/null 2>&1 || fail "index of every public run on a terminal"
grep -q 'COMMAND_EXIT_CODE="0"' "$T/tty" || fail "index of every public run exited non-zero"
grep -q "pfi index: computing PFI curves [0-9]*/[0-9]* (" "$T/tty" || fail "no progress line from pfi index on a terminal"
! grep -q "$(printf '\r')" "$T/all" && ! grep -q "computing PFI curves" "$T/all" || fail "progress on stdout of pfi index"
n=$(sed -n 's/^\([0-9]*\) of \([0-9]*\) runs indexed.*/\1/p' "$T/all")
between "$n" 100 100000 || fail "only '$n' public runs indexed"
grep -q "cap never bound" "$T/all" || fail "no flat (NCF-like) run flagged"
# ...and in JSON, as many as the table says (it could only be told from fit.params[0] == 0).
"$PFI" index --public --boot 0 --json > "$T/allj" || fail "index --public --json exited $?"
[ "$(jq '[.runs[] | select(.never_bound == true)] | length' "$T/allj")" = "$(grep -c "cap never bound" "$T/all")" ] ||
  fail "never_bound in JSON: $(jq '[.runs[] | select(.never_bound == true)] | length' "$T/allj"), table: $(grep -c "cap never bound" "$T/all")"
"$PFI" index --public --compare-families --json > "$T/fam" || fail "compare-families exited $?"
grep -q '"rmse_lolo_interpolation"' "$T/fam" || fail "compare-families JSON"
"$PFI" model probe-eval --json > "$T/probe" || fail "probe-eval exited $?"
v=$(num median_abs_err_70 < "$T/probe"); between "$v" 0 0.05 || fail "1-probe median err at 70% '$v'"
"$PFI" model probe-eval --probes 2 --json > "$T/probe2" || fail "probe-eval --probes 2 exited $?"
grep -q '"max_abs_err_60"' "$T/probe2" || fail "probe-eval JSON lacks max_abs_err_60"
echo "ok"
