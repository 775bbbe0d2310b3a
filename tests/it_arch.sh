#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Test of scripts/check-arch.py itself on tests/fixtures/arch, a tiny tree that breaks every rule
# once: each must be reported, an allowlist must silence exactly what it lists, and an entry that
# matches nothing must fail (so the list shrinks as the code is fixed).
set -u
command -v python3 >/dev/null 2>&1 || { echo "python3 not found (scripts/install-deps.sh test)"; exit 77; }
top=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/it_arch.XXXXXX")
trap 'rm -rf "$T"' EXIT
bad=0
check() { python3 "$top/scripts/check-arch.py" --root "$top/tests/fixtures/arch" --allow "$@"; }

check /dev/null > "$T/out" 2>&1
rc=$?
[ $rc -eq 1 ] || { echo "FAIL: violations must fail the check (exit $rc)"; bad=1; }
for want in 'VIOLATION circle core/a.c core/b.c' \
            'core/b.c -> core/a.c: core/b.c:7 calls pfi_a_fn()' \
            'VIOLATION circle cli/tool.c core/up.c' \
            'VIOLATION layer core/up.c -> cli/tool.h' \
            'VIOLATION sim-hw sim/s.c' \
            'VIOLATION sqlite cli/tool.c' \
            'VIOLATION monotonic cli/tool.c' \
            'VIOLATION monotonic util/u.c' \
            'VIOLATION long-function cli/tool.c:main' \
            'VIOLATION unused u_never' \
            'VIOLATION prefix u_never' \
            '11 violation(s)'; do
  grep -qF "$want" "$T/out" || { echo "FAIL: not reported: $want"; bad=1; }
done
# u_used is called from another file; a static function is never "unused".
if grep -E '(unused|prefix) (pfi_u_used|s_fn|b_ops)' "$T/out"; then
  echo "FAIL: a used or static function reported"; bad=1
fi
# o->u_never() calls a field, not util/u.c's u_never.
python3 "$top/scripts/check-arch.py" --root "$top/tests/fixtures/arch" --allow /dev/null --graph \
  > "$T/graph" 2>&1
grep -q '^edge core/b.c -> core/a.c: core/b.c:7 calls pfi_a_fn()' "$T/graph" ||
  { echo "FAIL: no edge for b.c's call: $(grep '^edge' "$T/graph")"; bad=1; }
if grep '^edge core/b.c -> util/' "$T/graph"; then echo "FAIL: a field call made an edge"; bad=1; fi

# Every violation listed, with its reason: the check passes.
grep '^VIOLATION' "$T/out" | sed 's/^VIOLATION \(.*\)$/\1 -- known in this fixture/' > "$T/allow"
check "$T/allow" > "$T/out2" 2>&1 || { echo "FAIL: a full allowlist still fails:"; cat "$T/out2"; bad=1; }
grep -qF '0 violation(s), 11 allowed' "$T/out2" || { echo "FAIL: $(tail -n 1 "$T/out2")"; bad=1; }

# One entry too many: reported as stale, and the check fails.
echo 'circle core/x.c core/y.c -- fixed long ago' >> "$T/allow"
check "$T/allow" > "$T/out3" 2>&1 && { echo "FAIL: a stale allowlist entry passed"; bad=1; }
grep -q "^STALE .*'circle core/x.c core/y.c' matches nothing" "$T/out3" ||
  { echo "FAIL: stale entry not named: $(cat "$T/out3")"; bad=1; }

# An entry without a reason is refused.
echo 'unused u_never' > "$T/noreason"
check "$T/noreason" > "$T/out4" 2>&1 && { echo "FAIL: an entry without a reason passed"; bad=1; }
grep -q "expected 'KIND SUBJECT -- reason'" "$T/out4" || { echo "FAIL: $(cat "$T/out4")"; bad=1; }
exit $bad
