#!/bin/sh
# Command-level benchmarks, run by `make bench` after the bench/bench_*.c programs.
# Each prints figures and ratios; none asserts a time.  Add one line per benchmark.
#   bench/run.sh PFI_BINARY
set -eu
PFI=${1:-build/pfi}
export PFI
run() { echo "== $*"; "$@"; }
run sh bench/bench_serve_api.sh "$PFI"
run "$PFI" bench allocate --jobs 100000 --gpus-per-job 1-32
