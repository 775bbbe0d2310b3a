#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# pfi study end to end: the small simulated fleet (what `make demo` runs at full size), its
# report, figures and summary; the same analysis on imported public runs (no telemetry: the
# predictor must say it cannot be trained, the allocation must fall back to probes); bad input.
set -u
: "${PFI_BIN:?PFI_BIN must point at the pfi binary}"
tmp=$(mktemp -d "${PFI_TEST_TMP:-${TMPDIR:-/tmp}}/it_study.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
has() { grep -q -- "$2" "$1" || { echo "--- $1:"; cat "$1"; fail "expected '$2' in $1"; }; }
jq_num() { # jq_num FILE PATH: a number at a python-style path, or "null"
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); v=eval('d'+sys.argv[2]); print('null' if v is None else v)" "$1" "$2"
}

# ---- bad input changes nothing and says why ----
if "$PFI_BIN" study --fleet "$tmp/nosuch.json" --out "$tmp/bad" 2>"$tmp/err"; then fail "missing fleet file accepted"; fi
has "$tmp/err" "nosuch.json"
if "$PFI_BIN" study --fleet small --cuts 0.3,1.5 --out "$tmp/bad" 2>"$tmp/err"; then fail "cut 1.5 accepted"; fi
has "$tmp/err" "1.5"
if "$PFI_BIN" study --fleet small --db x.db 2>"$tmp/err"; then fail "--fleet with --db accepted"; fi
has "$tmp/err" "exclude"

# ---- the small simulated fleet ----
out=$tmp/small
"$PFI_BIN" study --fleet small --seed 3 --out "$out" --json >"$tmp/summary.json" 2>"$tmp/progress" \
  || { cat "$tmp/progress"; fail "pfi study --fleet small"; }
for f in report.md report.html summary.json study.db; do [ -s "$out/$f" ] || fail "no $out/$f"; done
cmp -s "$tmp/summary.json" "$out/summary.json" || python3 - "$tmp/summary.json" "$out/summary.json" <<'PY' || fail "stdout and summary.json differ"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
a.pop("elapsed_s"); b.pop("elapsed_s")
sys.exit(0 if a == b else 1)
PY
runs=$(jq_num "$out/summary.json" "['runs']")
[ "$runs" -ge 10 ] || fail "small fleet has $runs runs"
lo=$(jq_num "$out/summary.json" "['pfi30']['min']"); hi=$(jq_num "$out/summary.json" "['pfi30']['max']")
python3 -c "import sys; lo,hi=float(sys.argv[1]),float(sys.argv[2]); sys.exit(0 if 0<lo<=hi<2 else 1)" "$lo" "$hi" \
  || fail "PFI30 range $lo..$hi"
[ "$(jq_num "$out/summary.json" "['predictor']['done']")" = True ] || fail "predictor not trained on the small fleet"
mae=$(jq_num "$out/summary.json" "['predictor']['lojo_mae_pfi30']")
python3 -c "import sys; sys.exit(0 if 0<=float(sys.argv[1])<0.2 else 1)" "$mae" || fail "LOJO MAE $mae"
[ "$(jq_num "$out/summary.json" "['allocation']['done']")" = True ] || fail "no allocation"
# Every policy within the budget, equal <= oracle and pfi <= oracle on the true curves.
python3 - "$out/summary.json" <<'PY' || fail "allocation totals inconsistent"
import json, sys
a = json.load(open(sys.argv[1]))["allocation"]
for cut, pol in a["cuts"].items():
    if pol.get("oracle") is None:
        continue
    o = pol["oracle"]
    for k in ("equal", "pfi", "proportional-to-pfi"):
        assert pol[k] <= o * (1 + 1e-9), (cut, k, pol[k], o)
    g = a["gap_recovered"][cut]
    assert g is None or g <= 1 + 1e-9, (cut, g)
# gap recovered is a ratio only where the oracle gains at least 0.1% over equal (else null)
for cut, pol in list(a["cuts"].items()) + list(a["with_sla"]["cuts"].items()):
    if pol.get("infeasible"):
        continue
    g = a["gap_recovered"][cut] if pol is a["cuts"].get(cut) else pol["gap_recovered"]
    e = pol["equal"] if not isinstance(pol["equal"], dict) else pol["equal"]["total_throughput"]
    o = pol["oracle"] if not isinstance(pol["oracle"], dict) else pol["oracle"]["total_throughput"]
    p = pol["pfi"] if not isinstance(pol["pfi"], dict) else pol["pfi"]["total_throughput"]
    if o - e > 1e-3 * abs(e):
        assert g is not None and abs(g - (p - e) / (o - e)) < 1e-9, (cut, g)
    else:
        assert g is None, (cut, g, e, o)
PY
has "$out/report.md" "Beside the paper"
# the findings first, and the SLA table read, not left bare
head -n 8 "$out/report.md" | grep -q "^## Summary" || fail "the report does not open with its summary"
has "$out/report.md" "pfi recovers"
has "$out/report.md" "Reading the table: pfi's SLA breaches"
# cuts where the true SLA floors fit told apart from those where every policy relaxes them
python3 - "$tmp/summary.json" "$out/report.md" <<'PY' || fail "the SLA discussion does not match the SLA table"
import json, sys
ws = json.load(open(sys.argv[1]))["allocation"]["with_sla"]
cuts = ws["cuts"]
rep = open(sys.argv[2]).read()
worse, n = [0, 0], [0, 0]
for pol in cuts.values():
    r = int(pol["oracle"]["sla_breaches"] > 0)  # the oracle sees the truth: relaxed
    n[r] += 1
    worse[r] += pol["pfi"]["total_throughput"] < pol["equal"]["total_throughput"]
want = ("at %d of the %d cuts where the true SLA floors fit the budget and at %d of the %d "
        "where every policy must relax" % (worse[0], n[0], worse[1], n[1]))
