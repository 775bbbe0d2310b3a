#!/bin/sh
# Run every cmocka test binary under BUILD/tests and every integration script tests/it_*.sh,
# then print one closing line "N passed, N failed" for the whole suite.
#   tests/run.sh BUILD LABEL
# Integration scripts get PFI_BIN (the pfi binary of that build) and PFI_FAKENVML.
# A script that exits 77 is counted as skipped (it must print why).
build=${1:-build}
label=${2:-tests}
pass=0; fail=0; skip=0; failed=""
tmp=${TMPDIR:-/tmp}/pfi-tests.$$
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT INT TERM

echo "== pfi tests: $label"
for t in "$build"/tests/test_*; do
  [ -x "$t" ] || continue
  name=$(basename "$t")
  if PFI_TEST_TMP="$tmp" "$t" >"$tmp/$name.log" 2>&1; then
    pass=$((pass + 1)); echo "PASS $name"
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
  elif [ $rc -eq 77 ]; then skip=$((skip + 1)); echo "SKIP $name: $(tail -n 1 "$tmp/$name.log")"
  else fail=$((fail + 1)); failed="$failed $name"; echo "FAIL $name (exit $rc)"; cat "$tmp/$name.log"; fi
done
echo "$label: $pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ] || { echo "failed:$failed"; exit 1; }
