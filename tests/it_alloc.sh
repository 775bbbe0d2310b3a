#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Integration test of `pfi allocate` and `pfi evaluate` (issue 6): every policy on the example
# jobs file stays within the budget and oracle is at least as good as the others on the true
# curves; bad input is refused with a message and nothing printed on stdout; an infeasible budget
# fails with the minimum feasible budget or degrades as asked; the experiment on the public
# sweeps (skipped when they are absent) scores every policy on the true curves.
# Needs $PFI_BIN and $PFI_TEST_TMP (tests/run.sh sets them) and jq.
set -u

fail() { echo "it_alloc: FAIL: $*"; exit 1; }
[ -n "${PFI_BIN:-}" ] && [ -x "$PFI_BIN" ] || { echo "it_alloc: PFI_BIN is not set"; exit 1; }
command -v jq >/dev/null || { echo "it_alloc: jq is missing (scripts/install-deps.sh test)"; exit 77; }
dir=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/it_alloc.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
here=$(cd "$(dirname "$0")/.." && pwd)
jobs="$here/docs/examples/jobs.json"

# -- every policy, budget as a share and in watts
for budget in 70% 9kW 11000W; do
  for p in equal pfi oracle proportional-to-pfi; do
    "$PFI_BIN" allocate --jobs "$jobs" --budget "$budget" --policy "$p" --json >"$dir/$p.json" \
      2>"$dir/err" || fail "allocate $p $budget: $(cat "$dir/err")"
    jq -e '.power_w <= .budget_w * (1 + 1e-12)' "$dir/$p.json" >/dev/null ||
      fail "$p at $budget: power over budget"
    jq -e '[.jobs[] | .cap_w * .gpus] | add <= 1e-9 + (input | .budget_w)' "$dir/$p.json" \
      "$dir/$p.json" >/dev/null || fail "$p at $budget: caps sum over budget"
    jq -e '.jobs | length == 3' "$dir/$p.json" >/dev/null || fail "$p: not 3 jobs"
  done
  jq -e '.optimal == true' "$dir/oracle.json" >/dev/null || fail "oracle not proven optimal"
  best=$(jq '.objective_true' "$dir/oracle.json")
  for p in equal pfi proportional-to-pfi; do
    jq -e --argjson b "$best" '.objective_true <= $b * (1 + 1e-9)' "$dir/$p.json" >/dev/null ||
      fail "$p beats oracle on the true curves at $budget"
  done
done
# the human table names the budget and the policy
"$PFI_BIN" allocate --jobs "$jobs" --budget 70% --policy oracle >"$dir/table" ||
  fail "allocate table"
grep -q "policy oracle: power" "$dir/table" || fail "no summary line: $(cat "$dir/table")"

# ids that differ only past the 32nd character stay apart in the table (the public store's
# zeus-nsdi/A40/shufflenetv2 cifar100 bs1024 / bs128 ... all read the same when cut at 32), and
# the columns stay aligned (the gpus column ends at the same place on every line); an id longer
# than 64 keeps its head and tail around "..."; with ids of 32 characters or less the header is
# as before
C='"curve": {"cap_w": [200, 400], "tput": [1, 2]}'
L=zeus-nsdi/A40/shufflenetv2-cifar100-bs
X=$(printf 'x%.0s' $(seq 1 80))
printf '{"jobs": [{"id": "%s1024-adadelta", "gpus": 1, %s}, {"id": "%s128-adadelta", "gpus": 2, %s},
 {"id": "short", "gpus": 3, %s}, {"id": "%s-tail", "gpus": 4, %s}]}\n' "$L" "$C" "$L" "$C" "$C" "$X" "$C" \
  >"$dir/long.json"
"$PFI_BIN" allocate --jobs "$dir/long.json" --budget 70% --policy oracle >"$dir/ltable" ||
  fail "allocate table of long ids"
grep -q "^${L}1024-adadelta " "$dir/ltable" && grep -q "^${L}128-adadelta " "$dir/ltable" ||
  fail "long ids cut: $(cat "$dir/ltable")"
grep -q '^x*\.\.\.x*-tail ' "$dir/ltable" || fail "an id over 64 characters: $(cat "$dir/ltable")"
awk 'NR == 1 { e = index($0, "gpus") + 3 } NR > 1 && NR <= 5 {
    if (substr($0, e, 1) !~ /[0-9]/ || substr($0, e + 1, 1) != " ") bad = 1 } END { exit bad }' \
  "$dir/ltable" || fail "the gpus column is not aligned: $(cat "$dir/ltable")"
