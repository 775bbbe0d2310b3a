#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A small OpenADR 3.0 VTN for pfi's tests (Python standard library only).

The subset pfi's VEN (src/cluster/ven.c) uses, in the shapes of the OpenADR 3.0 API:
  POST /auth/token              OAuth 2.0 client credentials (form or JSON body)
  GET  /programs?programName=   [program]
  GET  /events?programID=       [event]: intervalPeriod {start, duration}, intervals[].payloads[]
  POST /reports                 201 with the report as stored
Every resource needs "Authorization: Bearer <token>" (401 otherwise, with a problem body).
Time is pfi's clock (src/util/clock.h): with PFI_CLOCK_SCALE=S and PFI_CLOCK_ORIGIN=T0 set it
runs S times faster than real time from T0, as it does in the daemons under test; every answer
carries it in its Date header, and events get createdDateTime/modificationDateTime from it.
Test controls (no token): POST /_test/events (an event body; id and programID filled in),
GET /_test/reports, POST /_test/revoke (every token becomes invalid), GET /_test/stats.

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
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
STATE = {"tokens": set(), "events": [], "reports": [], "token_requests": 0,
         "unauthorized": 0, "next_id": 1}


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


def problem(status, title, detail):
    return status, {"type": "about:blank", "title": title, "status": status, "detail": detail}


class Vtn(BaseHTTPRequestHandler):
    server_version = "pfi-test-vtn/1"

    def log_message(self, fmt, *args):
        sys.stderr.write("vtn: " + (fmt % args) + "\n")

    def date_time_string(self, timestamp=None):
        return email.utils.formatdate(clock_now() if timestamp is None else timestamp,
                                      usegmt=True)

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
        tok = secrets.token_hex(16)
        with LOCK:
            STATE["tokens"].add(tok)
        return 200, {"access_token": tok, "token_type": "Bearer", "expires_in": 3600}

    def do_GET(self):
        u = urllib.parse.urlparse(self.path)
        q = {k: v[0] for k, v in urllib.parse.parse_qs(u.query).items()}
        if u.path == "/_test/reports":
            with LOCK:
                return self.reply(200, STATE["reports"])
        if u.path == "/_test/stats":
            with LOCK:
                return self.reply(200, {k: STATE[k] for k in
                                        ("token_requests", "unauthorized")})
        if u.path not in ("/programs", "/events"):
            return self.reply(*problem(404, "Not Found", u.path))
        if not self.authorized():
            return self.reply(*problem(401, "Unauthorized", "a valid bearer token is needed"))
        if u.path == "/programs":
            progs = [PROGRAM] if q.get("programName") in (None, ARGS.program) else []
            return self.reply(200, progs)
        with LOCK:
            evs = [e for e in STATE["events"] if q.get("programID") in (None, e["programID"])]
        return self.reply(200, evs)

    def do_POST(self):
        u = urllib.parse.urlparse(self.path)
        if u.path == "/auth/token":
            return self.reply(*self.token())
        if u.path == "/_test/revoke":
            with LOCK:
                STATE["tokens"].clear()
            return self.reply(200, {})
        if u.path == "/_test/events":
            ev = json.loads(self.body())
            with LOCK:
                ev.setdefault("id", str(STATE["next_id"]))
                STATE["next_id"] += 1
                ev["programID"] = PROGRAM["id"]
                ev["objectType"] = "EVENT"
                ev["createdDateTime"] = ev["modificationDateTime"] = iso(clock_now())
                STATE["events"].append(ev)
            return self.reply(201, ev)
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
    ARGS = p.parse_args()
    with open(ARGS.secret_file) as f:
        SECRET = f.readline().strip()
    PROGRAM = {"id": "p1", "objectType": "PROGRAM", "programName": ARGS.program,
               "payloadDescriptors": [{"objectType": "EVENT_PAYLOAD_DESCRIPTOR",
                                       "payloadType": "IMPORT_CAPACITY_LIMIT", "units": "KW"}]}
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Vtn)
    with open(ARGS.port_file + ".tmp", "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.replace(ARGS.port_file + ".tmp", ARGS.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    main()
