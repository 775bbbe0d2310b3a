#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Integration test of `pfi log FILE`: a finished log read from the rates it states, in
# tokens/s when convertible and in the log's unit otherwise (said), untimed lines counted,
# bad input refused with the usual exit statuses.
set -u
PFI=${PFI_BIN:?PFI_BIN not set}
F=tests/fixtures/logs
T=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/it_log.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
want() {
  code=$1; shift
  "$PFI" "$@" > "$T/out" 2> "$T/err"
  got=$?
  [ "$got" -eq "$code" ] || fail "pfi $*: exit $got, expected $code ($(head -c 300 "$T/err"))"
}
# nanoGPT states its step time and its tokens per iteration: tokens/s, each point within 1%
# of 262144 / 33.78552 s = 7759.0.
want 0 log "$F/nanogpt.log"
grep -q '^ *2 *340 *7759' "$T/out" || fail "nanogpt series: $(cat "$T/out")"
grep -q 'median 77[0-9][0-9]\.[0-9]* tokens/s' "$T/out" || fail "nanogpt summary: $(cat "$T/out")"
# Megatron without a sequence length: samples/s, and the option that would convert it.
want 0 log "$F/megatron.log" --quiet
grep -q 'samples/s' "$T/out" && grep -q -- '--seq-len N gives tokens/s' "$T/out" ||
  fail "megatron unit note: $(cat "$T/out")"
want 0 log "$F/megatron.log" --seq-len 2048 --json
grep -q '"unit": "tokens/s"' "$T/out" || fail "megatron --seq-len: $(cat "$T/out")"
grep -q '"median": 2370[0-9]' "$T/out" || fail "megatron median (1024*2048 over 87.87 and 89.07 s per iteration): $(cat "$T/out")"
# Hugging Face without the banner and Transformers v5 string values.
want 0 log "$F/hf-v5.log" --json
grep -q '"format": "hf"' "$T/out" && grep -q '"unit": "samples/s"' "$T/out" &&
  grep -q '"rate": 6.486' "$T/out" || fail "hf v5: $(cat "$T/out")"
want 0 log "$F/hf-steps.log" --quiet
grep -q 'format hf, 6 lines, 5 throughput points' "$T/out" || fail "hf no banner: $(cat "$T/out")"
# Untimed progress lines are reported.
want 0 log "$F/lightning-epochs.log" --tokens-per-step 4096 --quiet
grep -q '1 progress lines without a usable time' "$T/out" || fail "untimed: $(cat "$T/out")"
# A log still being written: its unterminated last line (cut inside "tps: 7,334") is not read.
head -1 "$F/torchtitan.log" > "$T/cut.log"
sed -n 2p "$F/torchtitan.log" | sed 's/\(tps: 7,3\).*/\1/' | tr -d '\n' >> "$T/cut.log"
want 0 log "$T/cut.log" --json
grep -q '"points": 1,' "$T/out" && grep -q '"last_line_cut": true' "$T/out" ||
  fail "cut last line: $(cat "$T/out")"
# Bad input: no throughput (2), a missing file (1), no file or two (2), a bad option value (2).
want 2 log "$F/garbage.log"
grep -q 'no throughput in' "$T/err" || fail "garbage: $(cat "$T/err")"
grep -q -- '--throughput-regex RE --unit U reads a format pfi does not know' "$T/err" ||
  fail "no throughput names no regex: $(cat "$T/err")"
# A compressed log is said to be one, and how to read it.
gzip -c "$F/megatron.log" > "$T/m.log.gz"
want 2 log "$T/m.log.gz"
grep -q "looks gzip-compressed.*zcat $T/m.log.gz | pfi log /dev/stdin" "$T/err" ||
  fail "gzip: $(cat "$T/err")"
zcat "$T/m.log.gz" | "$PFI" log /dev/stdin --quiet > "$T/out" 2> "$T/err" ||
  fail "zcat | pfi log /dev/stdin: $(cat "$T/err")"
