#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make soak: the chaos tests at scale, for SOAK_SECONDS (default 600) in all.
#   1. tests/it_chaos.sh for 80% of the time: one daemon on the fake NVML re-planning every
#      10 ms, random budgets and caps (bad ones among them), NVML faults injected after every
#      start, SIGKILL + restart every CHAOS_KILL_EVERY rounds, SOAK_SAMPLERS independent
#      samplers of the simulated node.
#   2. tests/it_restart.sh for the rest: three daemons under `pfi cluster serve`, cut 40%,
#      SIGKILL + restart of one daemon again and again, a site sampler over the three nodes.
# Prints the figures and writes them to SOAK_OUT (default docs/soak.md).
# Needs PFI_BIN and PFI_FAKENVML (the Makefile's soak target sets them).
set -u
[ -n "${PFI_BIN:-}" ] && [ -x "$PFI_BIN" ] || { echo "soak: PFI_BIN is not set"; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
total=${SOAK_SECONDS:-600}
out=${SOAK_OUT:-$here/../docs/soak.md}
chaos_s=$((total * 8 / 10))
# it_restart takes about 3 s per SIGKILL + restart round plus about 10 s around them.
kills=$(( (total - chaos_s - 10) / 3 ))
[ $kills -lt 1 ] && kills=1
log=$(mktemp "${TMPDIR:-/tmp}/pfi-soak.XXXXXX") || exit 1
t0=$(date +%s)

echo "soak: chaos for ${chaos_s} s"
CHAOS_SECONDS=$chaos_s CHAOS_ROUNDS=1000000 CHAOS_KILL_EVERY=${CHAOS_KILL_EVERY:-100} \
    CHAOS_SAMPLERS=${SOAK_SAMPLERS:-1} sh "$here/it_chaos.sh" >"$log.chaos" 2>&1
chaos_rc=$?
t1=$(date +%s)
echo "soak: $kills SIGKILL + restart rounds under a cluster controller"
RESTART_KILLS=$kills sh "$here/it_restart.sh" >"$log.restart" 2>&1
restart_rc=$?
t2=$(date +%s)

chaos_line=$(grep "changes answered" "$log.chaos" | tail -n 1)
restart_line=$(grep "SIGKILL+restart" "$log.restart" | tail -n 1)
num() { echo "$1" | sed -n "s/.*[^0-9]\([0-9][0-9]*\) $2.*/\1/p"; }
changes=$(echo "$chaos_line" | sed -n 's/.*it_chaos: \([0-9]*\) changes answered.*/\1/p')
undone=$(num "$chaos_line" "undone")
restarts=$(num "$chaos_line" "kill -9 + restart")
instants=$(echo "$chaos_line" | sed -n 's/.*sampler: \([0-9]*\) instants.*/\1/p')
over=$(echo "$chaos_line" | sed -n 's/.*, \([0-9]*\) over the budget in force (largest excess \([-0-9.]*\) W).*/\1 \2/p')
faulted=$(echo "$chaos_line" | sed -n 's/.*(\([0-9]*\) not met under injected faults.*/\1/p')
site=$(echo "$restart_line" | sed -n 's/.*: \([0-9]*\) site instants sampled.*/\1/p')
site_over=$(echo "$restart_line" | sed -n 's/.*, \([0-9]*\) over (largest excess \([-0-9.]*\) W).*/\1 \2/p')

cat >"$out" <<EOF
# Soak figures

\`make soak\` (tests/soak.sh; \`make soak SOAK_SECONDS=N\` for another length) runs the chaos
tests at scale and writes this page.  Last run: $(date -u +%Y-%m-%dT%H:%MZ), ${total} s asked,
$((t2 - t0)) s taken, on $(nproc) cores shared with other work ($(uname -m)).

| part | result |
|---|---|
| one daemon, 10 ms re-plan, $((t1 - t0)) s (tests/it_chaos.sh, exit $chaos_rc) | ${changes:-?} changes answered, ${undone:-?} undone; ${faulted:-?} not met under injected NVML faults (reported 500 EOVERBUDGET); ${restarts:-?} SIGKILL + restart |
| sampled instants of the node (independent processes reading the simulator's shared state) | ${instants:-?}, of which ${over% *} over the budget in force; largest excess ${over#* } W |
| cluster: 3 daemons under \`pfi cluster serve\`, cut 40%, ${kills} SIGKILL + restart of one, SIGTERM with hold of another, $((t2 - t1)) s (tests/it_restart.sh, exit $restart_rc) | ${site:-?} site instants sampled, ${site_over% *} over the site budget; largest excess ${site_over#* } W |

Raw lines:

    $chaos_line
    $restart_line
EOF
cat "$out"
rc=0
[ $chaos_rc = 0 ] || { echo "soak: the chaos part failed:"; tail -n 30 "$log.chaos"; rc=1; }
[ $restart_rc = 0 ] || { echo "soak: the restart part failed:"; tail -n 30 "$log.restart"; rc=1; }
rm -f "$log" "$log.chaos" "$log.restart"
exit $rc
