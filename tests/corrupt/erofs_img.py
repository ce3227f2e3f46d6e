# SPDX-License-Identifier: MIT
"""erofs_img.py - tiny test trees, Debian mkfs.erofs wrapper, minimal EROFS parser.

Python 3 standard library only. Shared by tests/corrupt/gen_corrupt.py and
tests/fuzz/gen_seeds.py. The parser is deliberately small: it finds where
the superblock, inodes, xattrs, directory blocks, compressed index areas and
compressed data of an image are, so that corruptions can be aimed at them.
It is not a reader (compressed directories are not followed).
"""
import os
import shutil
import struct
import subprocess

MAGIC = 0xE0F5E1E2
SB_OFF = 1024
FIXED_UUID = "01234567-89ab-cdef-0123-456789abcdef"
FIXED_TIME = 1600000000

# ----------------------------------------------------------------------
# Trees


def _words(rng, n):
    vocab = ["erofs", "block", "inode", "cluster", "the", "of", "and", "data",
             "read", "only", "image", "lz4", "zstd", "a", "to", "in", "map",
             "dir", "name", "xattr", "tail", "packed", "\n"]
    out = []
    size = 0
    while size < n:
        w = rng.choice(vocab)
        out.append(w)
        size += len(w) + 1
    return (" ".join(out).encode())[:n]


def _setx(path, name, value):
    try:
        os.setxattr(path, name, value, follow_symlinks=False)
    except OSError:
        pass


def _write(path, data, mode=0o644, mtime=FIXED_TIME):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)
    os.utime(path, (mtime, mtime))


def _fix_times(root, mtime):
    """Give every entry a fixed mtime (deepest first, symlinks untouched)."""
    for dirpath, dirnames, filenames in os.walk(root, topdown=False):
        for n in filenames + dirnames:
            p = os.path.join(dirpath, n)
            if os.path.islink(p):
                try:
                    os.utime(p, (mtime, mtime), follow_symlinks=False)
                except OSError:
                    pass
            else:
                os.utime(p, (mtime, mtime))
    os.utime(root, (mtime, mtime))


def make_tiny_tree(out, rng, big_dir=True):
    """A fixed-shape tree (< ~100 KiB of data) touching most features."""
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    _write(os.path.join(out, "a.txt"), _words(rng, 3000))
    _write(os.path.join(out, "b.bin"), rng.randbytes(5000))
    _write(os.path.join(out, "big.txt"), _words(rng, 40000) + rng.randbytes(3000))
    _write(os.path.join(out, "zero"), bytes(16384))
    _write(os.path.join(out, "empty"), b"")
    _write(os.path.join(out, "tiny"), b"0123456789", 0o600)
    _write(os.path.join(out, "-dash"), b"sorts before dot\n")
    _write(os.path.join(out, "x/y/z/deep.txt"), _words(rng, 9000))
    _write(os.path.join(out, "x/blk4096"), _words(rng, 4096))
    if big_dir:
        for i in range(140):
            name = "f%03d_%s" % (i, "n" * rng.randrange(1, 30))
            _write(os.path.join(out, "many", name), _words(rng, rng.randrange(0, 60)))
    os.symlink("a.txt", os.path.join(out, "ln"))
    os.symlink("t" * 300, os.path.join(out, "ln-long"))
    os.symlink("/nonexistent/../../etc/passwd", os.path.join(out, "ln-abs"))
    os.link(os.path.join(out, "a.txt"), os.path.join(out, "a.hard"))
    os.mkfifo(os.path.join(out, "fifo"))
    try:
        os.mknod(os.path.join(out, "chr"), 0o20644, os.makedev(1, 3))
    except OSError:
        pass
    for n in ("a.txt", "b.bin", "tiny", "x", "zero"):
        _setx(os.path.join(out, n), "user.shared", b"same-value")
    _setx(os.path.join(out, "a.txt"), "user.inline", b"v" * 40)
    _setx(os.path.join(out, "big.txt"), "trusted.big", rng.randbytes(900))
    _setx(os.path.join(out, "x/y"), "security.selinux", b"system_u:object_r:x:s0\0")
    _setx(os.path.join(out, "tiny"), "user.empty", b"")
    _fix_times(out, FIXED_TIME)


