#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make soak: the chaos test at scale, then the fuzz targets, for SOAK_SECONDS (default 600) in all.
#   1. tests/it_chaos.sh for all but the fuzzing time: one daemon on the fake NVML re-planning
#      every 10 ms, random budgets and caps (bad ones among them), NVML faults injected after
#      every start, SIGKILL + restart every CHAOS_KILL_EVERY rounds; at the same time three
#      daemons under `pfi cluster serve` (site cut 40%), one of them killed with SIGKILL and
#      started again every CHAOS_SITE_KILL_EVERY rounds, and SOAK_SLOW_CONNS slow connections
#      (default 1100, the daemon's default connection limit 1024) on another while the
#      controller's heartbeats must keep its watchdog quiet.  One independent sampler checks
#      the node and the site throughout.
#   2. every libFuzzer target (tests/fuzz/run.sh) for SOAK_FUZZ_SECONDS each (default 8).
# Prints the figures and writes them to SOAK_OUT (default docs/soak.md).
# Needs PFI_BIN, PFI_FAKENVML and FUZZ_BIN (the Makefile's soak target sets them).
set -u
[ -n "${PFI_BIN:-}" ] && [ -x "$PFI_BIN" ] || { echo "soak: PFI_BIN is not set"; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
total=${SOAK_SECONDS:-600}
fuzz_each=${SOAK_FUZZ_SECONDS:-8}
out=${SOAK_OUT:-$here/../docs/soak.md}
n_fuzz=$(ls "${FUZZ_BIN:-/nonexistent}" 2>/dev/null | grep -c '^fuzz_[a-z]*$')
chaos_s=$((total - n_fuzz * (fuzz_each + 2)))
[ $chaos_s -lt 60 ] && chaos_s=60
log=$(mktemp "${TMPDIR:-/tmp}/pfi-soak.XXXXXX") || exit 1
t0=$(date +%s)
load0=$(cut -d' ' -f1-3 /proc/loadavg)

echo "soak: chaos for ${chaos_s} s"
CHAOS_SECONDS=$chaos_s CHAOS_ROUNDS=1000000 CHAOS_KILL_EVERY=${CHAOS_KILL_EVERY:-100} \
    CHAOS_SITE_KILL_EVERY=${CHAOS_SITE_KILL_EVERY:-30} \
    CHAOS_SLOW_CONNS=${SOAK_SLOW_CONNS:-1100} CHAOS_SLOW_MAXCONN=${SOAK_SLOW_MAXCONN:-1024} \
    sh "$here/it_chaos.sh" >"$log.chaos" 2>&1
chaos_rc=$?
t1=$(date +%s)
load1=$(cut -d' ' -f1-3 /proc/loadavg)
echo "soak: fuzz targets for ${fuzz_each} s each"
if [ "$n_fuzz" -gt 0 ]; then
    sh "$here/fuzz/run.sh" "$FUZZ_BIN" time "$fuzz_each" >"$log.fuzz" 2>&1
    fuzz_rc=$?
else
    echo "no fuzz targets in ${FUZZ_BIN:-FUZZ_BIN unset} (make fuzz-targets)" >"$log.fuzz"
    fuzz_rc=1
fi
t2=$(date +%s)
load2=$(cut -d' ' -f1-3 /proc/loadavg)

chaos_line=$(grep "changes answered" "$log.chaos" | tail -n 1)
site_line=$(grep "it_chaos: site:" "$log.chaos" | tail -n 1)
get() { echo "$1" | sed -n "s/$2/\1/p"; }
changes=$(get "$chaos_line" '.*it_chaos: \([0-9]*\) changes answered.*')
undone=$(get "$chaos_line" '.*, \([0-9]*\) undone.*')
restarts=$(get "$chaos_line" '.*, \([0-9]*\) kill -9 + restart.*')
instants=$(get "$chaos_line" '.*sampler: \([0-9]*\) instants.*')
over=$(echo "$chaos_line" | sed -n 's/.*, \([0-9]*\) over the budget in force (largest excess \([-0-9.]*\) W).*/\1 \2/p')
faulted=$(get "$chaos_line" '.*(\([0-9]*\) not met under injected faults.*')
site_kills=$(get "$site_line" '.*site: \([0-9]*\) kill -9.*')
site=$(get "$site_line" '.*; \([0-9]*\) site instants.*')
site_over=$(echo "$site_line" | sed -n 's/.*W, \([0-9]*\) over (largest excess \([-0-9.]*\) W).*/\1 \2/p')
slow=$(get "$site_line" '.*n1 under \(.*\); [0-9]* watchdog trips.*')
trips=$(get "$site_line" '.*; \([0-9]*\) watchdog trips.*')

{
cat <<EOF
# Soak figures

\`make soak\` (tests/soak.sh; \`make soak SOAK_SECONDS=N\` for another length) runs the chaos
test at scale, then every fuzz target, and writes this page.  Last run: \`${SOAK_COMMAND:-make soak}\`,
$(date -u +%Y-%m-%dT%H:%MZ),
${total} s asked, $((t2 - t0)) s taken, on $(nproc) cores shared with other work ($(uname -m));
load average (1, 5, 15 min) $load0 at the start, $load1 after the chaos part, $load2 at the end.

| part | result |
|---|---|
| one daemon, 10 ms re-plan, random budgets and caps with epochs, NVML faults, $((t1 - t0)) s (tests/it_chaos.sh, exit $chaos_rc) | ${changes:-?} changes answered, ${undone:-?} undone; ${faulted:-?} not met under injected NVML faults (reported 500 EOVERBUDGET); ${restarts:-?} SIGKILL + restart |
| its sampled instants (an independent process reading the simulator's shared state) | ${instants:-?}, of which ${over% *} over the budget in force; largest excess ${over#* } W |
| cluster, at the same time: 3 daemons under \`pfi cluster serve\`, cut 40%, ${site_kills:-?} SIGKILL + restart of one | ${site:-?} site instants sampled, ${site_over% *} over the site budget; restart overshoot ${site_over#* } W at most |
| slow clients on another of them, at the same time | ${slow:-?}; ${trips:-?} watchdog trips |
| fuzz targets, ${fuzz_each} s each (tests/fuzz/run.sh, exit $fuzz_rc) | see below |

Fuzz targets (runs, seconds, crashes):

$(sed -n 's/^\(fuzz_[a-z]* .*crashes.*\)$/    \1/p' "$log.fuzz")

Raw lines:

    $chaos_line
    $site_line
EOF
} >"$out"
cat "$out"
rc=0
[ $chaos_rc = 0 ] || { echo "soak: the chaos part failed:"; grep "^it_chaos:" "$log.chaos"; tail -n 20 "$log.chaos"; rc=1; }
[ $fuzz_rc = 0 ] || { echo "soak: the fuzz part failed:"; tail -n 30 "$log.fuzz"; rc=1; }
rm -f "$log" "$log.chaos" "$log.fuzz"
exit $rc
