#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Android containers for the tests, written from the format:

  android-img.py sparse RAW OUT [--crc]
      an Android sparse image of RAW: zero blocks as DONT_CARE, blocks of one
      repeated 4-byte value as FILL, the rest as RAW (img2simg writes zeros
      as FILL); --crc adds a CRC32 chunk at the end
  android-img.py super OUT [--minor N] [--slots N] [--split NAME]
                 [--suffixed NAME] [--max-size B] [--align B] NAME=IMAGE...
      a super image (liblp metadata 10.N, default 10.0) holding each IMAGE
      as partition NAME (LINEAR extents, group "main"); --split NAME puts
      that partition in two extents, its second half before its first;
      --suffixed NAME marks it SLOT_SUFFIXED (named without _a/_b);
      --max-size: bytes per metadata copy (65536), --align: of the data
      (1 MiB)
  android-img.py expand SPARSE... OUT
      the raw image a (split) sparse set describes, for comparisons
"""
import hashlib
import struct
import sys
import zlib

SPARSE_MAGIC = 0xED26FF3A
RAW, FILL, DONT_CARE, CRC32 = 0xCAC1, 0xCAC2, 0xCAC3, 0xCAC4


def sparse(raw_path, out_path, crc=False, blk=4096):
    data = open(raw_path, "rb").read()
    if len(data) % blk:
        data += b"\0" * (blk - len(data) % blk)
    nblk = len(data) // blk
    chunks = []  # (type, nblocks, payload)

    def kind(b):
        if b.count(0) == len(b):
            return (DONT_CARE, None)
        if b == b[:4] * (len(b) // 4):
            return (FILL, b[:4])
        return (RAW, None)

    for i in range(nblk):
        b = data[i * blk:(i + 1) * blk]
        k = kind(b)
        last = chunks[-1] if chunks else None
        if last and last[0] == k[0] and (k[0] != FILL or last[2] == k[1]):
            if k[0] == RAW:
                last[2].append(b)
            last[1] += 1
            continue
        chunks.append([k[0], 1, [b] if k[0] == RAW else k[1]])
    out = bytearray()
    for t, n, payload in chunks:
        if t == RAW:
            body = b"".join(payload)
        elif t == FILL:
            body = payload
        else:
            body = b""
        out += struct.pack("<HHII", t, 0, n, 12 + len(body)) + body
    count = len(chunks)
    if crc:
        out += struct.pack("<HHII", CRC32, 0, 0, 16)
        out += struct.pack("<I", zlib.crc32(data) & 0xFFFFFFFF)
        count += 1
    hdr = struct.pack("<IHHHHIIII", SPARSE_MAGIC, 1, 0, 28, 12, blk, nblk,
                      count, 0)
    with open(out_path, "wb") as f:
        f.write(hdr + out)
    kinds = {}
    for t, _, _ in chunks:
        kinds[t] = kinds.get(t, 0) + 1
    print("sparse: %d chunks: raw %d, fill %d, dont-care %d%s" %
          (count, kinds.get(RAW, 0), kinds.get(FILL, 0),
           kinds.get(DONT_CARE, 0), ", crc32 1" if crc else ""))


def expand(paths, out_path):
    img = None
    for p in paths:
        d = open(p, "rb").read()
        magic, major, minor, fhs, chs, blk, total, nchunks, _ = \
            struct.unpack_from("<IHHHHIIII", d)
        assert magic == SPARSE_MAGIC, p
        if img is None:
            img = bytearray(total * blk)
        pos, b = fhs, 0
        for _ in range(nchunks):
            t, _, n, tot = struct.unpack_from("<HHII", d, pos)
            body = d[pos + chs:pos + tot]
            if t == RAW:
                img[b * blk:(b + n) * blk] = body
            elif t == FILL:
                img[b * blk:(b + n) * blk] = body * (n * blk // 4)
            if t != CRC32:
                b += n
            pos += tot
    open(out_path, "wb").write(img)


SECTOR = 512
ALIGN = 1 << 20


def name36(s):
    b = s.encode()
    assert len(b) <= 36
    return b + b"\0" * (36 - len(b))


def geometry(max_size, slots, lbs=4096):
    g = struct.pack("<II32sIII", 0x616C4467, 52, b"\0" * 32, max_size, slots,
                    lbs)
    s = hashlib.sha256(g).digest()
    g = struct.pack("<II32sIII", 0x616C4467, 52, s, max_size, slots, lbs)
    return g + b"\0" * (4096 - len(g))


def super_image(out_path, parts, minor=0, slots=2, split=None,
                suffixed=(), max_size=65536, align=ALIGN):
    meta_end = 4096 * 3 + 2 * slots * max_size
    first = -(-meta_end // align) * align // SECTOR  # aligned data start
    # place the data: each image aligned to 1 MiB, in order; the split one
    # as two runs with its second half first
    runs = []  # (name, offset in image, length, sector)
    sector = first
    layout = []
    for name, path in parts:
        data = open(path, "rb").read()
        if len(data) % SECTOR:
            data += b"\0" * (SECTOR - len(data) % SECTOR)
        if name == split:
            half = (len(data) // 2) // SECTOR * SECTOR
            pieces = [(half, len(data) - half), (0, half)]
        else:
            pieces = [(0, len(data))]
        for off, ln in pieces:
            runs.append((name, off, ln, sector))
            layout.append((sector, data[off:off + ln]))
            sector += -(-ln // align) * (align // SECTOR)
    dev_sectors = sector + align // SECTOR  # one free alignment unit
    extents, ptab = b"", b""
    next = 0
    for name, _ in parts:
        mine = sorted([r for r in runs if r[0] == name], key=lambda r: r[1])
        attrs = 1 | (2 if name in suffixed else 0)  # readonly, suffixed
        ptab += struct.pack("<36sIIII", name36(name), attrs, next, len(mine),
                            1)
        for _, off, ln, sec in mine:
            extents += struct.pack("<QIQI", ln // SECTOR, 0, sec, 0)
            next += 1
    groups = struct.pack("<36sIQ", name36("default"), 0, 0)
    groups += struct.pack("<36sIQ", name36("main"), 0,
                          dev_sectors * SECTOR)
    bdevs = struct.pack("<QIIQ36sI", first, align, 0, dev_sectors * SECTOR,
                        name36("super"), 0)
    tables = ptab + extents + groups + bdevs
    desc = struct.pack("<III", 0, len(ptab) // 52, 52)
    desc += struct.pack("<III", len(ptab), len(extents) // 24, 24)
    desc += struct.pack("<III", len(ptab) + len(extents), len(groups) // 48,
                        48)
    desc += struct.pack("<III", len(ptab) + len(extents) + len(groups),
                        len(bdevs) // 64, 64)
    hsize = 256 if minor >= 2 else 128
    tsum = hashlib.sha256(tables).digest()

    def header(hsum):
        h = struct.pack("<IHHI32sI32s", 0x414C5030, 10, minor, hsize, hsum,
                        len(tables), tsum) + desc
        if hsize == 256:
            h += struct.pack("<I", 0) + b"\0" * 124
        return h

    h = header(b"\0" * 32)
    h = header(hashlib.sha256(h).digest())
    meta = h + tables
    assert len(meta) <= max_size
    meta += b"\0" * (max_size - len(meta))
    with open(out_path, "wb") as f:
        f.truncate(dev_sectors * SECTOR)
        f.seek(4096)
        g = geometry(max_size, slots)
        f.write(g + g)
        for _ in range(2 * slots):
            f.write(meta)
        for sec, data in layout:
            f.seek(sec * SECTOR)
            f.write(data)
    for name, off, ln, sec in runs:
        print("super: %s bytes %d+%d at sector %d" % (name, off, ln, sec))


def main(argv):
    if len(argv) >= 3 and argv[0] == "sparse":
        sparse(argv[1], argv[2], crc="--crc" in argv[3:])
    elif len(argv) >= 3 and argv[0] == "expand":
        expand(argv[1:-1], argv[-1])
    elif len(argv) >= 3 and argv[0] == "super":
        out, minor, slots, split, parts = argv[1], 0, 2, None, []
        suffixed, opt = [], {}
        args = argv[2:]
        while args:
            a = args.pop(0)
            if a == "--minor":
                minor = int(args.pop(0))
            elif a == "--slots":
                slots = int(args.pop(0))
            elif a == "--split":
                split = args.pop(0)
            elif a == "--suffixed":
                suffixed.append(args.pop(0))
            elif a in ("--max-size", "--align"):
                opt[a[2:].replace("-", "_")] = int(args.pop(0))
            else:
                n, p = a.split("=", 1)
                parts.append((n, p))
        super_image(out, parts, minor, slots, split, suffixed, **opt)
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