def make_random_tree(out, rng):
    """A small random tree for fuzz seeds (a few KiB to ~60 KiB of data)."""
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789._-!~ "
    made = []

    def name():
        n = rng.randrange(1, 24)
        s = "".join(rng.choice(alphabet) for _ in range(n)).strip() or "n"
        if s in (".", ".."):
            s = "dot" + s
        if rng.random() < 0.05:
            s = "L" * rng.randrange(100, 256)
        return s

    def content():
        k = rng.random()
        if k < 0.15:
            return b""
        if k < 0.45:
            return _words(rng, rng.randrange(1, 12000))
        if k < 0.6:
            return rng.randbytes(rng.randrange(1, 6000))
        if k < 0.7:
            return bytes(rng.randrange(1, 20000))
        if k < 0.8:
            blk = _words(rng, 4096)
            return blk * rng.randrange(2, 5)
        return _words(rng, rng.randrange(1, 300))

    def fill(d, depth):
        for _ in range(rng.randrange(1 if depth == 0 else 0, 7)):
            p = os.path.join(d, name())
            if os.path.lexists(p):
                continue
            k = rng.random()
            if k < 0.6:
                _write(p, content(), rng.choice([0o644, 0o600, 0o755, 0o4755]))
                made.append(p)
            elif k < 0.75 and depth < 3:
                os.makedirs(p)
                fill(p, depth + 1)
            elif k < 0.85:
                os.symlink("t" * rng.randrange(1, 200) if rng.random() < 0.5
                           else name(), p)
            elif k < 0.9 and made:
                os.link(rng.choice(made), p)
            elif k < 0.95:
                os.mkfifo(p)
            else:
                try:
                    os.mknod(p, 0o60600, os.makedev(rng.randrange(256),
                                                    rng.randrange(1 << 20)))
                except OSError:
                    pass
    fill(out, 0)
    if rng.random() < 0.2:
        d = os.path.join(out, "bigdir")
        os.makedirs(d, exist_ok=True)
        for i in range(rng.randrange(60, 200)):
            _write(os.path.join(d, "e%04d" % i), b"")
    shared = rng.randbytes(rng.randrange(0, 40))
    for p in made:
        if rng.random() < 0.4:
            _setx(p, "user.s", shared)
        if rng.random() < 0.2:
            _setx(p, rng.choice(["user.", "trusted.", "security."]) + name().replace(" ", "_"),
                  rng.randbytes(rng.randrange(0, 300)))
    _fix_times(out, FIXED_TIME + rng.randrange(0, 1000))


# ----------------------------------------------------------------------
# mkfs


def have_mkfs():
    return shutil.which("mkfs.erofs") is not None


def mkfs(image, tree, opts):
    """Run Debian's mkfs.erofs reproducibly; True on success."""
    env = dict(os.environ, SOURCE_DATE_EPOCH=str(FIXED_TIME))
    cmd = ["mkfs.erofs", "--quiet", "-U", FIXED_UUID] + list(opts) + [image, tree]
    r = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE)
    return r.returncode == 0 and os.path.exists(image)


# ----------------------------------------------------------------------
# CRC32C (superblock checksum)

_CRC_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _CRC_TABLE.append(_c)


