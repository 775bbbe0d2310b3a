# SPDX-License-Identifier: Apache-2.0
# Sourced by the tests that watch the GPUs' power limits with tests/test_serve_sampler
# (it_serve.sh, it_grid.sh, it_chaos.sh, it_restart.sh, support/openadr_env.sh); the caller
# sets $name.  Checks $PFI_BIN and sets SAMPLER, the sampler of the same build.  Functions
# (the caller sets $dir and fail(); the sampler's messages go to $dir/sampler.log):
#   sampler_start OUT ARGS...  runs "$SAMPLER ARGS..." in the background (SAMPLE: its pid) and
#                              returns once it watches: OUT written, which it does when it has
#                              opened its states.  A test changes the limits only after that, or
#                              the sampler may not see the change.  Fails when the sampler exits
#                              first (its status and log) or has not written OUT after 60 s
#   sampler_stop OUT           stops it (OUT.stop) and waits; fails unless it exited 0 (a sampler
#                              that stopped on an error had stopped watching) and OUT has its
#                              line; sets samples, viol, maxsum and over from it
[ -n "${PFI_BIN:-}" ] && [ -x "$PFI_BIN" ] || { echo "$name: PFI_BIN is not set"; exit 1; }
SAMPLER=$(dirname "$PFI_BIN")/tests/test_serve_sampler
[ -x "$SAMPLER" ] || { echo "$name: $SAMPLER is not built"; exit 1; }

sampler_start() {
    _out=$1
    shift
    rm -f "$_out" "$_out.stop"
    "$SAMPLER" "$@" 2>>"$dir/sampler.log" &
    SAMPLE=$!
    _k=0
    until [ -s "$_out" ]; do
        # A sampler that ended is reaped by the shell's next foreground command (the sleep).
        if ! kill -0 "$SAMPLE" 2>/dev/null; then
            wait "$SAMPLE"
            fail "the sampler exited (status $?) before it watched: $(cat "$dir/sampler.log")"
        fi
        _k=$((_k + 1))
        if [ $_k -gt 1200 ]; then
            kill -9 "$SAMPLE" 2>/dev/null
            fail "the sampler did not watch within 60 s: $(cat "$dir/sampler.log")"
        fi
        sleep 0.05
    done
}
sampler_stop() {
    : >"$1.stop"
    wait "$SAMPLE"
    _st=$?
    [ $_st = 0 ] || fail "the sampler exited with status $_st: $(cat "$dir/sampler.log")"
    read -r _ samples _ viol _ maxsum _ over <"$1" || fail "no sampler output in $1: $(cat "$dir/sampler.log")"
}
