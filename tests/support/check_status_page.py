#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Compares the status page as Chromium rendered it (--dump-dom) with the daemon's API.

  check_status_page.py node|site DOM BEFORE_DIR AFTER_DIR

BEFORE_DIR and AFTER_DIR hold the API's answers fetched just before and just after the page was
rendered: node: gpus.json, jobs.json, allocation.json, grid_events.json, decisions.json; site:
nodes.json, jobs.json, allocation.json, grid_events.json, decisions.json; both: history.json.  Every figure the page
shows carries data-k (what it is) and data-v (the number it was given); the shown text must say
that number, and the number must be the API's: the same as before or after for what stays put
(caps, budgets, jobs' figures), between the two readings (with 2% or 1 degree of slack for
noise) for what moves (draw, temperature).  The plot's lines are read back into numbers (the
page gives the mapping) and must be /v1/history's: each point a sample of it at its time, every
sample of the hour it had before the rendering drawn, none where it has no value.  A node that
is silent (up false) must be marked stale, its caps said to be the last acknowledged (or, for
one that never answered, said so) and its draw not shown.  A job's rate older than the page's
RATE_OLD_S is shown with its age, a fresher one without.  Every job id of the site's page, and
every grid event's id, is in a <bdi> of its own (a bidi control in it must not turn the page's
words after it around).  Prints what it compared; exits 1 listing every mismatch."""
import json
import math
import re
import sys
import time
from html.parser import HTMLParser

RATE_OLD_S = 30  # src/report/status_page.html


class Dom(HTMLParser):
    """Figures (data-k) with their table, row (data-key) and text; body attributes; plot paths."""

    def __init__(self):
        super().__init__()
        self.figs, self.paths, self.body, self.svg, self.rows = [], [], {}, {}, {}
        self.table = self.row = None
        self.cur = None
        self.depth = 0
        self.bdis, self.bdi, self.bdi_at = set(), None, (None, None)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "bdi":
            self.bdi = ""
            self.bdi_at = (self.table, self.row)
        if tag == "body":
            self.body = a
        if tag == "table":
            self.table = a.get("id")
        if tag == "svg" and a.get("id") == "plot":
            self.svg = a
        if tag == "tr":
            self.row = a.get("data-key")
            if self.row is not None:
                self.rows[(self.table, self.row)] = a
        if tag == "path" and "data-k" in a:
            self.paths.append(a)
        elif "data-k" in a:
            self.cur = {"k": a["data-k"], "v": a.get("data-v", ""), "id": a.get("id"),
                        "table": self.table, "row": self.row, "text": ""}
            self.figs.append(self.cur)
            self.depth = 0
        elif self.cur is not None:
            self.depth += 1

    def handle_endtag(self, tag):
        if tag == "bdi" and self.bdi is not None:
            self.bdis.add(self.bdi_at + (self.bdi,))
            self.bdi = None
        if self.cur is not None:
            if self.depth == 0:
                self.cur = None
            else:
                self.depth -= 1
        if tag == "table":
            self.table = None

    def handle_data(self, data):
        if self.bdi is not None:
            self.bdi += data
        if self.cur is not None:
            self.cur["text"] += data


bad = []
checked = 0


def num(v):
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else math.nan


def shown_ok(f):
    """The text shows data-v: some number in it equals data-v at the precision shown."""
    text, v = f["text"].replace(",", ""), f["v"]
    if v == "":
        return not re.search(r"\d", text) or "no SLA" in text
    v = float(v)
    for m in re.finditer(r"-?\d+(?:\.(\d+))?\s*(%?)", text):
        x = float(m.group(0).rstrip("% "))
        dec = len(m.group(1) or "")
        val = v * 100 if m.group(2) == "%" else v
        if abs(x - val) <= 0.5 * 10 ** -dec + 1e-9:
            return True
    return False


def same(f, wants, what, moving=False):
    """wants: the API's value before and after the rendering."""
    global checked
    checked += 1
    got = float(f["v"]) if f["v"] != "" else math.nan
    a, b = wants
    if math.isnan(got):
        ok = math.isnan(a) or math.isnan(b)
    elif moving and not math.isnan(a) and not math.isnan(b):
        slack = max(1.0 if f["k"] == "temp_c" else 0, 0.02 * max(abs(a), abs(b)))
        ok = min(a, b) - slack <= got <= max(a, b) + slack
    else:
        ok = any(not math.isnan(w) and abs(got - w) <= 1e-9 * max(1, abs(w)) for w in wants)
    if not ok:
        bad.append(f"{what}: the page shows {f['text']!r} (data-v {f['v']!r}), the API {a} "
                   f"before and {b} after")


