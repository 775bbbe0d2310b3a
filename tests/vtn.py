#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A small OpenADR 3.0 VTN for pfi's tests (Python standard library only).

The subset pfi's VEN (src/serve/ven.c, in both pfi serve and pfi cluster serve) uses, in the
shapes of the OpenADR 3.0 API:
  POST /auth/token              OAuth 2.0 client credentials (form or JSON body)
  GET  /programs?programName=   [program]
  GET  /events?programID=&skip=&limit=   [event] (at most 50 a page): intervalPeriod {start,
                                duration}, intervals[].payloads[]
  POST /reports                 201 with the report as stored
  GET  /vens?venName=           [ven] with its resources (404 for all /vens with --no-vens)
  POST /vens                    201 with the VEN as stored (venName needed, 409 if taken)
  POST /vens/{id}/resources     201 with the resource as stored
  POST /subscriptions           201 with the subscription as stored (404 with
                                --no-subscriptions); then every event created, changed or
                                deleted is notified to each callbackUrl subscribed to it (a POST
                                of {objectType, operation, object} with its bearerToken)
Every resource needs "Authorization: Bearer <token>" (401 otherwise, with a problem body).
Time is pfi's clock (src/util/clock.h): with PFI_CLOCK_SCALE=S and PFI_CLOCK_ORIGIN=T0 set it
runs S times faster than real time from T0, as it does in the daemons under test; every answer
carries it in its Date header, and events get createdDateTime/modificationDateTime from it.
Test controls (no token): POST /_test/events (an event body; id and programID filled in
unless given: an event of another program has its own programID),
DELETE /_test/events/ID (the VTN deletes an event), PUT /_test/events/ID (an event
body: the VTN changes the event), GET /_test/reports, POST /_test/revoke
(every token becomes invalid), POST /_test/token {"length": N} (tokens given from now on are N
characters long, as a JWT with many claims is; 32 again with N 32), POST /_test/skew {"seconds": S} (the Date header runs S seconds
off), POST /_test/fail {"status": N, "count": K} (the next K resource requests answer N;
with "min_skip": M, only the next K GET /events with skip >= M: a listing cut short),
POST /_test/page {"max": P} (GET /events answers at most P events a page, as a VTN may, whatever
the limit asked; 50 again with P 50; with "ignore_skip": true every page starts at the first
event, as a VTN that ignores skip answers; with "endless": true the pages never end: past the
events come made-up SIMPLE level 0 events of new ids, page after page; both off when not given),
POST /_test/hide {"id": ID, "count": K} (the next K listings of GET /events, each from skip 0
to its last page, leave event ID out: as a listing read in pages misses one when another is
deleted between two pages),
POST /_test/filter {"program": false} (GET /events ignores its programID filter and lists
every program's events, as a VTN may: the filter is optional for it; true: honoured again),
POST /_test/stall {"seconds": S, "count": K} (the next K resource requests are held S seconds
of real time, their connection open and no answer, before they are handled: a stalled VTN;
with "min_skip": M, only the next K GET /events with skip >= M: a listing's later page),
GET /_test/vens, GET /_test/stats (token_requests, unauthorized, notified, requests: the
resource requests so far, stalled: those held so far, stalled_now: those held now).

  vtn.py --port-file FILE --client-id ID --secret-file FILE --program NAME
"""
import argparse
import email.utils
import json
import os
import secrets
import sys
import threading
import time
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.RLock()  # reply() reads the clock skew under it too
STATE = {"tokens": set(), "events": [], "reports": [], "token_requests": 0,
         "unauthorized": 0, "next_id": 1, "skew": 0.0, "fail_status": 0, "fail_count": 0,
         "vens": [], "next_ven": 1, "subs": [], "notified": 0, "fail_min_skip": -1, "hide": {}, "hidden": set(),
         "page_max": 50, "ignore_skip": False, "endless": False, "filter_program": True, "requests": 0, "stall_s": 0.0, "stall_count": 0,
         "stall_min_skip": -1, "stalled": 0, "stalled_now": 0, "token_len": 0}


def clock_now():
    """pfi's wall clock: real time, or S times faster from PFI_CLOCK_ORIGIN."""
    t = time.time()
    scale = os.environ.get("PFI_CLOCK_SCALE")
    if not scale:
        return t
    origin = float(os.environ["PFI_CLOCK_ORIGIN"])
    return origin + (t - origin) * float(scale)


def iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def notify(operation, ev):
    """Tells every subscription to this event's operation, each in its own thread."""
    with LOCK:
        subs = [x for x in STATE["subs"] if x["programID"] == ev.get("programID")]
    for sub in subs:
        for oo in sub["objectOperations"]:
            if "EVENT" in oo["objects"] and operation in oo["operations"]:
                doc = {"objectType": "EVENT", "operation": operation, "object": ev}
                threading.Thread(target=send_notification, daemon=True,
                                 args=(oo["callbackUrl"], oo.get("bearerToken"), doc)).start()


def send_notification(url, token, doc):
    req = urllib.request.Request(url, data=json.dumps(doc).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            ok = r.status == 200
    except (OSError, ValueError) as e:
        sys.stderr.write("vtn: notification to %s failed: %s\n" % (url, e))
        ok = False
    if ok:
        with LOCK:
            STATE["notified"] += 1


def problem(status, title, detail):
    return status, {"type": "about:blank", "title": title, "status": status, "detail": detail}


class Vtn(BaseHTTPRequestHandler):
    server_version = "pfi-test-vtn/1"

    def log_message(self, fmt, *args):
        sys.stderr.write("vtn: " + (fmt % args) + "\n")

    def date_time_string(self, timestamp=None):
        with LOCK:
            skew = STATE["skew"]
        return email.utils.formatdate((clock_now() if timestamp is None else timestamp) + skew,
                                      usegmt=True)

    def failing(self, skip=None):
        """A forced failure (POST /_test/fail) of the next resource requests (with min_skip:
        of the next GET /events from that skip on; skip is None for other requests)."""
        with LOCK:
            if STATE["fail_count"] <= 0:
                return False
            m = STATE["fail_min_skip"]
            if m >= 0 and (skip is None or skip < m):
                return False
            STATE["fail_count"] -= 1
            st = STATE["fail_status"]
        self.reply(*problem(st, "Forced", "a test asked for %d" % st))
        return True

    def stalling(self, u):
        """Counts a resource request (not a test control) and holds it while a stall asks
        (POST /_test/stall)."""
        if u.path.startswith("/_test/"):
            return
        try:
            skip = int(urllib.parse.parse_qs(u.query).get("skip", ["0"])[0])
        except ValueError:
            skip = 0
        with LOCK:
            STATE["requests"] += 1
            m = STATE["stall_min_skip"]
            if STATE["stall_count"] <= 0 or (m >= 0 and (u.path != "/events" or skip < m)):
                return
            STATE["stall_count"] -= 1
            STATE["stalled"] += 1
            STATE["stalled_now"] += 1
            hold = STATE["stall_s"]
        time.sleep(hold)
        with LOCK:
            STATE["stalled_now"] -= 1

    def reply(self, status, doc):
        body = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def authorized(self):
        h = self.headers.get("Authorization", "")
        with LOCK:
            ok = h.startswith("Bearer ") and h[7:] in STATE["tokens"]
            if not ok:
                STATE["unauthorized"] += 1
        return ok

    def token(self):
        raw = self.body().decode(errors="replace")
        ctype = self.headers.get("Content-Type", "")
        if "json" in ctype:
            try:
                form = json.loads(raw)
            except ValueError:
                return problem(400, "Bad Request", "malformed JSON")
        else:
            form = {k: v[0] for k, v in urllib.parse.parse_qs(raw).items()}
        with LOCK:
            STATE["token_requests"] += 1
        if form.get("grant_type") != "client_credentials":
            return 400, {"error": "unsupported_grant_type"}
        if form.get("client_id") != ARGS.client_id or form.get("client_secret") != SECRET:
            return 401, {"error": "invalid_client"}
        with LOCK:
            n = STATE["token_len"]
        tok = secrets.token_hex(16) if n <= 32 else (secrets.token_hex(16) + "x" * n)[:n]
        with LOCK:
            STATE["tokens"].add(tok)
        return 200, {"access_token": tok, "token_type": "Bearer", "expires_in": 3600}

    def do_GET(self):
        u = urllib.parse.urlparse(self.path)
        self.stalling(u)
        q = {k: v[0] for k, v in urllib.parse.parse_qs(u.query).items()}
        if u.path == "/_test/reports":
            with LOCK:
                return self.reply(200, STATE["reports"])
        if u.path == "/_test/vens":
            with LOCK:
                return self.reply(200, STATE["vens"])
        if u.path == "/vens":
            if ARGS.no_vens:
                return self.reply(*problem(404, "Not Found", u.path))
            if not self.authorized():
                return self.reply(*problem(401, "Unauthorized", "a valid bearer token is needed"))
            with LOCK:
                vens = [x for x in STATE["vens"] if q.get("venName") in (None, x["venName"])]
            return self.reply(200, vens)
        if u.path == "/_test/stats":
            with LOCK:
                return self.reply(200, {k: STATE[k] for k in
                                        ("token_requests", "unauthorized", "notified",
                                         "requests", "stalled", "stalled_now")})
        if u.path not in ("/programs", "/events"):
            return self.reply(*problem(404, "Not Found", u.path))
        try:
            skip, limit = int(q.get("skip", 0)), int(q.get("limit", 50))
        except ValueError:
            return self.reply(*problem(400, "Bad Request", "skip and limit are integers"))
        if self.failing(skip if u.path == "/events" else None):
            return
        if not self.authorized():
            return self.reply(*problem(401, "Unauthorized", "a valid bearer token is needed"))
        if u.path == "/programs":
            progs = [PROGRAM] if q.get("programName") in (None, ARGS.program) else []
            return self.reply(200, progs)
        if skip < 0 or not 0 <= limit <= 50:
            return self.reply(*problem(400, "Bad Request", "skip >= 0, limit 0..50"))
        with LOCK:
            if skip == 0:  # a listing starts: the events it leaves out
                STATE["hidden"] = {i for i, k in STATE["hide"].items() if k > 0}
                for i in STATE["hidden"]:
                    STATE["hide"][i] -= 1
            pid = q.get("programID") if STATE["filter_program"] else None
            evs = [e for e in STATE["events"] if pid in (None, e["programID"])
                   and e["id"] not in STATE["hidden"]]
            limit = min(limit, STATE["page_max"])
            if STATE["ignore_skip"]:
                skip = 0
            page = evs[skip:skip + limit]
            if STATE["endless"]:
                page += [{"id": "pad%d" % k, "objectType": "EVENT", "programID": PROGRAM["id"],
                          "intervalPeriod": {"start": "2026-01-01T00:00:00Z", "duration": "PT1M"},
                          "intervals": [{"id": 0, "payloads": [{"type": "SIMPLE", "values": [0]}]}]}
                         for k in range(max(skip, len(evs)), skip + limit)]
        return self.reply(200, page)

    def post_subscription(self):
        if ARGS.no_subscriptions:
            return self.reply(*problem(404, "Not Found", "/subscriptions"))
        if not self.authorized():
            return self.reply(*problem(401, "Unauthorized", "a valid bearer token is needed"))
        try:
            sub = json.loads(self.body())
            ok = (isinstance(sub, dict) and sub.get("clientName") and sub.get("programID")
                  and all(o.get("callbackUrl") and o.get("objects") and o.get("operations")
                          for o in sub.get("objectOperations") or [None]))
        except (ValueError, AttributeError):
            ok = False
        if not ok:
            return self.reply(*problem(400, "Bad Request",
                                       "clientName, programID and objectOperations needed"))
        with LOCK:
            sub["id"], sub["objectType"] = "sub%d" % (len(STATE["subs"]) + 1), "SUBSCRIPTION"
            STATE["subs"].append(sub)
        return self.reply(201, sub)

    def post_ven(self, path):
        """POST /vens (a VEN) or /vens/{id}/resources (a resource of it)."""
        if ARGS.no_vens:
            return self.reply(*problem(404, "Not Found", path))
        if not self.authorized():
            return self.reply(*problem(401, "Unauthorized", "a valid bearer token is needed"))
        try:
            obj = json.loads(self.body())
        except ValueError:
            return self.reply(*problem(400, "Bad Request", "malformed JSON"))
        parts = path.strip("/").split("/")
        with LOCK:
            if parts == ["vens"]:
                if not isinstance(obj, dict) or not obj.get("venName"):
                    return self.reply(*problem(400, "Bad Request", "venName needed"))
                if any(x["venName"] == obj["venName"] for x in STATE["vens"]):
                    return self.reply(*problem(409, "Conflict", "venName taken"))
                obj["id"], obj["objectType"] = "ven%d" % STATE["next_ven"], "VEN"
                STATE["next_ven"] += 1
                for r in obj.get("resources") or []:
                    r["id"], r["venID"], r["objectType"] = "r%d" % STATE["next_ven"], obj["id"], "RESOURCE"
                    STATE["next_ven"] += 1
                STATE["vens"].append(obj)
                return self.reply(201, obj)
            ven = [x for x in STATE["vens"] if len(parts) == 3 and parts[2] == "resources"
                   and x["id"] == parts[1]]
            if not ven:
                return self.reply(*problem(404, "Not Found", path))
            if not isinstance(obj, dict) or not obj.get("resourceName"):
                return self.reply(*problem(400, "Bad Request", "resourceName needed"))
            obj["id"], obj["venID"], obj["objectType"] = "r%d" % STATE["next_ven"], parts[1], "RESOURCE"
            STATE["next_ven"] += 1
            ven[0].setdefault("resources", []).append(obj)
            return self.reply(201, obj)

    def do_DELETE(self):
        u = urllib.parse.urlparse(self.path)
        if not u.path.startswith("/_test/events/"):
            return self.reply(*problem(404, "Not Found", u.path))
        eid = u.path[len("/_test/events/"):]
        with LOCK:
            gone = [e for e in STATE["events"] if e["id"] == eid]
            STATE["events"] = [e for e in STATE["events"] if e["id"] != eid]
        for ev in gone:
            notify("DELETE", ev)
        return self.reply(200 if gone else 404, {"id": eid})

    def do_PUT(self):
        u = urllib.parse.urlparse(self.path)
        if not u.path.startswith("/_test/events/"):
            return self.reply(*problem(404, "Not Found", u.path))
        eid = u.path[len("/_test/events/"):]
        ev = json.loads(self.body())
        with LOCK:
            old = [e for e in STATE["events"] if e["id"] == eid]
            if old:
                ev.setdefault("programID", PROGRAM["id"])
                ev.update(id=eid, objectType="EVENT",
                          createdDateTime=old[0]["createdDateTime"],
                          modificationDateTime=iso(clock_now()))
                STATE["events"] = [ev if e["id"] == eid else e for e in STATE["events"]]
        if not old:
            return self.reply(*problem(404, "Not Found", u.path))
        notify("PUT", ev)
        return self.reply(200, ev)

    def do_POST(self):
        u = urllib.parse.urlparse(self.path)
        self.stalling(u)
        if u.path == "/auth/token":
            return self.reply(*self.token())
        if u.path == "/_test/skew":
            with LOCK:
                STATE["skew"] = float(json.loads(self.body())["seconds"])
            return self.reply(200, {})
        if u.path == "/_test/fail":
            d = json.loads(self.body())
            with LOCK:
                STATE["fail_status"], STATE["fail_count"] = int(d["status"]), int(d["count"])
                STATE["fail_min_skip"] = int(d.get("min_skip", -1))
            return self.reply(200, {})
        if u.path == "/_test/hide":
            d = json.loads(self.body())
            with LOCK:
                STATE["hide"][str(d["id"])] = int(d["count"])
            return self.reply(200, {})
        if u.path == "/_test/filter":
            with LOCK:
                STATE["filter_program"] = bool(json.loads(self.body())["program"])
            return self.reply(200, {})
        if u.path == "/_test/stall":
            d = json.loads(self.body())
            with LOCK:
                STATE["stall_s"], STATE["stall_count"] = float(d["seconds"]), int(d["count"])
                STATE["stall_min_skip"] = int(d.get("min_skip", -1))
            return self.reply(200, {})
        if u.path == "/_test/page":
            with LOCK:
                d = json.loads(self.body())
                STATE["page_max"] = int(d["max"])
                STATE["ignore_skip"] = bool(d.get("ignore_skip", False))
                STATE["endless"] = bool(d.get("endless", False))
            return self.reply(200, {})
        if u.path == "/_test/token":
            with LOCK:
                STATE["token_len"] = int(json.loads(self.body())["length"])
            return self.reply(200, {})
        if u.path == "/_test/revoke":
            with LOCK:
                STATE["tokens"].clear()
            return self.reply(200, {})
        if u.path == "/_test/events":
            ev = json.loads(self.body())
            with LOCK:
                ev.setdefault("id", str(STATE["next_id"]))
                STATE["next_id"] += 1
                ev.setdefault("programID", PROGRAM["id"])
                ev["objectType"] = "EVENT"
                ev["createdDateTime"] = ev["modificationDateTime"] = iso(clock_now())
                STATE["events"].append(ev)
            notify("POST", ev)
            return self.reply(201, ev)
        if u.path.startswith("/vens"):
            return self.post_ven(u.path)
        if u.path == "/subscriptions":
            return self.post_subscription()
        if u.path != "/reports":
            return self.reply(*problem(404, "Not Found", u.path))
        if not self.authorized():
            return self.reply(*problem(401, "Unauthorized", "a valid bearer token is needed"))
        try:
            rep = json.loads(self.body())
        except ValueError:
            return self.reply(*problem(400, "Bad Request", "malformed JSON"))
        if not isinstance(rep, dict) or "programID" not in rep or "resources" not in rep:
            return self.reply(*problem(400, "Bad Request", "programID and resources needed"))
        with LOCK:
            rep["id"] = str(STATE["next_id"])
            STATE["next_id"] += 1
            rep["objectType"] = "REPORT"
            STATE["reports"].append(rep)
        return self.reply(201, rep)


def main():
    global ARGS, SECRET, PROGRAM
    p = argparse.ArgumentParser()
    p.add_argument("--port-file", required=True)
    p.add_argument("--client-id", required=True)
    p.add_argument("--secret-file", required=True)
    p.add_argument("--program", required=True)
    p.add_argument("--no-vens", action="store_true", help="offer no VEN registration (404)")
    p.add_argument("--no-subscriptions", action="store_true", help="offer none (404)")
    p.add_argument("--program-units", default="KW",
                   help="the units of the program's IMPORT_CAPACITY_LIMIT descriptor")
    ARGS = p.parse_args()
    with open(ARGS.secret_file) as f:
        SECRET = f.readline().strip()
    PROGRAM = {"id": "p1", "objectType": "PROGRAM", "programName": ARGS.program,
               "payloadDescriptors": [{"objectType": "EVENT_PAYLOAD_DESCRIPTOR",
                                       "payloadType": "IMPORT_CAPACITY_LIMIT",
                                       "units": ARGS.program_units}]}
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Vtn)
    with open(ARGS.port_file + ".tmp", "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.replace(ARGS.port_file + ".tmp", ARGS.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    main()