"$PFI_BIN" allocate --jobs "$jobs" --budget 70% --policy oracle | head -1 >"$dir/h"
[ "$(cat "$dir/h")" = "$(printf '%-32s %5s %8s %8s %12s %12s  %s' job gpus cap floor tput power binding)" ] ||
  fail "the table of short ids changed: $(cat "$dir/h")"

# -- bad input: a message naming the problem, exit non-zero, nothing on stdout
bad() { # NAME EXPECTED-MESSAGE ARGS...
  name=$1 msg=$2
  shift 2
  if "$PFI_BIN" allocate "$@" >"$dir/out" 2>"$dir/err"; then fail "$name accepted"; fi
  [ -s "$dir/out" ] && fail "$name printed an allocation: $(cat "$dir/out")"
  grep -q "$msg" "$dir/err" || fail "$name: expected '$msg', got: $(cat "$dir/err")"
}
jq '.jobs[1].id = .jobs[0].id' "$jobs" >"$dir/dup.json"
bad duplicate "duplicate job id" --jobs "$dir/dup.json" --budget 70% --policy oracle
jq '.jobs[0].curve = {"cap_w": [300], "tput": [5]} | del(.jobs[0].predicted_curve)' "$jobs" \
  >"$dir/one.json"
bad one-point "one point" --jobs "$dir/one.json" --budget 70% --policy oracle
jq 'del(.jobs[2].curve) | del(.jobs[2].predicted_curve)' "$jobs" >"$dir/none.json"
bad no-curve "has no curve" --jobs "$dir/none.json" --budget 70% --policy oracle
jq 'del(.jobs[0].predicted_curve)' "$jobs" >"$dir/nopred.json"
bad pfi-without-prediction "never reads true" --jobs "$dir/nopred.json" --budget 70% --policy pfi
bad zero-budget "watts must be more than 0" --jobs "$jobs" --budget 0W --policy oracle
bad model-with-jobs "a --jobs file gives each job's curve itself" --jobs "$jobs" --model "$dir/m.json" --budget 70%
# An SLA no cap meets, relaxed: the answer in JSON (its min_budget_w, infinite, was refused by
# the JSON writer: no output at all)
printf '%s' '{"jobs":[{"id":"a","gpus":2,"t0":200,"sla_max_slowdown":0.1,"curve":{"cap_w":[100,300],"tput":[50,100]}},{"id":"b","gpus":1,"curve":{"cap_w":[100,300],"tput":[10,30]}}]}' >"$dir/unmet.json"
"$PFI_BIN" allocate --jobs "$dir/unmet.json" --budget 400W --policy oracle --on-infeasible relax-sla --json \
  >"$dir/unmet.out" 2>"$dir/unmet.err" || fail "unmet SLA relaxed: $(cat "$dir/unmet.err")"
jq -e '.min_budget_w == null and .sla_extra > 0 and .power_w <= 400' "$dir/unmet.out" >/dev/null ||
  fail "unmet SLA relaxed, JSON: $(cat "$dir/unmet.out")"
bad negative-budget "budget '-5W'" --jobs "$jobs" --budget -5W --policy oracle
bad unknown-policy "unknown policy" --jobs "$jobs" --budget 70% --policy fastest
bad no-file "no-such" --jobs "$dir/no-such.json" --budget 70% --policy oracle

# --sla ID=X for one job wins over --sla X for every job whichever comes first (a global --sla
# after it replaced it), and a job's own SLA in the file (the first job's 10%) over --sla X;
# one job, or every job, given two values is refused (one was lost)
for order in "--sla gpt-1.3b-sweep=2% --sla 50%" "--sla 50% --sla gpt-1.3b-sweep=2%"; do
  # shellcheck disable=SC2086
  "$PFI_BIN" allocate --jobs "$jobs" --budget 100% --policy oracle $order --json \
    >"$dir/slas.json" || fail "allocate $order"
  jq -e '[.jobs[] | .sla] == [0.1, 0.5, 0.02]' "$dir/slas.json" >/dev/null ||
    fail "$order: SLAs $(jq -c '[.jobs[] | .sla]' "$dir/slas.json")"
