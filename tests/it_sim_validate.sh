#!/bin/sh
# The simulator against the measured Perseus power-limit sweeps (issue 2: max absolute error
# <= 0.05 in relative throughput and relative power at every measured limit, held-out runs too).
#
# What this test holds, as of the last calibration (docs/simulator.md, "Calibration"):
#   - relative power within 0.03 on every run, held out or not;
#   - relative throughput within 0.05 on every run (worst 0.045, A40 BERT held out; the A100
#     within 0.039, the A40 T5-3B fit run 0.041 of which 0.038 is its unreproducible speed-up
#     at 200-225 W), with the default fit of 3 starting points, which more starts do not
#     change; so the target is met and a miss is a failure;
#   - the fitted cluster and chip constants where the physics puts them: only the A40's runs
#     cross hosts, so only its network's spread per transfer (net_jitter) moves; the A100's
#     memory saturation clock is fitted, the A40's stays 0.3;
#   - Perseus's per-stage limits (zeus_local.csv, used by no fit) are simulated for every run
#     and held within 0.13 in throughput and 0.07 in power (now 0.123 / 0.058 at worst);
#   - the held-out worst also depends on the split (--split 1: 0.048, --split 2: 0.100);
#     docs/simulator.md.
#   - constants per model family (--family act|stall|mem|gemm|all) are fitted honestly: each
#     family on the fit runs of one GPU type only, the split unchanged.
set -u
PFI=${PFI_BIN:?PFI_BIN is not set}
DATA=${PFI_DATA_DIR:-../shared/data}
if [ ! -f "$DATA/perseus-sosp24/zeus_baseline/A40/zeus_global.csv" ]; then
    echo "skip: $DATA/perseus-sosp24 is absent (set PFI_DATA_DIR)"
    exit 77
fi
tmp=$(mktemp -d "${PFI_TEST_TMP:-${TMPDIR:-/tmp}}/it_sim_validate.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
"$PFI" sim validate --json >"$tmp/v.json"
rc=$?
# exit 0 when the target is met, 1 when missed; anything else is a failure to run at all
[ $rc -le 1 ] || { echo "FAIL: pfi sim validate exit $rc"; exit 1; }
python3 - "$tmp/v.json" "$rc" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rc = int(sys.argv[2])
bad = []
assert len(d["runs"]) >= 9, "expected the 9 Perseus transformer runs, got %d" % len(d["runs"])
for r in d["runs"]:
    name, t, p = r["run"], r["max_abs_err_throughput"], r["max_abs_err_power"]
    print("%-42s %-9s throughput %.3f  power %.3f" % (name, "held-out" if r["held_out"] else "fit", t, p))
    if p > 0.03:
        bad.append("%s: power error %.3f > 0.03" % (name, p))
    # every run within the 0.05 target (worst now 0.045, A40 BERT held out)
    bound = 0.05
    if t > bound:
        bad.append("%s: throughput error %.4f > %.2f" % (name, t, bound))
    # Perseus's per-stage limits: simulated with the fitted constants, fitted on by nothing;
    # held to where the stage model is now (docs/simulator.md: 0.041-0.123).
    ps = r.get("per_stage_limits")
    if not ps or ps["rows"] < 5:
        bad.append("%s: per-stage limit rows missing" % name)
    elif ps["max_abs_err_throughput"] > 0.13 or ps["max_abs_err_power"] > 0.07:
        bad.append("%s: per-stage limits error %.3f / %.3f" % (name, ps["max_abs_err_throughput"],
                                                              ps["max_abs_err_power"]))
met = d["target_met"]
if not met:
    bad.append("the 0.05 target is no longer met")
# Only the A40's runs cross hosts: its network's spread is fitted, the A100's stays 0.10.
gpus = {g["type"]: g for g in d["fitted_gpus"]}
if abs(gpus["A100-PCIE-80GB"]["net_jitter"] - 0.10) > 1e-9:
    bad.append("A100 net_jitter moved without an inter-host run: %s" % gpus["A100-PCIE-80GB"])
if not (0.02 <= gpus["A40"]["net_jitter"] <= 0.8 and 0.1 <= gpus["A100-PCIE-80GB"]["sat_frac"] <= 0.95
        and abs(gpus["A40"]["sat_frac"] - 0.3) < 1e-9):
    bad.append("fitted net_jitter / sat_frac out of their ranges: %s" % gpus)
if met != (rc == 0):
    bad.append("target_met=%s but exit %d" % (met, rc))
if not met:
    print("NOTE: the 0.05 target is not met (max throughput error %.3f); issue 2 stays open"
          % d["max_abs_err_throughput"])
if bad:
    print("FAIL:\n  " + "\n  ".join(bad))
    sys.exit(1)
PY
[ $? -eq 0 ] || exit 1

# Family constants: fitted with the GPU type that has a fit run of the family, never on a
# held-out run; the split (which runs are held out) is the same as without them.  What fits
# what does not depend on the search's starting points: one start keeps the test fast.
"$PFI" sim validate --json --family act --starts 1 >"$tmp/f.json"
rc=$?
[ $rc -le 1 ] || { echo "FAIL: pfi sim validate --family exit $rc"; exit 1; }
python3 - "$tmp/v.json" "$tmp/f.json" <<'PY' || exit 1
import json, sys
base = json.load(open(sys.argv[1]))
d = json.load(open(sys.argv[2]))
bad = []
role = {r["run"]: r["held_out"] for r in base["runs"]}
if {r["run"]: r["held_out"] for r in d["runs"]} != role:
    bad.append("--family changed which runs are held out")
if base.get("fitted_families") != []:
    bad.append("family constants reported without --family")
fams = d["fitted_families"]
if len(fams) < 4:
    bad.append("expected bert, bloom, gpt, t5 family constants, got %d" % len(fams))
for f in fams:
    fit = [r for r in d["runs"] if not r["held_out"] and r["gpu_type"] == f["fitted_on"]
           and ("/" + f["family"]) in r["run"]]
    if not fit:
        bad.append("family %s fitted on %r without a fit run of it there" % (f["family"], f["fitted_on"]))
    if not (0.05 <= f["act_compute"] <= 2 and 0 <= f["input_stall"] <= 0.6):
        bad.append("family %s constants out of range: %s" % (f["family"], f))
print("--family act: max throughput error %.3f (held out %.3f), power %.3f"
      % (d["max_abs_err_throughput"], d["held_out_max_abs_err_throughput"], d["max_abs_err_power"]))
if bad:
    print("FAIL:\n  " + "\n  ".join(bad))
    sys.exit(1)
PY
"$PFI" sim validate --split 3 >/dev/null 2>&1
[ $? -eq 2 ] || { echo "FAIL: --split 3 was not refused as a usage error"; exit 1; }
exit 0