assert want in rep, want
assert ("the true SLA floors fit the budget. Equal" in rep) == (n[0] > 0), n
assert ("the budget is below what the true SLA floors need" in rep) == (n[1] > 0), n
# where every policy relaxes, pfi's worst excess against equal's, cut by cut (this fleet has one)
rel = [(c, pol) for c, pol in sorted(cuts.items()) if pol["oracle"]["sla_breaches"] > 0]
assert rel, "no relaxed cut: the worst-excess sentence is not exercised"
parts = ["%.4f (equal %.4f) at %.0f%%" % (pol["pfi"]["worst_excess_slowdown"],
                                          pol["equal"]["worst_excess_slowdown"], float(c) * 100)
         for c, pol in rel]
larger = sum(pol["pfi"]["worst_excess_slowdown"] > pol["equal"]["worst_excess_slowdown"]
             for c, pol in rel)
want = ("There pfi's largest true slowdown past the SLA is %s, larger than equal's at %d of "
        "%d cuts" % (", ".join(parts), larger, len(rel)))
assert want in rep, want
# the equal cut given pfi's information, beside equal with the true floors
above = m = 0
for pol in cuts.values():
    ep = pol["equal-on-pfi-curves"]
    assert isinstance(ep["sla_breaches"], int) and 0 <= ep["sla_breaches"] <= ws["jobs_with_sla"], ep
    if ep["total_throughput"] is not None:
        m += 1
        above += pol["pfi"]["total_throughput"] >= ep["total_throughput"]
want = "(pfi at or above it at %d of %d cuts)" % (above, m)
assert m > 0 and want in rep, want
want = "an equal cut beats pfi at %d of %d cuts." % (m - above, m)
assert want in rep, want
PY
# pfi's SLA feedback (rule F): the plan's breaches beside those after it, in summary.json and
# in the report's summary and SLA discussion
python3 - "$tmp/summary.json" "$out/report.md" <<'PY' || fail "the SLA feedback does not match summary.json"
import json, sys
ws = json.load(open(sys.argv[1]))["allocation"]["with_sla"]
rep = open(sys.argv[2]).read()
br = brp = 0
plan = []
for c, pol in sorted(ws["cuts"].items()):
    if "pfi" not in pol:
        continue
    fb = pol["pfi_feedback"]
    for k in ("plan_sla_breaches", "rounds", "jobs_corrected"):
        assert isinstance(fb[k], int) and fb[k] >= 0, (c, fb)
    assert fb["rounds"] <= 3 and isinstance(fb["correction_did_not_fit"], bool), (c, fb)
    assert (fb["jobs_corrected"] > 0) == (fb["rounds"] > 0 or fb["correction_did_not_fit"]), (c, fb)
    if fb["jobs_corrected"] == 0:
        assert fb["plan_sla_breaches"] == pol["pfi"]["sla_breaches"], (c, fb)
    else:
        assert fb["plan_sla_breaches"] > 0, (c, fb)
    if float(c) <= 0.30 + 1e-9:
        br += pol["pfi"]["sla_breaches"]
        brp += fb["plan_sla_breaches"]
    assert isinstance(pol["pfi_relaxed"], bool), (c, pol)
    if pol["pfi_relaxed"]:  # no feedback where pfi relaxed every SLA: its plan stands
        assert fb["rounds"] == fb["jobs_corrected"] == 0, (c, fb)
        assert fb["plan_sla_breaches"] == pol["pfi"]["sla_breaches"], (c, fb)
    if pol["oracle"]["sla_breaches"] == 0 and not pol["pfi_relaxed"]:
        plan.append("%d at %.0f%%" % (fb["plan_sla_breaches"], float(c) * 100))
assert not any(p["pfi_relaxed"] for c, p in ws["cuts"].items() if "pfi" in p and float(c) <= 0.3)
want = ("pfi breaches %d SLA(s) at cuts up to 30%% on the true curves once it has seen each SLA "
        "job's tokens/s at its cap (%d at its plan, before that feedback)" % (br, brp))
assert want in rep, want
assert plan
want = "At its plan, before any feedback, pfi breached %s." % ", ".join(plan)
assert want in rep, want
PY
# where pfi's power goes against equal's: the SLA jobs' caps and true throughput, and the
# others' (the cell's less the SLA jobs'), as summary.json has them, cut by cut
python3 - "$tmp/summary.json" "$out/report.md" <<'PY' || fail "the SLA jobs' power split does not match summary.json"
import json, re, sys
ws = json.load(open(sys.argv[1]))["allocation"]["with_sla"]
rep = open(sys.argv[2]).read()
m = re.search(r"Where the power goes, pfi less equal \(caps summed over GPUs; [^)]*\): "
              r"the SLA jobs (.*?); the other jobs (.*?)\.\n", rep)
assert m, "no power split in the report"
num = lambda t: float(t.replace(",", ""))
def cells(text):
    return {c: (num(w), num(t)) for w, t, c in
            re.findall(r"([+-][\d,]+) W, ([+-][\d,]+) at (\d+)%", text)}
sla, oth = cells(m.group(1)), cells(m.group(2))
assert sla and set(sla) == set(oth) == {"%.0f" % (float(c) * 100) for c in ws["cuts"]}, (sla, oth)
rel_off, nrel = 0, 0
for c, pol in ws["cuts"].items():
    e, p = pol["equal"], pol["pfi"]
    for q in (e, p):
        assert 0 < q["sla_jobs_power_w"] < q["power_w"], q
        assert 0 < q["sla_jobs_throughput"] < q["total_throughput"], q
    k = "%.0f" % (float(c) * 100)
    ds = (p["sla_jobs_power_w"] - e["sla_jobs_power_w"], p["sla_jobs_throughput"] - e["sla_jobs_throughput"])
    do = ((p["power_w"] - p["sla_jobs_power_w"]) - (e["power_w"] - e["sla_jobs_power_w"]),
          (p["total_throughput"] - p["sla_jobs_throughput"]) - (e["total_throughput"] - e["sla_jobs_throughput"]))
    for got, want in zip(sla[k] + oth[k], ds + do):
        assert abs(got - want) <= 1, (c, got, want)
    if pol["oracle"]["sla_breaches"] > 0:
        nrel += 1
        rel_off = max(rel_off, abs(p["sla_jobs_power_w"] / e["sla_jobs_power_w"] - 1))
m = re.search(r"Where every policy relaxes the SLAs, pfi gives the SLA jobs the same power as "
              r"equal to within ([\d.]+)% of it", rep)
