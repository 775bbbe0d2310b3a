#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A reverse proxy that adds the bearer token, as docs/api.md tells an operator to reach the
status page of a daemon run with read_auth = token.

  auth_proxy.py UPSTREAM TOKEN_FILE PORT_FILE [--page-only]

Listens on 127.0.0.1 (a free port, written to PORT_FILE once it listens) and forwards every GET
to UPSTREAM (http://127.0.0.1:PORT) with "Authorization: Bearer <first line of TOKEN_FILE>";
--page-only adds it to GET / alone, as a proxy set up for the page but not for the API would.
The answer goes back as it came: status, Content-Type and body."""
import os
import sys
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

upstream, token_file, port_file = sys.argv[1:4]
page_only = "--page-only" in sys.argv[4:]
with open(token_file) as f:
    token = f.readline().strip()


class Proxy(BaseHTTPRequestHandler):
    def do_GET(self):
        req = urllib.request.Request(upstream + self.path)
        if not page_only or self.path == "/":
            req.add_header("Authorization", "Bearer " + token)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                status, ctype, body = r.status, r.headers.get("Content-Type"), r.read()
        except urllib.error.HTTPError as e:
            status, ctype, body = e.code, e.headers.get("Content-Type"), e.read()
        self.send_response(status)
        if ctype:
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, fmt, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
# Renamed into place so that a reader never sees a half-written port.
os.rename(port_file + ".tmp", port_file)
server.serve_forever()
