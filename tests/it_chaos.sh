#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Chaos test of `pfi serve`'s control path, bounded for make check: the daemon on the
# fake NVML over a shared simulated node, re-planning every 10 ms with no rate limit and no
# hysteresis, three jobs, while requests arrive in random order: budgets (bad values among
# them), a ramp, caps from a "controller" with epochs (stale and out-of-bounds ones among them).
# A separate process (tests/test_serve_sampler) reads the simulator's shared state at single
# instants and must never find the sum of the limits over the budget in force, compared in
# whole milliwatts; the budget in force is the larger of the old and new one only while a
# change is in flight (the documented lower-first transition).  After every answered change
# the daemon's own view must show it (a re-plan never brings back an older budget or mode).
# NVML faults are injected mid-run (a GPU's sets failing, a GPU lost, a set refused for
# permission, an enforced limit below the requested one), and the daemon is killed with SIGKILL
# and started again twice: it must come back in the mode and budget in force, never above it.
# At the end SIGTERM must bring back every original limit (on_stop = restore: caps from a
# "controller" would otherwise be held at a stop; tests/it_restart.sh tests that with a real
# cluster controller over three daemons).
# Not covered here (see docs/serve.md): slow clients.
# Needs $PFI_BIN, $PFI_FAKENVML, $PFI_TEST_TMP (tests/run.sh sets them).  CHAOS_ROUNDS: rounds
# (default 60); CHAOS_SECONDS, CHAOS_KILL_EVERY, CHAOS_FAULTS, CHAOS_KILL_AT: see below (make
# soak sets them).
set -u

fail() { echo "it_chaos: FAIL: $*"; [ -f "$dir/serve.log" ] && tail -n 20 "$dir/serve.log"; exit 1; }
note() { echo "it_chaos: $*"; }

[ -n "${PFI_BIN:-}" ] && [ -x "$PFI_BIN" ] || { echo "it_chaos: PFI_BIN is not set"; exit 1; }
SAMPLER=$(dirname "$PFI_BIN")/tests/test_serve_sampler
[ -x "$SAMPLER" ] || { echo "it_chaos: $SAMPLER is not built"; exit 1; }
command -v curl >/dev/null || { echo "it_chaos: curl is missing (scripts/install-deps.sh test)"; exit 77; }
ROUNDS=${CHAOS_ROUNDS:-60}