def figs(dom, table=None, key=None, k=None):
    return [f for f in dom.figs if (table is None or f["table"] == table) and
            (key is None or f["row"] == key) and (k is None or f["k"] == k)]


def one(dom, what, **sel):
    r = figs(dom, **sel)
    if len(r) != 1:
        bad.append(f"{what}: {len(r)} figures on the page for {sel}")
        return None
    return r[0]


def check_rows(dom, table, rows, keyof, fields, what):
    """rows: the API's objects (before, after); fields: (data-k, value of a row, moving)."""
    shown = {f["row"] for f in figs(dom, table=table)}
    keys = [{keyof(r) for r in rs} for rs in rows]
    if shown != keys[0] and shown != keys[1]:
        bad.append(f"{what}: the page shows {sorted(shown)}, the API has {sorted(keys[1])}")
        return
    by = [{keyof(r): r for r in rs} for rs in rows]
    for key in sorted(shown):
        for k, get, moving in fields:
            f = one(dom, f"{what} {key} {k}", table=table, key=key, k=k)
            if f:
                wants = tuple(get(b[key]) if key in b else math.nan for b in by)
                same(f, wants, f"{what} {key} {k}", moving)


def history(dom, apis):
    """The plotted lines against /v1/history before and after the rendering."""
    global checked
    sv = dom.svg
    try:
        t0, ymax, x0, x1, y0, y1, span = (float(sv["data-" + k]) for k in
                                          ("t0", "ymax", "x0", "x1", "y0", "y1", "span"))
    except (KeyError, ValueError):
        bad.append(f"the plot does not say how it maps time and watts: {sv}")
        return 0
    # The page writes coordinates to 0.1: what that rounding allows in seconds and watts.
    tol_t, tol_v = 0.05 / (x1 - x0) * span + 1e-6, 0.05 / (y1 - y0) * ymax * (1 + 1e-9)
    n = 0
    for k in ("budget_w", "limits_w", "draw_w"):
        api = {}
        for a in apis:
            h = a["history"]
            for t, v in zip(h["t"], h[k]):
                api[t] = num(v)
        ts = sorted(api)
        paths = [p for p in dom.paths if p["data-k"] == k]
        pts = []
        for p in paths:
            for x, y in re.findall(r"[ML]\s*(-?[\d.]+)[ ,]+(-?[\d.]+)", p.get("d", "")):
                pts.append((t0 + (float(x) - x0) / (x1 - x0) * span,
                            (1 - (float(y) - y0) / (y1 - y0)) * ymax))
        seen = set()
        for t, v in pts:
            checked += 1
            near = min(ts, key=lambda s: abs(s - t)) if ts else None
            if near is None or abs(near - t) > tol_t:
                bad.append(f"plot {k}: a point at t={t:.2f} where /v1/history has no sample")
            elif math.isnan(api[near]):
                bad.append(f"plot {k}: a point at t={near} where /v1/history has no value")
            elif abs(api[near] - v) > tol_v:
                bad.append(f"plot {k}: {v:.1f} W at t={near}, /v1/history says {api[near]}")
            else:
                seen.add(near)
        # The page's last read of the history was at t0 + span: every sample up to then counts.
        missing = [t for t in ts if t0 + tol_t <= t <= t0 + span - tol_t and
                   not math.isnan(api[t]) and t not in seen]
        if missing:
            bad.append(f"plot {k}: {len(missing)} sample(s) of /v1/history not drawn, the first "
                       f"at t={missing[0]}")
        n += len(pts)
    return n