want 1 log "$T/none.log"
want 2 log
want 2 log "$F/hf.log" "$F/hf.log"
want 2 log "$F/hf.log" --seq-len -1
want 2 log "$F/hf.log" --log-format bogus
want 2 log "$F/hf.log" --unit tokens/s
# options that were taken and then did nothing: --gpu-count 0, a count's unit offline
want 2 log "$F/torchtitan.log" --gpu-count 0
grep -q -- '--gpu-count 0 must be positive' "$T/err" || fail "--gpu-count 0: $(cat "$T/err")"
want 0 log "$F/hf.log" --gpu-count 8 --quiet
grep -q -- '--gpu-count 8 not used: a hf log gives the whole job' "$T/err" || fail "--gpu-count on a job-wide log: $(cat "$T/err")"
want 2 log "$F/megatron.log" --throughput-regex 'consumed samples: +([0-9]+)' --unit samples
grep -q 'a cumulative count has no time in a finished log' "$T/err" || fail "--unit samples: $(cat "$T/err")"
want 0 log "$F/megatron.log" --tokens-per-step 4194304 --quiet
grep -q -- '--tokens-per-step does not convert samples' "$T/out" || fail "--tokens-per-step on samples/s: $(cat "$T/out")"
# Four scattered points: the t-interval of their mean reaches below 0, which no rate can; it is
# cut at 0 and said to be too wide, in the text and the JSON.
for i in 1 2 3; do printf '[rank0]:[titan] 2025-05-18 16:04:4%d,338 - root - INFO - step: %d  loss:  3.2440  tps: 12,345,678\n' $i $i; done >"$T/scatter.log"
printf '[rank0]:[titan] 2025-05-18 16:04:49,338 - root - INFO - step: 4  loss:  3.2440  tps: 7,282\n' >>"$T/scatter.log"
want 0 log "$T/scatter.log" --quiet
grep -q '95% CI 0 to [0-9.e+]*: the interval reaches below 0' "$T/out" || fail "CI below 0: $(cat "$T/out")"
grep -q 'e+' "$T/out" && fail "scientific notation in the text summary: $(cat "$T/out")"
# A rate over a million in fixed notation, every digit (it printed 1.04858e+06).
for i in 1 2 3 4 5; do printf '[rank0]:[titan] 2025-05-18 16:04:4%d,338 - root - INFO - step: %d  loss:  3.2440  tps: 1,048,576\n' $i $i; done >"$T/big.log"
want 0 log "$T/big.log"
grep -q 'median 1048576 tokens/s per GPU, mean 1048576' "$T/out" && ! grep -q 'e+' "$T/out" || fail "a rate over 1M: $(cat "$T/out")"
# --throughput-regex: a scale letter before the unit word it scales ("52.4ktok/s", "12.5 k
# tokens/s") is applied (read as 52.4: 1000 times too small); one before another unit is not.
for v in 52.4ktok/s "52.4 k tokens/s" 52.4Ksamples/s "52.4 ktok/s" "52.4 Ksamples/s"; do
  for i in 1 2 3 4 5 6; do echo "[2025-01-01 00:00:0$i] step $i | throughput: $v | mfu 41%"; done >"$T/scale.log"
  want 0 log "$T/scale.log" --throughput-regex 'throughput: ([0-9.]+)' --unit tokens/s --quiet
  grep -q 'median 52400.0 tokens/s' "$T/out" || fail "--throughput-regex on '$v': $(cat "$T/out")"
done
for i in 1 2 3 4 5 6; do echo "[2025-01-01 00:00:0$i] step $i | mem: 52.4GB | mfu 41%"; done >"$T/scale.log"
want 0 log "$T/scale.log" --throughput-regex 'mem: ([0-9.]+)' --unit tokens/s --quiet
grep -q 'median 52.4000 tokens/s' "$T/out" || fail "--throughput-regex on '52.4GB': $(cat "$T/out")"
want 0 log "$T/scatter.log" --json
jq -e '.summary.ci_lo == 0 and .summary.ci_hi > .summary.mean' "$T/out" >/dev/null || fail "CI below 0 (JSON): $(cat "$T/out")"
# A file named in bytes that are not UTF-8 (Latin-1 on a shared file system): valid JSON, its
# name escaped (jansson refused the name, and nothing was printed, exit 1).
bad=$(printf '%s/caf\351.log' "$T")
cp "$F/nanogpt.log" "$bad"
want 0 log "$bad" --json
jq -e '.file | test("caf")' "$T/out" >/dev/null || fail "a Latin-1 file name: $(head -c 300 "$T/out") $(cat "$T/err")"
echo "it_log: ok"
