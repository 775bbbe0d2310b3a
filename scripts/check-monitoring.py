#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks the Grafana dashboards (contrib/grafana/*.json) and the Prometheus alerting rules
(contrib/prometheus/pfi-alerts.yml) against real /metrics expositions of pfi's daemons.

  scripts/check-monitoring.py CONTRIB_DIR EXPOSITION...

Each dashboard must be a JSON object with a uid, a title and panels; every panel an id (unique),
a type, a title and a gridPos inside the 24 columns; every query panel at least one target with
a PromQL expression.  Every metric name a panel, a template variable or an alert rule uses must be
one that some exposition declares (# TYPE), so a renamed metric cannot leave a blank panel or an
alert that never fires; so must every metric the documentation (docs/*.md and README.md beside
CONTRIB_DIR) names, with the labels it writes after it (`pfi_node_mode{mode}`).  Labels a query
selects, groups or aggregates by, or shows ({{label}}, {{ $labels.label }}) must be ones its
metrics carry (or instance and job, which Prometheus adds); rate(), irate() and increase() read
counters only.  Every exposed metric has HELP and TYPE lines (one type in every exposition) and
follows Prometheus' conventions: a counter and only a counter ends in _total, and units are base
units (watts, seconds, joules, hertz, celsius, bytes), never milliseconds, kilowatts, megahertz
or percent.  Prints what it checked; exits 1 listing every problem."""
import json
import os
import re
import sys

# The series Prometheus itself makes when it scrapes a target, not in any exposition.
SCRAPE_SERIES = {"up", "scrape_duration_seconds", "scrape_samples_scraped"}
# The labels Prometheus attaches to every series it scrapes.
TARGET_LABELS = {"instance", "job"}
NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
COUNTER_FUNCS = ("rate", "irate", "increase", "resets")
# Units Prometheus' naming guide replaces by their base unit.
NOT_BASE_UNIT = re.compile(r"_(ms|msec|milliseconds|us|microseconds|minutes|hours|days|"
                           r"kw|kilowatts|"
                           r"mw|milliwatts|kj|kilojoules|mhz|megahertz|khz|ghz|percent|pct|"
                           r"kelvin|fahrenheit|kb|mb|gb|kib|mib|gib)(_total)?$")


class Exposed:
    """What the expositions declare: each metric's type and the label names its series carry."""

    def __init__(self, paths):
        self.types, self.labels, self.clash, self.helps = {}, {}, [], set()
        for p in paths:
            with open(p) as f:
                for line in f:
                    m = re.match(r"# HELP (\S+) \S", line)
                    if m:
                        self.helps.add(m.group(1))
                        continue
                    m = re.match(r"# TYPE (\S+) (\S+)", line)
                    if m:
                        if self.types.get(m.group(1), m.group(2)) != m.group(2):
                            self.clash.append(f"{m.group(1)}: a {self.types[m.group(1)]} in one "
                                              f"exposition, a {m.group(2)} in {p}")
                        self.types[m.group(1)] = m.group(2)
                        self.labels.setdefault(m.group(1), set())
                        continue
                    m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s", line)
                    if m and not line.startswith("#"):
                        names = re.findall(r"([a-zA-Z_][a-zA-Z0-9_]*)=\"", m.group(2) or "")
                        self.labels.setdefault(m.group(1), set()).update(names)
        # A histogram's series are its name with _bucket (label le), _sum and _count; each only
        # grows, so the counter functions read them.
        self.parts = {}
        for n, t in self.types.items():
            if t == "histogram":
                for s in ("_bucket", "_sum", "_count"):
                    self.parts[n + s] = n
                    self.labels.setdefault(n + s, set())
                self.labels[n + "_bucket"].add("le")
        self.names = set(self.types) | set(self.parts)

    def type_of(self, n):
        return "counter" if n in self.parts else self.types.get(n)

    def labels_of(self, metrics):
        out = set(TARGET_LABELS)
        for n in metrics:
            out |= self.labels.get(n, set())
        return out


def naming_problems(have, problems):
    problems.extend(have.clash)
    for n in sorted(set(have.labels) - have.names):
        problems.append(f"{n}: series without a # TYPE line")
    for n in sorted(set(have.types) - have.helps):
        problems.append(f"{n}: no # HELP line")
    for n, t in sorted(have.types.items()):
        if t == "counter" and not n.endswith("_total"):
            problems.append(f"{n}: a counter whose name does not end in _total")
        if t != "counter" and n.endswith("_total"):
            problems.append(f"{n}: a {t} whose name ends in _total (kept for counters)")
        if NOT_BASE_UNIT.search(n):
            problems.append(f"{n}: not in a base unit "
                            "(seconds, watts, joules, hertz, celsius, bytes)")


def query_problems(expr, have, where, problems, shown=()):
    """Labels and types in one PromQL expression: label matchers, by/without/on/ignoring lists
    and the labels shown must be carried by its metrics; counter functions read counters."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    names = metric_names(expr)
    labels = have.labels_of(names) | (TARGET_LABELS if names & SCRAPE_SERIES else set())
    used = set()
    for m in re.finditer(r"\{([^}]*)\}", e):
        used |= set(re.findall(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)", m.group(1)))
    for m in re.finditer(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)", e):
        used |= set(re.findall(r"[a-zA-Z_][a-zA-Z0-9_]*", m.group(1)))
    for lab in sorted((used | set(shown)) - labels):
        on = ", ".join(sorted(names)) or "any metric"
        problems.append(f"{where}: label {lab} is not on {on} ({expr})")
    call = r"\b(" + "|".join(COUNTER_FUNCS) + r")\s*\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)"
    for m in re.finditer(call, e):
        t = have.type_of(m.group(2))
        if t is not None and t != "counter":
            problems.append(f"{where}: {m.group(1)}() of {m.group(2)}, a {t} ({expr})")


def c_identifiers(top):
    """The pfi_ names the sources use as C identifiers (functions, types, fields), outside
    comments and strings, where every metric name is: the documentation names both."""
    ids = set()
    for d in ("src", "include"):
        for root, _, files in os.walk(os.path.join(top, d)):
            for f in files:
                if not f.endswith((".c", ".h")):
                    continue
                with open(os.path.join(root, f), errors="replace") as fh:
                    t = fh.read()
                t = re.sub(r"/\*.*?\*/", "", t, flags=re.S)
                t = re.sub(r"//[^\n]*", "", t)
                t = re.sub(r'"(?:[^"\\\n]|\\.)*"', '""', t)
                ids |= set(re.findall(r"\bpfi_[A-Za-z0-9_]+", t))
    return ids


def check_docs(top, have, problems):
    """Every metric a page names in `code` must be exposed, with the labels written after it.  A
    name counts as a metric when it starts as an exposed family does (pfi_gpu_, pfi_cluster_,
    ...) and is no C identifier of the sources."""
    families = {n.split("_")[1] for n in have.names if n.startswith("pfi_")}
    ids = c_identifiers(top)
    pages = sorted(os.path.join(top, "docs", f) for f in os.listdir(os.path.join(top, "docs"))
                   if f.endswith(".md")) + [os.path.join(top, "README.md")]
    seen = set()
    for page in pages:
        with open(page) as f:
            text = f.read()
        for m in re.finditer(r"`(pfi_([a-z0-9]+)[a-z0-9_]*)(\{([^}`]*)\})?", text):
            n, fam = m.group(1), m.group(2)
            if fam not in families or n in ids:
                continue
            seen.add(n)
            where = f"{os.path.relpath(page, top)}: {n}"
            if n not in have.names:
                problems.append(f"{where} is not in any exposition")
                continue
            for lab in re.findall(r"[a-zA-Z_][a-zA-Z0-9_]*", m.group(4) or ""):
                if lab not in have.labels[n]:
                    problems.append(f"{where}: label {lab} is not on it (it has "
                                    f"{', '.join(sorted(have.labels[n])) or 'none'})")
    print(f"docs: {len(seen)} metrics named")


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
            for n in sorted(names - have.names - SCRAPE_SERIES):
                problems.append(f"{where}: {n} is not in any exposition ({expr})")
            shown = re.findall(r"\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}", t.get("legendFormat", ""))
            query_problems(expr, have, where, problems, shown)
            used |= names
    for v in d.get("templating", {}).get("list", []):
        q = v.get("query")
        q = q.get("query", "") if isinstance(q, dict) else (q or "")
        if v.get("type") == "query":
            for n in sorted(metric_names(q) - have.names):
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
    # The labels each rule's annotations show ({{ $labels.x }}), in the order of the rules.
    shown = [re.findall(r"\$labels\.([a-zA-Z_][a-zA-Z0-9_]*)", r)
             for r in re.split(r"\n\s*- (?:alert|record):", text)[1:]]
    for i, e in enumerate(exprs):
        expr = " ".join(x for x in e if x not in (">-", "|", ">"))
        names = metric_names(expr)
        if not names:
            problems.append(f"{path}: {expr!r} uses no pfi metric")
        for n in sorted(names - have.names - SCRAPE_SERIES):
            problems.append(f"{path}: {n} is not in any exposition ({expr})")
        query_problems(expr, have, path, problems, shown[i] if i < len(shown) else ())
        used |= names
    print(f"{os.path.basename(path)}: {len(exprs)} rules, {len(used)} metrics")
    return used


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    contrib, exps = sys.argv[1], sys.argv[2:]
    have = Exposed(exps)
    problems = []
    naming_problems(have, problems)
    check_docs(os.path.join(contrib, ".."), have, problems)
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