done
# --sla X for every job is the default of the jobs without an SLA of their own: a jobs file's
# sla_max_slowdown (a hard SLA) is kept; a 2% one became 50% without a word.
printf '%s' '{"jobs":[{"id":"a","gpus":2,"sla_max_slowdown":0.02,"curve":{"cap_w":[100,200],"tput":[50,100]}},{"id":"b","gpus":1,"curve":{"cap_w":[100,300],"tput":[10,90]}}]}' >"$dir/own-sla.json"
"$PFI_BIN" allocate --jobs "$dir/own-sla.json" --policy oracle --budget 600W --sla 50% --json >"$dir/own-sla.out" ||
  fail "a jobs file with an SLA of its own under --sla"
[ "$(jq -c '[.jobs[] | .sla]' "$dir/own-sla.out")" = "[0.02,0.5]" ] ||
  fail "--sla 50% changed a job's own SLA: $(jq -c '[.jobs[] | {id, sla, cap_w}]' "$dir/own-sla.out")"
"$PFI_BIN" allocate --jobs "$dir/own-sla.json" --policy oracle --budget 600W --sla a=30% --json >"$dir/own-sla.out" ||
  fail "--sla ID= over a job's own SLA"
[ "$(jq -c '[.jobs[] | .sla]' "$dir/own-sla.out")" = "[0.3,null]" ] ||
  fail "--sla a=30% did not win over the job's own: $(jq -c '[.jobs[] | .sla]' "$dir/own-sla.out")"
# The table cuts a long UTF-8 id (81 characters, 161 bytes) between characters and pads by
# characters: valid UTF-8, and every row's columns under the header's (cut by bytes, the id
# was cut inside a character; padded by bytes, each "é" took a column from the row).
python3 -c "import json; print(json.dumps({'jobs': [{'id': 'x' + chr(233) * 80, 'gpus': 2, 'curve': {'cap_w': [100, 200], 'tput': [50, 100]}}, {'id': chr(233) + 'short', 'gpus': 1, 'curve': {'cap_w': [100, 200], 'tput': [50, 100]}}]}))" >"$dir/utf8.json"
"$PFI_BIN" allocate --jobs "$dir/utf8.json" --policy oracle --budget 1000W >"$dir/utf8.out" || fail "allocate with UTF-8 ids"
iconv -f utf-8 -t utf-8 "$dir/utf8.out" >/dev/null 2>&1 || fail "the table is not UTF-8: $(head -n 3 "$dir/utf8.out")"
# the long id kept to 64 characters, both ends, and the GPU count's last digit under the
# header's "gpus" (columns counted in characters)
head -n 3 "$dir/utf8.out" | python3 -c "
import sys
lines = [l.rstrip('\\n') for l in sys.stdin]
end = lines[0].index('gpus') + 3
cut = lines[1].split()[0]
ok = len(cut) == 64 and '...' in cut and cut.endswith(chr(233) * 31)
sys.exit(0 if ok and all(len(l) > end + 1 and l[end].isdigit() and l[end + 1] == ' ' for l in lines[1:]) else 1)" ||
  fail "the columns do not line up under UTF-8 ids: $(head -n 3 "$dir/utf8.out")"
bad sla-twice "given twice" --jobs "$jobs" --budget 100% --policy oracle --sla 5% --sla 10%
bad sla-job-twice "given twice" --jobs "$jobs" --budget 100% --policy oracle \
  --sla gpt-1.3b-sweep=5% --sla gpt-1.3b-sweep=10%
# -- infeasible: minimums need 5600 W, the 10% SLA of the first job 7840 W
bad infeasible "minimum feasible budget 7840 W" --jobs "$jobs" --budget 7000W --policy oracle
bad below-minimum "5600 W" --jobs "$jobs" --budget 5000W --policy oracle --on-infeasible by-weight
"$PFI_BIN" allocate --jobs "$jobs" --budget 7000W --policy oracle --on-infeasible by-weight \
  --json >"$dir/bw.json" || fail "by-weight"
jq -e '.sla_dropped == 1 and .power_w <= 7000 and
       (.jobs[0].binding | index("sla_dropped") != null)' "$dir/bw.json" >/dev/null ||
  fail "by-weight did not drop the one SLA: $(cat "$dir/bw.json")"
"$PFI_BIN" allocate --jobs "$jobs" --budget 7000W --policy oracle --on-infeasible relax-sla \
  --sla 5% --json >"$dir/rx.json" || fail "relax-sla"
jq -e '.sla_extra > 0 and .power_w <= 7000 and
       ([.jobs[] | .binding | index("sla_relaxed") != null] | all)' "$dir/rx.json" >/dev/null ||
  fail "relax-sla: $(cat "$dir/rx.json")"
