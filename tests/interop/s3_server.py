#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A minimal S3 GetObject endpoint for the tests, path-style
(http://HOST:PORT/BUCKET/KEY), serving the files of ROOT/BUCKET/KEY with
Range as S3 does (206 with Content-Range, ETag, 416 past the end,
If-None-Match and If-Range).

Every request of bucket "private" must carry a Signature Version 4
Authorization header that botocore (the AWS SDK for Python) computes the
same for the access key and secret given, with x-amz-content-sha256 and
x-amz-date among the signed headers, as S3 requires; otherwise 403 with
S3's error XML. Bucket "public" also serves unsigned requests.

ListObjectsV2 (GET /BUCKET?list-type=2[&prefix=P][&continuation-token=T]
[&max-keys=N]) lists the files under ROOT/BUCKET as keys (their paths,
sorted by their UTF-8 bytes), with Size, LastModified and ETag, at most
max-keys (and at most S3_PAGE from the environment, default 1000) a page,
IsTruncated and NextContinuationToken (an opaque token) for the next.

usage: s3_server.py ROOT PORTFILE ACCESS_KEY SECRET [REGION] [TOKEN]
(the port it listens on, on 127.0.0.1, is written to PORTFILE; each
request is logged to stderr as METHOD PATH STATUS SIGNED)
"""
import base64
import hashlib
import http.server
import os
import re
import sys
import time
import urllib.parse
from xml.sax.saxutils import escape

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

ROOT, PORTFILE, AK, SK = sys.argv[1:5]
REGION = sys.argv[5] if len(sys.argv) > 5 else "us-east-1"
TOKEN = sys.argv[6] if len(sys.argv) > 6 else None

AUTH_RE = re.compile(
    r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/s3/aws4_request,"
    r"\s*SignedHeaders=([^,]+),\s*Signature=([0-9a-f]{64})$")


def verify(handler):
    """None when the request is signed right, else the reason."""
    auth = handler.headers.get("Authorization")
    if not auth:
        return "AccessDenied: no Authorization"
    m = AUTH_RE.match(auth)
    if not m:
        return "AuthorizationHeaderMalformed"
    key, day, region, signed, sig = m.groups()
    if key != AK:
        return "InvalidAccessKeyId"
    if region != REGION:
        return "AuthorizationHeaderMalformed: region %s" % region
    names = signed.split(";")
    for need in ("host", "x-amz-date", "x-amz-content-sha256"):
        if need not in names:
            return "AccessDenied: %s not signed" % need
    if TOKEN is not None and ("x-amz-security-token" not in names or
                              handler.headers.get("x-amz-security-token")
                              != TOKEN):
        return "InvalidToken"
    amzdate = handler.headers.get("x-amz-date", "")
    if not amzdate.startswith(day):
        return "AccessDenied: x-amz-date"
    headers = {n: handler.headers.get(n, "") for n in names}
    url = "http://%s%s" % (handler.headers.get("host"), handler.path)
    req = AWSRequest(method=handler.command, url=url, headers=headers)
    req.context["timestamp"] = amzdate
    signer = S3SigV4Auth(Credentials(AK, SK, TOKEN), "s3", REGION)
    # only the headers the client signed, as the server reads them
    signer.headers_to_sign = lambda r: req.headers
    canonical = signer.canonical_request(req)
    want = signer.signature(signer.string_to_sign(req, canonical), req)
    if want != sig:
        return "SignatureDoesNotMatch"
    return None


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def error(self, status, code):
        body = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s"
                "</Code><Message>%s</Message></Error>" %
                (code.split(":")[0], code)).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self.note(status, code)

    def note(self, status, why=""):
        sys.stderr.write("%s %s %d %s %s\n" % (
            self.command, self.path, status,
            "signed" if self.headers.get("Authorization") else "unsigned",
            why))
        sys.stderr.flush()

    def do_HEAD(self):
        self.do_GET()

    def refused(self, bucket):
        """True after the error answer: no such bucket, or a signature
        missing (bucket "private") or wrong."""
        if bucket not in ("private", "public"):
            self.error(404, "NoSuchBucket")
            return True
        if bucket == "private" or self.headers.get("Authorization"):
            why = verify(self)
            if why:
                self.error(403, why)
                return True
        return False

    def list_objects(self, bucket, query):
        """ListObjectsV2 of ROOT/bucket."""
        q = urllib.parse.parse_qs(query, keep_blank_values=True)
        prefix = q.get("prefix", [""])[0]
        page = min(int(q.get("max-keys", ["1000"])[0]),
                   int(os.environ.get("S3_PAGE", "1000")))
        after = q.get("continuation-token", [None])[0]
        if after is not None:
            try:
                after = base64.urlsafe_b64decode(after.encode()).decode()
            except ValueError:
                return self.error(400, "InvalidArgument: token")
        top = os.path.join(ROOT, bucket)
        keys = []
        for d, _, files in os.walk(top):
            for f in files:
                k = os.path.relpath(os.path.join(d, f), top)
                if k.startswith(prefix) and (after is None or
                                             k.encode() > after.encode()):
                    keys.append(k)
        keys.sort(key=lambda k: k.encode())
        more = len(keys) > page
        keys = keys[:page]
        out = ['<?xml version="1.0" encoding="UTF-8"?>',
               '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/'
               '2006-03-01/">', "<Name>%s</Name>" % bucket,
               "<Prefix>%s</Prefix>" % escape(prefix),
               "<KeyCount>%d</KeyCount>" % len(keys),
               "<MaxKeys>%d</MaxKeys>" % page,
               "<IsTruncated>%s</IsTruncated>" % ("true" if more else "false")]
        for k in keys:
            st = os.stat(os.path.join(top, k))
            out.append("<Contents><Key>%s</Key><LastModified>%s"
                       "</LastModified><ETag>&quot;%s&quot;</ETag><Size>%d"
                       "</Size><StorageClass>STANDARD</StorageClass>"
                       "</Contents>" % (
                           escape(k), time.strftime(
                               "%Y-%m-%dT%H:%M:%S.000Z",
                               time.gmtime(st.st_mtime)),
                           hashlib.md5(k.encode()).hexdigest(), st.st_size))
        if more:
            out.append("<NextContinuationToken>%s</NextContinuationToken>" %
                       base64.urlsafe_b64encode(keys[-1].encode()).decode())
        out.append("</ListBucketResult>")
        body = "\n".join(out).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.note(200, "list %d%s" % (len(keys), " more" if more else ""))

    def do_GET(self):
        split = urllib.parse.urlsplit(self.path)
        path = urllib.parse.unquote(split.path)
        parts = path.lstrip("/").split("/", 1)
        if "list-type=2" in split.query.split("&") and (
                len(parts) == 1 or not parts[1]):
            if self.refused(parts[0]):
                return None
            return self.list_objects(parts[0], split.query)
        if len(parts) != 2 or not parts[1]:
            return self.error(400, "InvalidRequest")
        bucket, key = parts
        if self.refused(bucket):
            return None
        f = os.path.join(ROOT, bucket, key)
        if ".." in key.split("/") or not os.path.isfile(f):
            return self.error(404, "NoSuchKey")
        size = os.path.getsize(f)
        etag = '"%s"' % hashlib.md5(f.encode()).hexdigest()
        if self.headers.get("If-None-Match") == etag:
            self.send_response(304)
            self.send_header("ETag", etag)
            self.end_headers()
            return self.note(304)
        rng = self.headers.get("Range")
        if self.headers.get("If-Range", etag) != etag:
            rng = None
        start, end, status = 0, size - 1, 200
        if rng:
            m = re.match(r"bytes=(\d+)-(\d*)$", rng)
            if not m:
                return self.error(400, "InvalidArgument")
            start = int(m.group(1))
            end = min(int(m.group(2)) if m.group(2) else size - 1, size - 1)
            if start >= size:
                return self.error(416, "InvalidRange")
            status = 206
        self.send_response(status)
        self.send_header("ETag", etag)
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Length", str(end - start + 1))
        if status == 206:
            self.send_header("Content-Range",
                             "bytes %d-%d/%d" % (start, end, size))
        self.end_headers()
        if self.command != "HEAD":
            with open(f, "rb") as fh:
                fh.seek(start)
                self.wfile.write(fh.read(end - start + 1))
        self.note(status)


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(PORTFILE + ".tmp", "w") as pf:
    pf.write(str(srv.server_address[1]))
os.rename(PORTFILE + ".tmp", PORTFILE)
srv.serve_forever()
