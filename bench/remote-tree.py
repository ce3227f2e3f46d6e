#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""remote-tree.py - a deterministic tree for bench/remote-compare.sh.

usage: remote-tree.py OUTDIR [FILES [BYTES]]   (default 20000 files)

FILES files in directories up to six levels deep (fan-out 4..12), sizes
log-uniform from 100 bytes to 2 MiB scaled to BYTES in all (default 1300 MiB: a 1 GiB image with lz4), plus big.bin
of 64 MiB (BYTES/8 below 512 MiB; the sequential read); contents mixed: text from the
system's licenses (compresses about 2.5x with lz4), random bytes, zeros.
"""
import glob, math, os, random, sys

out = sys.argv[1]
nfiles = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
total = int(sys.argv[3]) if len(sys.argv) > 3 else 1300 << 20
rng = random.Random(17)
corpus = b""
for p in sorted(glob.glob("/usr/share/common-licenses/*")):
    if os.path.isfile(p):
        corpus += open(p, "rb").read()
if len(corpus) < 65536:
    corpus = b"the quick brown fox jumps over the lazy dog\n" * 4000
pool = rng.randbytes(8 << 20)


def content(n):
    o = bytearray()
    while len(o) < n:
        k = rng.random()
        m = rng.randrange(512, 65536)
        if k < 0.35:
            s = rng.randrange(0, len(corpus) - 1)
            o += corpus[s:s + m]
        elif k < 0.92:
            s = rng.randrange(0, len(pool) - m)
            o += pool[s:s + m]
        else:
            o += bytes(m)
    return bytes(o[:n])


# directories: a random tree, depth <= 6
dirs = [""]
frontier = [""]
while len(dirs) < max(1, nfiles // 25):
    d = frontier.pop(0) if frontier else rng.choice(dirs)
    depth = d.count("/") + (1 if d else 0)
    for i in range(rng.randrange(4, 13)):
        if depth >= 6:
            break
        c = (d + "/" if d else "") + "d%02d_%s" % (i, rng.choice(
            ["src", "lib", "share", "data", "doc", "etc", "bin"]))
        dirs.append(c)
        frontier.append(c)
sizes = [math.exp(rng.uniform(math.log(100), math.log(2 << 20)))
         for _ in range(nfiles)]
big = 64 << 20 if total >= 512 << 20 else total // 8
scale = max(0.01, (total - big) / sum(sizes))
os.makedirs(out, exist_ok=True)
for d in dirs:
    os.makedirs(os.path.join(out, d), exist_ok=True)
for i, s in enumerate(sizes):
    d = rng.choice(dirs)
    with open(os.path.join(out, d, "f%05d.%s" % (i, rng.choice(
            ["c", "h", "txt", "bin", "so", "json"]))), "wb") as f:
        f.write(content(max(1, int(s * scale))))
with open(os.path.join(out, "big.bin"), "wb") as f:
    for _ in range(big // (1 << 20)):
        f.write(content(1 << 20))