# an SLA meets its floor in every policy
for p in equal pfi oracle proportional-to-pfi; do
  "$PFI_BIN" allocate --jobs "$jobs" --budget 70% --policy "$p" --sla gpt-1.3b-sweep=2% \
    --json >"$dir/sla.json" || fail "sla $p"
  jq -e '.jobs[2].cap_w >= .jobs[2].floor_w and .jobs[2].floor_w > 200' "$dir/sla.json" \
    >/dev/null || fail "$p ignores the SLA floor: $(jq -c '.jobs[2]' "$dir/sla.json")"
done

# -- the table stays aligned at any size: 123,456 GPUs and a 13-digit throughput pushed their rows
# right, out from under the headers (the columns were fixed at 5 and 12 characters).  Each
# column's cells end where its header ends, every row (a table that fitted is unchanged: above).
jq '.jobs[0].gpus = 123456 | .jobs[0].curve.tput |= map(. * 1e8) | .jobs[1].gpus = 7' "$jobs" \
  >"$dir/big.json"
"$PFI_BIN" allocate --jobs "$dir/big.json" --budget 70% --policy oracle >"$dir/big.txt" ||
  fail "allocate on the large jobs file"
grep -q "123456 .* 8452000000000 " "$dir/big.txt" || fail "large jobs table: $(cat "$dir/big.txt")"
"$PFI_BIN" allocate --jobs "$jobs" --budget 70% --policy oracle >"$dir/small.txt" || fail "allocate"
for t in big small; do
  awk 'NR == 1 { for (i = 2; i <= 6; i++) { p = index($0, " " $i " "); e[i] = p + length($i) } }
       NR > 1 && NF >= 6 && $1 != "policy" && $1 != "total" && $1 != "budget" && $1 != "per" {
         for (i = 2; i <= 6; i++) {
           line = $0; off = 0
           for (k = 1; k < i; k++) { q = index(line, $k); off += q + length($k) - 1; line = substr($0, off + 1) }
           q = index(line, $i); end = off + q + length($i) - 1
           if (end != e[i]) { print "row " NR " column " i " ends at " end ", header at " e[i]; bad = 1 }
         } }
       END { exit bad }' "$dir/$t.txt" || fail "$t jobs table misaligned: $(cat "$dir/$t.txt")"
done

# -- per-GPU caps: measured on the simulator, allocated from the jobs file it writes
"$PFI_BIN" bench pergpu --sim h200x8-mixed,h200x8-dense --variation 0.05 --cuts 0.3 \
  --jobs-out "$dir/pg.json" --json >"$dir/pgb.json" || fail "bench pergpu"
jq -e '.cuts[0] | .pergpu_caps_w <= .budget_w and .uniform_caps_w <= .budget_w' "$dir/pgb.json" \
  >/dev/null || fail "bench pergpu over budget: $(cat "$dir/pgb.json")"
"$PFI_BIN" allocate --jobs "$dir/pg.json" --budget 70% --policy oracle --json >"$dir/uni.json" ||
  fail "allocate uniform on the per-GPU jobs"
"$PFI_BIN" allocate --jobs "$dir/pg.json" --budget 70% --policy oracle --per-gpu --json \
  >"$dir/per.json" || fail "allocate --per-gpu"
jq -e '([.jobs[] | .gpu_caps_w | add] | add) <= .budget_w + 1e-6 and
       ([.jobs[] | (.gpu_caps_w | length) == .gpus] | all)' "$dir/per.json" >/dev/null ||
  fail "per-GPU caps over budget: $(cat "$dir/per.json")"
jq -e --argjson u "$(jq .objective "$dir/uni.json")" '.objective >= $u - 1e-6' "$dir/per.json" \
  >/dev/null || fail "per-GPU caps lose to one cap per job"
# ... and each job's GPU caps add up to the power it is given, at a budget near the top too (a
# mean cap above the table's top went to watts no GPU got: 5450 W of caps for 5456 W)
"$PFI_BIN" allocate --jobs "$dir/pg.json" --budget 99% --policy oracle --per-gpu --json \
  >"$dir/per99.json" || fail "allocate --per-gpu at 99%"
for f in per per99; do
  jq -e '[.jobs[] | ((.gpu_caps_w | add) - .power_w | fabs) < 1e-6] | all' "$dir/$f.json" >/dev/null ||
    fail "$f: GPU caps do not add up to the job's power: $(jq -c '[.jobs[] | {id, power_w, caps: (.gpu_caps_w | add)}]' "$dir/$f.json")"
