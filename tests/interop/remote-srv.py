#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Hostile HTTP servers for tests/interop/remote.sh.

usage: remote-srv.py MODE PORTFILE DIR [LOG]
  stall    accept connections and never answer
  503      answer every request with 503
  flaky    serve DIR with Range, but the first request for each range
           gets 503
  norange  serve DIR ignoring Range (200, whole body)
  lie      serve DIR with Range, but each 206 holds the range one byte
           later than asked (and says so in Content-Range)
  delay    serve DIR with Range and an ETag (304 to its If-None-Match),
           each answer after $DELAY_MS ms (a round trip's profile for
           bench/remote-compare.sh)
  bearer   a registry of one image, DIR/IMAGE (the file name in $IMAGE),
           as oci://HOST:PORT/test:tag: manifest and blob (with Range) need
           "Authorization: Bearer tN" for a token N this server gave out at
           /token (its Bearer challenge says so); each token is good for
           $USES requests (default 3), then 401 again
  token    a token server: GET /token?... answers {"token": "tN",
           "expires_in": 60} (N counts the tokens given)
  stallon  serve DIR with Range until the file $STALL_FLAG exists, then
           accept requests and never answer them
  upload   the upload side of a registry, slowly: HEAD of a blob 404, POST
           .../blobs/uploads/ 202 with a session, its PUT read at about
           1 MiB/s (then 201), DELETE of the session 204; each logged
