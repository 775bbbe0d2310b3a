#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Gathers what bench/h200/run.sh needs on the device machine into .h200/ (ignored by git):
# pfi built here, the shared libraries it links (the device image has no -dev packages), the
# fake libnvidia-ml for a dry run, and a pfi-burn fallback.  glibc itself is not carried: pfi
# needs GLIBC_2.35 at most.
#   sh bench/h200/prepare.sh [BUILD]      (default build/nvml)
set -eu
build=${1:-build/nvml}
make BUILD="$build" -j2 "$build/pfi" "$build/lib/libnvidia-ml.so.1" burn >/dev/null
grep -qx '/.h200/' .git/info/exclude 2>/dev/null || echo '/.h200/' >>.git/info/exclude
rm -rf .h200
mkdir -p .h200/lib .h200/fake
cp "$build/pfi" .h200/pfi
cp "$build/lib/libnvidia-ml.so.1" .h200/fake/
[ -x "$build/pfi-burn" ] && cp "$build/pfi-burn" .h200/pfi-burn
ldd "$build/pfi" | awk '$3 ~ /^\// {print $3}' |
  grep -vE '/(libc|libm|libdl|libpthread|librt|libresolv|ld-linux[^/]*)\.so' |
  while read -r lib; do cp -L "$lib" .h200/lib/; done
du -sh .h200
