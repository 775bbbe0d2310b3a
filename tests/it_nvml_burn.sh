#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# pfi-burn (built by `make burn` where nvcc exists): its options are checked before any GPU
# is touched, and without a GPU it fails with CUDA's reason, not a crash.  Where a GPU is
# present (never in CI) it runs one second of each phase and must print the protocol.
set -u
[ -n "${PFI_BIN:-}" ] || { echo "PFI_BIN is not set"; exit 77; }
burn=""
for c in "$(dirname "$PFI_BIN")/pfi-burn" "$(dirname "$PFI_BIN")/../pfi-burn"; do
  [ -x "$c" ] && { burn=$c; break; }
done
[ -n "$burn" ] || { echo "pfi-burn is not built (make burn needs nvcc)"; exit 77; }
tmp=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/it_nvml_burn.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

"$burn" --help >"$tmp/o" 2>&1 || bad "--help exited non-zero"
grep -q "pfi: tokens=" "$tmp/o" || bad "--help does not describe the protocol"
for args in "--mix gemm=x" "--mix flops=1" "--mix gemm=0" "--duration -1" "--size 100" \
            "--duration" "--bogus 1"; do
  # shellcheck disable=SC2086
  "$burn" $args >"$tmp/o" 2>&1
  rc=$?
  [ $rc -eq 2 ] || bad "'$args' exited $rc, not 2"
  grep -q "pfi-burn:" "$tmp/o" || bad "'$args' gave no message"
done
"$burn" --duration 1 --mix gemm=1,stream=1,idle=1 --period 0.5 --size 1024 --stream-mib 256 \
  >"$tmp/run.out" 2>"$tmp/run.err"
rc=$?
if [ $rc -eq 0 ]; then
  last=$(grep -c '^pfi: tokens=[0-9]* t=' "$tmp/run.out")
  [ "$last" -ge 2 ] || bad "no progress lines on a GPU"
  grep -q "pfi-burn: done" "$tmp/run.err" || bad "no summary on a GPU"
else
  [ $rc -eq 1 ] || bad "without a GPU it exited $rc, not 1"
  grep -q "pfi-burn: .* failed" "$tmp/run.err" || { bad "no CUDA reason"; cat "$tmp/run.err"; }
fi
[ $fail -eq 0 ] && echo "ok: pfi-burn options$([ $rc -eq 0 ] && echo ', a run on a GPU' || echo ', no GPU: clean failure')"
exit $fail