The port it listens on (127.0.0.1, $PORT or chosen by the kernel) is written to
PORTFILE; each request's line is appended to LOG.
"""
import hashlib
import http.server
import json
import os
import re
import socket
import sys
import threading
import time

mode, portfile, root = sys.argv[1], sys.argv[2], sys.argv[3]
logpath = sys.argv[4] if len(sys.argv) > 4 else os.devnull
count = 0
seen = set()
lock = threading.Lock()


def log(line):
    with open(logpath, "a") as f:
        f.write(line + "\n")


def publish(port):
    tmp = portfile + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(port))
    os.rename(tmp, portfile)


if mode == "stall":
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    publish(s.getsockname()[1])
    held = []
    while True:
        c, _ = s.accept()
        log("accepted")
        held.append(c)


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # headers and body go in two writes: without this, Nagle holds a
    # small body until the client's delayed ACK (40 ms a request)
    disable_nagle_algorithm = True

    def log_message(self, *a):
        pass

    def do_GET(self):
        global count
        key = (self.path, self.headers.get("Range", "-"))
        with lock:
            count += 1
            n = count
            first = key not in seen
            seen.add(key)
        log("%d %s %s" % (n, key[0], key[1]))
        if mode == "bearer" and self.bearer(n):
            return
        if mode == "stallon" and os.path.exists(os.environ["STALL_FLAG"]):
            log("stalled %s" % self.path)
            time.sleep(3600)
            return
        if mode == "delay":
            time.sleep(int(os.environ.get("DELAY_MS", "0")) / 1000.0)
        if mode == "token":
            body = ('{"token": "t%d", "expires_in": 60}' % n).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if mode == "503" or (mode == "flaky" and first):
            body = b"busy\n"
            self.send_response(503)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        path = os.path.join(root, self.path.lstrip("/"))
        if mode == "bearer":
            path = os.path.join(root, os.environ["IMAGE"])
        try:
            f = open(path, "rb")
            size = os.fstat(f.fileno()).st_size
        except OSError:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        # delay: validators, as nginx sends them (a warm cache's 304)
        st = os.fstat(f.fileno())
        tag = '"%x-%x"' % (int(st.st_mtime), size) if mode == "delay" else ""
        if tag and self.headers.get("If-None-Match") == tag:
            f.close()
            self.send_response(304)
            self.send_header("ETag", tag)
            self.end_headers()
            return
        m = re.match(r"bytes=(\d+)-(\d+)$", self.headers.get("Range", ""))
        if tag and self.headers.get("If-Range", tag) != tag:
            m = None
        if mode == "norange" or not m:
            self.send_response(200)
            if tag:
                self.send_header("ETag", tag)
            self.send_header("Content-Length", str(size))
            self.end_headers()
            self.send_file(f, 0, size)
            return
        a, b = int(m.group(1)), min(int(m.group(2)), size - 1)
        if a >= size:
            f.close()
            self.send_response(416)
            self.send_header("Content-Range", "bytes */%d" % size)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if mode == "lie" and b + 1 < size:
            a, b = a + 1, b + 1  # honest about it, but not what was asked
        self.send_response(206)
        if tag:
            self.send_header("ETag", tag)
        self.send_header("Content-Range", "bytes %d-%d/%d" % (a, b, size))
        self.send_header("Content-Length", str(b + 1 - a))
        self.end_headers()
        self.send_file(f, a, b + 1 - a)

    def answer(self, code, headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_HEAD(self):
        log("HEAD %s" % self.path)
        self.answer(404)

    def do_POST(self):
        log("POST %s" % self.path)
        self.answer(202, [("Location", "/v2/test/blobs/uploads/u1"),
                          ("Docker-Upload-UUID", "u1")])

    def do_PUT(self):
        left = int(self.headers.get("Content-Length", "0"))
        log("PUT %s %d" % (self.path, left))
        got = 0
        while got < left:
            chunk = self.rfile.read(min(65536, left - got))
            if not chunk:
                log("PUT cut after %d" % got)
                return
            got += len(chunk)
            time.sleep(0.06)
        log("PUT done %d" % got)
        self.answer(201, [("Location", self.path)])

    def do_DELETE(self):
        log("DELETE %s" % self.path)
        self.answer(204)

    def send_file(self, f, pos, left):
        # straight from the file, only what is asked: images may be large
        self.wfile.flush()
        try:
            while left > 0:
                n = os.sendfile(self.connection.fileno(), f.fileno(), pos,
                                left)
                if n <= 0:
                    break
                pos, left = pos + n, left - n
        finally:
            f.close()


tokens = {}


def bearer(self, n):
    """The registry's own answers; False: serve the blob's bytes."""
    host = "127.0.0.1:%d" % self.server.server_address[1]
    if self.path.startswith("/token"):
        with lock:
            t = "t%d" % n
            tokens[t] = int(os.environ.get("USES", "3"))
        log("token %s" % t)
        body = json.dumps({"token": t, "expires_in": 300}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        return True
    auth = self.headers.get("Authorization", "")
    t = auth[7:] if auth.startswith("Bearer ") else ""
    with lock:
        ok = tokens.get(t, 0) > 0
        if ok:
            tokens[t] -= 1
    if not ok:
        log("401 %s" % (t or "-"))
        self.send_response(401)
        self.send_header("WWW-Authenticate",
                         'Bearer realm="http://%s/token",service="test",'
                         'scope="repository:test:pull"' % host)
        self.send_header("Content-Length", "0")
        self.end_headers()
        return True
    data = open(os.path.join(root, os.environ["IMAGE"]), "rb").read()
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    if self.path == "/v2/test/manifests/tag":
        body = json.dumps({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.empty.v1+json",
                       "digest": "sha256:44136fa355b3678a1146ad16f7e8649e"
                                 "94fb4fc21fe77e8310c060f61caaff8a",
                       "size": 2},
            "layers": [{"mediaType": "application/vnd.erofs.layer.v1",
                        "digest": digest, "size": len(data)}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type",
                         "application/vnd.oci.image.manifest.v1+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        return True
    if self.path != "/v2/test/blobs/" + digest:
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()
        return True
    return False


H.bearer = bearer
# a listen backlog for many connections at once (the default 5 drops
# SYNs: a 1 s stall per retransmission)
http.server.ThreadingHTTPServer.request_queue_size = 128
srv = http.server.ThreadingHTTPServer(
    ("127.0.0.1", int(os.environ.get("PORT", "0"))), H)
publish(srv.server_address[1])
srv.serve_forever()