assert (m is not None) == (nrel > 0 and rel_off <= 0.001), (nrel, rel_off)
assert m is None or abs(float(m.group(1)) - 100 * rel_off) <= 0.0005 + 1e-9, (m.group(1), rel_off)
PY
grep -q "^Left out of the table above\|^Every run is in the table above" "$out/report.md" ||
  fail "the PFI30 table does not say which runs it leaves out"
has "$out/report.md" "63%"
# numbers of four digits or more carry thousands separators (commands and paths aside)
python3 - "$out/report.md" <<'PY' || fail "a large number without separators in the report"
import re, sys
bad = [l for l in open(sys.argv[1]) if "`" not in l and re.search(r"(?<![\d.,])\d{4,}", l)]
sys.exit("\n".join(bad) if bad else 0)
PY
# importance: groups of collinear features permuted together, with the method and caveat
has "$out/report.md" "grouped permutation importance"
has "$out/report.md" "Caveat: this measures what this fitted model uses"
python3 - "$out/summary.json" <<'PY' || fail "importance is not grouped"
import json, sys
im = json.load(open(sys.argv[1]))["predictor"]["importance"]
feats = [f for g in im["groups"] for f in g["features"]]
assert len(feats) == len(set(feats)) == 19, feats  # a partition of the features
assert im["repeats"] >= 10 and im["seed"] == 3 and 0 < im["corr_threshold"] < 1, im
PY
has "$out/report.html" "<table>"
# What characterizing the fleet cost: every run's levels timed; a level's GPU-seconds are its
# time x the run's GPUs, its loss (baseline rate - rate) x time, a run's figures the sums of
# its levels', the totals the sums of the runs'; the probe-vs-sweep rows on the same runs.
python3 - "$out/summary.json" <<'PY' || fail "characterization cost inconsistent"
import json, sys
d = json.load(open(sys.argv[1]))
c = d["characterization_cost"]
assert c["runs_timed"] == d["runs"] and c["runs_without_times"] == 0, c["runs_timed"]
assert len(c["runs"]) == d["runs"]
for r in c["runs"]:
    lv = r["levels"]
    assert lv and all(l["duration_s"] > 0 for l in lv), r["name"]
    for l in lv:
        assert abs(l["gpu_s"] - l["duration_s"] * r["n_gpus"]) < 1e-6 * l["gpu_s"], (r["name"], l)
    top = max(lv, key=lambda l: l["cap_w"])
    assert top["lost"] == 0, (r["name"], top)
    assert abs(sum(l["gpu_s"] for l in lv) - r["gpu_s"]) < 1e-6 * r["gpu_s"], r["name"]
    assert abs(sum(l["lost"] for l in lv) - r["lost"]) <= 1e-6 * abs(r["lost"]) + 1e-6, r["name"]
    assert abs(sum(l["duration_s"] for l in lv) - r["seconds"]) < 1e-6 * r["seconds"], r["name"]
    assert r["lost"] > 0 and 0 < r["lost_frac"] < 1, r["name"]
assert abs(sum(r["gpu_s"] for r in c["runs"]) - c["gpu_s"]) < 1e-6 * c["gpu_s"]
assert abs(sum(r["lost"] for r in c["runs"]) - c["tokens_lost"]) < 1e-6 * c["tokens_lost"]
e = c["probe_vs_sweep"]
assert e["done"] and e["runs"] == d["runs"] and len(e["rows"]) == 6, e
assert e["rows"][0]["part"] == "1 probe" and e["rows"][0]["runs"] > 0, e["rows"][0]
PY
has "$out/report.md" "## What characterization costs"
has "$out/report.md" "How much of a sweep a PFI30 needs"
# a row in which every run failed is explained (the index needs three levels)
if grep -q "^| 2 levels | 0 |" "$out/report.md"; then
  has "$out/report.md" "2 levels give no PFI30 by this procedure"
fi
"$PFI_BIN" runs --db "$out/study.db" --json >"$tmp/runs.json" || fail "the study's store does not open"
[ "$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['runs']))" "$tmp/runs.json")" = "$runs" ] \
  || fail "the store does not hold the study's $runs runs"
# The study's PFI30 is pfi index's headline where the sweep reaches 30% (the interpolation),
# nowhere the fit; the predictor is scored only against those, and says which runs it left out.
"$PFI_BIN" index --db "$out/study.db" --boot 0 --json >"$tmp/index.json" || fail "pfi index of the study's store"
python3 - "$out/summary.json" "$tmp/index.json" "$out/fig_pred_vs_true.dat" "$out/report.md" <<'PY' || fail "the study's PFI30 is not pfi index's headline"
import json, statistics, sys
summ = json.load(open(sys.argv[1]))
idx = json.load(open(sys.argv[2]))["runs"]
head = sorted(r["pfi30"] for r in idx if r["pfi30"] is not None and not r["pfi30_extrapolated"])
assert all(r["pfi30_source"] == "interpolation" for r in idx
           if r["pfi30"] is not None and not r["pfi30_extrapolated"])
p = summ["pfi30"]
assert summ["runs_with_pfi"] == len(head), (summ["runs_with_pfi"], len(head))
for got, want in ((p["min"], head[0]), (p["median"], statistics.median(head)), (p["max"], head[-1])):
    assert abs(got - want) < 1e-9, (got, want)
xs = [float(l.split()[0]) for l in open(sys.argv[3]) if l.strip() and not l.startswith("#")
      and len(l.split()) == 2]
xs = xs[:-2]  # the last block is the perfect-prediction line
assert xs and all(min(abs(x - h) for h in head) < 1e-6 for x in xs), "a scatter point off the headline"
pr = summ["predictor"]
n_pred = pr["lojo_runs_scored"]
assert n_pred <= pr["n_train"], pr
rep = open(sys.argv[4]).read()
assert "Each prediction is scored against the run's measured PFI30" in rep
assert (n_pred < pr["n_train"]) == ("Left out of the table's scores" in rep), (n_pred, pr["n_train"])
PY
# The study of that store leaves a job out as pfi model eval does, all its runs together (each
# run was its own group: a job's rerun or H100 twin stayed in its "left out" training).
"$PFI_BIN" study --db "$out/study.db" --out "$tmp/again" --no-figures --cuts 0.3 --json >"$tmp/again.json" 2>/dev/null ||
  fail "pfi study --db of the study's store"
