#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""gen_seeds.py - make fuzz seeds: valid random images and codec streams.

usage: gen_seeds.py OUTDIR [--seed N] [--images N] [--max-size BYTES]

Writes OUTDIR/<target>/ for the targets super, dir, xattr, zmap, image
(small EROFS images: random trees from tests/corrupt/erofs_img.py through
Debian's mkfs.erofs with random options, plus truncated copies) and codec
(raw compressed streams with the 3-byte header fuzz_codec.c expects).
Deterministic for a given seed and mkfs.erofs version. Python 3 stdlib only
(plus mkfs.erofs and, for zstd streams, the zstd command).
"""
import argparse
import hashlib
import lzma
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "corrupt"))
import erofs_img  # noqa: E402

IMAGE_TARGETS = ["super", "dir", "xattr", "zmap", "image"]


def random_opts(rng):
    opts = []
    comp = rng.choice([None, "lz4", "lz4", "lz4hc", "lz4hc,9"])
    if comp:
        opts.append("-z" + comp)
        if rng.random() < 0.6:
            opts.append("-C%d" % rng.choice([4096, 8192, 16384, 65536]))
        for e in ("legacy-compress", "ztailpacking"):
            if rng.random() < 0.3:
                opts.append("-E" + e)
    elif rng.random() < 0.5:
        opts.append("--chunksize=%d" % rng.choice([4096, 8192, 65536]))
        if rng.random() < 0.5:
            opts.append("-Eforce-chunk-indexes")
    for e in ("force-inode-compact", "force-inode-extended", "noinline_data",
              "nosbcrc"):
        if rng.random() < 0.2:
            opts.append("-E" + e)
    if rng.random() < 0.3:
        opts.append("-x%d" % rng.choice([-1, 0, 1, 2]))
    if rng.random() < 0.2:
        opts.append("--all-root")
    return opts


def put(outdir, target, name, data):
    d = os.path.join(outdir, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def make_images(outdir, rng, count, max_size, tmp):
    made = 0
    tries = 0
    tree = os.path.join(tmp, "tree")
    while made < count and tries < count * 6:
        tries += 1
        if made < 3:
            # the fixed tiny tree (without its big directory)
            erofs_img.make_tiny_tree(tree, random.Random(made), big_dir=False)
            opts = [["-zlz4"], ["-Enosbcrc"], ["-zlz4hc", "-C16384",
                                               "-Eztailpacking"]][made]
        else:
            erofs_img.make_random_tree(tree, rng)
            opts = random_opts(rng)
        img = os.path.join(tmp, "img")
        if os.path.exists(img):
            os.unlink(img)
        if not erofs_img.mkfs(img, tree, opts):
            continue
        data = open(img, "rb").read()
        if len(data) > max_size:
            continue
        tag = "img%02d" % made
        for t in IMAGE_TARGETS:
            put(outdir, t, tag + ".img", data)
        # truncated copies: first block (superblock + root), half
        put(outdir, "super", tag + "-blk0", data[:4096])
        put(outdir, "dir", tag + "-half", data[:len(data) // 2])
        print("seed %s: %d bytes, mkfs.erofs %s" % (tag, len(data), " ".join(opts)))
        made += 1
    shutil.rmtree(tree, ignore_errors=True)
    return made


def codec_header(alg, outlen, partial, diff):
    """fuzz_codec.c: outlen = (base + 1) << shift."""
    shift = 0
    while (outlen >> shift) > 65536 or (outlen & ((1 << shift) - 1)):
        shift += 1
        if shift > 3:
            raise ValueError(outlen)
    base = (outlen >> shift) - 1
    b0 = alg | (4 if partial else 0) | (shift << 3) | (0x20 if diff else 0)
    return bytes([b0, base & 0xFF, base >> 8])


def make_codec_seeds(outdir, rng, tmp):
    texts = [erofs_img._words(rng, n) for n in (1, 100, 4096, 16384, 60000)]
    texts.append(rng.randbytes(3000))
    texts.append(bytes(8192))
    n = 0
    for i, t in enumerate(texts):
        # deflate (raw), full and partial decodes
        c = zlib.compressobj(9, zlib.DEFLATED, -15)
        z = c.compress(t) + c.flush()
        put(outdir, "codec", "deflate-%d" % i, codec_header(2, len(t), False, i & 1) + z)
        if len(t) > 2:
            put(outdir, "codec", "deflate-%d-partial" % i,
                codec_header(2, len(t) // 2, True, 1) + z)
        # MicroLZMA: raw LZMA1, first byte replaced by ~props (lc3 lp0 pb2)
        z = lzma.compress(t, format=lzma.FORMAT_RAW,
                          filters=[{"id": lzma.FILTER_LZMA1, "dict_size": 1 << 16}])
        z = bytes([0xA2]) + z[1:]
        put(outdir, "codec", "lzma-%d" % i, codec_header(1, len(t), False, i & 1) + z)
        # zstd frame through the zstd command when present
        if shutil.which("zstd"):
            r = subprocess.run(["zstd", "-q", "-c", "-19", "--no-check"], input=t,
                               stdout=subprocess.PIPE)
            if r.returncode == 0:
                put(outdir, "codec", "zstd-%d" % i,
                    codec_header(3, len(t), False, i & 1) + r.stdout)
                if len(t) > 2:
                    put(outdir, "codec", "zstd-%d-partial" % i,
                        codec_header(3, len(t) // 2, True, 1) + r.stdout)
        n += 1
    # lz4 block streams taken from mkfs.erofs lz4 images (0padding stripped)
    if erofs_img.have_mkfs():
        tree = os.path.join(tmp, "ctree")
        erofs_img.make_tiny_tree(tree, random.Random(7), big_dir=False)
        for k, opts in enumerate([["-zlz4"], ["-zlz4hc", "-C16384"]]):
            img = os.path.join(tmp, "c%d.img" % k)
            if not erofs_img.mkfs(img, tree, opts):
                continue
            data = open(img, "rb").read()
            im = erofs_img.Image(data)
            for j, (s, e) in enumerate(im.regions["zdata"][:3]):
                blk = data[s:e].lstrip(b"\0")
                if not blk:
                    continue
                put(outdir, "codec", "lz4-%d-%d" % (k, j),
                    codec_header(0, 4096, True, 1) + blk)
                put(outdir, "codec", "lz4-%d-%d-full" % (k, j),
                    codec_header(0, 16384 if k else 4096, False, 0) + blk)
        shutil.rmtree(tree, ignore_errors=True)
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--images", type=int, default=12)
    ap.add_argument("--max-size", type=int, default=100 * 1024)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    with tempfile.TemporaryDirectory() as tmp:
        if erofs_img.have_mkfs():
            make_images(a.outdir, rng, a.images, a.max_size, tmp)
        else:
            print("gen_seeds: mkfs.erofs not found, no image seeds", file=sys.stderr)
        make_codec_seeds(a.outdir, rng, tmp)


if __name__ == "__main__":
    main()
