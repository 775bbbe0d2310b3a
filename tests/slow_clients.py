#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Slow clients against pfi serve while a controller sends heartbeats.

  slow_clients.py --api HOST:PORT --control unix:PATH|HOST:PORT --token-file F
                  [--conns 1100] [--source 127.0.0.1] [--drip 10] [--seconds 60]
                  [--heartbeat 0.5] [--other 127.0.0.2] [--probe PATH] [--stop-file F]

Opens --conns TCP connections to --api from --source, each sending a request line and then one
more byte of an unfinished header every --drip seconds (a connection the daemon closes is
opened again at once), so the attacker holds every connection it is allowed to.  Meanwhile
POST /v1/heartbeat goes to --control every --heartbeat seconds (a fresh connection each time,
as the cluster controller does), and GET /healthz to --api from --other (another client
address) once a second.  Prints one JSON object: heartbeats sent/answered, their latency
p50/p99/max and the longest gap between two, the ordinary client's answers, how many
connections the attacker held, and the watchdog's trips and safe mode read from /metrics on
--control right after the last heartbeat.
With --probe PATH the requests to --control are GET PATH instead of heartbeats (a node under a
real cluster controller, whose heartbeats alone must keep its watchdog quiet); the figures keep
their names.  --stop-file: end early once the file exists (the caller's test is over).
Exit status 0 always; the caller judges the figures.
"""
import argparse
import errno
import http.client
import json
import os
import selectors
import socket
import time


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.unix_path)
        self.sock = s


def conn_to(addr, timeout, source=None):
    if addr.startswith("unix:"):
        return UnixHTTPConnection(addr[5:], timeout)
    host, port = addr.rsplit(":", 1)
    return http.client.HTTPConnection(host, int(port), timeout=timeout,
                                      source_address=(source, 0) if source else None)


def request(addr, method, path, body, token, timeout, source=None):
    """(status or None, seconds)."""
    t0 = time.monotonic()
    try:
        c = conn_to(addr, timeout, source)
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = "Bearer " + token
        c.request(method, path, body=body, headers=headers)
        r = c.getresponse()
        r.read()
        c.close()
        return r.status, time.monotonic() - t0
    except (OSError, http.client.HTTPException):
        return None, time.monotonic() - t0


HELD_S = 5.0


class Attacker:
    def __init__(self, addr, n, source, drip):
        host, port = addr.rsplit(":", 1)
        self.target = (host, int(port))
        self.n, self.source, self.drip = n, source, drip
        self.sel = selectors.DefaultSelector()
        self.socks = {}  # socket -> next drip time
        self.opened = self.closed = self.failed = 0
        self.max_held = 0
        self.budget, self.last = 0.0, time.monotonic()

    def open_one(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.bind((self.source, 0))
            s.connect_ex(self.target)
        except OSError:
            s.close()
            self.failed += 1
            return
        self.socks[s] = ("connecting", 0.0, time.monotonic())
        self.sel.register(s, selectors.EVENT_WRITE | selectors.EVENT_READ)
        self.opened += 1

    def drop(self, s):
        try:
            self.sel.unregister(s)
        except (KeyError, ValueError):
            pass
        s.close()
        self.socks.pop(s, None)
        self.closed += 1

    def held(self):
        """Connections the daemon has kept open for at least HELD_S seconds.  A connection the
        kernel completed but the daemon has not accepted yet (its listen queue) looks the same
        from here; on a loaded machine the daemon may take a second or more to accept and close
        those over the per-address limit, so a shorter wait would count them as held."""
        now = time.monotonic()
        return sum(1 for st, _, t in self.socks.values() if st == "held" and now - t >= HELD_S)

    def step(self, timeout):
        now = time.monotonic()
        # New connections at up to 1000 a second (a closed one is replaced at once).
        self.budget = min(200.0, self.budget + 1000.0 * (now - self.last))
        self.last = now
        while self.budget >= 1 and len(self.socks) < self.n:
            self.budget -= 1
            before = len(self.socks)
            self.open_one()
            if len(self.socks) == before:
                break
        for key, ev in self.sel.select(timeout):
            s = key.fileobj
            state = self.socks.get(s)
            if state is None:
                continue
            if state[0] == "connecting" and ev & selectors.EVENT_WRITE:
                err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if err:
                    self.drop(s)
                    continue
                try:
                    s.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: a")
                except OSError:
                    self.drop(s)
                    continue
                self.sel.modify(s, selectors.EVENT_READ)
                self.socks[s] = ("held", time.monotonic() + self.drip, state[2])
            elif ev & selectors.EVENT_READ:
                try:
                    data = s.recv(4096)
                except OSError:
                    data = b""
                if not data:
                    self.drop(s)  # closed by the daemon: open another at once
        now = time.monotonic()
        for s, (st, due, t0) in list(self.socks.items()):
            if st == "held" and now >= due:
                try:
                    s.send(b"a")
                    self.socks[s] = ("held", now + self.drip, t0)
                except OSError as e:
                    if e.errno not in (errno.EAGAIN, errno.EWOULDBLOCK):
                        self.drop(s)
        self.max_held = max(self.max_held, self.held())


def node_state(addr, token):
    """(watchdog trips, 1 when in safe mode) from /metrics, None when unreadable."""
    try:
        c = conn_to(addr, 5.0)
        c.request("GET", "/metrics", headers={"Authorization": "Bearer " + token})
        text = c.getresponse().read().decode()
        c.close()
    except (OSError, http.client.HTTPException):
        return None, None
    trips = safe = None
    for line in text.splitlines():
        if line.startswith("pfi_watchdog_trips_total "):
            trips = int(float(line.split()[1]))
        elif line.startswith('pfi_node_mode{mode="safe"} '):
            safe = int(float(line.split()[1]))
    return trips, safe


def pct(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, int(round(p / 100.0 * len(xs) + 0.5)) - 1))
    return xs[k]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--api", required=True)
    ap.add_argument("--control", required=True)
    ap.add_argument("--token-file", required=True)
    ap.add_argument("--conns", type=int, default=1100)
    ap.add_argument("--source", default="127.0.0.1")
    ap.add_argument("--other", default="127.0.0.2")
    ap.add_argument("--drip", type=float, default=10.0)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--heartbeat", type=float, default=0.5)
    ap.add_argument("--warmup", type=float, default=3.0)
    ap.add_argument("--probe", default=None)
    ap.add_argument("--stop-file", default=None)
    a = ap.parse_args()
    token = open(a.token_file).read().strip()
    att = Attacker(a.api, a.conns, a.source, a.drip)
    # The attack ramps up for --warmup seconds, heartbeats going out (and counted) from the
    # start: the watchdog is armed all along.
    lat, hb_fail, other_ok, other_fail = [], 0, 0, 0
    last_hb, max_gap = None, 0.0
    t_start = time.monotonic()
    next_hb = next_other = t_start
    t_end = t_start + a.warmup + a.seconds
    while time.monotonic() < t_end:
        if a.stop_file and os.path.exists(a.stop_file):
            break
        att.step(0.02)
        now = time.monotonic()
        if now >= next_hb:
            next_hb = now + a.heartbeat
            if last_hb is not None:
                max_gap = max(max_gap, now - last_hb)
            last_hb = now
            if a.probe:
                st, dt = request(a.control, "GET", a.probe, None, token, 5.0)
            else:
                st, dt = request(a.control, "POST", "/v1/heartbeat",
                                 json.dumps({"controller": "slow-client-test"}), token, 5.0)
            if st == 200:
                lat.append(dt)
            else:
                hb_fail += 1
        if now >= next_other and now >= t_start + a.warmup:
            next_other = now + 1.0
            st, _ = request(a.api, "GET", "/healthz", None, None, 5.0, a.other)
            if st == 200:
                other_ok += 1
            else:
                other_fail += 1
    # Read before the watchdog could see the heartbeats stop (well inside its timeout).
    trips, safe = node_state(a.control, token)
    out = {
        "watchdog_trips": trips,
        "safe_mode": safe,
        "conns": a.conns,
        "seconds": round(time.monotonic() - t_start, 1),
        "heartbeats_sent": len(lat) + hb_fail,
        "heartbeats_answered": len(lat),
        "heartbeats_failed": hb_fail,
        "heartbeat_p50_ms": round(1000 * pct(lat, 50), 2) if lat else None,
        "heartbeat_p99_ms": round(1000 * pct(lat, 99), 2) if lat else None,
        "heartbeat_max_ms": round(1000 * max(lat), 2) if lat else None,
        "heartbeat_max_gap_s": round(max_gap, 2),
        "other_client_ok": other_ok,
        "other_client_failed": other_fail,
        "attacker_held_max": att.max_held,
        "attacker_held_end": att.held(),
        "attacker_connects": att.opened,
        "attacker_closed_by_daemon": att.closed,
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