"$PFI_BIN" model eval --db "$out/study.db" --json >"$tmp/eval.json" 2>/dev/null || fail "pfi model eval --db"
python3 - "$tmp/again.json" "$tmp/eval.json" <<'PY' || fail "study --db and model eval leave jobs out differently"
import json, sys
# Both score the same predictions against the measured PFI30 (the runs whose sweep reaches 30%)
# and, beside it, against the fit of every run.
s = json.load(open(sys.argv[1]))["predictor"]
e = json.load(open(sys.argv[2]))
assert abs(s["lojo_mae_pfi30_on_fit"] - e["lojo_mae_pfi30_on_fit"]) < 1e-9, (s, e)
assert abs(s["lojo_mae_pfi30"] - e["lojo_mae_pfi30"]) < 1e-9, (s, e)
assert s["lojo_runs_scored"] == e["lojo"]["n"], (s, e)
PY
if command -v gnuplot >/dev/null 2>&1; then
  for f in fig_curves fig_pfi30_hist fig_pred_vs_true fig_alloc_vs_cut fig_gpu_trace; do
    [ -s "$out/$f.png" ] && [ -s "$out/$f.svg" ] || fail "figure $f missing"
    head -c 4 "$out/$f.png" | od -An -c | grep -q 'P   N   G' || fail "$f.png is not a PNG"
    grep -q '<svg' "$out/$f.svg" || fail "$f.svg is not an SVG"
  done
  # The figures say what the report says: checked from their .dat and .gp files.
  python3 - "$out" <<'PY' || fail "figures do not match the report"
import json, re, statistics, sys
out = sys.argv[1]
summ = json.load(open(out + "/summary.json"))
report = open(out + "/report.md").read()

def series(name):
    """The figure's series: data blocks of NAME.dat, and for each the panel and style from
    the first rendering in NAME.gp."""
    blocks = [[tuple(map(float, l.split())) for l in b.strip().splitlines()
               if l.strip() and not l.startswith("#") and "NaN" not in l]
              for b in open(f"{out}/{name}.dat").read().split("\n\n\n")]
    gp = open(f"{out}/{name}.gp").read().split("set terminal svg")[0]
    info, panel = {}, -1
    for line in gp.splitlines():
        if line.startswith("plot "):
            panel += 1
        m = re.search(r"index (\d+) using [0-9:]+ with (.*?) lc rgb '([^']+)' (?:title \"([^\"]*)\"|notitle)", line)
        if m:
            info[int(m.group(1))] = dict(panel=panel, style=m.group(2), color=m.group(3),
                                          title=m.group(4) or "", data=blocks[int(m.group(1))])
    ranges = [dict() for _ in range(panel + 1)]
    panel = -1
    for line in gp.splitlines():
        if line.startswith("set xlabel"):
            panel += 1  # every panel sets its labels, then its ranges
        m = re.match(r"set ([xy])range \[([^:]+):([^\]]+)\]", line)
        if m:
            ranges[panel][m.group(1)] = (float(m.group(2)), float(m.group(3)))
    return info, ranges

# (b) the scatter's points are the predictions the table scored: same MAE per evaluation
info, ranges = series("fig_pred_vs_true")
want = {"training runs (leave one job out)": summ["predictor"]["lojo_mae_pfi30"],
        "validation runs (never trained on)": summ["predictor"]["validation_mae_pfi30"],
        "H100 runs (transfer from H200)": summ["predictor"]["transfer_h200_to_h100_mae_pfi30"]}
seen = 0
for s in info.values():
    if s["title"] in want and want[s["title"]] is not None:
        mae = statistics.mean(abs(y - x) for x, y in s["data"])
        assert abs(mae - want[s["title"]]) < 1e-6, (s["title"], mae, want[s["title"]])
        seen += 1
assert seen >= 2, "scatter lacks the training or H100 series"
h100 = [s for s in info.values() if s["title"].startswith("H100")]
others = [s for s in info.values() if s["title"].startswith(("training", "validation"))]
assert h100 and all(h100[0]["style"] != o["style"] and h100[0]["color"] != o["color"] for o in others), \
    "H100 transfer points are not marked apart"
# (e) axes tight: each open axis within 5% of its data's span
def tight(name, axes="xy", square=False, shared=False):
    info, ranges = series(name)
    for pn, r in enumerate(ranges):
        for ax in axes:
            k = 0 if ax == "x" else 1
            v = [p[j] for s in info.values() if (shared or s["panel"] == pn) and s["color"] != "#999999"
                 for p in s["data"] for j in ((0, 1) if square else (k,))]
            if not v or ax not in r:
                continue
            lo, hi = min(v), max(v)
            span = max(hi - lo, 1e-9)
            assert r[ax][0] >= lo - 0.05 * span - 1e-9 and r[ax][1] <= hi + 0.05 * span + 1e-9, \
                (name, pn, ax, r[ax], lo, hi)
tight("fig_pred_vs_true", square=True)  # one range for both axes
tight("fig_curves", shared=True)  # small multiples on shared axes
tight("fig_gpu_trace", "x")
# the histogram's axis spans the runs' PFI30 (summary.json) plus 3%, not a fixed 0-0.5
info, ranges = series("fig_pfi30_hist")
lo, hi = summ["pfi30"]["min"], summ["pfi30"]["max"]
span = hi - lo
assert abs(ranges[0]["x"][0] - (lo - 0.03 * span)) < 1e-6 and abs(ranges[0]["x"][1] - (hi + 0.03 * span)) < 1e-6, \
    (ranges[0]["x"], lo, hi)
# ticks of four digits carry separators, as the report's numbers do
for name in ("fig_alloc_vs_cut", "fig_curves", "fig_pred_vs_true", "fig_pfi30_hist", "fig_gpu_trace"):
    for line in open(f"{out}/{name}.gp"):
        if re.match(r"set [xy]2?range", line):
            a, b = map(float, re.findall(r"\[([^:]+):([^\]]+)\]", line)[0])
            axis = line.split()[1][:-5]
            if max(abs(a), abs(b)) >= 1000 and b > a:
                want = "set %stics (" % axis
                assert want in open(f"{out}/{name}.gp").read(), (name, line)
