#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The simulator against the measured Perseus power-limit sweeps (max absolute error <= 0.05 in
# relative throughput and relative power at every measured limit, held-out runs too).
#
# Every bound below has a reason that is not the simulator's own output:
#   - relative throughput and relative power within the 0.05 target on every run, held out or
#     not (the target of the simulator, docs/simulator.md); a miss is a failure;
#   - Perseus's per-stage limits (zeus_local.csv, used by no fit): the stage model must explain
#     more than a reading of the measured global sweep can: its throughput error, averaged over
#     the runs, below that of reading the global sweep at the lowest stage limit (the pace if
#     every stage were as heavy as the heaviest), computed here from the data; power within
#     twice the target (0.10): these rows have no target of their own;
#   - a constant with no data to move it stays put: only the A40's runs cross hosts, so the
#     A100's network spread per transfer (net_jitter) keeps its prior 0.10; fitted constants
#     stay inside their physical ranges;
#   - constants per model family (--family act|stall|mem|gemm|all) are fitted honestly: each
#     family on the fit runs of one GPU type only, the split unchanged;
#   - the headline is the worst held-out error over every fixed split (`worst_over_splits`);
#     the 0.05 target is held run by run on the documented split 0 and reported, not assumed,
#     for the others; the headline must beat a simulator-free prediction (each held-out run
#     read as the mean of its GPU type's fit runs' measured curves), computed here;
#   - every split reports its own runs, fit-run error (what a model change is judged on) and
#     fitted constants: the split's roles follow the rule fixed before any fit (at most half
#     of each type's runs fit; the A40's fit runs include T5, the only run that stalls on the
#     network; a family measured on both types has fit runs on one type only), its fit-run
#     error is the worst of its fit runs, and split 0's table is the one printed above;
#   - the per-stage check simulates each row with its own partition (only the A100 GPT-3 XL
#     has rows whose partition is not its sweep's: the same data with those rows said to be
#     the sweep's partition changes its per-stage rows, nothing else, never the fit);
#     --stage-rows check names that default and changes nothing;
#   - --pace max names the default; --pace expected (a variant tried and not kept) reaches the
#     fit and says so; a wrong value is a usage error.
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
# exit 0 when the target is met on every split, 1 when missed; anything else: did not run
[ $rc -le 1 ] || { echo "FAIL: pfi sim validate exit $rc"; exit 1; }
python3 - "$tmp/v.json" "$rc" "$DATA" <<'PY'
import csv, json, sys
d = json.load(open(sys.argv[1]))
rc = int(sys.argv[2])
base = sys.argv[3] + "/perseus-sosp24/zeus_baseline/"

def naive_stage_err(run):
    """Worst error of reading the global sweep's measured throughput at a per-stage row's
    lowest stage limit (linear between measured limits; rows outside the sweep left out)."""
    gpu, rest = run.split("/")[1], run.split("/")[2]
    model = rest.split()[0]
    glob = [x for x in csv.DictReader(open(base + gpu + "/zeus_global.csv")) if x["model_name"] == model]
    pp = int(glob[0]["pp"])
    pts = sorted((float(x["power_limit_0"]), float(x["time"])) for x in glob)
    t0 = pts[-1][1]
    def time_at(lim):
        for (a, ta), (b, tb) in zip(pts, pts[1:]):
            if a <= lim <= b:
                return ta + (tb - ta) * (lim - a) / (b - a) if b > a else ta
        return None
    worst = 0.0
    for x in csv.DictReader(open(base + gpu + "/zeus_local.csv")):
        if x["model_name"] != model:
            continue
        t = time_at(min(float(x["power_limit_%d" % s]) for s in range(pp)))
        if t is not None:
            worst = max(worst, abs(t0 / t - t0 / float(x["time"])))
    return worst

bad = []
assert len(d["runs"]) >= 9, "expected the 9 Perseus transformer runs, got %d" % len(d["runs"])
for r in d["runs"]:
    name, t, p = r["run"], r["max_abs_err_throughput"], r["max_abs_err_power"]
    print("%-42s %-9s throughput %.3f  power %.3f" % (name, "held-out" if r["held_out"] else "fit", t, p))
    if p > 0.05:
        bad.append("%s: power error %.3f > 0.05" % (name, p))
    if t > 0.05:
        bad.append("%s: throughput error %.4f > 0.05" % (name, t))
ps = [(r["run"], r.get("per_stage_limits")) for r in d["runs"]]
for name, s in ps:
    if not s or s["rows"] < 5:
        bad.append("%s: per-stage limit rows missing" % name)
    elif s["max_abs_err_power"] > 0.10:
        bad.append("%s: per-stage limits power error %.3f > 0.10" % (name, s["max_abs_err_power"]))
