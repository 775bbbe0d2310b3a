#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks the Grafana dashboards (contrib/grafana/*.json) and the Prometheus alerting rules
(contrib/prometheus/pfi-alerts.yml) against real /metrics expositions of pfi's daemons.

  scripts/check-monitoring.py CONTRIB_DIR EXPOSITION...

Each dashboard must be a JSON object with a uid, a title and panels; every panel an id (unique),
a type, a title and a gridPos inside the 24 columns; every query panel at least one target with
a PromQL expression.  Every metric name a panel, a template variable or an alert rule uses must be
one that some exposition declares (# TYPE), so a renamed metric cannot leave a blank panel or an
alert that never fires.  Prints what it checked; exits 1 listing every problem."""
import json
import os
import re
import sys

# The series Prometheus itself makes when it scrapes a target, not in any exposition.
SCRAPE_SERIES = {"up", "scrape_duration_seconds", "scrape_samples_scraped"}
NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")


def declared(paths):
    names = set()
    for p in paths:
        with open(p) as f:
            for line in f:
                m = re.match(r"# TYPE (\S+) (\S+)", line)
                if m:
                    names.add(m.group(1))
    return names


def metric_names(expr):
    """The metric names in a PromQL expression (or a label_values() template query)."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)            # strings
    e = re.sub(r"\{[^}]*\}", "", e)                          # label matchers
    e = re.sub(r"\[[^\]]*\]", "", e)                         # ranges
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", e)
    e = re.sub(r"label_values\(([^,)]*),[^)]*\)", r"\1", e)  # label_values(metric, label)
    out = set()
    for m in NAME.finditer(e):
        tok = m.group(0)
        rest = e[m.end():].lstrip()
        if rest.startswith("("):
            continue                                         # a function
        if tok.startswith("pfi_") or tok in SCRAPE_SERIES:
            out.add(tok)
    return out


def check_dashboard(path, have, problems):
    used, before = set(), len(problems)
    try:
        with open(path) as f:
            d = json.load(f)
    except (OSError, ValueError) as e:
        problems.append(f"{path}: not valid JSON: {e}")
        return used
    for k in ("uid", "title", "panels"):
        if k not in d:
            problems.append(f"{path}: no {k}")
    ids = set()
    for p in d.get("panels", []):
        where = f"{path}: panel {p.get('id')} ({p.get('title')!r})"
        for k in ("id", "type", "title", "gridPos"):
            if k not in p:
                problems.append(f"{where}: no {k}")
        if p.get("id") in ids:
            problems.append(f"{where}: id used twice")
        ids.add(p.get("id"))
        g = p.get("gridPos", {})
        if g.get("x", 0) + g.get("w", 0) > 24 or g.get("w", 0) <= 0 or g.get("h", 0) <= 0:
            problems.append(f"{where}: gridPos {g} outside the 24 columns")
        if p.get("type") == "row":
            continue
        targets = p.get("targets", [])
        if not targets:
            problems.append(f"{where}: no query")
        for t in targets:
            expr = t.get("expr", "")
            if not expr.strip():
                problems.append(f"{where}: target {t.get('refId')} has no expression")
            names = metric_names(expr)
            if not names:
                problems.append(f"{where}: {expr!r} uses no pfi metric")
            for n in sorted(names - have - SCRAPE_SERIES):
                problems.append(f"{where}: {n} is not in any exposition ({expr})")
            used |= names
    for v in d.get("templating", {}).get("list", []):
        q = v.get("query")
        q = q.get("query", "") if isinstance(q, dict) else (q or "")
        if v.get("type") == "query":
            for n in sorted(metric_names(q) - have):
                problems.append(f"{path}: variable {v.get('name')}: {n} is not in any exposition")
            used |= metric_names(q)
    print(f"{os.path.basename(path)}: {len(ids)} panels, {len(used)} metrics, "
          + ("all exposed" if len(problems) == before else f"{len(problems) - before} problem(s)"))
    return used


def check_rules(path, have, problems):
    used = set()
    with open(path) as f:
        text = f.read()
    # The expressions of the rules file: "expr:" and, for a block scalar, the lines indented
    # deeper than the key.
    exprs, cur, indent = [], None, 0
    for line in text.splitlines():
        m = re.match(r"(\s*)expr:\s*(.*)$", line)
        depth = len(line) - len(line.lstrip())
        if m:
            indent = len(m.group(1))
            cur = [m.group(2)]
            exprs.append(cur)
        elif cur is not None and line.strip() and depth > indent:
            cur.append(line.strip())
        else:
            cur = None
    for e in exprs:
        expr = " ".join(x for x in e if x not in (">-", "|", ">"))
        names = metric_names(expr)
        if not names:
            problems.append(f"{path}: {expr!r} uses no pfi metric")
        for n in sorted(names - have - SCRAPE_SERIES):
            problems.append(f"{path}: {n} is not in any exposition ({expr})")
        used |= names
    print(f"{os.path.basename(path)}: {len(exprs)} rules, {len(used)} metrics")
    return used


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    contrib, exps = sys.argv[1], sys.argv[2:]
    have = declared(exps)
    problems = []
    gdir = os.path.join(contrib, "grafana")
    dashboards = sorted(f for f in os.listdir(gdir) if f.endswith(".json"))
    if not dashboards:
        problems.append(f"{gdir}: no dashboard")
    for f in dashboards:
        check_dashboard(os.path.join(gdir, f), have, problems)
    check_rules(os.path.join(contrib, "prometheus", "pfi-alerts.yml"), have, problems)
    for p in problems:
        print("check-monitoring:", p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