# (d) family curves: one panel per family, one colour per panel, distinct across panels
info, ranges = series("fig_curves")
cols = {}
for s in info.values():
    if s["color"] != "#999999":
        cols.setdefault(s["panel"], set()).add(s["color"])
assert len(cols) >= 2 and all(len(c) == 1 for c in cols.values()), cols
flat = [next(iter(c)) for c in cols.values()]
assert len(flat) > 8 or len(set(flat)) == len(flat), "two families share a colour"
# (g) the allocation figure shows the gap recovered, as the table gives it
info, ranges = series("fig_alloc_vs_cut")
gap = [s for s in info.values() if s["title"] == "pfi" and s["panel"] == 1]
assert gap, "no gap-recovered panel"
for x, y in gap[0]["data"]:
    g = summ["allocation"]["gap_recovered"]["%.2f" % (x / 100)]
    assert abs(y - 100 * g) < 1e-6, (x, y, g)
# (c) the trace's settling times, recomputed from the trace by the rule the report states
info, ranges = series("fig_gpu_trace")
def settle(t, y, step, window=0.25, final_s=1.0, band=0.05):
    before = statistics.median(v for a, v in zip(t, y) if a < step)
    final = statistics.median(v for a, v in zip(t, y) if a >= t[-1] - final_s)
    tol, at = band * abs(final - before), None
    for k in range(len(t) - 1, -1, -1):
        if t[k] < step:
            break
        m = statistics.median(v for a, v in zip(t, y) if t[k] - window / 2 <= a <= t[k] + window / 2)
        if abs(m - final) > tol:
            break
        at = t[k] - step
    return at
m = re.search(r"at t = (\d+) s, board power settles in ([0-9.]+) s \(median over (\d+) GPUs; "
              r"([0-9.]+)-([0-9.]+) s\) and the SM clock in ([0-9.]+) s \(median over \d+ GPUs; "
              r"([0-9.]+)-([0-9.]+) s\)", report)
assert m, "no settling times in the trace's text"
step = float(m.group(1))
for pn, (med, lo, hi) in ((1, m.group(2, 4, 5)), (0, m.group(6, 7, 8))):
    st = [settle([p[0] for p in s["data"]], [p[1] for p in s["data"]], step)
          for s in info.values() if s["panel"] == pn and s["color"] not in ("#999999", "#555555")]
    assert len(st) == int(m.group(3)) and None not in st, st
    # to the text's 2 decimals (the .dat's 9 digits can move a rounding at the last one)
    for got, text in ((statistics.median(st), med), (min(st), lo), (max(st), hi)):
        assert abs(got - float(text)) <= 0.0051, (pn, st, med, lo, hi)
# (c) and when each GPU's clock reaches its final value, from the trace by the rule stated
m = re.search(r"each GPU's clock reaches its final value \(the first sample from which it equals "
              r"the trace's last sample to the end\) in ([0-9.]+) s \(median over (\d+) GPUs; "
              r"([0-9.]+)-([0-9.]+) s\)", report)
assert m, "no final-clock times in the trace's text"
fin = []
for s in info.values():
    if s["panel"] != 0 or s["color"] in ("#999999", "#555555"):
        continue
    d = s["data"]
    k = len(d) - 1
    while k > 0 and d[k - 1][0] >= step and d[k - 1][1] == d[-1][1]:
        k -= 1
    fin.append(d[k][0] - step)
assert len(fin) == int(m.group(2)), fin
for got, text in ((statistics.median(fin), m.group(1)), (min(fin), m.group(3)), (max(fin), m.group(4))):
    assert abs(got - float(text)) <= 0.0051, (fin, m.groups())
PY
else
  echo "SKIPPED: gnuplot not installed (scripts/install-deps.sh test), figures not checked"
  skipped="gnuplot not installed: figures not checked"
fi

# ---- without gnuplot: the full report, a note where each figure would be, one line on stderr ----
nog=$tmp/nognuplot
mkdir -p "$tmp/bin" && ln -s "$(command -v sh)" "$tmp/bin/sh" || fail "cannot make a PATH without gnuplot"
PATH=$tmp/bin "$PFI_BIN" study --fleet small --seed 3 --direct --out "$nog" >"$tmp/nog.out" 2>"$tmp/nog.err" \
  || { cat "$tmp/nog.err"; fail "pfi study without gnuplot"; }
for f in report.md report.html summary.json; do [ -s "$nog/$f" ] || fail "no $nog/$f without gnuplot"; done
[ "$(grep -c "gnuplot" "$tmp/nog.err")" = 1 ] && has "$tmp/nog.err" "gnuplot not found" \
  || { cat "$tmp/nog.err"; fail "not one notice of the missing gnuplot"; }
has "$nog/report.md" "Figure not drawn (gnuplot not found)"
has "$nog/report.md" "pfi recovers"
has "$nog/report.md" "Reading the table: pfi's SLA breaches"
has "$nog/report.html" "<table>"
has "$nog/report.html" "Figure not drawn (gnuplot not found)"
[ ! -e "$nog/fig_curves.png" ] && [ -s "$nog/fig_curves.gp" ] && [ -s "$nog/fig_curves.dat" ] \
  || fail "without gnuplot: expected fig_curves.gp and .dat, no .png"

