#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# pfi's Prometheus alerting rules (contrib/prometheus/): promtool checks the rules and the example
# scrape configuration, then runs the rules' unit tests (pfi-alerts.test.yml: every alert with
# input series where it fires and where it stays quiet).
set -u
name=it_prom_rules
fail() { echo "$name: FAIL: $*"; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
d=$here/../contrib/prometheus
command -v promtool >/dev/null || fail "promtool is missing (scripts/install-deps.sh test installs prometheus)"
promtool check rules "$d/pfi-alerts.yml" || fail "promtool check rules"
promtool check config --syntax-only "$d/prometheus.yml" || fail "promtool check config"
# Every alert the rules define is tested.
for a in $(awk '/- alert:/ { print $3 }' "$d/pfi-alerts.yml"); do
    grep -q "alertname: $a\$" "$d/pfi-alerts.test.yml" || fail "alert $a has no unit test"
done
(cd "$d" && promtool test rules pfi-alerts.test.yml) || fail "promtool test rules"
echo "$name: ok"
