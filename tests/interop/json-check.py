#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Validate ezfs --json outputs against docs/schemas and compare them with
a fixture's manifest (tests/interop/json.sh).

usage: json-check.py validate SCHEMA FILE
       json-check.py fixture SCHEMADIR DIR MANIFEST MIN_KERNEL [DIR MANIFEST MIN_KERNEL]...

validate: FILE holds one document that SCHEMA accepts. fixture: DIR holds
info.json, ls.json, fsck.json, accel.json and stat-*.json of one fixture;
each is validated, then compared with MANIFEST (the kernel's view of the
image); several fixtures in one run (python3-jsonschema takes about a
second to import). Prints one "ok:" or "FAIL:" line per check; exits 1 on
a failure.

python3-jsonschema validates when it is installed; without it, a validator
of the subset the schemas use (type, properties, required,
additionalProperties, items, maxItems, enum, pattern, minimum, maximum,
$ref to $defs) does.
"""
import json
import os
import re
import sys

try:
    import jsonschema
except ImportError:
    jsonschema = None

TYPES = {
    "object": dict, "array": list, "string": str, "boolean": bool,
    "null": type(None),
}


def is_type(v, t):
    if t == "integer":
        return isinstance(v, int) and not isinstance(v, bool)
    if t == "number":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    return isinstance(v, TYPES[t])


def subset_errors(schema, v, root, where="$"):
    """The errors of v against schema (the subset), as strings."""
    if "$ref" in schema:
        ref = schema["$ref"]
        if not ref.startswith("#/$defs/"):
            return [f"{where}: unsupported $ref {ref}"]
        return subset_errors(root["$defs"][ref[8:]], v, root, where)
    errs = []
    t = schema.get("type")
    if t is not None:
        ts = t if isinstance(t, list) else [t]
        if not any(is_type(v, x) for x in ts):
            return [f"{where}: {v!r:.60} is not of type {t}"]
    if "enum" in schema and v not in schema["enum"]:
        errs.append(f"{where}: {v!r:.60} is not one of {schema['enum']}")
    if isinstance(v, str) and "pattern" in schema and \
            not re.search(schema["pattern"], v):
        errs.append(f"{where}: {v!r:.60} does not match {schema['pattern']}")
    if is_type(v, "number"):
        if "minimum" in schema and v < schema["minimum"]:
            errs.append(f"{where}: {v} < {schema['minimum']}")
        if "maximum" in schema and v > schema["maximum"]:
            errs.append(f"{where}: {v} > {schema['maximum']}")
    if isinstance(v, dict):
        props = schema.get("properties", {})
        for k in schema.get("required", []):
            if k not in v:
                errs.append(f"{where}: '{k}' is required")
        for k, x in v.items():
            if k in props:
                errs += subset_errors(props[k], x, root, f"{where}.{k}")
            elif schema.get("additionalProperties") is False:
                errs.append(f"{where}: '{k}' is not in the schema")
    if isinstance(v, list):
        if "maxItems" in schema and len(v) > schema["maxItems"]:
            errs.append(f"{where}: more than {schema['maxItems']} items")
        if "items" in schema:
            for i, x in enumerate(v):
                errs += subset_errors(schema["items"], x, root,
                                      f"{where}[{i}]")
    return errs


VALIDATORS = {}


def schema_errors(schema, doc):
    if jsonschema is not None:
        key = json.dumps(schema, sort_keys=True)
        v = VALIDATORS.get(key)
        if v is None:
            v = VALIDATORS[key] = jsonschema.Draft202012Validator(schema)
        return [f"{'/'.join(map(str, e.absolute_path)) or '$'}: {e.message}"
                for e in v.iter_errors(doc)]
    return subset_errors(schema, doc, schema)


FAILS = 0


def ok(what):
    print(f"ok: {what}")


def fail(what):
    global FAILS
    FAILS += 1
    print(f"FAIL: {what}")


def check(cond, what, why=""):
    if cond:
        ok(what)
    else:
        fail(f"{what}{': ' + why if why else ''}")


def load_valid(schemadir, name, path, label):
    """Parse path and validate it against schemadir/name.json."""
    with open(os.path.join(schemadir, name + ".json")) as f:
        schema = json.load(f)
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (ValueError, UnicodeDecodeError) as e:
        fail(f"{label}: not JSON: {e}")
        return None
    errs = schema_errors(schema, doc)
    check(not errs, f"{label}: valid against {name}.json",
          "; ".join(errs[:3]))
    return doc


def raw(obj, key):
    """The bytes of a string member, from its _hex twin when there is one."""
    if key + "_hex" in obj:
        return bytes.fromhex(obj[key + "_hex"])
    return obj[key].encode("utf-8")


MTYPE = {"f": "file", "d": "dir", "l": "symlink", "c": "chardev",
         "b": "blockdev", "p": "fifo", "s": "socket"}


def fixture(schemadir, d, manifest, min_kernel):
    name = os.path.basename(d.rstrip("/"))
    man = {}
    with open(manifest) as f:
        for line in f:
            e = json.loads(line)
            man[e["path"]] = e
    info = load_valid(schemadir, "info", f"{d}/info.json", f"{name}: info")
    ls = load_valid(schemadir, "ls", f"{d}/ls.json", f"{name}: ls -R")
    fsck = load_valid(schemadir, "fsck", f"{d}/fsck.json", f"{name}: fsck")
    acc = load_valid(schemadir, "accel-stats", f"{d}/accel.json",
                     f"{name}: accel stats")
    stats = {}
    for fn in sorted(os.listdir(d)):
        if fn.startswith("stat-"):
            s = load_valid(schemadir, "stat", f"{d}/{fn}", f"{name}: {fn}")
            if s:
                stats[raw(s, "path").decode("utf-8", "surrogateescape")] = s
    if not (info and ls and fsck and acc):
        return
    check(info["min_kernel"]["version"] + " (" + info["min_kernel"]["feature"]
          + ")" == min_kernel, f"{name}: info --json min_kernel {min_kernel}",
          f"{info['min_kernel']}")
    # the superblock's count holds the packed and metabox inodes too
    extra = (info["packed_nid"] is not None) + \
        (info["metabox_nid"] is not None)
    check(info["inodes"] == fsck["inodes"] + extra,
          f"{name}: info inodes = fsck inodes ({fsck['inodes']}) + "
          f"{extra} (packed, metabox)", f"info {info['inodes']}")
    check(sum(info["stats"]["types"].values()) == fsck["inodes"],
          f"{name}: info -S inodes by type add up to fsck's",
          f"{info['stats']['types']}")
    check(info["files"] == fsck["files"] and
          info["stats"]["types"]["directory"] == fsck["dirs"],
          f"{name}: info files/dirs = fsck's")
    check(fsck["clean"] and fsck["problems"] == [] and fsck["error"] is None,
          f"{name}: fsck --json clean")
    # ls -R against the manifest: the same paths, types, modes, owners,
    # sizes, mtimes, targets and devices
    got = {}
    for e in ls["entries"]:
        p = raw(e, "path").decode("utf-8", "surrogateescape")
        got[p[1:] if p.startswith("/") else p] = e
    want = {p: e for p, e in man.items() if p != "."}
    check(set(got) == set(want), f"{name}: ls -R paths = manifest paths",
          f"{len(set(got) ^ set(want))} differ, e.g. "
          f"{sorted(set(got) ^ set(want))[:3]}")
    bad = []
    for p in sorted(set(got) & set(want)):
        g, w = got[p], want[p]
        if g["type"] != MTYPE[w["type"]] or g["mode"] != int(w["mode"], 8) \
                or g["uid"] != w["uid"] or g["gid"] != w["gid"]:
            bad.append(f"{p}: type/mode/owner")
        elif w["type"] == "f" and g["size"] != w["size"]:
            bad.append(f"{p}: size {g['size']} != {w['size']}")
        elif g["mtime"] * 10**9 + g["mtime_nsec"] != w["mtime_ns"]:
            bad.append(f"{p}: mtime")
        elif w["type"] == "l" and raw(g, "target").decode(
                "utf-8", "surrogateescape") != w["target"]:
            bad.append(f"{p}: target")
        elif w["type"] in "cb" and \
                f"{g['rdev_major']}:{g['rdev_minor']}" != w["rdev"]:
            bad.append(f"{p}: rdev")
    check(not bad, f"{name}: ls -R sizes, modes, owners, mtimes, targets = "
          f"manifest ({len(got)} entries)", "; ".join(bad[:3]))
    # stat: xattrs (the manifest holds them in hex) and the fields ls has
    bad = []
    for p, s in stats.items():
        rel = p[1:]
        w = man.get(rel or ".")
        if w is None:
            bad.append(f"{p}: not in the manifest")
            continue
        xs = {raw(x, "name").decode(): raw(x, "value").hex()
              for x in s["xattrs"]}
        if xs != w.get("xattrs", {}):
            bad.append(f"{p}: xattrs {sorted(xs)} != "
                       f"{sorted(w.get('xattrs', {}))}")
        if rel and {k: s[k] for k in ("nid", "size", "mode")} != \
                {k: got[rel][k] for k in ("nid", "size", "mode")}:
            bad.append(f"{p}: stat and ls disagree")
        if "extents" in s:
            n = sum(x["length"] for x in s["extents"])
            if n != s["size"] or len(s["extents"]) != s["data"]["extents"]:
                bad.append(f"{p}: extents cover {n} of {s['size']} bytes")
    check(not bad, f"{name}: stat --json of {len(stats)} paths = manifest "
          "(xattrs) and ls", "; ".join(bad[:3]))
    # accel stats read every regular file once per path
    total = sum(e["size"] for e in man.values() if e["type"] == "f")
    check(acc["bytes"] == total, f"{name}: accel stats bytes = manifest "
          f"file bytes ({total})", str(acc["bytes"]))


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "validate":
        schema_path, path = sys.argv[2], sys.argv[3]
        load_valid(os.path.dirname(schema_path),
                   os.path.basename(schema_path)[:-5], path,
                   os.path.basename(path))
    elif (len(sys.argv) >= 6 and sys.argv[1] == "fixture"
          and (len(sys.argv) - 3) % 3 == 0):
        for i in range(3, len(sys.argv), 3):
            fixture(sys.argv[2], *sys.argv[i:i + 3])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