if not bad:
    sim = sum(s["max_abs_err_throughput"] for _, s in ps) / len(ps)
    naive = sum(naive_stage_err(n) for n, _ in ps) / len(ps)
    print("per-stage limits, mean over runs of the worst throughput error: stage model %.3f, "
          "global sweep read at the lowest stage limit %.3f" % (sim, naive))
    if not sim < naive:
        bad.append("the stage model explains the per-stage rows no better than the global sweep")
# The documented split, run by run above: within the target there.
if d["split"] != 0 or max(d["max_abs_err_throughput"], d["max_abs_err_power"]) > 0.05:
    bad.append("split 0 misses the 0.05 target")
# The headline: every split, the worst held-out error over them.
splits = d["splits"]
if [s["split"] for s in splits] != [0, 1, 2]:
    bad.append("not every split reported: %s" % [s["split"] for s in splits])
worst = max(max(s["held_out_max_abs_err_throughput"], s["held_out_max_abs_err_power"]) for s in splits)
if abs(d["worst_over_splits"] - worst) > 1e-12:
    bad.append("worst_over_splits %.4f is not the worst split's %.4f" % (d["worst_over_splits"], worst))
for s in splits:
    rs, n = s.get("runs"), s["split"]
    if not rs or "fitted_gpus" not in s or "fit_max_abs_err_throughput" not in s:
        bad.append("split %d: its runs, fit-run errors or fitted constants are missing" % n)
        continue
    held = {r["run"] for r in rs if r["held_out"]}
    if held != set(s["held_out_runs"]):
        bad.append("split %d: held_out_runs %s differ from its runs' roles" % (n, s["held_out_runs"]))
    fam = lambda r: r["run"].split("/")[2].split()[0].split("-")[0]
    for g in {r["gpu_type"] for r in rs}:
        fit = [r for r in rs if r["gpu_type"] == g and not r["held_out"]]
        if not (1 <= len(fit) <= sum(r["gpu_type"] == g for r in rs) / 2):
            bad.append("split %d: %d of the %s runs fit (at most half)" % (n, len(fit), g))
    if not any(r["gpu_type"] == "A40" and not r["held_out"] and fam(r) == "t5" for r in rs):
        bad.append("split %d: the A40 T5 run (the network-bound one) is not a fit run" % n)
    for f in {fam(r) for r in rs}:
        types = {r["gpu_type"] for r in rs if fam(r) == f and not r["held_out"]}
        both = len({r["gpu_type"] for r in rs if fam(r) == f}) == 2
        if both and len(types) != 1:
            bad.append("split %d: family %s has fit runs on %d types (one)" % (n, f, len(types)))
    for k in ("throughput", "power"):
        fw = max(r["max_abs_err_" + k] for r in rs if not r["held_out"])
        if abs(s["fit_max_abs_err_" + k] - fw) > 1e-12:
            bad.append("split %d: fit_max_abs_err_%s %.4f is not its fit runs' worst %.4f"
                       % (n, k, s["fit_max_abs_err_" + k], fw))
    fg = {g["type"]: g for g in s["fitted_gpus"]}
    if abs(fg["A100-PCIE-80GB"]["net_jitter"] - 0.10) > 1e-9:
        bad.append("split %d: A100 net_jitter moved without an inter-host run" % n)
    print("split %d: fit runs worst %.3f, held out worst %.3f; A100 gemm_eff %.2f mem_eff %.2f"
          % (n, max(s["fit_max_abs_err_throughput"], s["fit_max_abs_err_power"]),
             max(s["held_out_max_abs_err_throughput"], s["held_out_max_abs_err_power"]),
             fg["A100-PCIE-80GB"]["gemm_eff"], fg["A100-PCIE-80GB"]["mem_eff"]))
if splits[0].get("runs") != d["runs"]:
    bad.append("split 0's runs differ from the table printed run by run")
met = d["target_met"]
if met != all(s["target_met"] for s in splits):
    bad.append("target_met is not every split's")
curves = {r["run"]: {round(l["limit_w"]): l["meas_throughput"] for l in r["levels"]} for r in d["runs"]}
gpu = {r["run"]: r["gpu_type"] for r in d["runs"]}
base = 0.0
for s in splits:
    held = set(s["held_out_runs"])
    for h in held:
        fit = [curves[n] for n in curves if n not in held and gpu[n] == gpu[h]]
        base = max(base, max(abs(sum(c[L] for c in fit) / len(fit) - v)
                             for L, v in curves[h].items() if all(L in c for c in fit)))
