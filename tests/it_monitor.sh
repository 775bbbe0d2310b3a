#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The metrics as Prometheus reads them: /metrics of `pfi serve` and of `pfi cluster serve`, each
# checked with Prometheus' own promtool; GPU series labelled as DCGM-exporter labels them (gpu,
# UUID, Hostname), jobs by job_id; energy (a counter, joules, rising) and temperature
# exported; every metric the Grafana dashboards (contrib/grafana/), the alerting rules
# (contrib/prometheus/) and docs/ name is in these expositions, with the labels and the type
# they use, and every exposed name follows Prometheus' conventions (scripts/check-monitoring.py).
# Needs $PFI_BIN, $PFI_FAKENVML, $PFI_TEST_TMP (tests/run.sh sets them).
set -u
name=it_monitor
command -v promtool >/dev/null ||
    { echo "$name: FAIL: promtool is missing (scripts/install-deps.sh test installs prometheus)"; exit 1; }
# n2's GPUs have no energy counter: the daemon integrates their draw instead.
N2_FAULTS=nvmlDeviceGetTotalEnergyConsumption=NOT_SUPPORTED
. "$(dirname "$0")/support/monitor_env.sh"

# The controller has applied its budget to n2 once n2 is in external mode.
i=0
until curl -sf "$N2/metrics" | grep -q '^pfi_node_mode{mode="external"} 1'; do
    i=$((i + 1)); [ $i -gt 100 ] && fail "n2 never took the controller's caps: $(curl -s "$CL/v1/allocation")"
    sleep 0.1
done
sleep 0.5
curl -sf "$N1/metrics" >"$dir/n1.prom" || fail "GET /metrics on n1"
curl -sf "$N2/metrics" >"$dir/n2.prom" || fail "GET /metrics on n2"
curl -sf "$CL/metrics" >"$dir/cluster.prom" || fail "GET /metrics on the controller"
for f in n1 n2 cluster; do
    promtool check metrics <"$dir/$f.prom" >"$dir/$f.promtool" 2>&1 ||
        fail "promtool check metrics ($f): $(cat "$dir/$f.promtool")"
done
note "promtool check metrics: node and controller expositions ok"

host=$(hostname)
uuid=$("$PFI_BIN" ctl --url "$N1" gpus | awk -F'"' '/"uuid"/ { print $4; exit }')
[ -n "$uuid" ] || fail "no UUID in GET /v1/gpus"
grep -q "^pfi_gpu_power_watts{gpu=\"0\",UUID=\"$uuid\",Hostname=\"$host\"} " "$dir/n1.prom" ||
    fail "GPU labels are not DCGM-exporter's: $(grep -m1 '^pfi_gpu_power_watts' "$dir/n1.prom")"
grep -q "^pfi_job_cap_watts{job_id=\"a\",Hostname=\"$host\"} " "$dir/n1.prom" || fail "no job_id label"
grep -q '{job=' "$dir/n1.prom" "$dir/cluster.prom" && fail "a job label Prometheus would rename to exported_job"
grep -q '^# TYPE pfi_gpu_energy_joules_total counter$' "$dir/n1.prom" || fail "no energy counter"
grep -q '^pfi_gpu_temperature_celsius{gpu="7",' "$dir/n1.prom" || fail "no temperature"
grep -q '^pfi_cluster_job_cap_watts{job_id="x"} ' "$dir/cluster.prom" || fail "no job cap on the controller"
grep -q '^pfi_cluster_job_pfi30{job_id="x"} 0.5$' "$dir/cluster.prom" || fail "no job PFI30 on the controller"
grep -q '^pfi_cluster_node_up{node="n2"} 1$' "$dir/cluster.prom" || fail "n2 not up on the controller"
grep -q '^pfi_grid_event_binding 1$' "$dir/n1.prom" || fail "the event in force is not shown binding"
grep -q '^pfi_grid_event_target_watts 3800$' "$dir/n1.prom" || fail "the event target is not 3800 W"
grep -q '^pfi_grid_event_binding_active 1$' "$dir/n1.prom" || fail "the event in force is not shown in its window"

# Energy rises with time (a counter), at about the board's draw: NVML's counter on n1, the
# integrated draw on n2, whose GPUs have no counter.
energy_rate() { # $1 base URL, $2 GPU: prints "draw joules_before joules_after rate"
    t0=$(date +%s.%N)
    a=$(curl -sf "$1/metrics") || fail "GET $1/metrics"
    sleep 1
    b=$(curl -sf "$1/metrics") || fail "GET $1/metrics"
    t1=$(date +%s.%N)
    e0=$(echo "$a" | awk -v g="$2" '$1 ~ "^pfi_gpu_energy_joules_total[{]gpu=\"" g "\"" { print $2 }')
    e1=$(echo "$b" | awk -v g="$2" '$1 ~ "^pfi_gpu_energy_joules_total[{]gpu=\"" g "\"" { print $2 }')
    p=$(echo "$b" | awk -v g="$2" '$1 ~ "^pfi_gpu_power_watts[{]gpu=\"" g "\"" { print $2 }')
    [ -n "$e0" ] && [ -n "$e1" ] && [ -n "$p" ] || fail "no energy or power for GPU $2 at $1"
    awk -v a="$e0" -v b="$e1" -v p="$p" -v t0="$t0" -v t1="$t1" \
        'BEGIN { printf "%.0f %.1f %.1f %.0f\n", p, a, b, (b - a) / (t1 - t0) }'
}
for n in "$N1 n1" "$N2 n2"; do
    set -- $n
    r=$(energy_rate "$1" 0)
    note "$2 GPU 0: draw, energy before, after, J/s: $r"
    echo "$r" | awk '{ exit !($3 > $2 && $4 > 0.1 * $1 && $4 < 3 * $1) }' ||
        fail "$2: energy does not rise at about the draw: $r"
done
# Every apply is in its histogram: as many as the decisions (node) or applies (site), each in
# the +Inf bucket, and the buckets never fall as le rises.
hist_agrees() { # $1 exposition, $2 histogram, $3 the counter it must equal
    awk -v h="$2" -v c="$3" '
        $1 == c { want = $2 }
        $1 == h "_count" { n = $2 }
        $1 == h "_bucket{le=\"+Inf\"}" { inf = $2 }
        index($1, h "_bucket{") == 1 { if ($2 + 0 < last + 0) bad = 1; last = $2; buckets++ }
        END { exit !(want > 0 && n == want && inf == want && !bad && buckets >= 3) }' "$1"
}
hist_agrees "$dir/n2.prom" pfi_apply_duration_seconds pfi_decisions_total ||
    fail "n2's apply histogram does not count its decisions: $(grep -E '^pfi_(apply_duration|decisions)' "$dir/n2.prom")"
hist_agrees "$dir/cluster.prom" pfi_cluster_apply_duration_seconds pfi_cluster_applies_total ||
    fail "the site's apply histogram does not count its applies: $(grep -E '^pfi_cluster_(apply_duration|applies)' "$dir/cluster.prom")"
note "apply histograms: one observation per decision (n2) and per site apply"
python3 "$here/../scripts/check-monitoring.py" "$here/../contrib" \
    "$dir/n1.prom" "$dir/n2.prom" "$dir/cluster.prom" || fail "dashboards or rules use metrics no daemon exports"

exit 0