def silent_nodes(dom, apis):
    """Nodes down in both readings are marked stale with their caps as last acknowledged; nodes
    up in both are not."""
    n = 0
    for name in {x["name"] for x in apis[0]["nodes"]["nodes"]}:
        ups = [next((x["up"] for x in a["nodes"]["nodes"] if x["name"] == name), None)
               for a in apis]
        attrs = dom.rows.get(("units", name), {})
        stale = attrs.get("data-stale") == "1"
        if ups == [True, True] and stale:
            bad.append(f"node {name} is up but the page marks it stale")
        if ups != [False, False]:
            continue
        n += 1
        if not stale:
            bad.append(f"node {name} is silent but its row is not marked stale: {attrs}")
        for f in figs(dom, table="units", key=name):
            if f["k"] == "power_w" and f["v"] != "":
                bad.append(f"node {name} is silent but the page shows a draw {f['text']!r}")
            never = any(x.get("caps_known") is False for a in apis for x in a["nodes"]["nodes"]
                        if x["name"] == name)
            said = "never answered" if never else "last acknowledged"
            if f["k"] == "cap_sum_w" and said not in f["text"]:
                bad.append(f"node {name} is silent but its caps {f['text']!r} read as current")
    return n


def rate_ages(dom, jobs):
    """jobs: the API's jobs (before, after).  A rate read older than RATE_OLD_S before the page
    read it is shown with its age; one still fresh after is not."""
    global checked
    ages = [{j["id"]: num(j.get("observed_age_s")) for j in js} for js in jobs]
    for f in figs(dom, table="jobs", k="tokens_per_s"):
        a, b = (x.get(f["row"], math.nan) for x in ages)
        if f["v"] == "" or math.isnan(a) or math.isnan(b):
            continue
        checked += 1
        if a > RATE_OLD_S and " ago)" not in f["text"]:
            bad.append(f"job {f['row']}: its rate is {a:.0f} s old, the page shows {f['text']!r}")
        if b <= RATE_OLD_S and "ago" in f["text"]:
            bad.append(f"job {f['row']}: its rate is {b:.0f} s old, the page shows {f['text']!r}")


def isolated(dom, table, ids, what):
    """Each id in a <bdi> of its own in its own row of table (the same id elsewhere on the page,
    a GPU's job in the nodes table, is not it)."""
    global checked
    for i in ids:
        checked += 1
        if (table, i, i) not in dom.bdis:
            bad.append(f"{what} {i!r} is not in a <bdi> of its own in its row of {table}")


def total(xs):
    """The sum of the readings there are; none at all is an unknown draw, not 0 W."""
    xs = [x for x in xs if x is not None]
    return float(sum(xs)) if xs else math.nan


def headroom(rel, sla):
    return rel - (1 - sla) if not math.isnan(rel) and not math.isnan(sla) else math.nan


def events(dom, apis, now):
    rows = []
    for api in apis:
        evs = sorted((e for e in api["events"] if e["end_s"] > now), key=lambda e: e["start_s"])
        rows.append([e for e in evs if e["start_s"] <= now] +
                    [e for e in evs if e["start_s"] > now][:1])
    check_rows(dom, "events", rows, lambda e: e["id"],
               [("target_w", lambda e: num(e["target_w"]), False)], "grid event")
    return rows[1]