def crc32c_raw(data, crc=0xFFFFFFFF):
    t = _CRC_TABLE
    for b in data:
        crc = t[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc


def fix_sb_checksum(img):
    """Recompute the superblock checksum in place (bytearray) if enabled."""
    if len(img) < SB_OFF + 128:
        return
    if struct.unpack_from("<I", img, SB_OFF)[0] != MAGIC:
        return
    compat = struct.unpack_from("<I", img, SB_OFF + 8)[0]
    if not compat & 1:
        return
    bits = img[SB_OFF + 12]
    if bits < 9 or bits > 16:
        return
    blksz = 1 << bits
    length = blksz - SB_OFF if blksz > SB_OFF else blksz
    if SB_OFF + length > len(img):
        return
    buf = bytearray(img[SB_OFF:SB_OFF + length])
    buf[4:8] = b"\0\0\0\0"
    struct.pack_into("<I", img, SB_OFF + 4, crc32c_raw(buf))


# ----------------------------------------------------------------------
# Minimal parser


class Inode:
    def __init__(self, nid, off):
        self.nid = nid
        self.off = off
        self.core = 32
        self.xattr_isize = 0
        self.layout = 0
        self.mode = 0
        self.size = 0
        self.iu = 0
        self.fmt = 0
        self.regions = {}   # kind -> list of (start, end)


class Image:
    """What the corrupt generator aims at, found by a minimal parse."""

    def __init__(self, data, max_inodes=4000):
        self.data = data
        self.ok = False
        self.regions = {"super": [], "inode": [], "xattr": [], "dir": [],
                        "zindex": [], "zdata": [], "chunkidx": []}
        self.inodes = []
        if len(data) < SB_OFF + 128:
            return
        if struct.unpack_from("<I", data, SB_OFF)[0] != MAGIC:
            return
        self.bits = data[SB_OFF + 12]
        if not 9 <= self.bits <= 16:
            return
        self.blksz = 1 << self.bits
        self.compat = struct.unpack_from("<I", data, SB_OFF + 8)[0]
        self.incompat = struct.unpack_from("<I", data, SB_OFF + 80)[0]
        self.sb_size = 128 + 16 * data[SB_OFF + 13]
        self.root = struct.unpack_from("<H", data, SB_OFF + 14)[0]
        self.meta = struct.unpack_from("<I", data, SB_OFF + 40)[0]
        self.xattr_blk = struct.unpack_from("<I", data, SB_OFF + 44)[0]
        self.packed = struct.unpack_from("<Q", data, SB_OFF + 96)[0]
        r8 = struct.unpack_from("<Q", data, SB_OFF + 112)[0]
        if self.incompat & 0x80 and r8:
            self.root = r8
        # superblock + compression records after it
        self.regions["super"].append((SB_OFF, SB_OFF + self.sb_size))
        if self.incompat & 2:
            self.regions["super"].append((SB_OFF + self.sb_size,
                                          SB_OFF + self.sb_size + 64))
        self.ok = True
        self._walk(max_inodes)

    def _ino_off(self, nid):
        return self.meta * self.blksz + (nid & ~(1 << 63)) * 32

    def _inode(self, nid):
        d = self.data
        off = self._ino_off(nid)
        if nid >> 63 or off + 32 > len(d):
            return None
        ino = Inode(nid, off)
        ino.fmt = struct.unpack_from("<H", d, off)[0]
        ino.core = 64 if ino.fmt & 1 else 32
        if off + ino.core > len(d):
            return None
        ino.layout = (ino.fmt >> 1) & 7
        icount = struct.unpack_from("<H", d, off + 2)[0]
        ino.xattr_isize = 0 if icount == 0 else 12 + 4 * (icount - 1)
        ino.mode = struct.unpack_from("<H", d, off + 4)[0]
        if ino.core == 64:
            ino.size = struct.unpack_from("<Q", d, off + 8)[0]
        else:
            ino.size = struct.unpack_from("<I", d, off + 8)[0]
        ino.iu = struct.unpack_from("<I", d, off + 16)[0]
        return ino

    def _flat_data(self, ino):
        """Bytes of a flat (plain/inline) inode, or None."""
        d, bs = self.data, self.blksz
        if ino.size > 1 << 22:
            return None
        if ino.layout == 0:
            nblk = (ino.size + bs - 1) // bs
            tail = 0
        elif ino.layout == 2:
            nblk = ino.size // bs
            tail = ino.size % bs
        else:
            return None
        out = bytearray()
        if nblk:
            start = ino.iu * bs
            if start + nblk * bs > len(d):
                return None
            out += d[start:start + nblk * bs]
            ino.regions.setdefault("blocks", []).append((start, start + nblk * bs))
        if tail:
            t = ino.off + ino.core + ino.xattr_isize
            if t + tail > len(d):
                return None
            out += d[t:t + tail]
            ino.regions.setdefault("tail", []).append((t, t + tail))
        return bytes(out[:ino.size])

    def _dirents(self, ino, data):
        """(nid, name) of a directory's entries; records the block regions."""
        bs = self.blksz
        res = []
        for cstart in range(0, len(data), bs):
            chunk = data[cstart:cstart + bs]
            if len(chunk) < 12:
                break
            nameoff0 = struct.unpack_from("<H", chunk, 8)[0]
            if nameoff0 < 12 or nameoff0 >= len(chunk):
                break
            n = nameoff0 // 12
            ents = []
            for i in range(n):
                nid, no, ft = struct.unpack_from("<QHB", chunk, 12 * i)
                ents.append((nid, no, ft))
            for i, (nid, no, ft) in enumerate(ents):
                end = ents[i + 1][1] if i + 1 < n else len(chunk)
                name = chunk[no:end].split(b"\0")[0]
                res.append((nid, name, ft))
        return res

    def _walk(self, max_inodes):
        seen = set()
        queue = [self.root]
        if self.packed:
            queue.append(self.packed)
        while queue and len(self.inodes) < max_inodes:
            nid = queue.pop(0)
            if nid in seen:
                continue
            seen.add(nid)
            ino = self._inode(nid)
            if not ino:
                continue
            self.inodes.append(ino)
            self._classify(ino)
            if (ino.mode & 0o170000) == 0o040000:
                data = self._flat_data(ino)
                if data is None:
                    continue
                for r in ino.regions.get("blocks", []) + ino.regions.get("tail", []):
                    self.regions["dir"].append(r)
                for cnid, name, ft in self._dirents(ino, data):
                    if name not in (b".", b"..") and cnid not in seen:
                        queue.append(cnid)

    def _classify(self, ino):
        d, bs = self.data, self.blksz
        self.regions["inode"].append((ino.off, ino.off + ino.core))
        xs, xe = ino.off + ino.core, ino.off + ino.core + ino.xattr_isize
        if ino.xattr_isize:
            self.regions["xattr"].append((xs, xe))
            if xs + 12 <= len(d):
                shared = d[xs + 4]
                for i in range(min(shared, 8)):
                    p = xs + 12 + 4 * i
                    if p + 4 > len(d):
                        break
                    xid = struct.unpack_from("<I", d, p)[0]
                    s = self.xattr_blk * bs + xid * 4
                    if s + 4 <= len(d):
                        self.regions["xattr"].append((s, min(s + 32, len(d))))
        if ino.layout in (1, 3):
            h = (xe + 7) & ~7
            nlc = (ino.size + bs - 1) // bs
            if ino.layout == 1:
                end = h + 16 + 8 * nlc
            else:
                end = h + 8 + 4 * nlc + 32
            end = min(end, (h // bs + 1) * bs, len(d))
            if h < end:
                self.regions["zindex"].append((h, end))
            blk = self._first_pcluster(ino, h)
            if blk is not None:
                n = max(1, min(ino.iu, 64))
                s = blk * bs
                e = min(s + n * bs, len(d))
                if s < e:
                    self.regions["zdata"].append((s, e))
        elif ino.layout == 4:
            unit = 8 if ino.iu & 0x20 else 4
            s = (xe + unit - 1) // unit * unit
            chunkbits = self.bits + (ino.iu & 31)
            n = (ino.size + (1 << chunkbits) - 1) >> chunkbits if chunkbits < 64 else 1
            e = min(s + unit * min(n, 512), len(d))
            if s < e:
                self.regions["chunkidx"].append((s, e))
        elif ino.layout in (0, 2) and (ino.mode & 0o170000) == 0o100000:
            pass

    def _first_pcluster(self, ino, h):
        d = self.data
        if h + 8 > len(d):
            return None
        advise = struct.unpack_from("<H", d, h + 4)[0]
        if d[h + 7] & 0x80:
            return None         # whole-file fragment
        if ino.layout == 1:
            p = h + 16
            if p + 8 > len(d):
                return None
            t = struct.unpack_from("<H", d, p)[0] & 3
            return struct.unpack_from("<I", d, p + 4)[0] if t != 2 else None
        ebase = h + 8
        init4 = ((32 - ebase % 32) // 4) % 8
        if init4 or not advise & 1:
            pack = ebase & ~7
            base = pack + 4
        else:
            pack = ebase & ~31
            base = pack + 28
        if base + 4 > len(d):
            return None
        return struct.unpack_from("<I", d, base)[0]
