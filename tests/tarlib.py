# SPDX-License-Identifier: MIT
"""What the tests' deterministic tar builders share: one tar entry with
fixed owners, names and times (import with tests/ on sys.path)."""
import tarfile


def entry(name, t0, kind=tarfile.REGTYPE, mode=0o644, size=0, **kw):
    """A TarInfo owned by 0:0 without user or group names, mtime t0;
    any other TarInfo attribute as a keyword (uid=, linkname=, ...)."""
    t = tarfile.TarInfo(name)
    t.type, t.mode, t.size, t.mtime = kind, mode, size, t0
    t.uid = t.gid = 0
    t.uname = t.gname = ""
    for k, v in kw.items():
        setattr(t, k, v)
    return t
