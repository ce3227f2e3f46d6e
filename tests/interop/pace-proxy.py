#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A link of the tests' own between ezfs and a server on 127.0.0.1.

usage: pace-proxy.py UPSTREAM_PORT PORTFILE LOG

Every request is forwarded to 127.0.0.1:UPSTREAM_PORT after $DELAY_MS ms
(default 20: a round trip), and the bodies of all answers, on every
connection together, are paced to $RATE bytes per second (default 50 MiB;
0: unpaced), as one shared link. Each request is logged when its answer
ends, one line: METHOD PATH RANGE STATUS BODY_BYTES START_MS END_MS (RANGE
"-" when none; the times in ms since the proxy started, when the request
came and when its answer ended).
The port it listens on (127.0.0.1) is written to PORTFILE.
"""
import http.client
import http.server
import os
import socketserver
import sys
import threading
import time

upstream, portfile, logpath = int(sys.argv[1]), sys.argv[2], sys.argv[3]
DELAY = int(os.environ.get("DELAY_MS", "20")) / 1000.0
RATE = int(os.environ.get("RATE", str(50 << 20)))
CHUNK = 64 << 10
BORN = time.monotonic()
lock = threading.Lock()
link = {"next": 0.0}
HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection",
       "te", "trailer", "upgrade"}


def pace(n):
    """Wait for n bytes' turn on the shared link."""
    if not RATE:
        return
    with lock:
        now = time.monotonic()
        start = max(now, link["next"])
        link["next"] = start + n / RATE
    wait = start + n / RATE - now
    if wait > 0:
        time.sleep(wait)


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, *a):
        pass

    def forward(self):
        t0 = time.monotonic()
        time.sleep(DELAY)
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else None
        hdrs = {k: v for k, v in self.headers.items()
                if k.lower() not in HOP}
        c = http.client.HTTPConnection("127.0.0.1", upstream, timeout=60)
        c.request(self.command, self.path, body=body, headers=hdrs)
        r = c.getresponse()
        self.send_response_only(r.status, r.reason)
        length = r.getheader("Content-Length")
        for k, v in r.getheaders():
            if k.lower() not in HOP:
                self.send_header(k, v)
        if length is None and self.command != "HEAD":
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        sent = 0
        if self.command != "HEAD":
            while True:
                b = r.read(CHUNK)
                if not b:
                    break
                pace(len(b))
                try:
                    self.wfile.write(b)
                except OSError:
                    break
                sent += len(b)
        c.close()
        with lock:
            with open(logpath, "a") as f:
                f.write("%s %s %s %d %d %d %d\n" % (
                    self.command, self.path,
                    (self.headers.get("Range") or "-").replace(" ", ""),
                    r.status, sent, (t0 - BORN) * 1000,
                    (time.monotonic() - BORN) * 1000))

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = forward


class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    request_queue_size = 128


srv = S(("127.0.0.1", 0), H)
tmp = portfile + ".tmp"
with open(tmp, "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(tmp, portfile)
srv.serve_forever()