dir=$(mktemp -d "${PFI_TEST_TMP:-/tmp}/it_chaos.XXXXXX") || exit 1
SERVE=""
SAMPLE=""
cleanup() {
    [ -n "$SERVE" ] && kill -9 "$SERVE" 2>/dev/null
    # shellcheck disable=SC2086
    [ -n "$SAMPLE" ] && kill -9 $SAMPLE 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

export PFI_SIM_STATE="$dir/sim.state" PFI_JOURNAL="$dir/journal"
unset PFI_SERVE_URL PFI_SERVE_TOKEN_FILE PFI_READ_ONLY PFI_FAKENVML_FAULTS PFI_FAKENVML_FAULTS_FILE
if [ -n "${PFI_FAKENVML:-}" ] && [ -f "$PFI_FAKENVML" ]; then
    HW="--backend nvml --nvml-lib $PFI_FAKENVML"
else
    note "fake NVML not built ($PFI_FAKENVML): running on the sim backend over the same state"
    HW="--backend sim"
fi
head -c 32 /dev/urandom | base64 >"$dir/token"
chmod 600 "$dir/token"
AUTH="Authorization: Bearer $(cat "$dir/token")"

# NVML faults injected into the daemon mid-run (fake NVML only; src/fakenvml/faults.c), timed
# from each start of the daemon and transient, so that the originals can come back at the end:
# one GPU's sets failing, one GPU lost (every call), one GPU's sets refused for permission,
# and an out-of-band cap on one GPU (its enforced limit never follows a raise above 450 W).
FAULTS=${CHAOS_FAULTS-"nvmlDeviceSetPowerManagementLimit@3=UNKNOWN;at=2;count=15, nvmlDevice*@5=GPU_IS_LOST;at=4;count=400, nvmlDeviceSetPowerManagementLimit@6=NO_PERMISSION;at=6;count=15, oob-cap@1=450"}
[ "${HW#--backend nvml}" != "$HW" ] || FAULTS=""
# Rounds after which the daemon is killed with SIGKILL and started again (it must come back
# holding the budget or caps in force, never above them).
KILL_AT=${CHAOS_KILL_AT:-"25 55"}
KILL_EVERY=${CHAOS_KILL_EVERY:-0} # make soak: also every N rounds
SECONDS_MAX=${CHAOS_SECONDS:-0}   # make soak: stop after this long (0: after ROUNDS)
T_END=$(( $(date +%s) + SECONDS_MAX ))
start_serve() {
    rm -f "$dir/port"
    # shellcheck disable=SC2086
    PFI_FAKENVML_FAULTS="$FAULTS" "$PFI_BIN" serve $HW --listen 127.0.0.1:0 --port-file "$dir/port" \
        --token-file "$dir/token" --db "$dir/serve.db" --sample-interval 10ms \
        --set reoptimize_interval=10ms --set min_change_interval=0s --set hysteresis=0W \
        --set on_stop=restore >>"$dir/serve.log" 2>&1 &
    SERVE=$!
    i=0
    while [ ! -s "$dir/port" ]; do
        kill -0 "$SERVE" 2>/dev/null || fail "pfi serve exited at start"
        i=$((i + 1)); [ $i -gt 600 ] && fail "pfi serve did not start listening"
        sleep 0.05
    done
    ADDR=$(cat "$dir/port")
}
start_serve
limits() {
    # shellcheck disable=SC2086
    "$PFI_BIN" gpus $HW --read-only --json | awk -F': ' '/"limit_w"/ { sub(/,$/, "", $2); printf "%s ", $2 }'
}
ORIG=$(limits)
set_allowed() { echo "$1" >"$dir/allowed.tmp" && mv "$dir/allowed.tmp" "$dir/allowed"; in_force=$1; }
# Before a request: the new budget is allowed from now if it is higher than what is allowed
# (a raise); never lowered before the answer (the limits may still sit at the old sum, or at
# what a faulty GPU kept them at).
raise_allowed() {
    awk -v a="$1" -v b="$in_force" 'BEGIN { exit !(a > b) }' || return 0
    echo "$1" >"$dir/allowed.tmp" && mv "$dir/allowed.tmp" "$dir/allowed"
}
# code METHOD PATH [BODY]: the HTTP status; the body in $dir/body
code() { curl -s -o "$dir/body" -w '%{http_code}' -H "$AUTH" -X "$1" ${3:+-d "$3"} "http://$ADDR$2"; }
field() { # the number after "$1": in $dir/body
    tr ',{}' '\n\n\n' <"$dir/body" | awk -F: -v k="\"$1\"" '$1 == k { print $2; exit }'
}

for j in '{"id":"a","gpus":[0,1,2,3],"sla":0.1}' '{"id":"b","gpus":[4,5],"pfi30":0.25}' \
    '{"id":"c","gpus":[6,7],"pfi30":0.8,"weight":2}'; do
    [ "$(code POST /v1/jobs "$j")" = 201 ] || fail "job $j: $(cat "$dir/body")"
done
NOMINAL=5600
set_allowed $NOMINAL
# CHAOS_SAMPLERS (make soak): more independent samplers at once, their instants added up.
NSAMP=${CHAOS_SAMPLERS:-1}
SAMPLE=""
k=0
while [ $k -lt "$NSAMP" ]; do
    k=$((k + 1))
    "$SAMPLER" --sample "$PFI_SIM_STATE" "$dir/allowed" "$dir/sampled$k" 2>>"$dir/sampler.log" &
    SAMPLE="$SAMPLE $!"
done

# The plan: one line per round, "KIND VALUE", from a fixed seed.
awk -v n="$ROUNDS" 'BEGIN { srand(14);
    for (i = 0; i < n; i++) { r = rand();
        if (r < 0.50) printf "budget %.3f\n", 3400 + 2200 * rand();
        else if (r < 0.60) { split("-5 0 abc 1e308 nan 99999999", bad, " "); printf "bad %s\n", bad[1 + int(6 * rand())] }
        else if (r < 0.85) printf "caps %d\n", 250 + int(400 * rand());
        else if (r < 0.92) printf "stale 0\n";
        else printf "epoch 0\n" } }' >"$dir/plan"