def main():
    kind, dom_path, before, after = sys.argv[1:5]
    dom = Dom()
    with open(dom_path) as f:
        dom.feed(f.read())
    apis = []
    for d in (before, after):
        api = {}
        for n in ("gpus", "nodes", "jobs", "allocation", "grid_events", "decisions", "history"):
            try:
                with open(f"{d}/{n}.json") as f:
                    api[n] = json.load(f)
            except OSError:
                pass
        apis.append(api)
    loads = int(dom.body.get("data-loaded", "0") or 0)
    if loads < 2:
        bad.append(f"the page loaded its data {loads} time(s): it does not refresh itself")
    for f in dom.figs:
        if not shown_ok(f):
            bad.append(f"{f['k']} ({f['table'] or f['id']} {f['row'] or ''}): shows "
                       f"{f['text']!r} for {f['v']!r}")
    for k in ("budget_w", "limits_w", "draw_w"):
        p = [x for x in dom.paths if x["data-k"] == k]
        if not p or int(p[0].get("data-n", "0")) < 2:
            bad.append(f"the plot has no {k} line of at least 2 points")
    both = lambda name, key: tuple(a[name][key] for a in apis)
    now = time.time()
    if kind == "node":
        gpus = both("gpus", "gpus")
        draw = tuple(total(g["power_w"] for g in gs if g["up"]) for gs in gpus)
        al = lambda k: tuple(num(a["allocation"][k]) for a in apis)
        top = [("fig-budget", al("budget_w"), False), ("fig-limits", al("sum_limits_w"), False),
               ("fig-nominal", al("nominal_w"), False), ("fig-draw", draw, True)]
        check_rows(dom, "units", gpus, lambda g: str(g["index"]),
                   [("cap_w", lambda g: num(g["limit_w"]), False),
                    ("power_w", lambda g: num(g["power_w"]), True),
                    ("temp_c", lambda g: num(g["temp_c"]), True)], "GPU")
        check_rows(dom, "jobs", both("jobs", "jobs"), lambda j: j["id"],
                   [("cap_w", lambda j: num(j["cap_w"]), False),
                    ("n_gpus", lambda j: len(j["gpus"]), False),
                    ("tokens_per_s", lambda j: num(j["observed_tokens_per_s"]), False),
                    ("predicted_rel", lambda j: num(j["predicted_rel"]), False),
                    ("pfi30", lambda j: num(j["pfi30"]), False),
                    ("sla_headroom", lambda j: headroom(num(j["predicted_rel"]), num(j["sla"])),
                     False)], "job")
        rate_ages(dom, both("jobs", "jobs"))
        dec_fields = [("budget_w", lambda x: num(x["budget_w"]), False),
                      ("sum_after_w", lambda x: num(x["sum_after_w"]), False),
                      ("n_changed", lambda x: num(x["n_changed"]), False)]
    else:
        nodes = both("nodes", "nodes")
        draw = tuple(total(n["power_w"] for n in ns if n["up"]) for ns in nodes)
        al = lambda k: tuple(num(a["allocation"][k]) for a in apis)
        top = [("fig-budget", al("budget_now_w"), False), ("fig-limits", al("cap_sum_w"), False),
               ("fig-nominal", al("site_default_w"), False), ("fig-draw", draw, True)]
        check_rows(dom, "units", nodes, lambda n: n["name"],
                   [("cap_sum_w", lambda n: num(n["cap_sum_w"]), False),
                    ("power_w", lambda n: num(n["power_w"]), True)], "node")
        check_rows(dom, "jobs", both("jobs", "jobs"), lambda j: j["id"],
                   [("cap_w", lambda j: num(j["cap_w"]), False),
                    ("cap_target_w", lambda j: num(j["cap_target_w"]), False),
                    ("n_gpus", lambda j: num(j["n_gpus"]), False),
                    ("predicted_rel", lambda j: num(j["rel_tput_target"]), False),
                    ("pfi30", lambda j: num(j["pfi30"]), False),
                    ("sla_headroom",
                     lambda j: headroom(num(j["rel_tput_target"]), num(j["sla"])), False)], "job")
        isolated(dom, "jobs", {j["id"] for js in both("jobs", "jobs") for j in js}, "job id")
        dec_fields = [("budget_w", lambda x: num(x["budget_w"]), False),
                      ("cap_sum_w", lambda x: num(x["cap_sum_w"]), False),
                      ("n_lowered", lambda x: num(x["n_lowered"]), False),
                      ("n_raised", lambda x: num(x["n_raised"]), False)]
    for fid, wants, moving in top:
        f = next((x for x in dom.figs if x["id"] == fid), None)
        if f is None:
            bad.append(f"no {fid} on the page")
        else:
            same(f, wants, fid, moving)
    shown_ev = events(dom, [a["grid_events"] for a in apis], now)
    isolated(dom, "events", {e["id"] for e in shown_ev}, "grid event id")
    # The decisions shown are the 8 newest the API had when the page read it.
    ids = {f["row"] for f in figs(dom, table="decisions")}
    if not ids:
        bad.append("no decision shown")
    else:
        top_id = max(int(i) for i in ids)
        then = [[x for x in a["decisions"]["decisions"] if x["id"] <= top_id][:8] for a in apis]
        check_rows(dom, "decisions", then, lambda x: str(x["id"]), dec_fields, "decision")
    plotted = history(dom, apis)
    silent = silent_nodes(dom, apis) if kind == "site" else 0
    for b in bad:
        print("check_status_page:", b, file=sys.stderr)
    print(f"{kind} page: {len(dom.figs)} figures shown, {checked} compared with the API, "
          f"{len(shown_ev)} grid event(s), {len(ids)} decision(s), {plotted} plotted point(s) "
          f"read back, {silent} silent node(s), refreshed {loads} times; "
          f"{len(bad)} mismatch(es)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
