#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Compare two `pfi sim validate --json` documents of the same data: the largest relative change
of the fitted constants (every split, every GPU type) and of every run's simulated outputs
(relative throughput and power at each limit, absolute power and step time at the top limit).
Prints no error figure of any run: what it compares is what the fit chose and what the model
computed, not how well either matches a measurement.

    sim-fit-compare.py A.json B.json [--max-const X] [--max-out Y] [--list]

With --max-const / --max-out it exits 1 when a change exceeds the bound (a constant within 1e-10
of 0 counts as unchanged when it moves by <= 1e-10)."""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--max-const", type=float)
    ap.add_argument("--max-out", type=float)
    ap.add_argument("--list", action="store_true", help="print every constant that moved")
    o = ap.parse_args()
    try:
        a, b = (json.load(open(p)) for p in (o.a, o.b))
        sa_all, sb_all = a["splits"], b["splits"]
    except (OSError, ValueError, KeyError) as e:
        print("sim-fit-compare: cannot read a `pfi sim validate --json` document: %s" % e,
              file=sys.stderr)
        return 2
    if len(sa_all) != len(sb_all):
        print("sim-fit-compare: the documents have different splits", file=sys.stderr)
        return 2
    worst = {"constants": (0.0, ""), "outputs": (0.0, "")}
    counts = [0, 0]

    def upd(cat, x, y, name):
        d = abs(x - y)
        if d == 0:
            r = 0.0
        elif abs(x) < 1e-10 and d <= 1e-10:
            r = 0.0
        else:
            r = d / abs(x) if x != 0 else float("inf")
        counts[0] += 1
        counts[1] += d != 0
        if r > worst[cat][0]:
            worst[cat] = (r, name)

    for i, (sa, sb) in enumerate(zip(sa_all, sb_all)):
        for ga, gb in zip(sa["fitted_gpus"], sb["fitted_gpus"]):
            moved = []
            for k, x in ga.items():
                if isinstance(x, (int, float)) and not isinstance(x, bool):
                    upd("constants", x, gb[k], "split %d %s %s" % (i, ga["type"], k))
                    if x != gb[k]:
                        moved.append("%s %.9g -> %.9g" % (k, x, gb[k]))
            if o.list and moved:
                print("split %d %s: %s" % (i, ga["type"], ", ".join(moved)))
        for ra, rb in zip(sa["runs"], sb["runs"]):
            for la, lb in zip(ra["levels"], rb["levels"]):
                for k in ("sim_throughput", "sim_power"):
                    upd("outputs", la[k], lb[k], "split %d %s %s at %g W" % (i, ra["run"], k,
                                                                             la["limit_w"]))
            for k in ("sim_power_w_at_max", "sim_step_s_at_max"):
                upd("outputs", ra[k], rb[k], "split %d %s %s" % (i, ra["run"], k))
    for cat, (r, name) in worst.items():
        print("%-9s largest relative change %.3g%s" % (cat, r, " (%s)" % name if name else ""))
    print("fields compared %d, differing %d" % tuple(counts))
    bad = (o.max_const is not None and worst["constants"][0] > o.max_const) or \
          (o.max_out is not None and worst["outputs"][0] > o.max_out)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
