#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Run every cmocka test binary under BUILD/tests and every integration script tests/it_*.sh,
# then print one closing line "N passed, N failed, N skipped" for the whole suite.
#   tests/run.sh BUILD LABEL
# Integration scripts get PFI_BIN (the pfi binary of that build) and PFI_FAKENVML.
# A test that cannot run (public data or a tool absent) exits 77 and prints why: a script says
# so itself (also when only a part of it could not run), a cmocka binary through
# tests/support/skip.h, and a cmocka binary whose output lists a skipped test counts as skipped
# too.  With PFI_TEST_STRICT=1 (set by `make check`: CI installs every tool and has the data) a
# skip is a failure, except for the tests that need a GPU or nvcc, which CI never has.
build=${1:-build}
label=${2:-tests}
strict=${PFI_TEST_STRICT:-0}
device_only="it_nvml_burn"
pass=0; fail=0; skip=0; failed=""
tmp=${TMPDIR:-/tmp}/pfi-tests.$$
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT INT TERM

# skipped NAME LOG: count one skip, or one failure under PFI_TEST_STRICT.
skipped() {
  case " $device_only " in *" $1 "*) dev=1 ;; *) dev=0 ;; esac
  if [ "$strict" = 1 ] && [ $dev = 0 ]; then
    fail=$((fail + 1)); failed="$failed $1"
    echo "FAIL $1 (skipped, and make check allows no skip: $(tail -n 1 "$2"))"; cat "$2"
  else
    skip=$((skip + 1)); echo "SKIP $1: $(tail -n 1 "$2")"
  fi
}

for t in "$build"/tests/test_*; do
  [ -x "$t" ] || continue
  name=$(basename "$t")
  PFI_TEST_TMP="$tmp" "$t" >"$tmp/$name.log" 2>&1
  rc=$?
  if [ $rc -eq 0 ] && ! grep -q '^\[  SKIPPED \]' "$tmp/$name.log"; then
    pass=$((pass + 1)); echo "PASS $name"
  elif [ $rc -eq 0 ] || [ $rc -eq 77 ]; then skipped "$name" "$tmp/$name.log"
  else
    fail=$((fail + 1)); failed="$failed $name"; echo "FAIL $name"; cat "$tmp/$name.log"
  fi
done
for t in tests/it_*.sh; do
  [ -f "$t" ] || continue
  name=$(basename "$t" .sh)
  PFI_TEST_TMP="$tmp" sh "$t" >"$tmp/$name.log" 2>&1
  rc=$?
  if [ $rc -eq 0 ]; then pass=$((pass + 1)); echo "PASS $name"
  elif [ $rc -eq 77 ]; then skipped "$name" "$tmp/$name.log"
  else fail=$((fail + 1)); failed="$failed $name"; echo "FAIL $name (exit $rc)"; cat "$tmp/$name.log"; fi
done
echo "$label: $pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ] || { echo "failed:$failed"; exit 1; }