done
if "$PFI_BIN" allocate --jobs "$jobs" --budget 70% --policy oracle --per-gpu >"$dir/out" 2>"$dir/err"; then
  fail "--per-gpu without tables accepted"
fi
grep -q "per_gpu" "$dir/err" || fail "--per-gpu without tables: $(cat "$dir/err")"
# a table whose slowest GPU holds one clock at every cap: the GPU and the cause are named (it
# said "its curve has one point", no GPU, no reason)
jq '.jobs[0].per_gpu.clock_mhz[1] |= map(300)' "$dir/pg.json" >"$dir/flat.json"
"$PFI_BIN" allocate --jobs "$dir/flat.json" --budget 70% --policy oracle --per-gpu >"$dir/out" 2>"$dir/err"
[ $? -eq 2 ] || fail "a flat per-GPU table: exit not 2: $(cat "$dir/err")"
grep -q "per_gpu table GPU 1 holds 300 MHz at every cap from .* the slowest clock at each" "$dir/err" ||
  fail "a flat per-GPU table: $(cat "$dir/err")"

# Caps off the watt are shown as they are: a 0.1 W cap on a 0.01 W grid read "0W"
echo '{"jobs":[{"id":"a","gpus":1,"curve":{"cap_w":[0.05,0.1],"tput":[1,2]}}]}' >"$dir/subw.json"
"$PFI_BIN" allocate --jobs "$dir/subw.json" --budget 1W --step 0.01 --policy oracle >"$dir/subw.out" ||
    fail "a sub-watt allocation failed"
grep -q '^a  *1  *0.1W  *0.05W ' "$dir/subw.out" || fail "sub-watt caps: $(cat "$dir/subw.out")"

# -- the experiment on the public sweeps
data=${PFI_DATA_DIR:-$here/../shared/data}