# ---- progress: on a terminal a line rewritten in place on stderr, stdout's JSON untouched ----
command -v script >/dev/null 2>&1 || fail "script (util-linux) missing: cannot test progress on a terminal"
pty_progress() { # pty_progress PROG ARGS...: runs pfi ARGS on a terminal, stdout to a file
  prog=$1; shift
  script -qec "\"$PFI_BIN\" $* >\"$tmp/pty.json\"" "$tmp/typescript" >/dev/null 2>&1 \
    || { cat "$tmp/typescript"; fail "pfi $* on a terminal"; }
  python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$tmp/pty.json" || fail "pfi $*: stdout is not only JSON"
  python3 - "$tmp/typescript" "$prog" <<'PY' || { cat -v "$tmp/typescript"; fail "no progress line from pfi $*"; }
import re, sys
t = open(sys.argv[1], encoding="utf-8", errors="replace", newline="").read()
pat = "\r\x1b\\[K" + re.escape(sys.argv[2]) + r": characterizing the simulated fleet \(virtual time\) (\d+)/(\d+) \((?:\d+ h )?(?:\d+ min )?\d+ (?:s|min) elapsed"
m = re.findall(pat, t)
sys.exit(0 if m and m[-1][0] == m[-1][1] else 1)
PY
}
pty_progress "pfi study" study --fleet small --seed 3 --direct --no-figures --out "$tmp/pty" --json
pty_progress "pfi model eval" model eval --fleet small --json
# not a terminal and PFI_PROGRESS=0: nothing on stderr
PFI_PROGRESS=0 "$PFI_BIN" model eval --fleet small --json >/dev/null 2>"$tmp/quiet.err" || fail "model eval, PFI_PROGRESS=0"
[ ! -s "$tmp/quiet.err" ] || { cat "$tmp/quiet.err"; fail "PFI_PROGRESS=0 still wrote to stderr"; }

# ---- cuts the report and summary.json cannot tell apart are refused, and nothing is written ----
# (0.3,0.301: three "30%" rows, and summary.json kept 0.301's figures under "0.30")
if "$PFI_BIN" study --fleet small --direct --cuts 0.3,0.301 --no-figures --out "$tmp/twin" 2>"$tmp/err"; then
  fail "cuts 0.3 and 0.301 accepted"; fi
has "$tmp/err" "cuts 0.3 and 0.301 are both 30% in the report (0.30 in summary.json)"
[ ! -e "$tmp/twin" ] || fail "a refused study wrote $tmp/twin"
if "$PFI_BIN" study --fleet small --direct --cuts 0.3,-30% --no-figures --out "$tmp/twin" 2>"$tmp/err"; then
  fail "the same cut twice accepted"; fi
has "$tmp/err" "the cut of 30% is given twice"

# ---- the report's Reproduce command gives the same study (it left out --cuts, --sla, --direct) ----
"$PFI_BIN" study --fleet small --seed 3 --direct --cuts 0.2,0.3 --sla 0.05 --no-figures \
  --out "$tmp/rep" >/dev/null 2>"$tmp/progress" || { cat "$tmp/progress"; fail "study to reproduce"; }
cp "$tmp/rep/summary.json" "$tmp/rep.json"
cmd=$(sed -n 's/^`pfi study \(.*\)`\. Figures.*/\1/p' "$tmp/rep/report.md")
[ -n "$cmd" ] || fail "no Reproduce command in the report"
case $cmd in *--cuts\ 0.2,0.3*--sla\ 0.05*--direct*) ;; *) fail "Reproduce leaves out options: $cmd" ;; esac
eval "\"\$PFI_BIN\" study $cmd --no-figures" >/dev/null 2>"$tmp/progress" \
  || { cat "$tmp/progress"; fail "the Reproduce command: $cmd"; }
python3 - "$tmp/rep.json" "$tmp/rep/summary.json" <<'PY' || fail "the Reproduce command gives another study: $cmd"
import json, sys
def timeless(d):  # every figure but the seconds it took
    if isinstance(d, dict):
        return {k: timeless(v) for k, v in d.items() if k != "elapsed_s"}
    return [timeless(v) for v in d] if isinstance(d, list) else d
a, b = (timeless(json.load(open(p))) for p in sys.argv[1:])
sys.exit(0 if a == b else 1)
PY

# ---- a cut deeper than the jobs' minimum caps: said as infeasible, never read as a result ----
# Found on fleet seed 5 at 50%: the SLA text said "0 breaches at 50%", "+nan% at 50%" and
# counted 50% among the cuts where the true SLA floors fit; summary.json had an SLA cell of
# nothing with "sla_breaches": 0; a study of only such cuts drew an empty allocation figure.
"$PFI_BIN" study --fleet small --direct --cuts 0.3,0.7 --no-figures --out "$tmp/deep" \
  >/dev/null 2>"$tmp/progress" || { cat "$tmp/progress"; fail "study with a 70% cut"; }
md=$tmp/deep/report.md
if grep -qi "nan" "$md"; then grep -ni "nan" "$md"; fail "NaN in a report with an infeasible cut"; fi
grep "^Reading the table" "$md" | grep -q "70%" && { grep "^Reading the table" "$md"; fail "the infeasible 70% cut read as a result"; }
has "$md" "At 70% (budget .* W, needs .* W) the budget is below what the jobs' minimum caps need"
grep "^- With SLAs" "$md" | grep -q "at 0 of the 1 cut where the true SLA floors fit" \
  || { grep "^- With SLAs" "$md"; fail "the summary counts the infeasible cut among those that fit"; }
python3 - "$tmp/deep/summary.json" <<'PY' || fail "summary.json of an infeasible cut"
import json, sys
a = json.load(open(sys.argv[1]))["allocation"]
for cell in (a["cuts"]["0.70"], a["with_sla"]["cuts"]["0.70"]):
    assert cell["infeasible"] is True and cell["min_budget_w"] > cell["budget_w"] > 0, cell
    assert "equal-on-pfi-curves" not in cell and "pfi" not in cell, cell
assert a["gap_recovered"]["0.70"] is None and a["per_job_gain_vs_equal"]["0.70"] == {}, a
assert a["with_sla"]["cuts"]["0.30"]["pfi"]["total_throughput"] > 0, a["with_sla"]["cuts"]["0.30"]
PY
if command -v gnuplot >/dev/null 2>&1; then
  "$PFI_BIN" study --fleet small --direct --cuts 0.7,0.8 --out "$tmp/deeper" >/dev/null 2>"$tmp/progress" \
    || { cat "$tmp/progress"; fail "study with only infeasible cuts"; }
  has "$tmp/deeper/report.md" "Figure not drawn (no data to draw"
  [ ! -e "$tmp/deeper/fig_alloc_vs_cut.png" ] || fail "an allocation figure drawn with no cut run"
fi

