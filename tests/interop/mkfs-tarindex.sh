#!/bin/bash
# SPDX-License-Identifier: MIT
# ezfs mkfs --tar=i (tar index images, as containerd's EROFS differ makes
# them) and --blobdev=X --chunksize=N (chunk data in a second file).
#
# A small tar made here (files of 0, 1, 511, 512, 513 bytes and over
# 1 MiB, a hard link, a symlink, directories, an xattr, aufs whiteouts
# .wh.gone and .wh..wh..opq) is indexed from the file and from stdin
# (pipe and redirect: the same bytes). The kernel mounts [index][tar] as
# one file (flat device mode), and the index with the tar as device 1
# (loop devices, and a file-backed mount with a regular file); each shows
# the extracted tar's tree, whiteouts as 0:0 character devices, the opaque
# directory with trusted.overlay.opaque=y. A sparse tar beyond 2^32
# blocks gets 48-bit chunk indexes. --blobdev images pass Debian's
# fsck.erofs --device and mount with -o device=. ezfs fsck/ls/cat read
# the images where ezfs has --device. With MKFS_EROFS2 (mkfs.erofs 1.9.3)
# the same tar and tree are built by it too: same tree, sizes compared.
# Then the refused and failing command lines: one line, no image.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
t_init
t_need_shared
t_need_cmd python3 cmp gzip

UUID=6c3a1f2e-7d4b-4c5a-9e8f-0123456789ab
T0=1700000000

# ---- the tar, deterministic: fixed names, owners, mtimes, contents ----
python3 - "$TMP/layer.tar" "$T0" "$SRC/tests" <<'EOF'
import io, random, sys, tarfile
out, t0 = sys.argv[1], int(sys.argv[2])
sys.path.insert(0, sys.argv[3])
import tarlib
rnd = random.Random(15)
def ti(name, *a, **kw):
    return tarlib.entry(name, t0, *a, **kw)
with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tf:
    tf.addfile(ti(".", tarfile.DIRTYPE, 0o755))
    for name, n in (("empty", 0), ("one", 1), ("f511", 511), ("f512", 512),
                    ("f513", 513), ("big", (1 << 20) + 4099)):
        data = rnd.randbytes(n)
        tf.addfile(ti(name, size=n), io.BytesIO(data))
    tf.addfile(ti("d", tarfile.DIRTYPE, 0o750, uid=1000, gid=1000))
    t = ti("d/owned", size=6, uid=1000, gid=100, mode=0o600)
    t.pax_headers = {"SCHILY.xattr.user.note": "tar index"}
    tf.addfile(t, io.BytesIO(b"owned\n"))
    tf.addfile(ti("d/hard", tarfile.LNKTYPE, linkname="big"))
    tf.addfile(ti("d/sym", tarfile.SYMTYPE, 0o777, linkname="../one"))
    tf.addfile(ti("d/sub", tarfile.DIRTYPE, 0o755))
    tf.addfile(ti("d/sub/x", size=2), io.BytesIO(b"x\n"))
    tf.addfile(ti("d/.wh.gone"))
    tf.addfile(ti("opq", tarfile.DIRTYPE, 0o755))
    tf.addfile(ti("opq/.wh..wh..opq"))
    tf.addfile(ti("opq/keep", size=5), io.BytesIO(b"keep\n"))
EOF
TAR=$TMP/layer.tar

