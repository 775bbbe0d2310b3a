#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Write the node configuration (`pfi sim` JSON) of one Perseus A100 run with the constants one
split of `pfi sim validate --json` fitted, so that `pfi sim curve --sim FILE` and
`pfi monitor --sim FILE --count 1` show that split's model of the run: its curve, and each
pipeline stage's GPU (power, clock, SM and DRAM activity) at the 300 W limit.

    sim-split-node.py VALIDATE.json SPLIT MODEL [W,W,W,W] > node.json   (PFI_DATA_DIR set)

W,W,W,W: a limit per GPU (one per pipeline stage, as in zeus_local.csv); then
`pfi sim run --sim node.json --duration 10s --interval 10s` gives the run's tokens/s there.

MODEL is a transformer run of the A100 sweep other than t5-3b (gpt3-xl, bert-huge-uncased,
bloom-3b). The node is the one `pfi sim validate` builds (study/sim_validate.c: 4 GPUs on one
host, seed 0, variation 0.03, eager attention, GPT and BLOOM at 1024 tokens, BERT at 512, the
partition's Merak units as layers: GPT-2 style models have two embedding units, the others
one, the head one unit on the last stage)."""
import csv
import json
import os
import sys


def main():
    if len(sys.argv) not in (4, 5):
        print("usage: sim-split-node.py VALIDATE.json SPLIT MODEL [W,W,W,W]", file=sys.stderr)
        return 2
    path, split, model = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if model.startswith("t5"):
        print("sim-split-node: T5's decoder units are not handled here", file=sys.stderr)
        return 2
    doc = json.load(open(path))
    # Every split's document, or one split's (`--split N`).
    sp = [s for s in doc.get("splits", [doc]) if s.get("split") == split]
    if not sp:
        print("sim-split-node: no split %d in %s" % (split, path), file=sys.stderr)
        return 2
    g = [x for x in sp[0]["fitted_gpus"] if x["type"] == "A100-PCIE-80GB"][0]
    data = os.environ.get("PFI_DATA_DIR")
    if not data:
        print("sim-split-node: set PFI_DATA_DIR", file=sys.stderr)
        return 2
    rows = [r for r in csv.DictReader(open(os.path.join(
        data, "perseus-sosp24/zeus_baseline/A100/zeus_global.csv"))) if r["model_name"] == model]
    if not rows:
        print("sim-split-node: no A100 run of %s" % model, file=sys.stderr)
        return 2
    r = rows[0]
    pp = int(r["pp"])
    bounds = [int(x) for x in r["partition_method"].split(":", 1)[1].split(",")]
    emb = 2 if model.startswith("gpt") else 1
    layers = [bounds[s + 1] - bounds[s] for s in range(pp)]
    layers[0] -= emb
    layers[-1] -= 1
    gpu = {"type": g["type"]}
    for k in ("dyn_w", "busy_static_w", "v_floor", "f_knee", "v_gamma", "gemm_eff", "mem_eff",
              "sat_frac"):
        gpu[k] = g[k]
    node = {
        "name": "perseus-A100", "gpu": gpu, "gpus": pp, "gpus_per_host": 4,
        "net_gbs": g["net_gbs"], "net_jitter": g["net_jitter"], "seed": 0, "variation": 0.03,
        "jobs": [{
            "name": "train", "model": model, "dp": int(r["dp"]), "tp": int(r["tp"]), "pp": pp,
            "micro_batch": int(r["microbatch_size"]), "global_batch": int(r["batch_size"]),
            "seq_len": 512 if model.startswith("bert") else 1024, "attention": "eager",
            "stage_layers": layers, "host_ms": g["host_ms"]}],
    }
    if len(sys.argv) == 5:
        node["limits_w"] = [float(x) for x in sys.argv[4].split(",")]
        if len(node["limits_w"]) != pp:
            print("sim-split-node: %d limits for %d GPUs" % (len(node["limits_w"]), pp),
                  file=sys.stderr)
            return 2
    json.dump(node, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