# ---- imported public runs: what the study can and cannot do without telemetry ----
if [ ! -d "${PFI_DATA_DIR:-../shared/data}/perseus-sosp24" ]; then
  # The rest passed, but a part that did not run must not read as a pass.
  echo "public data absent (PFI_DATA_DIR=${PFI_DATA_DIR:-../shared/data}): --db part not run"
  exit 77
fi
"$PFI_BIN" import perseus --db "$tmp/pub.db" >/dev/null || fail "import perseus"
# A simulated study never replaces a store holding other runs: the imported ones here (its
# store was DIR/pfi.db, every command's default, and `pfi study --out .` deleted a folder's
# sweeps).  Its own store of an earlier study it does replace (the small fleet above, twice).
mkdir -p "$tmp/pubdir"
cp "$tmp/pub.db" "$tmp/pubdir/study.db"
sum0=$(sqlite3 "$tmp/pubdir/study.db" 'select count(*) from runs')
if "$PFI_BIN" study --fleet small --direct --no-figures --out "$tmp/pubdir" >/dev/null 2>"$tmp/err"; then
  fail "a study replaced a store of imported runs"
fi
has "$tmp/err" "not a study's simulated ones"
[ "$(sqlite3 "$tmp/pubdir/study.db" 'select count(*) from runs')" = "$sum0" ] || fail "the imported runs are gone"
"$PFI_BIN" import perseus --db "$tmp/pubdir/pfi.db" >/dev/null || fail "import perseus (pfi.db)"
rm -f "$tmp/pubdir/study.db"*
"$PFI_BIN" study --fleet small --direct --no-figures --out "$tmp/pubdir" >/dev/null 2>&1 || fail "study beside a pfi.db"
[ "$(sqlite3 "$tmp/pubdir/pfi.db" 'select count(*) from runs')" = "$sum0" ] || fail "the study touched DIR/pfi.db"
"$PFI_BIN" study --fleet small --direct --no-figures --out "$tmp/pubdir" >/dev/null 2>&1 || fail "a study did not replace its own store"
"$PFI_BIN" study --db "$tmp/pub.db" --out "$tmp/pub" --no-figures --json >"$tmp/pub.json" 2>"$tmp/progress" \
  || { cat "$tmp/progress"; fail "pfi study --db"; }
[ "$(jq_num "$tmp/pub.json" "['predictor']['done']")" = False ] || fail "predictor claims to be trained without telemetry"
has "$tmp/pub.json" "telemetry"
[ "$(jq_num "$tmp/pub.json" "['allocation']['done']")" = True ] || fail "no allocation on public runs"
has "$tmp/pub.json" "probe"
has "$tmp/pub.json" "GPU-weighted relative throughput"
# The public sweeps are the curves pfi's one-probe setting was chosen on: its figure is said
# in sample, in summary.json and the report (a 83% beside the paper's 63%, unmarked, before).
[ "$(jq_num "$tmp/pub.json" "['allocation']['setting_in_sample']")" = True ] || fail "study --db on public runs: not said in sample"
grep -q "This figure is in sample" "$tmp/pub/report.md" || fail "the study's report does not say the figure is in sample"
# ... and "Beside the paper", the one place that sets it beside the paper's held-out 63%, says so
# too (its row was unmarked, and its text said pfi "recovers at least the paper's share").
sed -n '/^## Beside the paper/,/^## /p' "$tmp/pub/report.md" >"$tmp/beside.md"
grep -q '^| gap recovered by pfi (equal -> oracle) | 63% | [0-9,]*% (in sample) |$' "$tmp/beside.md" &&
  grep -q "so this figure is in sample and does not compare with the paper's" "$tmp/beside.md" &&
  ! grep -q "recovers at least the paper's share\|a simulated fleet" "$tmp/beside.md" ||
  fail "Beside the paper, on public runs: $(cat "$tmp/beside.md")"
# what pfi saw is said as the experiment used it (its probe's depth and the shape it read it
# through), once: the report said "one probe at 40%" beside the note's "depth 0.50"
python3 - "$tmp/pub.json" "$tmp/pub/report.md" <<'PY' || fail "what pfi saw is not the estimator used"
import json, sys
d = json.load(open(sys.argv[1]))
rep = open(sys.argv[2]).read()
saw = [n[len("allocation: pfi saw "):] for n in d["not_done"] if n.startswith("allocation: pfi saw ")]
assert len(saw) == 1, d["not_done"]
sees = d["allocation"]["pfi_sees"]
assert sees.startswith(saw[0]), (sees, saw)
assert "pfi sees %s." % sees in rep and "Our pfi policy sees %s." % sees in rep, sees
assert "one probe at" not in rep.split("## What characterization costs")[0], "a second estimator"
PY
# Imported runs carry no level times: no cost figure, said so; the probe-vs-sweep rows still run.
python3 - "$tmp/pub.json" <<'PY' || fail "cost of imported runs"
import json, sys
d = json.load(open(sys.argv[1]))
c = d["characterization_cost"]
assert c["runs_timed"] == 0 and c["runs_without_times"] == d["runs"] and c["gpu_s"] is None, c
assert c["probe_vs_sweep"]["done"] and c["probe_vs_sweep"]["rows"][0]["runs"] > 0, c["probe_vs_sweep"]
PY
has "$tmp/pub/report.md" "no run has its levels' start and end times"
# a store's study is reproduced from its store, not from the simulated paper fleet
has "$tmp/pub/report.md" "^\`pfi study --db $tmp/pub.db --out $tmp/pub\`"

# ---- every public run: pfi relaxes every SLA on its own curves where the true floors fit ----
# Found by review at 10% and 20%: no feedback ran there, yet the report said the breaches were
# counted after it and "No SLA job breached at the plan" beside 25 breaches at the plan, the
# table's rows gave no sign, and the summary spoke of tokens/s for relative throughput.
"$PFI_BIN" import all --db "$tmp/all.db" >/dev/null || fail "import all"
"$PFI_BIN" study --db "$tmp/all.db" --out "$tmp/all" >/dev/null 2>"$tmp/progress" \
  || { cat "$tmp/progress"; fail "pfi study --db (every public run)"; }
