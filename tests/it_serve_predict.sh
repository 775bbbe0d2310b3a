#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Integration test of `pfi serve --model`: a job registered with nothing but its GPUs gets a
# curve predicted from its own baseline telemetry by the predictor `pfi model train` writes,
# and a 30% cut is planned on it; a job on GPUs the model never saw is logged as extrapolated,
# once.  Simulated node in virtual time (moved with the wall clock).
# Needs $PFI_BIN, $PFI_TEST_TMP (tests/run.sh sets them).
set -u
fail() { echo "it_serve_predict: FAIL: $*"; [ -f "$dir/serve.log" ] && tail -n 20 "$dir/serve.log"; exit 1; }
. "$(dirname "$0")/support/wait_listening.sh"
[ -n "${PFI_BIN:-}" ] && [ -x "$PFI_BIN" ] || { echo "it_serve_predict: PFI_BIN is not set"; exit 1; }
dir=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/it_serve_predict.XXXXXX") || exit 1
SERVE=""
trap '[ -n "$SERVE" ] && kill -9 "$SERVE" 2>/dev/null; rm -rf "$dir"' EXIT
trap 'exit 1' INT TERM
unset PFI_SIM_STATE PFI_READ_ONLY
export PFI_JOURNAL="$dir/journal"

"$PFI_BIN" model train --fleet small --out "$dir/model.json" >"$dir/train.log" 2>&1 ||
    fail "pfi model train: $(tail -n 3 "$dir/train.log")"
head -c 32 /dev/urandom | base64 >"$dir/token"
chmod 600 "$dir/token"
"$PFI_BIN" serve --backend sim --listen 127.0.0.1:0 --port-file "$dir/port" \
    --token-file "$dir/token" --db "$dir/serve.db" --model "$dir/model.json" \
    --sample-interval 50ms --set reoptimize_interval=200ms >"$dir/serve.log" 2>&1 &
SERVE=$!
wait_listening "$SERVE" "$dir/port" "pfi serve"
ctl() { "$PFI_BIN" ctl --url "http://$(cat "$dir/port")" --token-file "$dir/token" "$@"; }
ctl job add j1 --gpus 0-7 >/dev/null || fail "job add"
# Wait for the baseline (10 samples at the default limit) and a re-plan: no clock asserted,
# only an upper bound on patience.
i=0
until ctl jobs j1 | grep -q '"curve_source": "predicted"'; do
    i=$((i + 1)); [ $i -gt 300 ] && fail "no predicted curve: $(ctl jobs j1)"
    sleep 0.1
done
pfi30=$(ctl jobs j1 | awk -F': ' '/"pfi30"/ { sub(/,$/, "", $2); print $2 }')
awk -v p="$pfi30" 'BEGIN { exit !(p > 0 && p < 2) }' || fail "predicted PFI30 '$pfi30'"
ctl budget set 70% >"$dir/cut.json" || fail "cut"
after=$(awk -F': ' '/"sum_after_w"/ { sub(/,$/, "", $2); print $2 }' "$dir/cut.json")
awk -v s="$after" 'BEGIN { exit !(s <= 3920.5) }' || fail "limits sum to $after W after the cut"
grep -q '"predicted_rel": 0\.[5-9]' "$dir/cut.json" || fail "no prediction at the cap: $(cat "$dir/cut.json")"
kill -TERM "$SERVE"
wait "$SERVE" || fail "pfi serve failed on SIGTERM"
SERVE=""

# An A100 node: the same model predicted an A100 job's PFI30 0.26 (true 0.76) and said
# nothing; the daemon now logs it, once for the job (it predicts at every re-plan).
rm -f "$dir/port"
"$PFI_BIN" serve --backend sim --sim a100x4-gpt3xl --listen 127.0.0.1:0 --port-file "$dir/port" \
    --token-file "$dir/token" --db "$dir/serve2.db" --model "$dir/model.json" \
    --sample-interval 50ms --set reoptimize_interval=200ms >"$dir/serve.log" 2>&1 &
SERVE=$!
wait_listening "$SERVE" "$dir/port" "pfi serve (A100)"
ctl job add a1 --gpus 0-3 >/dev/null || fail "job add (A100)"
i=0
until grep -q "prediction_extrapolated" "$dir/serve.log"; do
    i=$((i + 1)); [ $i -gt 300 ] && fail "A100 job not told as extrapolated: $(ctl jobs a1)"
    sleep 0.1
done
sleep 1 # five re-plans more, each predicting again
[ "$(grep -c "prediction_extrapolated" "$dir/serve.log")" -eq 1 ] ||
    fail "told more than once: $(grep prediction_extrapolated "$dir/serve.log")"
grep -q "prediction_extrapolated: job a1: PFI30 [0-9.]* predicted outside what the model was trained on: gpu_type A100-PCIE-80GB not in training (H200-SXM, H100-SXM)" \
    "$dir/serve.log" || fail "extrapolation event: $(grep prediction_extrapolated "$dir/serve.log")"
ctl jobs a1 | grep -q '"curve_source": "predicted"' || fail "A100 job not predicted: $(ctl jobs a1)"
kill -TERM "$SERVE"
wait "$SERVE" || fail "pfi serve (A100) failed on SIGTERM"
SERVE=""
echo "it_serve_predict: predicted PFI30 $pfi30; 30% cut planned on it (limits $after W); an A100 job told as extrapolated once; ok"
