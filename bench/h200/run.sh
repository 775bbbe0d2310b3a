#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The read-only check on a real H200 (issue 4), run once through the device tool:
#   sh bench/h200/prepare.sh            # here: gathers .h200/ (pfi, its libraries, pfi-burn)
#   run(command="bash bench/h200/run.sh", carry=[".h200"], timeout_s=420)
# It NEVER changes the GPU: no power limit, clock lock, persistence mode or reset.  pfi runs
# only with --read-only and PFI_READ_ONLY=1, and nothing here calls a setter.
#
# Writes at most 8 files to $OUT: env.txt, gpus.json, monitor.jsonl, phases.txt, burn.log,
# train.log, smi.txt, run.log.  Phase times in phases.txt are CLOCK_MONOTONIC seconds, the
# clock of monitor.jsonl's t_s.
# Dry run without a GPU (short phases, the fake NVML): H200_DRY=1 OUT=/tmp/x bash bench/h200/run.sh
set -u
OUT=${OUT:-/tmp/h200-out}
mkdir -p "$OUT"
export PFI_READ_ONLY=1
ROOT=$(pwd)
CARRY=$ROOT/.h200
SCALE=1
NVML_ARGS=()
if [ "${H200_DRY:-0}" = 1 ]; then
  SCALE=${H200_SCALE:-0.1}
  NVML_ARGS=(--nvml-lib "$CARRY/fake/libnvidia-ml.so.1")
  export PFI_FAKENVML_SIM=${PFI_FAKENVML_SIM:-h200x1-small}
fi
dur() { python3 -c "print(max(1, round($1 * $SCALE, 1)))"; }
mono() { python3 -c 'import time; print(f"{time.monotonic():.3f}")'; }
log() { echo "[$(date -u +%T)] $*" >>"$OUT/run.log"; }
# pfi's libraries travel in .h200/lib; only pfi sees them (torch and nvcc keep their own).
pfi() { LD_LIBRARY_PATH="$CARRY/lib" "$CARRY/pfi" "$@"; }

log "start in $ROOT"
{
  date -u
  uname -a
  grep PRETTY_NAME /etc/os-release
  nvidia-smi --query-gpu=name,uuid,driver_version,pstate,power.draw,power.limit,power.default_limit,power.min_limit,power.max_limit,enforced.power.limit,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu --format=csv 2>&1
  nvidia-smi -q -d POWER,CLOCK,PERFORMANCE 2>&1 | head -120
  python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)' 2>&1
} >"$OUT/env.txt" 2>&1

# pfi-burn: built here with this machine's nvcc; the binary carried from the build machine is
# the fallback (it needs libcublas.so.13, which PyTorch's wheels carry).
NVCC=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
BURN=/tmp/pfi-burn
BURN_LD=""
if [ -n "$NVCC" ] && "$NVCC" -O2 -arch=sm_90 -o "$BURN" src/burn/burn.cu -lcublas >>"$OUT/run.log" 2>&1; then
  log "pfi-burn built with $NVCC"
else
  log "nvcc build failed or absent; using the carried pfi-burn"
  BURN="$CARRY/pfi-burn"
  BURN_LD=$(python3 -c 'import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], "lib"))' 2>/dev/null)
fi
burn() { LD_LIBRARY_PATH="$BURN_LD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$BURN" "$@"; }

log "pfi $(pfi --version 2>&1)"
pfi gpus --backend nvml "${NVML_ARGS[@]}" --read-only --json >"$OUT/gpus.json" 2>>"$OUT/run.log"
log "pfi gpus exit $?"
pfi gpus --backend nvml "${NVML_ARGS[@]}" --read-only >>"$OUT/run.log" 2>&1

nvidia-smi dmon -s pucm -d 1 >"$OUT/smi.txt" 2>&1 &
SMI=$!
# Started directly (not through the pfi function) so that $! is pfi itself and the TERM
# below reaches it; it stops cleanly on TERM.
LD_LIBRARY_PATH="$CARRY/lib" "$CARRY/pfi" monitor --backend nvml "${NVML_ARGS[@]}" --read-only \
  --format jsonl --interval 100ms --duration 400s >"$OUT/monitor.jsonl" 2>>"$OUT/run.log" &
MON=$!

phase() { # name command...: runs it, records its monotonic start and end
  local name=$1; shift
  local t0; t0=$(mono)
  echo "== $name $(date -u +%T)" >>"$OUT/burn.log"
  "$@"
  local rc=$?
  echo "$name $t0 $(mono) rc=$rc" >>"$OUT/phases.txt"
  log "phase $name exit $rc"
}
echo "# phase start_monotonic_s end_monotonic_s exit" >"$OUT/phases.txt"
phase idle_before sleep "$(dur 5)"
phase compute burn --duration "$(dur 30)" --mix gemm=1 >>"$OUT/burn.log" 2>&1
phase gap1 sleep "$(dur 3)"
phase memory burn --duration "$(dur 30)" --mix stream=1 >>"$OUT/burn.log" 2>&1
phase idle sleep "$(dur 15)"
phase mixed burn --duration "$(dur 10)" --mix gemm=0.5,stream=0.3,idle=0.2 --period 2 >>"$OUT/burn.log" 2>&1
phase gap2 sleep "$(dur 3)"
phase train env PYTHONUNBUFFERED=1 python3 bench/h200/train.py --duration "$(dur 40)" >"$OUT/train.log" 2>&1
phase idle_after sleep "$(dur 5)"

kill -TERM "$MON" 2>/dev/null
wait "$MON"
log "pfi monitor exit $? ($(wc -l <"$OUT/monitor.jsonl") lines)"
kill "$SMI" 2>/dev/null
wait "$SMI" 2>/dev/null
log "done"
exit 0