budget=$NOMINAL mode=local epoch=$(($(date +%s) * 1000)) n_ok=0 n_refused=0 undone=0 n_over=0
round=0 n_restart=0
while read -r kind v; do
    round=$((round + 1))
    [ "$SECONDS_MAX" -gt 0 ] && [ "$(date +%s)" -ge "$T_END" ] && break
    kills=$KILL_AT
    [ "$KILL_EVERY" -gt 0 ] && [ $((round % KILL_EVERY)) = 0 ] && kills="$kills $round"
    for k in $kills; do
        [ "$k" = "$round" ] || continue
        # SIGKILL, then a new daemon over the same database and journal: it must come back
        # holding the budget or the caps in force, in the same mode (the sampler keeps
        # checking the budget in force throughout).
        kill -9 "$SERVE"; wait "$SERVE" 2>/dev/null
        start_serve
        n_restart=$((n_restart + 1))
        code GET /v1/budget >/dev/null
        m=$(tr -d ' ' <"$dir/body" | grep -o '"mode":"[a-z]*"')
        [ "$m" = "\"mode\":\"$mode\"" ] || fail "after kill -9 and a restart the mode is $m, not $mode: $(cat "$dir/body")"
        if [ "$mode" = local ]; then
            b=$(field budget_w)
            awk -v a="$b" -v b="$budget" 'BEGIN { exit !(a + 0 == b + 0) }' ||
                fail "after kill -9 and a restart the budget is $b, not $budget"
        fi
    done
    case $kind in
    budget)
        # Raising: the new budget is allowed from before the request; lowering: only once answered.
        raise_allowed "$v"
        st=$(code PUT /v1/budget "{\"watts\":$v}")
        if [ "$st" = 500 ] && grep -q EOVERBUDGET "$dir/body"; then
            # A GPU refused its lowering (an injected fault) and the others could not make room:
            # reported, and the sum stays at what was read back (docs/serve.md).
            over=$(field sum_after_w); n_over=$((n_over + 1))
            note "budget $v W not met under a fault: limits at $over W"
            set_allowed "$(awk -v a="$v" -v b="$over" 'BEGIN { print (a > b ? a : b) }')"
        else
            [ "$st" = 200 ] || fail "budget $v W: $st $(cat "$dir/body")"
            set_allowed "$v"
        fi
        budget=$v; mode=local; n_ok=$((n_ok + 1))
        sleep 0.03
        st=$(code GET /v1/budget)
        b=$(field budget_w); m=$(tr -d ' ' <"$dir/body" | grep -o '"mode":"[a-z]*"')
        awk -v a="$b" -v b="$v" 'BEGIN { exit !(a + 0 == b + 0) }' && [ "$m" = '"mode":"local"' ] ||
            { undone=$((undone + 1)); note "budget $v W undone: $(cat "$dir/body")"; } ;;
    bad)
        # -5, 0, abc and nan must be refused.  1e308 and 99999999 W are finite budgets far above
        # the node: refused as absurd, or taken as a budget that binds nothing (every GPU at its
        # maximum); either way the sampler must allow them from before the request.
        huge=0
        case $v in 1e308|99999999) huge=1; raise_allowed "$v" ;; esac
        st=$(code PUT /v1/budget "{\"watts\":$v}")
        case $st in
        4*) n_refused=$((n_refused + 1)); [ $huge = 1 ] && set_allowed "$in_force" ;;
        200) [ $huge = 1 ] || fail "bad budget $v: $st $(cat "$dir/body")"
             set_allowed "$v"; budget=$v; mode=local; n_ok=$((n_ok + 1)) ;;
        *) fail "bad budget $v: $st $(cat "$dir/body")" ;;
        esac ;;
    caps)
        epoch=$((epoch + 1))
        sum=$((v * 8))
        raise_allowed "$sum"
        body="{\"epoch\":$epoch,\"caps\":[$(for g in 0 1 2 3 4 5 6 7; do printf '{"gpu":%d,"cap_w":%d}' $g "$v"; [ $g -lt 7 ] && printf ,; done)]}"
        st=$(code PUT /v1/caps "$body")
        if [ "$st" = 500 ] && grep -q EOVERBUDGET "$dir/body"; then
            over=$(field sum_after_w); n_over=$((n_over + 1))
            note "caps $v W not met under a fault: limits at $over W"
            set_allowed "$(awk -v a="$sum" -v b="$over" 'BEGIN { print (a > b ? a : b) }')"
        else
            [ "$st" = 200 ] || fail "caps $v W epoch $epoch: $st $(cat "$dir/body")"
            set_allowed "$sum"
        fi
        budget=$sum; mode=external; n_ok=$((n_ok + 1))
        sleep 0.03
        code GET /v1/budget >/dev/null
        m=$(tr -d ' ' <"$dir/body" | grep -o '"mode":"[a-z]*"')
        [ "$m" = '"mode":"external"' ] || { undone=$((undone + 1)); note "caps undone: $(cat "$dir/body")"; } ;;
    stale)
        # Only under the controller's caps: a budget set on the node ends its epochs (by design).
        [ "$mode" = external ] || continue
        st=$(code PUT /v1/caps "{\"epoch\":1,\"caps\":[{\"gpu\":0,\"cap_w\":700}]}")
        [ "$st" = 409 ] || fail "stale epoch: $st $(cat "$dir/body")"
        n_refused=$((n_refused + 1)) ;;
    epoch)
        st=$(code PUT /v1/caps "{\"epoch\":9223372036854775807,\"caps\":[{\"gpu\":0,\"cap_w\":700}]}")
        [ "$st" = 400 ] || fail "epoch 2^63-1: $st $(cat "$dir/body")"
        n_refused=$((n_refused + 1)) ;;
    esac
    kill -0 "$SERVE" 2>/dev/null || fail "pfi serve died"
