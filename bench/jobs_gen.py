#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A seeded jobs file (docs/jobs-format.md) of N jobs for timing `pfi allocate --jobs`:
each job has a true and a predicted curve of 11 caps from 200 to 700 W, shaped like measured
ones (no loss down to the draw P0, then a convex slowdown), an SLA on every fifth job.
    python3 bench/jobs_gen.py N OUT.json"""
import json
import random
import sys


def job(rng, i):
    p0 = rng.uniform(450, 700)
    t0 = rng.uniform(2e4, 2e5)
    a, b = rng.uniform(0.3, 0.9), rng.uniform(1.3, 2.2)
    caps = [200 + 50 * k for k in range(11)]
    def tput(c, err):
        r = max(0.0, 1 - c / p0)
        return round(t0 * (1 - a * r ** b) * (1 + err), 3)
    j = {"id": "job-%07d" % i, "gpus": rng.randint(1, 32), "p0_w": round(p0, 2),
         "curve": {"cap_w": caps, "tput": [tput(c, 0) for c in caps]},
         "predicted_curve": {"cap_w": caps,
                             "tput": [tput(c, rng.uniform(-0.02, 0.02)) for c in caps]}}
    if i % 5 == 0:
        j["sla_max_slowdown"] = 0.1
    return j


def write(n, out):
    rng = random.Random(42)
    with open(out, "w") as f:
        f.write('{"jobs": [\n')
        for i in range(n):
            f.write((",\n" if i else "") + json.dumps(job(rng, i)))
        f.write("\n]}\n")


def main():
    write(int(sys.argv[1]), sys.argv[2])


if __name__ == "__main__":
    main()