# ---- sb FILE: the superblock and device slot facts as "key=value" ----
sbfacts() {
	python3 - "$1" <<'EOF'
import struct, sys
d = open(sys.argv[1], "rb").read()
sb = d[1024:1152]
blocks, = struct.unpack_from("<I", sb, 36)
incompat, = struct.unpack_from("<I", sb, 80)
extra, slotoff = struct.unpack_from("<HH", sb, 86)
s = slotoff * 128
dblo, ualo, dbhi, uahi = struct.unpack_from("<IIHH", d, s + 64)
print("blkszbits=%d blocks=%d devtable=%d bit48=%d extra=%d" %
      (sb[12], blocks, bool(incompat & 8), bool(incompat & 0x80), extra))
print("dev_blocks=%d uniaddr=%d tag=%s size=%d" %
      (dblo | dbhi << 32, ualo | uahi << 32, d[s:s + 64].rstrip(b"\0").decode(),
       len(d)))
EOF
}
fact() { sbfacts "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

# ---- --tar=i from the file, a pipe and a redirect ----
IDXOPT=(--tar=i --aufs --quiet -U "$UUID" -T "$T0" --mkfs-time)
t_run idx "$EZFS" mkfs "${IDXOPT[@]}" "$TMP/idx.img" "$TAR"
if [ "$RC" = 0 ] && [ ! -s "$OUT" ] && [ ! -s "$ERR" ]; then
	t_pass "--tar=i from the file, quiet"
else
	t_fail "--tar=i: rc=$RC $(head -c 300 "$OUT" "$ERR")"
	t_done
fi
RC=0
# shellcheck disable=SC2002 # a pipe, not a seekable file
cat "$TAR" | "$EZFS" mkfs "${IDXOPT[@]}" "$TMP/pipe.img" 2>"$TMP/pipe.err" || RC=$?
t_expect "--tar=i from a pipe (containerd: no TARFILE): the same image (rc=$RC)" \
	cmp -s "$TMP/idx.img" "$TMP/pipe.img"
RC=0
"$EZFS" mkfs "${IDXOPT[@]}" "$TMP/redir.img" - <"$TAR" 2>"$TMP/redir.err" || RC=$?
t_expect "--tar=i from stdin redirected (-): the same image (rc=$RC)" \
	cmp -s "$TMP/idx.img" "$TMP/redir.img"

# the layout: 512-byte blocks, one device slot for the whole tar, right
# after the image in the flat address space; nothing but metadata
tarblocks=$((($(stat -c %s "$TAR") + 511) / 512))
f=$(sbfacts "$TMP/idx.img" | tr '\n' ' ')
blocks=$(fact "$TMP/idx.img" blocks)
if [ "$(fact "$TMP/idx.img" blkszbits)" = 9 ] &&
   [ "$(fact "$TMP/idx.img" devtable)" = 1 ] &&
   [ "$(fact "$TMP/idx.img" extra)" = 1 ] &&
   [ "$(fact "$TMP/idx.img" dev_blocks)" = "$tarblocks" ] &&
   [ "$(fact "$TMP/idx.img" uniaddr)" = "$blocks" ] &&
   [ "$(fact "$TMP/idx.img" size)" = $((blocks * 512)) ] &&
   [ "$blocks" -lt 16 ]; then
	t_pass "index layout: $f"
else
	t_fail "index layout (tar: $tarblocks blocks): $f"
fi

# -z and -b are accepted and ignored (a warning each), as mkfs.erofs does
t_run idxz "$EZFS" mkfs --tar=i --aufs -U "$UUID" -T "$T0" --mkfs-time \
	-z lz4hc -b 4096 "$TMP/idxz.img" "$TAR"
if [ "$RC" = 0 ] && grep -q -- "-z.*accepted and ignored" "$ERR" &&
   grep -q -- "-b.*accepted and ignored" "$ERR" &&
   cmp -s "$TMP/idx.img" "$TMP/idxz.img"; then
	t_pass "--tar=i -z lz4hc -b 4096: warned, the same image"
else
	t_fail "--tar=i -z -b: rc=$RC $(head -c 300 "$ERR")"
fi

# ---- what the tree should look like: the tar extracted, aufs applied ----
WANT=
if t_is_root; then
	mkdir -p "$TMP/want"
	python3 - "$TAR" "$TMP/want" <<'EOF'
import os, sys, tarfile
with tarfile.open(sys.argv[1]) as tf:
    tf.extractall(sys.argv[2], numeric_owner=True, filter="fully_trusted")
EOF
	rm "$TMP/want/d/.wh.gone" "$TMP/want/opq/.wh..wh..opq"
	# a whiteout has mode 0 and marks its directory copied up (an empty
	# trusted.overlay.origin), as in 1.9.3
	mknod -m 000 "$TMP/want/d/gone" c 0 0
	setfattr -n trusted.overlay.origin -v '""' "$TMP/want/d"
	setfattr -n user.note -v "tar index" "$TMP/want/d/owned"
	# (tarfile leaves a symlink's mtime alone)
	touch -h -d @"$T0" "$TMP/want/d/gone" "$TMP/want/d/sym" "$TMP/want/d" \
		"$TMP/want/opq"
	setfattr -n trusted.overlay.opaque -v y "$TMP/want/opq"
	t_manifest "$TMP/want" >"$TMP/want.json"
	WANT=$TMP/want.json
	grep -q '"path": "d/gone".*"rdev": "0:0"' "$WANT" ||
		t_fail "the expected tree has no whiteout: $(grep gone "$WANT")"
else
	echo "SKIP: tree comparisons (extracting the tar with owners and a whiteout needs root)"
fi

# ---- the kernel ----
KMOUNT=0
if [ -n "$WANT" ] && t_can_kmount; then
	KMOUNT=1
else
	echo "SKIP: kernel mounts (no root, loop device or erofs module)"
fi
# kshows WHAT MNT: the mount at MNT shows the want tree (then unmounted)
kshows() {
	t_manifest "$2" >"$TMP/k.json"
	umount "$2"
	t_same_manifest "$1" "$WANT" "$TMP/k.json"
}
# kmount_loopdev IMG DEV MNT: IMG on a loop device, DEV on a read-only
# loop device as device 1 (a loop-backed primary needs a block device)
kmount_loopdev() {
	local l
	l=$(losetup -f --show -r "$2") || return 1
	mkdir -p "$3"
	if mount -t erofs -o loop,ro,device="$l" "$1" "$3" 2>"$TMP/kmount.err"; then
		T_MOUNTS+=("$3")
		losetup -d "$l" # autoclear: gone with the unmount
		return 0
	fi
	losetup -d "$l"
	return 1
}
# kmount_file IMG DEV MNT: a file-backed mount (mount(2) of the regular
# file, no loop device), DEV a regular file too
kmount_file() {
	mkdir -p "$3"
	python3 - "$@" 2>"$TMP/kmount.err" <<'EOF' || return 1
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
img, dev, mnt = sys.argv[1:4]
if libc.mount(img.encode(), mnt.encode(), b"erofs", 1,
              ("device=" + dev).encode()):
    sys.exit(os.strerror(ctypes.get_errno()))
EOF
	T_MOUNTS+=("$3")
}
if [ "$KMOUNT" = 1 ]; then
	cat "$TMP/idx.img" "$TAR" >"$TMP/both.img"
	if t_kmount "$TMP/both.img" "$TMP/m1"; then
		kshows "kernel: [index][tar] as one file (flat mode)" "$TMP/m1"
	else
		t_fail "kernel: [index][tar] does not mount"
	fi
	if kmount_loopdev "$TMP/idx.img" "$TAR" "$TMP/m2"; then
		kshows "kernel: the index with the tar as a loop device (-o device=/dev/loopN)" "$TMP/m2"
	else
		t_fail "kernel: -o device=/dev/loopN refused: $(head -c 200 "$TMP/kmount.err")"
	fi
	if kmount_file "$TMP/idx.img" "$TAR" "$TMP/m3"; then
		kshows "kernel: file-backed index, the tar a regular file (-o device=FILE)" "$TMP/m3"
	else
		t_fail "kernel: file-backed -o device=FILE refused: $(head -c 200 "$TMP/kmount.err")"
	fi
	# --ovlfs-strip=1: no whiteouts, no overlay xattrs
	t_run strip "$EZFS" mkfs --tar=i --aufs --ovlfs-strip=1 --quiet "$TMP/strip.img" "$TAR"
	cat "$TMP/strip.img" "$TAR" >"$TMP/sboth.img"
	if [ "$RC" = 0 ] && t_kmount "$TMP/sboth.img" "$TMP/ms"; then
		n=$(cd "$TMP/ms/d" && printf "%s " *)
		o=$(getfattr -n trusted.overlay.opaque "$TMP/ms/opq" 2>/dev/null)
		k=$(cat "$TMP/ms/opq/keep")
		umount "$TMP/ms"
		if [ "$n" = "hard owned sub sym " ] && [ -z "$o" ] && [ "$k" = keep ]; then
			t_pass "--tar=i --ovlfs-strip=1: no whiteout, no opaque xattr"
		else
			t_fail "--tar=i --ovlfs-strip=1: d/ holds '$n', opaque '$o', keep '$k'"
		fi
	else
		t_fail "--tar=i --ovlfs-strip=1: rc=$RC $(head -c 200 "$ERR")"
	fi
fi

# ---- ezfs reads the images (where it has --device) ----
EZDEV=0
if "$EZFS" fsck --help 2>&1 | grep -q -- "--device"; then
	EZDEV=1
else
	echo "SKIP: ezfs fsck/ls/cat of multi-device images (this ezfs has no --device)"
fi
if [ "$EZDEV" = 1 ]; then
	t_run efsck "$EZFS" fsck --device "$TAR" "$TMP/idx.img"
	t_check "ezfs fsck --device TAR INDEX" 0
	cat "$TMP/idx.img" "$TAR" >"$TMP/both.img"
	t_run efsck2 "$EZFS" fsck "$TMP/both.img"
	t_check "ezfs fsck [index][tar] (flat)" 0
	t_run istat "$EZFS" stat -e --device "$TAR" "$TMP/idx.img" /big
	t_check "ezfs stat -e: the index's /big is one chunk on device 1" 0 \
		stdout "^Data: *1 extents" stdout "mapped,device=1"
	t_run els "$EZFS" ls -l --device "$TAR" "$TMP/idx.img" /d
	t_check "ezfs ls --device: whiteout and hard link" 0 stdout "gone" \
		stdout "hard"
	RC=0
	"$EZFS" cat --device "$TAR" "$TMP/idx.img" /big >"$TMP/big.out" || RC=$?
	python3 - "$TAR" >"$TMP/big.want" <<'EOF'
import sys, tarfile
with tarfile.open(sys.argv[1]) as tf:
    sys.stdout.buffer.write(tf.extractfile("big").read())
EOF
	if [ "$RC" = 0 ] && cmp -s "$TMP/big.want" "$TMP/big.out"; then
		t_pass "ezfs cat --device: /big is the tar member's bytes"
	else
		t_fail "ezfs cat --device /big: rc=$RC"
	fi
fi

# ---- 48-bit: a sparse tar beyond 2^32 blocks (2 TiB) ----
if python3 - "$TMP/huge.tar" "$T0" 2>"$TMP/huge.err" <<'EOF'; then
import io, sys, tarfile
out, t0 = sys.argv[1], int(sys.argv[2])
def hdr(name, size):
    t = tarfile.TarInfo(name)
    t.size, t.mtime, t.mode = size, t0, 0o644
    return t.tobuf(tarfile.PAX_FORMAT)
huge = (1 << 41) + 5
with open(out, "wb") as f:
    f.write(hdr("huge", huge))
    f.seek(f.tell() + (huge + 511) // 512 * 512)
    f.write(hdr("after", 6) + b"after\n".ljust(512, b"\0") + bytes(1024))
EOF
	t_run huge "$EZFS" mkfs --tar=i --quiet -U "$UUID" -T "$T0" "$TMP/huge.img" "$TMP/huge.tar"
	hf=$(sbfacts "$TMP/huge.img" 2>/dev/null | tr '\n' ' ')
	hblocks=$((($(stat -c %s "$TMP/huge.tar") + 511) / 512))
	if [ "$RC" = 0 ] && [ "$(fact "$TMP/huge.img" bit48)" = 1 ] &&
	   [ "$(fact "$TMP/huge.img" dev_blocks)" = "$hblocks" ] &&
	   [ "$hblocks" -gt 4294967295 ]; then
		t_pass "a tar of $hblocks blocks: 48-bit layout ($hf)"
	else
		t_fail "huge tar: rc=$RC $(head -c 200 "$ERR") $hf"
	fi
	if [ "$KMOUNT" = 1 ] && kmount_file "$TMP/huge.img" "$TMP/huge.tar" "$TMP/mh"; then
		a=$(cat "$TMP/mh/after" 2>&1)
		s=$(stat -c %s "$TMP/mh/huge")
		t=$(tail -c 5 "$TMP/mh/huge" | od -An -tx1 | tr -d ' ')
		umount "$TMP/mh"
		if [ "$a" = after ] && [ "$s" = $(((1 << 41) + 5)) ] && [ "$t" = 0000000000 ]; then
			t_pass "kernel: 48-bit chunk indexes beyond 2 TiB of tar read right"
		else
			t_fail "kernel, huge tar: after='$a' size=$s tail=$t"
		fi
	elif [ "$KMOUNT" = 1 ]; then
		t_fail "kernel: the 48-bit index does not mount: $(head -c 200 "$TMP/kmount.err")"
	fi
	if [ "$EZDEV" = 1 ]; then
		t_run hcat "$EZFS" cat --device "$TMP/huge.tar" "$TMP/huge.img" /after
		t_check "ezfs cat --device: a member beyond 2^32 blocks" 0 stdout '^after$'
	fi
	rm -f "$TMP/huge.tar"
else
	echo "SKIP: 48-bit tar index (no 2 TiB sparse file here: $(head -c 100 "$TMP/huge.err"))"
fi

# ---- a make_tree.py tree through GNU tar: per-file mtimes (extended
# inodes), xattrs, devices, long names; against 1.9.3 where it is there ----
if [ "$KMOUNT" = 1 ] && command -v tar >/dev/null &&
   python3 "$SHARED/tools/make_tree.py" 2 "$TMP/mt" --small >/dev/null 2>&1; then
	t_manifest "$TMP/mt" | grep -v '"type": "s"' >"$TMP/mt.json"
	(cd "$TMP/mt" && tar --xattrs --xattrs-include='*' --format=pax \
		--numeric-owner -cf "$TMP/mt.tar" . 2>/dev/null)
	t_run mt "$EZFS" mkfs --tar=i --quiet -U "$UUID" "$TMP/mt.img" "$TMP/mt.tar"
	cat "$TMP/mt.img" "$TMP/mt.tar" >"$TMP/mtboth.img"
	if [ "$RC" = 0 ] && t_kmount "$TMP/mtboth.img" "$TMP/mmt"; then
		t_manifest "$TMP/mmt" >"$TMP/mk.json"
		umount "$TMP/mmt"
		t_same_manifest "kernel: the index of a make_tree.py tar" "$TMP/mt.json" "$TMP/mk.json"
	else
		t_fail "make_tree.py tar index: rc=$RC $(head -c 200 "$ERR")"
	fi
	if [ "$EZDEV" = 1 ]; then
		t_run mtfsck "$EZFS" fsck "$TMP/mtboth.img"
		t_check "ezfs fsck: the make_tree.py tar index, flat" 0
	fi
	if [ -n "${MKFS_EROFS2:-}" ] && [ -x "$MKFS_EROFS2" ]; then
		RC=0
		"$MKFS_EROFS2" --tar=i --quiet -U "$UUID" "$TMP/mtp.img" "$TMP/mt.tar" \
			>/dev/null 2>&1 || RC=$?
		ez=$(stat -c %s "$TMP/mt.img")
		pe=$(stat -c %s "$TMP/mtp.img" 2>/dev/null || echo 0)
		echo "  make_tree.py tar index sizes: ezfs $ez bytes, mkfs.erofs 1.9.3 $pe bytes"
		if [ "$RC" = 0 ] && [ "$pe" -gt 0 ] && [ "$ez" -le "$pe" ]; then
			t_pass "make_tree.py tar: ezfs's index ($ez) is no larger than 1.9.3's ($pe)"
		else
			t_fail "make_tree.py tar: ezfs $ez bytes, 1.9.3 $pe (rc=$RC)"
		fi
	fi
else
	echo "SKIP: make_tree.py tar index (needs the kernel mount, GNU tar and make_tree.py)"
fi

# ---- --blobdev=X --chunksize=N ----
SRC=$TMP/tree
if [ -n "$WANT" ]; then
	SRC=$TMP/want
else
	mkdir -p "$SRC/d"
	head -c 300000 /dev/urandom >"$SRC/big"
	cp "$SRC/big" "$SRC/d/copy"
	echo small >"$SRC/d/small"
	: >"$SRC/empty"
fi
t_run blob "$EZFS" mkfs --quiet -U "$UUID" --blobdev="$TMP/blob.bin" \
	--chunksize=4096 "$TMP/bimg.img" "$SRC"
bf=$(sbfacts "$TMP/bimg.img" 2>/dev/null | tr '\n' ' ')
bb=$(($(stat -c %s "$TMP/blob.bin" 2>/dev/null || echo 0) / 4096))
if [ "$RC" = 0 ] && [ "$(fact "$TMP/bimg.img" devtable)" = 1 ] &&
   [ "$(fact "$TMP/bimg.img" dev_blocks)" = "$bb" ] && [ "$bb" -gt 0 ] &&
   [ "$(fact "$TMP/bimg.img" uniaddr)" = "$(fact "$TMP/bimg.img" blocks)" ]; then
	t_pass "--blobdev: the chunks in the blob ($bb blocks), one device slot: $bf"
else
	t_fail "--blobdev: rc=$RC $(head -c 300 "$ERR") $bf"
fi
if command -v fsck.erofs >/dev/null &&
   fsck.erofs --help 2>&1 | grep -q -- "--device"; then
	t_run dfsck fsck.erofs --device="$TMP/blob.bin" "$TMP/bimg.img"
	t_check "Debian's fsck.erofs --device=BLOB" 0
	# and it is the data that it checks: without the blob it fails
	t_run dfsck2 fsck.erofs --extract="$TMP/bx" --device=/dev/null "$TMP/bimg.img"
	if [ "$RC" != 0 ]; then
		t_pass "Debian's fsck.erofs: a wrong device fails (rc=$RC)"
	else
		t_fail "Debian's fsck.erofs extracted with /dev/null as the blob"
	fi
else
	echo "SKIP: Debian's fsck.erofs with --device is not installed"
fi
if [ "$KMOUNT" = 1 ]; then
	if kmount_loopdev "$TMP/bimg.img" "$TMP/blob.bin" "$TMP/mb"; then
		kshows "kernel: --blobdev image with -o device=" "$TMP/mb"
	else
		t_fail "kernel: --blobdev image refused: $(head -c 200 "$TMP/kmount.err")"
	fi
	cat "$TMP/bimg.img" "$TMP/blob.bin" >"$TMP/bboth.img"
	if t_kmount "$TMP/bboth.img" "$TMP/mb2"; then
		kshows "kernel: [image][blob] as one file" "$TMP/mb2"
	else
		t_fail "kernel: [image][blob] does not mount"
	fi
fi
if [ "$EZDEV" = 1 ]; then
	t_run bfsck "$EZFS" fsck --device "$TMP/blob.bin" "$TMP/bimg.img"
	t_check "ezfs fsck --device BLOB" 0
	# stored in one piece, the file is one chunk (its chunk size raised)
	t_run bstat "$EZFS" stat -e --device "$TMP/blob.bin" "$TMP/bimg.img" /big
	n=$(grep -c "mapped,device=1" "$OUT")
	if [ "$RC" = 0 ] && [ "$n" = 1 ] && grep -q "^Data: *1 extents" "$OUT"; then
		t_pass "--blobdev: /big is one chunk on device 1"
	else
		t_fail "--blobdev: /big in $n chunks on device 1, rc=$RC: $(grep -m1 "^Data" "$OUT")"
	fi
fi
# a blob that cannot be made: one line, neither file left
t_run blobbad "$EZFS" mkfs -q --blobdev="$TMP/no/such/blob" --chunksize=4096 \
	"$TMP/bad.img" "$SRC"
if [ "$RC" = 1 ] && [ "$(wc -l <"$ERR")" = 1 ] && grep -q "no/such/blob" "$ERR" &&
   [ ! -e "$TMP/bad.img" ]; then
	t_pass "--blobdev in a missing directory: one line, no image"
else
	t_fail "--blobdev bad path: rc=$RC image: $([ -e "$TMP/bad.img" ] && echo left) $(head -c 300 "$ERR")"
fi

# ---- mkfs.erofs 1.9.3 on the same tar and tree ----
if [ -n "${MKFS_EROFS2:-}" ] && [ -x "$MKFS_EROFS2" ]; then
	RC=0
	"$MKFS_EROFS2" --tar=i --aufs --quiet -U "$UUID" -T "$T0" --mkfs-time \
		"$TMP/peer.img" <"$TAR" >/dev/null 2>"$TMP/peer.err" || RC=$?
	ez=$(stat -c %s "$TMP/idx.img")
	pe=$(stat -c %s "$TMP/peer.img" 2>/dev/null || echo 0)
	echo "  index sizes: ezfs $ez bytes, mkfs.erofs 1.9.3 $pe bytes (tar $(stat -c %s "$TAR"))"
	if [ "$RC" = 0 ] && [ "$pe" -gt 0 ] && [ "$ez" -le "$pe" ]; then
		t_pass "--tar=i: ezfs's index ($ez) is no larger than 1.9.3's ($pe)"
	else
		t_fail "--tar=i: ezfs $ez bytes, 1.9.3 $pe (rc=$RC $(head -c 200 "$TMP/peer.err"))"
	fi
	if [ "$KMOUNT" = 1 ]; then
		cat "$TMP/peer.img" "$TAR" >"$TMP/pboth.img"
		if t_kmount "$TMP/pboth.img" "$TMP/mp"; then
			t_manifest "$TMP/mp" >"$TMP/p.json"
			umount "$TMP/mp"
			t_same_manifest "1.9.3's [index][tar]: the same tree" \
				"$WANT" "$TMP/p.json"
		else
			t_fail "kernel: 1.9.3's [index][tar] does not mount"
		fi
	fi
	RC=0
	"$MKFS_EROFS2" --quiet -U "$UUID" --blobdev="$TMP/pblob.bin" --chunksize=4096 \
		"$TMP/pbimg.img" "$SRC" >/dev/null 2>&1 || RC=$?
	echo "  --blobdev sizes: ezfs image $(stat -c %s "$TMP/bimg.img") + blob $(stat -c %s "$TMP/blob.bin"), 1.9.3 image $(stat -c %s "$TMP/pbimg.img" 2>/dev/null) + blob $(stat -c %s "$TMP/pblob.bin" 2>/dev/null) (rc=$RC)"
	if [ "$KMOUNT" = 1 ] && [ "$RC" = 0 ]; then
		if kmount_loopdev "$TMP/pbimg.img" "$TMP/pblob.bin" "$TMP/mpb"; then
			t_manifest "$TMP/mpb" >"$TMP/pb.json"
			umount "$TMP/mpb"
			t_same_manifest "1.9.3's --blobdev image: the same tree" \
				"$WANT" "$TMP/pb.json"
		else
			t_fail "kernel: 1.9.3's --blobdev image refused: $(head -c 200 "$TMP/kmount.err")"
		fi
	fi
else
	echo "SKIP: comparison with mkfs.erofs 1.9.3 (set MKFS_EROFS2 to its mkfs.erofs)"
fi

# ---- refused and failing command lines: one line, no image ----
# refused NAME WORD ARGS...: exit 2, one line (and the "Try" hint) naming WORD
refused() {
	local name=$1 word=$2
	shift 2
	rm -f "$TMP/r.img"
	t_run "$name" "$EZFS" mkfs "$@"
	if [ "$RC" = 2 ] && grep -qF -- "$word" "$ERR" && [ ! -e "$TMP/r.img" ] &&
	   [ "$(grep -vc '^Try ' "$ERR")" = 1 ]; then
		t_pass "$name: refused naming $word"
	else
		t_fail "$name: rc=$RC, want 2 and one line naming '$word': $(head -c 300 "$ERR")"
	fi
}
refused "--blobdev without --chunksize" "--chunksize" --blobdev="$TMP/b" "$TMP/r.img" "$SRC"
refused "--tar=i with --blobdev" "--blobdev" --tar=i --blobdev="$TMP/b" \
	--chunksize=4096 "$TMP/r.img" "$TAR"
refused "--blobdev with -E force-inode-blockmap" "force-inode-blockmap" \
	--blobdev="$TMP/b" --chunksize=4096 -E force-inode-blockmap "$TMP/r.img" "$SRC"
refused "--tar=headerball" "--tar=headerball" --tar=headerball "$TMP/r.img" "$TAR"
[ ! -e "$TMP/b" ] || t_fail "a refused --blobdev line left the blob"
# failing NAME WORD ARGS... [< INPUT]: exit 1, one line naming WORD, no image
failing() {
	local name=$1 word=$2
	shift 2
	if [ "$RC" = 1 ] && [ "$(wc -l <"$ERR")" = 1 ] && grep -qF -- "$word" "$ERR" &&
	   [ ! -e "$TMP/r.img" ]; then
		t_pass "$name: one line naming '$word', no image"
	else
		t_fail "$name: rc=$RC image: $([ -e "$TMP/r.img" ] && echo left) $(head -c 300 "$ERR")"
	fi
}
gzip -c "$TAR" >"$TMP/layer.tgz"
t_run gz "$EZFS" mkfs -q --tar=i "$TMP/r.img" "$TMP/layer.tgz"
failing "--tar=i on a gzip tar" "layer.tgz"
head -c $(($(stat -c %s "$TAR") / 2)) "$TAR" >"$TMP/trunc.tar"
t_run trunc "$EZFS" mkfs -q --tar=i "$TMP/r.img" - <"$TMP/trunc.tar"
failing "--tar=i on a truncated tar from stdin" "stdin"
t_run dir "$EZFS" mkfs -q --tar=i "$TMP/r.img" "$SRC"
failing "--tar=i on a directory" "$SRC"

t_done
