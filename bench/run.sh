#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Command-level benchmarks, run by `make bench` after the bench/bench_*.c programs.
# Each prints figures and ratios; none asserts a time.  Add one line per benchmark.
#   bench/run.sh PFI_BINARY
set -eu
PFI=${1:-build/pfi}
export PFI
run() { echo "== $*"; "$@"; }
run sh bench/bench_serve_api.sh "$PFI"
run "$PFI" bench allocate --jobs 100000 --gpus-per-job 1-32
# PFI predictor targets (issue 5): LOJO MAE <= 0.04, H200->H100 <= 0.06, one probe at 70% <= 0.03.
run "$PFI" model eval --fleet paper
if [ -d "${PFI_DATA_DIR:-../shared/data}/perseus-sosp24" ]; then run "$PFI" model probe-eval; fi
# The performance targets: each figure, its ratio to a reference measured in the same run, met or not.
echo "== targets"
python3 bench/targets.py "$PFI" "$(dirname "$PFI")"
