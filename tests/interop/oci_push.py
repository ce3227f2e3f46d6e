#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Push an OCI image of tar layers to a registry (plain HTTP, no auth).

usage: oci_push.py HOST:PORT REPO TAG LAYER...

Each LAYER is a file pushed as it is (the lowest first); a name ending in
.gz is an application/vnd.oci.image.layer.v1.tar+gzip layer, else a plain
application/vnd.oci.image.layer.v1.tar one. The config names linux and the
host's architecture. Prints each layer's digest, one a line.
"""
import gzip, hashlib, json, platform, sys, urllib.request

host, repo, tag, layers = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
base = "http://%s/v2/%s" % (host, repo)


def req(method, url, data=None, ctype=None):
    r = urllib.request.Request(url, data=data, method=method)
    if ctype:
        r.add_header("Content-Type", ctype)
    return urllib.request.urlopen(r)


def push_blob(data):
    d = "sha256:" + hashlib.sha256(data).hexdigest()
    loc = req("POST", base + "/blobs/uploads/").headers["Location"]
    if loc.startswith("/"):
        loc = "http://" + host + loc
    sep = "&" if "?" in loc else "?"
    req("PUT", loc + sep + "digest=" + d, data, "application/octet-stream")
    return d, len(data)


descs, diff_ids = [], []
for path in layers:
    with open(path, "rb") as f:
        data = f.read()
    d, n = push_blob(data)
    gz = path.endswith(".gz")
    raw = gzip.decompress(data) if gz else data
    diff_ids.append("sha256:" + hashlib.sha256(raw).hexdigest())
    descs.append({"mediaType": "application/vnd.oci.image.layer.v1.tar" +
                  ("+gzip" if gz else ""), "digest": d, "size": n})
    print(d)
arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(),
                                                   platform.machine())
config = json.dumps({"architecture": arch, "os": "linux",
                     "rootfs": {"type": "layers", "diff_ids": diff_ids}}).encode()
cd, cn = push_blob(config)
manifest = {"schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                       "digest": cd, "size": cn},
            "layers": descs}
req("PUT", base + "/manifests/" + tag, json.dumps(manifest).encode(),
    "application/vnd.oci.image.manifest.v1+json")