done <"$dir/plan"

k=0 samples=0 viol=0 maxsum=0 over=-1e9
while [ $k -lt "$NSAMP" ]; do
    k=$((k + 1))
    : >"$dir/sampled$k.stop"
done
# shellcheck disable=SC2086
wait $SAMPLE
SAMPLE=""
k=0
while [ $k -lt "$NSAMP" ]; do
    k=$((k + 1))
    read -r _ s1 _ v1 _ m1 _ o1 <"$dir/sampled$k" || fail "no sampler output: $(cat "$dir/sampler.log")"
    samples=$((samples + s1)); viol=$((viol + v1))
    maxsum=$(awk -v a="$maxsum" -v b="$m1" 'BEGIN { print (b > a ? b : a) }')
    over=$(awk -v a="$over" -v b="$o1" 'BEGIN { print (b > a ? b : a) }')
done
note "$n_ok changes answered ($n_over not met under injected faults, reported), $n_refused refused, $undone undone, $n_restart kill -9 + restart; sampler: $samples instants, largest sum $maxsum W, $viol over the budget in force (largest excess $over W)"
[ "$viol" = 0 ] || fail "the sum of limits exceeded the budget at $viol sampled instants ($(cat "$dir/sampler.log"))"
[ "$undone" = 0 ] || fail "$undone answered changes were undone"
[ "$samples" -gt 100 ] || fail "only $samples samples taken"

kill -TERM "$SERVE"
if wait "$SERVE"; then
    how="SIGTERM"
elif [ -n "$FAULTS" ] && tail -n 3 "$dir/serve.log" | grep -q "restore_failed.*NVML_ERROR"; then
    # A transient fault injected into the daemon was still armed at its stop: it says so,
    # keeps the journal (documented), and pfi restore puts the originals back by hand.
    [ -s "$PFI_JOURNAL" ] || fail "a restore failed at the stop and no journal was kept"
    # shellcheck disable=SC2086
    "$PFI_BIN" restore $HW --journal "$PFI_JOURNAL" >>"$dir/serve.log" 2>&1 ||
        fail "pfi restore after a stop that hit an injected fault"
    how="SIGTERM (a GPU refused under an injected fault: journal kept) + pfi restore"
else
    fail "pfi serve exited with an error on SIGTERM"
fi
SERVE=""
[ "$(limits)" = "$ORIG" ] || fail "original limits not back: $ORIG -> $(limits)"
note "$how: every original limit back ($ORIG)"
