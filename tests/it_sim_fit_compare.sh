#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# scripts/sim-fit-compare.py: the largest relative change of fitted constants and simulated
# outputs between two `pfi sim validate --json` documents, and its bounds.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
CMP="$top/scripts/sim-fit-compare.py"
T=$(mktemp -d "${PFI_TEST_TMP:-${TMPDIR:-/tmp}}/it_sim_fit_compare.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT INT TERM
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# A document of the validation's shape; argv: output file, then key=value changes.
python3 - "$T/a.json" <<'PY' || exit 1
import json, sys
run = {"run": "perseus/A100/bloom-3b dp1tp1pp4", "held_out": False,
       "max_abs_err_throughput": 0.02, "max_abs_err_power": 0.01,
       "sim_power_w_at_max": 250.0, "sim_step_s_at_max": 12.5,
       "levels": [{"limit_w": 300.0, "sim_throughput": 1.0, "sim_power": 1.0,
                   "meas_throughput": 1.0, "meas_power": 1.0},
                  {"limit_w": 200.0, "sim_throughput": 0.8, "sim_power": 0.7,
                   "meas_throughput": 0.79, "meas_power": 0.71}]}
gpu = {"type": "A100-PCIE-80GB", "dyn_w": 400.0, "busy_static_w": 0.0, "gemm_eff": 0.5}
doc = {"splits": [{"runs": [run], "fitted_gpus": [gpu]}, {"runs": [run], "fitted_gpus": [gpu]}]}
json.dump(doc, open(sys.argv[1], "w"))
PY
change() { # change OUT PYTHON-STATEMENT-ON-d
    python3 - "$T/a.json" "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
exec(sys.argv[3])
json.dump(d, open(sys.argv[2], "w"))
PY
}

out=$(python3 "$CMP" "$T/a.json" "$T/a.json" --max-const 0 --max-out 0); rc=$?
[ $rc -eq 0 ] || fail "identical documents: exit $rc"
echo "$out" | grep -q 'fields compared 18, differing 0' || fail "identical: $out"

change "$T/c.json" 'd["splits"][1]["fitted_gpus"][0]["dyn_w"] = 400.0 * (1 + 2e-4)'
out=$(python3 "$CMP" "$T/a.json" "$T/c.json" --max-const 1e-4); rc=$?
[ $rc -eq 1 ] || fail "a constant moved 2e-4 with --max-const 1e-4: exit $rc"
echo "$out" | grep -q 'constants largest relative change 0.0002 (split 1 A100-PCIE-80GB dyn_w)' ||
    fail "the moved constant is named: $out"
python3 "$CMP" "$T/a.json" "$T/c.json" --max-const 1e-3 >/dev/null || fail "within --max-const 1e-3"

change "$T/o.json" 'd["splits"][0]["runs"][0]["levels"][1]["sim_power"] = 0.7 * (1 + 2e-5)'
out=$(python3 "$CMP" "$T/a.json" "$T/o.json" --max-const 0 --max-out 1e-5); rc=$?
[ $rc -eq 1 ] || fail "an output moved 2e-5 with --max-out 1e-5: exit $rc"
echo "$out" | grep -q 'outputs   largest relative change 2e-05 (split 0 .* sim_power at 200 W)' ||
    fail "the moved output is named: $out"
echo "$out" | grep -q 'constants largest relative change 0$' || fail "constants unchanged: $out"

# A constant at a bound of 0 that moves by 1e-11 has not moved; by 1e-9 it has.
change "$T/z.json" 'd["splits"][0]["fitted_gpus"][0]["busy_static_w"] = 1e-11'
python3 "$CMP" "$T/a.json" "$T/z.json" --max-const 1e-4 >/dev/null || fail "1e-11 at 0 counts as unchanged"
change "$T/z.json" 'd["splits"][0]["fitted_gpus"][0]["busy_static_w"] = 1e-9'
python3 "$CMP" "$T/a.json" "$T/z.json" --max-const 1e-4 >/dev/null && fail "1e-9 at 0 counts as a change"

# Error figures are never compared or printed.
change "$T/e.json" 'd["splits"][0]["runs"][0]["max_abs_err_throughput"] = 0.5'
out=$(python3 "$CMP" "$T/a.json" "$T/e.json" --max-const 0 --max-out 0) || fail "an error figure moved: $out"
echo "$out" | grep -q 'err' && fail "an error figure printed: $out"

# Bad input: a clear message and exit 2.
echo '{"runs": []}' > "$T/bad.json"
python3 "$CMP" "$T/a.json" "$T/bad.json" >/dev/null 2>"$T/err"; rc=$?
[ $rc -eq 2 ] || fail "not a validation document: exit $rc"
grep -q 'cannot read a `pfi sim validate --json` document' "$T/err" || fail "message: $(cat "$T/err")"
python3 "$CMP" "$T/a.json" "$T/missing.json" >/dev/null 2>&1; [ $? -eq 2 ] || fail "a missing file: exit 2"

[ $fails -eq 0 ] && echo "it_sim_fit_compare: PASS" || exit 1
