#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""gen_corrupt.py - deterministic generator of corrupt EROFS images.

Python 3 standard library only (plus the `zstd` and `mkfs.erofs` commands
when available).

  gen_corrupt.py bases --workdir W [--fixtures DIR] [--level L]
      Build the valid base images into W/bases/ and print their paths:
      small images made by Debian's mkfs.erofs from a tiny tree (several
      option sets) and, when DIR holds them, some decompressed fixtures.
  gen_corrupt.py cases --base IMG --outdir D [--seed S] [--count N]
      Write N corrupt variants of IMG into D (NAME.NNN.KIND.img) and a
      D/NAME.cases.tsv line per case: file, kind, description.
  gen_corrupt.py one --base IMG --seed S --count N --index I --out FILE
      Regenerate case I only (to reproduce one failure).
  gen_corrupt.py crafted --workdir W --outdir D
      Hand-made hostile images: duplicate names where a symlink pointing
      out of the extraction target precedes a directory or file.

Kinds: trunc (truncation), sb/inode/xattr/dir/zindex/zdata/chunkidx
(one bit flipped inside that structure), smash (a field overwritten with an
extreme value), rand (a few random bit flips anywhere). When a mutation
lands in block 0 of an image with a superblock checksum, the checksum is
recomputed for most cases so that the corruption reaches the deeper parsers.
"""
import argparse
import os
import random
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import erofs_img  # noqa: E402

# Debian mkfs.erofs (erofs-utils 1.5) option sets for the tiny tree.
TINY_OPTS = [
    ("tiny-lz4", ["-zlz4"]),
    ("tiny-lz4hc-16k", ["-zlz4hc", "-C16384", "-Enosbcrc"]),
    ("tiny-plain", ["-Enosbcrc"]),
    ("tiny-legacy", ["-zlz4", "-Elegacy-compress", "-Enosbcrc"]),
    ("tiny-ztail", ["-zlz4hc", "-C8192", "-Eztailpacking", "-Enosbcrc"]),
    ("tiny-chunked", ["--chunksize=8192", "-Eforce-chunk-indexes", "-Enosbcrc"]),
    ("tiny-blockmap", ["--chunksize=8192", "-Enosbcrc"]),
    ("tiny-extended", ["-zlz4", "-Eforce-inode-extended", "-Enoinline_data"]),
    ("tiny-compact", ["-zlz4hc", "-C65536", "-Eforce-inode-compact", "-Enosbcrc"]),
]

FIXTURES = ["lz4-4k", "zstd-256k", "deflate-16k", "ztailpacking",
            "fragments-dedupe", "chunked", "xattr-filter", "48bit",
            "dir-compressed"]
FIXTURES_QUICK = ["lz4-4k", "ztailpacking", "fragments-dedupe"]

# Share of cases per kind (kinds without a target region are skipped).
WEIGHTS = [("trunc", 14), ("sb", 10), ("inode", 16), ("xattr", 8),
           ("dir", 14), ("zindex", 12), ("zdata", 8), ("chunkidx", 6),
           ("smash", 12), ("rand", 8)]
REGION_OF = {"sb": "super", "inode": "inode", "xattr": "xattr", "dir": "dir",
             "zindex": "zindex", "zdata": "zdata", "chunkidx": "chunkidx"}

INTERESTING = [0, 1, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0xFFFF, 0x7FFFFFFF,
               0x80000000, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF, 0x8000000000000000]


def build_bases(workdir, fixtures, level):
    out = os.path.join(workdir, "bases")
    os.makedirs(out, exist_ok=True)
    paths = []
    if erofs_img.have_mkfs():
        tree = os.path.join(workdir, "tree")
        erofs_img.make_tiny_tree(tree, random.Random(1234))
        for name, opts in TINY_OPTS:
            img = os.path.join(out, name + ".img")
            if os.path.exists(img) or erofs_img.mkfs(img, tree, opts):
                paths.append(img)
            else:
                print("gen_corrupt: mkfs.erofs %s failed, skipped" % " ".join(opts),
                      file=sys.stderr)
        shutil.rmtree(tree, ignore_errors=True)
    if fixtures and os.path.isdir(fixtures) and shutil.which("zstd"):
        names = FIXTURES_QUICK if level == "quick" else FIXTURES
        for name in names:
            src = os.path.join(fixtures, name + ".img.zst")
            img = os.path.join(out, name + ".img")
            if not os.path.exists(src):
                continue
            if not os.path.exists(img):
                r = subprocess.run(["zstd", "-q", "-d", "-f", src, "-o", img])
                if r.returncode:
                    continue
            paths.append(img)
    return paths


def pick_region(rng, regions):
    """A byte offset inside one of the regions (weighted by count)."""
    s, e = rng.choice(regions)
    return rng.randrange(s, max(s + 1, e))


def trunc_points(img, rng):
    """Interesting truncation lengths: superblock, inode area, last block."""
    n = len(img.data)
    bs = img.blksz if img.ok else 4096
    pts = [0, 1, 512, 1023, 1024, 1028, 1036, 1084, 1024 + 127, 1024 + 128,
           bs - 1, bs, bs + 1, n - 1, n - bs, n - bs + 1, n - bs // 2, n // 2]
    if img.ok:
        for ino in img.inodes[:6]:
            pts += [ino.off, ino.off + 16, ino.off + ino.core - 1,
                    ino.off + ino.core + 1]
        for kind in ("dir", "zindex", "zdata", "xattr", "chunkidx"):
            for s, e in img.regions[kind][:3]:
                pts += [s + 1, (s + e) // 2]
    pts = sorted(set(p for p in pts if 0 <= p < n))
    return pts


def plan(img, count, rng):
    """The list of mutations for one base: (kind, params)."""
    kinds = []
    for kind, w in WEIGHTS:
        reg = REGION_OF.get(kind)
        if reg and not (img.ok and img.regions[reg]):
            continue
        kinds += [kind] * w
    tpts = trunc_points(img, rng)
    # Make sure the must-have truncations come first.
    must = [p for p in tpts if p in (1024 + 64, 1024 + 127) or p < 1100]
    rest = [p for p in tpts if p not in must]
    rng.shuffle(rest)
    tqueue = must[:2] + rest + must[2:]
    muts = []
    for i in range(count):
        kind = rng.choice(kinds) if i >= 4 else ["trunc", "sb", "inode", "dir"][i]
        if kind in REGION_OF and not (img.ok and img.regions[REGION_OF[kind]]):
            kind = "rand"
        if kind == "trunc":
            if tqueue:
                muts.append(("trunc", tqueue.pop(0)))
            else:
                muts.append(("trunc", rng.randrange(len(img.data))))
        elif kind in REGION_OF:
            off = pick_region(rng, img.regions[REGION_OF[kind]])
            muts.append((kind, (off, rng.randrange(8))))
        elif kind == "smash":
            regs = []
            for k in ("super", "inode", "dir", "zindex", "xattr", "chunkidx"):
                if img.ok:
                    regs += img.regions[k]
            if not regs:
                regs = [(0, len(img.data))]
            off = pick_region(rng, regs)
            width = rng.choice([1, 2, 2, 4, 4, 8])
            off -= off % width
            val = rng.choice(INTERESTING) & ((1 << (8 * width)) - 1)
            muts.append(("smash", (off, width, val)))
        else:
            nflips = rng.randrange(1, 9)
            flips = [(rng.randrange(len(img.data)), rng.randrange(8))
                     for _ in range(nflips)]
            muts.append(("rand", flips))
    return muts


def apply(img, base, mut, rng):
    """Bytes of the mutated image and a one-line description."""
    kind, p = mut
    data = bytearray(base)
    touched = []
    if kind == "trunc":
        del data[p:]
        return bytes(data), "truncate to %d bytes (of %d)" % (p, len(base))
    if kind == "smash":
        off, width, val = p
        if off + width > len(data):
            width = len(data) - off
        data[off:off + width] = val.to_bytes(8, "little")[:width]
        touched.append(off)
        desc = "smash %d bytes at 0x%x = 0x%x" % (width, off, val)
    elif kind == "rand":
        for off, bit in p:
            data[off] ^= 1 << bit
            touched.append(off)
        desc = "random flips " + ",".join("0x%x:%d" % f for f in p)
    else:
        off, bit = p
        data[off] ^= 1 << bit
        touched.append(off)
        desc = "flip bit %d of byte 0x%x (%s)" % (bit, off, kind)
    bs = img.blksz if img.ok else 4096
    if img.ok and img.compat & 1 and any(t < max(bs, 2048) for t in touched):
        if rng.random() < 0.8:
            erofs_img.fix_sb_checksum(data)
            desc += ", sb checksum fixed"
        else:
            desc += ", sb checksum stale"
    return bytes(data), desc


def gen_cases(base_path, outdir, seed, count, only=None, out_file=None):
    name = os.path.basename(base_path)
    if name.endswith(".img"):
        name = name[:-4]
    with open(base_path, "rb") as f:
        base = f.read()
    img = erofs_img.Image(base)
    rng = random.Random("%s:%s" % (seed, name))
    muts = plan(img, count, rng)
    lines = []
    for i, mut in enumerate(muts):
        # one generator per case: a case does not depend on the others
        crng = random.Random("%s:%s:%d" % (seed, name, i))
        if only is not None and i != only:
            continue
        data, desc = apply(img, base, mut, crng)
        if out_file:
            path = out_file
        else:
            path = os.path.join(outdir, "%s.%03d.%s.img" % (name, i, mut[0]))
        with open(path, "wb") as f:
            f.write(data)
        lines.append("%s\t%s\t%s\n" % (os.path.basename(path), mut[0], desc))
    if not out_file:
        with open(os.path.join(outdir, name + ".cases.tsv"), "w") as f:
            f.writelines(lines)
    return lines


def build_crafted(workdir, outdir):
    """Hand-made hostile images (extract must stay inside its target).

    A directory holding two entries of the same name: first a symlink
    pointing out of the target ("../../../x"), then a directory (or a
    file) whose contents would be written through the link if extract
    followed it. Made from a plain image by renaming one entry in place.
    """
    if not erofs_img.have_mkfs():
        return []
    tree = os.path.join(workdir, "crafted-tree")
    if os.path.exists(tree):
        shutil.rmtree(tree)
    os.makedirs(os.path.join(tree, "aaaa2"))
    with open(os.path.join(tree, "aaaa2", "pwned"), "wb") as f:
        f.write(b"written through a symlink\n")
    os.symlink("../../../x", os.path.join(tree, "aaaa1"))
    os.symlink("../../../y", os.path.join(tree, "bbbb1"))
    with open(os.path.join(tree, "bbbb2"), "wb") as f:
        f.write(b"file written through a symlink\n")
    os.makedirs(os.path.join(tree, "sub"))
    os.symlink("../../../../z", os.path.join(tree, "sub", "cccc1"))
    os.makedirs(os.path.join(tree, "sub", "cccc2"))
    with open(os.path.join(tree, "sub", "cccc2", "pwned"), "wb") as f:
        f.write(b"nested\n")
    erofs_img._fix_times(tree, erofs_img.FIXED_TIME)
    os.makedirs(outdir, exist_ok=True)
    made = []
    for opts in (["-Enosbcrc"], ["-zlz4", "-Enosbcrc"]):
        base = os.path.join(workdir, "crafted.img")
        if os.path.exists(base):
            os.unlink(base)
        if not erofs_img.mkfs(base, tree, opts):
            continue
        data = bytearray(open(base, "rb").read())
        img = erofs_img.Image(bytes(data))
        for old, new in ((b"aaaa2", b"aaaa1"), (b"bbbb2", b"bbbb1"),
                         (b"cccc2", b"cccc1")):
            for s, e in img.regions["dir"]:
                i = data.find(old, s, e)
                if i >= 0:
                    data[i:i + len(old)] = new
        name = "crafted-dupname%s.img" % ("-lz4" if len(opts) > 1 else "")
        path = os.path.join(outdir, name)
        with open(path, "wb") as f:
            f.write(data)
        made.append(path)
    shutil.rmtree(tree, ignore_errors=True)
    return made


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("bases")
    b.add_argument("--workdir", required=True)
    b.add_argument("--fixtures")
    b.add_argument("--level", default="normal")
    c = sub.add_parser("cases")
    c.add_argument("--base", required=True)
    c.add_argument("--outdir", required=True)
    c.add_argument("--seed", default="1")
    c.add_argument("--count", type=int, default=40)
    k = sub.add_parser("crafted")
    k.add_argument("--workdir", required=True)
    k.add_argument("--outdir", required=True)
    o = sub.add_parser("one")
    o.add_argument("--base", required=True)
    o.add_argument("--seed", default="1")
    o.add_argument("--count", type=int, default=40)
    o.add_argument("--index", type=int, required=True)
    o.add_argument("--out", required=True)
    a = ap.parse_args()
    if a.cmd == "bases":
        for p in build_bases(a.workdir, a.fixtures, a.level):
            print(p)
    elif a.cmd == "crafted":
        for p in build_crafted(a.workdir, a.outdir):
            print(p)
    elif a.cmd == "cases":
        os.makedirs(a.outdir, exist_ok=True)
        gen_cases(a.base, a.outdir, a.seed, a.count)
    else:
        for line in gen_cases(a.base, None, a.seed, a.count, a.index, a.out):
            print(line, end="")


if __name__ == "__main__":
    main()