print("worst held-out error over all splits %.3f (split %d); the fit runs' mean curve as the "
      "prediction: %.3f" % (d["worst_over_splits"], d["worst_split"], base))
if not d["worst_over_splits"] < base:
    bad.append("the simulator predicts held-out runs no better than the fit runs' mean curve")
# Only the A40's runs cross hosts: nothing moves the A100's network spread from its prior 0.10.
gpus = {g["type"]: g for g in d["fitted_gpus"]}
if abs(gpus["A100-PCIE-80GB"]["net_jitter"] - 0.10) > 1e-9:
    bad.append("A100 net_jitter moved without an inter-host run: %s" % gpus["A100-PCIE-80GB"])
if not (0.02 <= gpus["A40"]["net_jitter"] <= 0.8
        and all(0.1 <= g["sat_frac"] <= 0.95 for g in gpus.values())):
    bad.append("fitted net_jitter / sat_frac out of their ranges: %s" % gpus)
if met != (rc == 0):
    bad.append("target_met=%s but exit %d" % (met, rc))
if not met:
    print("NOTE: the 0.05 target is not met on every split (worst held out %.3f, split %d)"
          % (d["worst_over_splits"], d["worst_split"]))
if bad:
    print("FAIL:\n  " + "\n  ".join(bad))
    sys.exit(1)
PY
[ $? -eq 0 ] || exit 1

# Family constants: fitted with the GPU type that has a fit run of the family, never on a
# held-out run; the split (which runs are held out) is the same as without them.  What fits
# what does not depend on the search's starting points: one start keeps the test fast.
# Run on a terminal: its progress line on stderr, stdout's JSON untouched.
command -v script >/dev/null 2>&1 || { echo "FAIL: script (util-linux) missing: progress on a terminal not tested"; exit 1; }
script -qec "\"$PFI\" sim validate --json --family act --starts 1 --split 0 >\"$tmp/f.json\"" "$tmp/tty" >/dev/null 2>&1
rc=$(sed -n 's/.*COMMAND_EXIT_CODE="\([0-9]*\)".*/\1/p' "$tmp/tty")
[ "${rc:-9}" -le 1 ] || { cat "$tmp/tty"; echo "FAIL: pfi sim validate --family exit $rc"; exit 1; }
python3 - "$tmp/tty" <<'PY' || { cat -v "$tmp/tty"; echo "FAIL: no progress line from pfi sim validate on a terminal"; exit 1; }
import re, sys
t = open(sys.argv[1], encoding="utf-8", errors="replace", newline="").read()
m = re.findall(r"\r\x1b\[Kpfi sim validate: validating the simulator against the measured sweeps (\d)/(\d) \((?:\d+ h )?(?:\d+ min )?\d+ (?:s|min) elapsed", t)
sys.exit(0 if m and m[-1] == ("4", "4") else 1)
PY
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
# The splits are fitted on threads of their own: split 1 (not on the main thread) is the same,
# bit for bit, as that split fitted on its own.
"$PFI" sim validate --json --split 1 >"$tmp/s1.json"
rc=$?
[ $rc -le 1 ] || { echo "FAIL: pfi sim validate --split 1 exit $rc"; exit 1; }
python3 - "$tmp/v.json" "$tmp/s1.json" <<'PY' || exit 1
import json, sys
every = json.load(open(sys.argv[1]))["splits"][1]
one = json.load(open(sys.argv[2]))
for k in ("runs", "fitted_gpus", "held_out_max_abs_err_throughput", "held_out_max_abs_err_power",
          "fit_max_abs_err_throughput", "fit_max_abs_err_power"):
    if every[k] != one[k]:
        print("FAIL: split 1's %s differs between every split at once and --split 1" % k)
        sys.exit(1)