if [ -d "$data/perseus-sosp24" ]; then
  "$PFI_BIN" evaluate --public --cuts 0.1,0.2,0.3,0.5 \
    --policies equal,pfi,oracle,proportional-to-pfi --json >"$dir/ev.json" 2>"$dir/err" ||
    fail "evaluate --public: $(cat "$dir/err")"
  jq -e '.jobs > 200 and .unit == "GPU-weighted relative throughput"' "$dir/ev.json" \
    >/dev/null || fail "evaluate: population $(jq -c '{jobs, unit}' "$dir/ev.json")"
  jq -e '[.cuts[] | select(.infeasible | not) | .policies as $p |
          ($p.oracle.total_throughput >= $p.equal.total_throughput - 1e-9) and
          ($p.oracle.total_throughput >= $p.pfi.total_throughput - 1e-9) and
          ($p["proportional-to-pfi"].total_throughput <= $p.oracle.total_throughput + 1e-9) and
          ($p.pfi | has("gap_recovered"))] | all' "$dir/ev.json" >/dev/null ||
    fail "evaluate: oracle is not the best on the true curves: $(cat "$dir/ev.json")"
  jq -e '[.cuts[] | select(.infeasible | not) | .budget_w as $b | .policies[] |
          .power_w <= $b * (1 + 1e-12)] | all' "$dir/ev.json" >/dev/null ||
    fail "evaluate: a policy over budget"
  # --per-job's list has its own key; jobs stays the count (it became the list)
  "$PFI_BIN" evaluate --public --cuts 0.3,0.5 --per-job --json >"$dir/pj.json" 2>"$dir/err" ||
    fail "evaluate --per-job: $(cat "$dir/err")"
  jq -e '(.jobs | type) == "number" and (.per_job | length) == .jobs' "$dir/pj.json" >/dev/null ||
    fail "evaluate --per-job: jobs $(jq -c '.jobs | type' "$dir/pj.json"), per_job $(jq -c '.per_job | length' "$dir/pj.json")"
  # an infeasible cut's watts with separators, as the study writes them
  "$PFI_BIN" evaluate --public --cuts 0.5 >"$dir/inf.txt" 2>"$dir/err" || fail "evaluate 50%: $(cat "$dir/err")"
  grep -q "infeasible: budget [0-9]\{1,3\}\(,[0-9]\{3\}\)\+ W is below the [0-9]\{1,3\}\(,[0-9]\{3\}\)\+ W" "$dir/inf.txt" ||
    fail "evaluate, an infeasible cut: $(grep infeasible "$dir/inf.txt")"
  jq -e '.cuts[3].infeasible == true and .cuts[3].min_budget_w > .cuts[3].budget_w' \
    "$dir/ev.json" >/dev/null || fail "evaluate: a 50% cut should be infeasible on these runs"
  # The default setting was chosen on these curves: said in sample (it read as held out);
  # another setting, or another population, is not flagged.
  jq -e '.setting_in_sample == true' "$dir/ev.json" >/dev/null ||
    fail "evaluate --public: not said in sample: $(jq -c .setting_in_sample "$dir/ev.json")"
  # Perseus alone reproduces the reference: oracle beats equal by about 1.1% at a 20% cut
  "$PFI_BIN" evaluate --public --source perseus --cuts 0.2 --json >"$dir/ps.json" ||
    fail "evaluate perseus"
  jq -e '.cuts[0].policies as $p | ($p.oracle.total_throughput / $p.equal.total_throughput - 1)
         | (. > 0.007 and . < 0.015)' "$dir/ps.json" >/dev/null ||
    fail "evaluate perseus: oracle gain $(jq '.cuts[0].policies' "$dir/ps.json")"
  # one probe read through a committee of shapes: within the budget, and says what it saw
  "$PFI_BIN" evaluate --public --source perseus --cuts 0.3 --set committee=1 --set group-out=1 --json \
    >"$dir/pc.json" 2>"$dir/err" || fail "evaluate --committee: $(cat "$dir/err")"
  jq -e '(.prediction | test("mean over .* OTHER job groups|OTHER job groups.*mean over")) and
         ([.cuts[0].budget_w as $b | .cuts[0].policies[] | .power_w <= $b * (1 + 1e-12)] | all)' \
    "$dir/pc.json" >/dev/null || fail "evaluate --committee: $(cat "$dir/pc.json")"
  jq -e '.setting_in_sample == false' "$dir/pc.json" >/dev/null ||
    fail "evaluate --set committee=1: flagged in sample"
  for a in "--set tier-gpus=2" "--set committee=3" "--set probe-k=0" "--set draw-weight=-2"; do
    # shellcheck disable=SC2086
    if "$PFI_BIN" evaluate --public --cuts 0.3 $a >"$dir/out" 2>"$dir/err"; then
      fail "evaluate $a accepted"
    fi
    grep -q "probe-k\|draw-weight\|committee\|tier-gpus" "$dir/err" || fail "evaluate $a: $(cat "$dir/err")"
  done
  # a store as jobs: oracle on the measured curves, pfi on a model's predictions
  "$PFI_BIN" import all --db "$dir/p.db" >/dev/null 2>&1 || fail "import all"
  # The same public curves through a store are in sample too (it was said for --public only).
  "$PFI_BIN" evaluate --db "$dir/p.db" --cuts 0.3 --json >"$dir/evdb.json" || fail "evaluate --db"
  jq -e '.setting_in_sample == true' "$dir/evdb.json" >/dev/null ||
    fail "evaluate --db on the imported public sweeps: not said in sample"
  [ "$(jq -c '.cuts[0].policies.pfi.gap_recovered' "$dir/evdb.json")" = "$(jq -c '.cuts[2].policies.pfi.gap_recovered' "$dir/ev.json")" ] ||
    fail "evaluate --db and --public differ on the same curves"
  # (a model of the simulated fleet: the public sweeps have no baseline telemetry to train on)
  "$PFI_BIN" model train --db "$dir/p.db" --out "$dir/m.json" >/dev/null 2>&1 &&
    fail "model train on the public sweeps (no telemetry) accepted"
  "$PFI_BIN" model train --fleet small --out "$dir/m.json" >/dev/null 2>&1 || fail "model train"
  "$PFI_BIN" allocate --db "$dir/p.db" --budget 75% --policy oracle --json >"$dir/db.json" \
    2>/dev/null || fail "allocate --db"
  "$PFI_BIN" allocate --db "$dir/p.db" --model "$dir/m.json" --budget 75% --policy pfi --json \
    >"$dir/dbp.json" 2>/dev/null || fail "allocate --db --model"
  jq -e --argjson o "$(jq .total_tput_true "$dir/db.json")" \
    '.power_w <= .budget_w and .total_tput_true <= $o + 1e-9' "$dir/dbp.json" >/dev/null ||
    fail "allocate --db: pfi beats oracle or breaks the budget"
  bad db-pfi-without-model "model" --db "$dir/p.db" --budget 75% --policy pfi
else
  # The rest passed, but a part that did not run must not read as a pass.
  echo "it_alloc: the rest ok; public data absent at $data: evaluate part skipped"
  exit 77
fi
echo "it_alloc: ok"
