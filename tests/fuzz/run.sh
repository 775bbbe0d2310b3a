#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs every libFuzzer target in BINDIR over its checked-in corpus (tests/fuzz/corpus/<target>/).
#   tests/fuzz/run.sh BINDIR runs N      each target: the corpus, then N fuzzed inputs (seed 1:
#                                        the same inputs every time; make check)
#   tests/fuzz/run.sh BINDIR time S      each target fuzzed for S seconds (make fuzz)
# New inputs go to a scratch folder, never into the corpus.  A crash, a leak, a sanitizer
# report or a timeout fails the run; its input is kept as BINDIR/../crashes/<target>-* (add it
# to the corpus once fixed).  The targets' own stderr (the daemon's event lines) is closed
# (-close_fd_mask=2); libFuzzer and the sanitizers still report.  Prints one line per target:
# runs, seconds, crashes.
set -u
bindir=$1 mode=$2 amount=$3
here=$(cd "$(dirname "$0")" && pwd)
[ -d "$bindir" ] || { echo "fuzz: no targets in $bindir (make fuzz-targets)" >&2; exit 1; }
out=$(cd "$bindir/.." && pwd)
scratch="$out/scratch"
crashes="$out/crashes"
mkdir -p "$crashes"
case "$mode" in
  runs) limit="-runs=$amount -seed=1" ;;
  time) limit="-max_total_time=$amount" ;;
  *) echo "usage: $0 BINDIR runs N | time SECONDS" >&2; exit 2 ;;
esac
st=0 n=0
for t in "$bindir"/fuzz_*; do
  [ -x "$t" ] || continue
  case "$t" in *.d) continue ;; esac
  name=$(basename "$t")
  corpus="$here/corpus/$name"
  if [ ! -d "$corpus" ] || [ -z "$(ls -A "$corpus")" ]; then
    echo "FAIL: $name has no corpus in $corpus" >&2; st=1; continue
  fi
  rm -rf "$scratch/$name"; mkdir -p "$scratch/$name"; rm -f "$crashes/$name-"*
  log="$out/$name.log"
  start=$(date +%s)
  # shellcheck disable=SC2086
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  "$t" $limit -timeout=20 -rss_limit_mb=2048 -max_len=8192 -print_final_stats=1 -close_fd_mask=2 \
    -artifact_prefix="$crashes/$name-" "$scratch/$name" "$corpus" >"$log" 2>&1
  rc=$?
  secs=$(( $(date +%s) - start ))
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  found=$(ls "$crashes" | grep -c "^$name-" || true)
  n=$((n + 1))
  printf '%-16s %10s runs %5s s  crashes %s\n' "$name" "${runs:-?}" "$secs" "$found"
  if [ $rc -ne 0 ] || [ "$found" -ne 0 ]; then
    echo "FAIL: $name (exit $rc); last lines of $log:" >&2
    tail -30 "$log" >&2
    st=1
  fi
done
[ $n -gt 0 ] || { echo "FAIL: no fuzz targets in $bindir" >&2; st=1; }
rm -rf "$scratch"
exit $st
