#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Install the Debian packages pfi needs to build, test and run its demo.
#   scripts/install-deps.sh [build|test|all]   (default: all)
# As root it runs apt-get; otherwise it prints the exact apt-get line and
# exits non-zero, so `make` stops with something a person can act on.
set -eu

BUILD_PKGS="build-essential pkg-config libsqlite3-dev libgsl-dev libjansson-dev libmicrohttpd-dev libcurl4-openssl-dev libslurm-dev"
TEST_PKGS="libcmocka-dev gnuplot-nox sqlite3 curl jq python3 prometheus chromium fonts-dejavu-core clang libclang-rt-dev systemd groff-base man-db mandoc dpkg-dev lintian"
# clang and libclang-rt-dev build the libFuzzer targets (tests/fuzz/: make fuzz, briefly in make check).
# Optional: used by tests that skip with a message when they are absent.
OPT_PKGS="wrk"

what=${1:-all}
case "$what" in
  build) pkgs="$BUILD_PKGS" ;;
  test)  pkgs="$BUILD_PKGS $TEST_PKGS" ;;
  all)   pkgs="$BUILD_PKGS $TEST_PKGS" ;;
  optional) pkgs="$OPT_PKGS" ;;
  *) echo "usage: $0 [build|test|all|optional]" >&2; exit 2 ;;
esac

missing=""
for p in $pkgs; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing="$missing $p"
  fi
done
[ -z "$missing" ] && exit 0

line="apt-get install -y --no-install-recommends$missing"
if [ "$(id -u)" -ne 0 ]; then
  echo "pfi: missing Debian packages:$missing" >&2
  echo "pfi: run as root:  apt-get update && $line" >&2
  exit 1
fi
echo "pfi: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
if [ "$what" = optional ]; then exit 0; fi
