#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A daemon that hangs: it serves the status page (PAGE) and answers /healthz, then takes every
other read and never answers, as a stopped or deadlocked pfi serve (or a network that drops
packets) does.  An image appended to the page answers after 13 s, so Chromium's --dump-dom,
taken at the load event, comes after the page's 10 s read timeout.  Writes its port to PORTFILE.
usage: hung_api.py PAGE PORTFILE"""
import http.server
import socketserver
import sys
import time

PAGE = open(sys.argv[1], "rb").read().replace(b"</body>", b'<img src="/slow"></body>')


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, code, body=b"", ctype="application/json"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/":
            self.answer(200, PAGE, "text/html; charset=utf-8")
        elif self.path == "/healthz":
            self.answer(200, b'{"status": "ok", "service": "pfi serve"}')
        elif self.path == "/favicon.ico":
            self.answer(204)
        elif self.path == "/slow":
            time.sleep(13)
            self.answer(204)
        else:
            time.sleep(3600)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


srv = Server(("127.0.0.1", 0), Handler)
with open(sys.argv[2], "w") as f:
    f.write(str(srv.server_address[1]))
srv.serve_forever()