python3 - "$tmp/all/summary.json" "$tmp/all/report.md" <<'PY' || fail "pfi's own relaxing of the SLAs misreported"
import json, re, sys
al = json.load(open(sys.argv[1]))["allocation"]
rep = open(sys.argv[2]).read()
cuts = al["with_sla"]["cuts"]
ran = {c: p for c, p in cuts.items() if "pfi" in p}
rx = sorted(c for c, p in ran.items() if p["pfi_relaxed"] and p["oracle"]["sla_breaches"] == 0)
assert rx, "no cut where only pfi relaxed the SLAs: the case is not exercised"
pct = lambda c: "%.0f%%" % (float(c) * 100)
brr = 0
for c in rx:
    p = ran[c]
    fb = p["pfi_feedback"]
    assert fb["rounds"] == fb["jobs_corrected"] == 0 and fb["plan_sla_breaches"] == p["pfi"]["sla_breaches"], (c, p)
    brr += p["pfi"]["sla_breaches"]
    row = [l for l in rep.splitlines() if l.startswith("| %s |" % pct(c)) and "/" in l.split("|")[-2]]
    assert row and "(pfi relaxed every SLA: they do not fit on its curves)" in row[0], (c, row)
assert brr > 0, "pfi breached nothing where it relaxed: the case is not exercised"
fed = [c for c, p in ran.items() if not p["pfi_relaxed"] and p["oracle"]["sla_breaches"] == 0]
if not any(ran[c]["pfi_feedback"]["jobs_corrected"] for c in fed):
    plan = sum(ran[c]["pfi_feedback"]["plan_sla_breaches"] for c in fed)
    assert ("No SLA job breached at the plan" in rep) == (bool(fed) and plan == 0), (fed, plan)
want = ("At %s the true SLA floors fit the budget, but the SLAs do not fit it on pfi's own "
        "curves: pfi relaxed every SLA there, so no feedback ran, and its %d breaches there are "
        "its plan's." % (", ".join(map(pct, rx)), brr))
assert want in rep, want
s = [l for l in rep.splitlines() if l.startswith("- With SLAs")][0]
assert al["unit"] != "tokens/s" and "tokens/s" not in s, s
assert "no feedback ran" in s and "its plan, before that feedback" not in s or \
       any(float(c) <= 0.3 for c in fed), s
PY
# the figures say what they draw: the curves' caption which run it leaves out (it said "every
# run" over 240 of 241), and a y label short enough for its panel (gnuplot cut off "(GPU-weighted
# relative throughput)"); the .gp files are written with or without gnuplot
python3 - "$tmp/all/summary.json" "$tmp/all/report.md" "$tmp/all/fig_alloc_vs_cut.gp" <<'PY' || fail "the store study's figures misdescribed"
import json, re, sys
d = json.load(open(sys.argv[1]))
rep = open(sys.argv[2]).read()
cap = re.search(r"\*(Power -> throughput curves of [^*]*)\*", rep).group(1)
left = [l[2:].split(": no curve")[0] for l in rep.splitlines() if l.startswith("- ") and ": no curve (" in l]
assert d["runs"] - len(left) < d["runs"] and "every run" not in cap, cap
assert "%d of the %d runs" % (d["runs"] - len(left), d["runs"]) in cap, cap
assert len(left) != 1 or "left out: %s, which has no curve" % left[0] in cap, (cap, left)
labels = re.findall(r'set ylabel "([^"]*)"', open(sys.argv[3]).read())
assert labels and all(len(l) <= len("gain per job over equal (tokens/s)") for l in labels), labels
PY
# the cost evaluation's truth is the PFI table's PFI30: a run whose sweep stops at a 29% shed
# (perseus/A40/t5-3b) is in neither, not scored against the index's extrapolation
python3 - "$tmp/all/summary.json" <<'PY' || fail "the cost evaluation scores against an extrapolated PFI30"
import json, sys
d = json.load(open(sys.argv[1]))
c = d["characterization_cost"]["probe_vs_sweep"]
assert c["runs_reaching_30pct"] == d["runs_with_pfi"], (c["runs_reaching_30pct"], d["runs_with_pfi"])
PY
# pfi evaluate --cost scores the runs of --source, as the allocation's jobs are (it scored all
# 241 public runs whatever the list): every run's sources filtered give the perseus store's
"$PFI_BIN" evaluate --db "$tmp/all.db" --source perseus --cost --json >"$tmp/cost_src.json" \
  || fail "evaluate --source perseus --cost"
"$PFI_BIN" evaluate --db "$tmp/pub.db" --cost --json >"$tmp/cost_pers.json" || fail "evaluate --cost (perseus)"
python3 - "$tmp/cost_src.json" "$tmp/cost_pers.json" <<'PY' || fail "evaluate --cost ignores --source"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
for d in (a, b):
    d.pop("population", None)
assert a["runs"] == b["runs"] < 241 and a == b, (a["runs"], b["runs"])
PY
# relative throughput's per-job gains are hundredths: read to 3 significant digits, not "+0.0"
python3 - "$tmp/all/summary.json" "$tmp/all/report.md" <<'PY' || fail "gains in relative throughput printed as 0"
import json, sys
al = json.load(open(sys.argv[1]))["allocation"]
rep = open(sys.argv[2]).read()
sig3 = lambda v: float("%.3g" % v)
n = 0
for c, g in al["per_job_gain_vs_equal"].items():
    if not g:
        continue
    row = [l.split("|") for l in rep.splitlines() if l.startswith("| %.0f%% |" % (float(c) * 100))][0]
    for col, pol in ((6, "pfi"), (7, "oracle")):
        got = float(row[col].strip().replace(",", ""))
        assert 0 < abs(g[pol]) < 0.1 and got == sig3(g[pol]), (c, pol, row[col], g[pol])
        n += 1
assert n > 0
g30 = sig3(al["per_job_gain_vs_equal"]["0.30"]["pfi"])
assert "(%s GPU-weighted relative throughput per job over equal)" % ("%.3g" % g30) in rep, g30
assert "| gain per job over equal | ~1,500 tokens/s | %.3g GPU-weighted" % g30 in rep, g30
PY
[ -z "${skipped:-}" ] || { echo "the rest ok; $skipped"; exit 77; }
echo "ok"