PY
"$PFI" sim validate --split 3 >/dev/null 2>&1
[ $? -eq 2 ] || { echo "FAIL: --split 3 was not refused as a usage error"; exit 1; }
# --stage-rows check names the default: the same document byte for byte.
"$PFI" sim validate --json --split 1 --stage-rows check >"$tmp/c1.json"
rc=$?
[ $rc -le 1 ] || { echo "FAIL: pfi sim validate --stage-rows check exit $rc"; exit 1; }
cmp -s "$tmp/s1.json" "$tmp/c1.json" || { echo "FAIL: --stage-rows check is not the default"; exit 1; }
# Each row with its own partition: a copy of the data (links) whose A100 GPT-3 XL
# uniform_transformer rows are said to have the sweep's partition must change that run's
# per-stage rows on split 1, and nothing else (the fit never reads the rows).
z=perseus-sosp24/zeus_baseline
mkdir -p "$tmp/own/$z/A100" || exit 1
ln -s "$(cd "$DATA/perseus-sosp24" && pwd)/stage_profile" "$tmp/own/perseus-sosp24/stage_profile"
ln -s "$(cd "$DATA/$z" && pwd)/A40" "$tmp/own/$z/A40"
ln -s "$(cd "$DATA/$z/A100" && pwd)/zeus_global.csv" "$tmp/own/$z/A100/zeus_global.csv"
sweep=$(sed -n 's/^gpt3-xl,\("[^"]*"\),.*/\1/p' "$DATA/$z/A100/zeus_global.csv" | sort -u)
[ "$(echo "$sweep" | wc -l)" -eq 1 ] || { echo "FAIL: GPT-3 XL's sweep partitions: $sweep"; exit 1; }
sed "s/^gpt3-xl,uniform_transformer,/gpt3-xl,$sweep,/" "$DATA/$z/A100/zeus_local.csv" \
    >"$tmp/own/$z/A100/zeus_local.csv"
n=$(grep -c '^gpt3-xl,uniform_transformer,' "$DATA/$z/A100/zeus_local.csv")
[ "$n" -gt 0 ] || { echo "FAIL: no GPT-3 XL uniform_transformer row in the data"; exit 1; }
"$PFI" sim validate --json --split 1 --data "$tmp/own" >"$tmp/o1.json"
rc=$?
[ $rc -le 1 ] || { echo "FAIL: pfi sim validate --data (sweep partitions) exit $rc"; exit 1; }
python3 - "$tmp/s1.json" "$tmp/o1.json" <<'PY' || exit 1
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
bad = []
if "stage_rows" in a:
    bad.append("the default document says stage_rows: %r (only --stage-rows fit's does)" % a["stage_rows"])
if {k: v for k, v in a.items() if k != "runs"} != {k: v for k, v in b.items() if k != "runs"}:
    bad.append("rows said to have the sweep's partition changed the fit or a total")
for ra, rb in zip(a["runs"], b["runs"]):
    if {k: v for k, v in ra.items() if k != "per_stage_limits"} != {k: v for k, v in rb.items() if k != "per_stage_limits"}:
        bad.append("%s: its sweep changed with the rows' partitions" % ra["run"])
    same = ra["per_stage_limits"] == rb["per_stage_limits"]
    if same == ("A100/gpt3-xl" in ra["run"]):
        bad.append("%s: per-stage rows %s with the sweep's partition for the uniform_transformer rows (each row must be simulated with its own)" % (ra["run"], "the same" if same else "changed"))
if len(a["runs"]) != len(b["runs"]):
    bad.append("runs: %d against %d" % (len(a["runs"]), len(b["runs"])))
if bad:
    print("FAIL:\n  " + "\n  ".join(bad))
    sys.exit(1)
PY
"$PFI" sim validate --split 0 --stage-rows all >/dev/null 2>&1
[ $? -eq 2 ] || { echo "FAIL: --stage-rows all was not refused as a usage error"; exit 1; }
# --pace max names the default (the same document byte for byte); --pace expected, a variant
# tried and not kept, reaches the fit (other constants) and says so in its document.
"$PFI" sim validate --json --split 1 --pace max >"$tmp/m1.json"
rc=$?
[ $rc -le 1 ] || { echo "FAIL: pfi sim validate --pace max exit $rc"; exit 1; }
cmp -s "$tmp/s1.json" "$tmp/m1.json" || { echo "FAIL: --pace max is not the default"; exit 1; }
"$PFI" sim validate --json --split 1 --pace expected >"$tmp/e1.json"
rc=$?
[ $rc -le 1 ] || { echo "FAIL: pfi sim validate --pace expected exit $rc"; exit 1; }
python3 - "$tmp/s1.json" "$tmp/e1.json" <<'PY' || exit 1
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
if "pace" in a or b.get("pace") != "expected":
    print("FAIL: pace in the documents: %r, %r" % (a.get("pace"), b.get("pace")))
    sys.exit(1)
if a["fitted_gpus"] == b["fitted_gpus"]:
    print("FAIL: --pace expected fitted the same constants: the setting did not reach the runs")
    sys.exit(1)
PY
"$PFI" sim validate --split 0 --pace mean >/dev/null 2>&1
[ $? -eq 2 ] || { echo "FAIL: --pace mean was not refused as a usage error"; exit 1; }
exit 0
