# SPDX-License-Identifier: Apache-2.0
"""Per-phase means of what bench/h200/run.sh recorded, next to the simulator's H200, as the
Markdown of COMPARISON.md.

    python3 bench/h200/summarize.py OUTDIR [--pfi build/pfi] > COMPARISON-draft.md

OUTDIR holds run.sh's files (phases.txt, monitor.jsonl, burn.log, train.log, env.txt, ...).
Each phase is averaged after a settle time (3 s; the firmware and the 1-second power average
need it) and without its last second.  The simulator side runs `pfi sim curve` and
`pfi monitor` on bench/h200/sim_train.json (train.py's model on one H200) and quotes the
simulator's design targets for a pure GEMM load (docs/simulator.md)."""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

FIELDS = ["power_w", "power_inst_w", "mem_power_w", "sm_clock_mhz", "mem_clock_mhz", "gpu_util",
          "sm_active", "sm_occupancy", "tensor_active", "dram_active", "temp_c"]
SETTLE_S = 3.0


def load_phases(path):
    phases = []
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            name, t0, t1, rc = line.split()
            phases.append((name, float(t0), float(t1), rc))
    return phases


def load_monitor(path):
    rows = []
    with open(path) as f:
        for line in f:
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                pass  # a line cut by the TERM at the end
    return rows


def phase_stats(rows, t0, t1):
    sel = [r for r in rows if r.get("gpu") == 0 and t0 + SETTLE_S <= r["t_s"] <= t1 - 1.0]
    out = {"n": len(sel)}
    for k in FIELDS:
        vals = [r[k] for r in sel if r.get(k) is not None]
        out[k] = statistics.fmean(vals) if vals else None
    reasons = [r["clock_reasons"] for r in sel if r.get("clock_reasons") is not None]
    out["powercap"] = (sum(1 for x in reasons if x & 0x4) / len(reasons)) if reasons else None
    return out


def fmt(v, scale=1.0, digits=0):
    return "n/a" if v is None else f"{v * scale:.{digits}f}"


def burn_summaries(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [l.strip() for l in f if l.startswith("pfi-burn: done")]


def train_tps(path):
    if not os.path.exists(path):
        return None
    with open(path) as f:
        tps = [float(m.group(1).replace(",", "")) for m in
               (re.search(r"tps: ([\d,]+)", l) for l in f) if m]
    return statistics.median(tps[2:]) if len(tps) > 2 else None  # skip warm-up lines


def sim_side(pfi, cfg):
    try:
        curve = subprocess.run([pfi, "sim", "curve", "--sim", cfg], capture_output=True,
                               text=True, check=True).stdout
        mon = subprocess.run([pfi, "monitor", "--sim", cfg, "--count", "3", "--interval", "1s",
                              "--format", "jsonl"], capture_output=True, text=True,
                             check=True).stdout.strip().splitlines()[-1]
    except (OSError, subprocess.CalledProcessError) as e:
        return None, f"(simulator not run: {e})"
    row700 = next((l.split() for l in curve.splitlines() if l.split()[:1] == ["700"]), None)
    return json.loads(mon), row700


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--pfi", default="build/pfi")
    a = ap.parse_args()
    rows = load_monitor(os.path.join(a.outdir, "monitor.jsonl"))
    phases = load_phases(os.path.join(a.outdir, "phases.txt"))
    print("| phase | s | samples | power W | inst W | HBM W | SM MHz | mem MHz | util % | "
          "SM act % | occ % | tensor % | DRAM % | temp C | SW power cap % |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, t0, t1, rc in phases:
        s = phase_stats(rows, t0, t1)
        print(f"| {name} | {t1 - t0:.0f} | {s['n']} | {fmt(s['power_w'])} | "
              f"{fmt(s['power_inst_w'])} | {fmt(s['mem_power_w'])} | {fmt(s['sm_clock_mhz'])} | "
              f"{fmt(s['mem_clock_mhz'])} | {fmt(s['gpu_util'], 100)} | "
              f"{fmt(s['sm_active'], 100)} | {fmt(s['sm_occupancy'], 100)} | "
              f"{fmt(s['tensor_active'], 100)} | {fmt(s['dram_active'], 100)} | "
              f"{fmt(s['temp_c'])} | {fmt(s['powercap'], 100)} |")
    print()
    for line in burn_summaries(os.path.join(a.outdir, "burn.log")):
        print(f"- `{line}`")
    tps = train_tps(os.path.join(a.outdir, "train.log"))
    print(f"- train.py: median tokens/s after warm-up: {fmt(tps)}")
    here = os.path.dirname(os.path.abspath(__file__))
    mon, row = sim_side(a.pfi, os.path.join(here, "sim_train.json"))
    print()
    if mon is None:
        print(row)
        return 0
    print("Simulator, train.py's model on one H200 at 700 W (`pfi sim curve` / `pfi monitor "
          "--sim bench/h200/sim_train.json`):")
    print(f"- tokens/s {row[1] if row else 'n/a'}, power {fmt(mon['power_w'])} W, "
          f"SM {fmt(mon['sm_clock_mhz'])} MHz, SM active {fmt(mon['sm_active'], 100)} %, "
          f"tensor {fmt(mon['tensor_active'], 100)} %, DRAM {fmt(mon['dram_active'], 100)} %, "
          f"HBM {fmt(mon['mem_power_w'])} W")
    print("- its design target for a full GEMM load at 700 W: ~1500 MHz (docs/simulator.md)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
