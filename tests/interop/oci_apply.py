#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Apply OCI image layers to a directory, as the image spec's rules say.

usage: oci_apply.py DEST LAYER...   (tar archives, plain or gzip, lowest first)

For each layer in turn: its whiteouts first, against what the layers
below left in DEST (".wh..wh..opq" empties its directory, ".wh.NAME"
removes NAME), then its other entries extracted over DEST (an entry
replaces what is there, directories merge; xattrs from the pax records). No whiteout is kept. The
independent reference for `ezfs mkfs --oci` (tests/interop/mkfs-oci.sh).
"""
import os, shutil, sys, tarfile

dest, layers = sys.argv[1], sys.argv[2:]
os.makedirs(dest, exist_ok=True)


def remove(p):
    if os.path.isdir(p) and not os.path.islink(p):
        shutil.rmtree(p)
    elif os.path.lexists(p):
        os.unlink(p)


for layer in layers:
    with tarfile.open(layer) as t:
        members = t.getmembers()
        keep = []
        for m in members:
            name = os.path.normpath(m.name.lstrip("/"))
            d, base = os.path.split(name)
            if base == ".wh..wh..opq":
                top = os.path.join(dest, d)
                if os.path.isdir(top):
                    for k in os.listdir(top):
                        remove(os.path.join(top, k))
            elif base.startswith(".wh.."):
                pass  # aufs' own names
            elif base.startswith(".wh."):
                remove(os.path.join(dest, d, base[4:]))
            else:
                keep.append(m)
        for m in keep:
            p = os.path.join(dest, os.path.normpath(m.name.lstrip("/")))
            if os.path.lexists(p) and not (m.isdir() and os.path.isdir(p)):
                remove(p)
        t.extractall(dest, members=keep, numeric_owner=True)
        for m in keep:  # tarfile leaves pax xattrs out
            p = os.path.join(dest, os.path.normpath(m.name.lstrip("/")))
            for k, v in m.pax_headers.items():
                if k.startswith("SCHILY.xattr."):
                    os.setxattr(p, k[13:], v.encode("utf-8", "surrogateescape"),
                                follow_symlinks=False)
