#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""manifest-nodata.py MANIFEST_PY ROOT [manifest.py options]

Run the shared manifest.py on ROOT, but without reading the data of
regular files larger than 1 GiB (composefs' 8 PiB files): their "sha256"
is null. Everything else is manifest.py's own output, unchanged.
"""
import builtins, io, json, os, runpy, sys, contextlib

LIMIT = 1 << 30
tool, args = sys.argv[1], sys.argv[2:]
real_open = builtins.open


def guarded(path, mode="r", *a, **k):
    if ("b" in mode and isinstance(path, str) and os.path.isfile(path)
            and not os.path.islink(path) and os.lstat(path).st_size > LIMIT):
        return io.BytesIO(b"")
    return real_open(path, mode, *a, **k)


buf = io.StringIO()
builtins.open = guarded
sys.argv = [tool] + args
with contextlib.redirect_stdout(buf):
    runpy.run_path(tool, run_name="__main__")
builtins.open = real_open
for line in buf.getvalue().splitlines():
    e = json.loads(line)
    if e.get("type") == "f" and e.get("size", 0) > LIMIT:
        e["sha256"] = None
    print(json.dumps(e, sort_keys=True, ensure_ascii=False))
