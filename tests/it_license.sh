#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Every source file carries the project's license tag (LICENSE) in its first lines, so a file
# copied out of the tree still says under which terms.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
[ -f "$top/LICENSE" ] || { echo "FAIL: no LICENSE file"; exit 1; }
grep -q 'Apache License' "$top/LICENSE" && grep -q 'Version 2.0, January 2004' "$top/LICENSE" ||
  { echo "FAIL: LICENSE is not the Apache License 2.0 text"; exit 1; }
bad=0 n=0
for f in $(cd "$top" && find src tests bench scripts contrib -path tests/fixtures -prune -o -type f \
             \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.def' -o -name '*.sh' \
                -o -name '*.py' -o -name '*.service' \) -print) Makefile; do
  n=$((n + 1))
  head -n 3 "$top/$f" | grep -q 'SPDX-License-Identifier: Apache-2.0' ||
    { echo "FAIL: $f has no 'SPDX-License-Identifier: Apache-2.0' line at its top"; bad=1; }
done
[ "$n" -gt 100 ] || { echo "FAIL: only $n source files found under $top"; bad=1; }
[ $bad -eq 0 ] && echo "license tag in all $n source files"
exit $bad
