#!/bin/bash
# SPDX-License-Identifier: MIT
# Multi-device images. (1) Debian's mkfs.erofs --blobdev=BLOB
# --chunksize=4096: ezfs ls/cat/extract/fsck/info with --device BLOB
# against the source tree and the kernel's mount (device=LOOP of BLOB),
# fsck.erofs and dump.erofs --device through the compat names; no device,
# a missing, short or extra one: one error line, non-zero exit. (2) The
# committed tar index (tests/assets/tarindex: mkfs.erofs 1.9.3 --tar=i and
# its tar): the index followed by its tar as one file (flat mode, as
# containerd mounts it) and the index with --device TAR read exactly as
# the committed kernel manifest and a live kernel mount; --offset; the
# index alone or the pair cut short: one error line. The same index with
# its chunks moved to device 0 at uniaddr + block: found on the tar by
# its range, as the kernel does.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
t_init
t_need_cmd zstd python3

BIN=$(dirname "$EZFS")
FSCK=$BIN/fsck.erofs
DUMP=$BIN/dump.erofs
MANIFEST=$SHARED/tools/manifest.py
[ -f "$MANIFEST" ] || t_skip "no $MANIFEST (the shared tools)"
KM=0
t_can_kmount && KM=1 || echo "SKIP: kernel comparison (needs root, loop devices and erofs)"

# mount IMG at DIR with extra device FILE through a loop device of it
kmount_dev() {
	local img=$1 dev=$2 dir=$3 loop
	loop=$(losetup -f --show -r "$dev" 2>/dev/null) || return 1
	LOOPS+=("$loop")
	mkdir -p "$dir"
	mount -t erofs -o loop,ro,device="$loop" "$img" "$dir" 2>/dev/null || return 1
	T_MOUNTS+=("$dir")
}
LOOPS=()
drop_loops() {
	local l
	for l in "${LOOPS[@]}"; do losetup -d "$l" 2>/dev/null || true; done
	LOOPS=()
}
trap 'drop_loops; t_cleanup' EXIT

# t_fails_once WHAT PATTERN: the last t_run failed with one error line
# matching PATTERN (extended regex) and printed nothing on stdout.
fails_once() {
	t_check "$1" 1 stderr "$2"
	t_one_line "$1: one line" "$ERR"
}

# --- (1) mkfs.erofs --blobdev ----------------------------------------------
if ! command -v mkfs.erofs >/dev/null; then
	echo "SKIP: mkfs.erofs --blobdev part (no mkfs.erofs in PATH)"
else
	S=$TMP/src
	mkdir -p "$S/d/e"
	python3 - "$S" <<'EOF'
import os, sys
s = sys.argv[1]
def w(p, b):
    with open(os.path.join(s, p), "wb") as f:
        f.write(b)
w("small", b"a small file\n")
w("empty", b"")
w("page", bytes(range(256)) * 16)
w("d/odd", bytes((i * 13 + 5) & 255 for i in range(10000)))
w("d/e/big", b"".join(b"%08d: chunked data over many blocks\n" % i for i in range(8000)))
w("d/same1", b"x" * 12288)
w("d/same2", b"x" * 12288)
with open(os.path.join(s, "sparse"), "wb") as f:
    f.write(b"head")
    f.seek(5 * 4096 + 17)
    f.write(b"tail")
os.symlink("d/e/big", os.path.join(s, "link"))
EOF
	IMG=$TMP/blob.img
	BLOB=$TMP/blob.dev
	t_run mkfs mkfs.erofs --blobdev="$BLOB" --chunksize=4096 "$IMG" "$S"
	if [ "$RC" != 0 ]; then
		t_fail "mkfs.erofs --blobdev rc=$RC: $(head -c 300 "$ERR")"
	else
		t_manifest "$S" --no-times >"$TMP/src.json"

		t_run fsck "$EZFS" fsck --device "$BLOB" "$IMG"
		t_check "blobdev: ezfs fsck --device" 0 stdout "0 problems"
		t_run ls "$EZFS" ls -R --device "$BLOB" "$IMG"
		t_check "blobdev: ezfs ls -R --device" 0 stdout "^big$"
		t_run cat "$EZFS" cat --device "$BLOB" "$IMG" /d/e/big
		t_expect "blobdev: ezfs cat --device /d/e/big is the source file" cmp -s "$OUT" "$S/d/e/big"
		t_run info "$EZFS" info --device "$BLOB" "$IMG"
		t_check "blobdev: ezfs info lists the device" 0 \
			stdout "device 1 +tag '.*', blocks [0-9]+, uniaddr [0-9]+, file .*blob.dev \([0-9]+ bytes\)"
		rm -rf "$TMP/x"
		t_run extract "$EZFS" extract -q --device "$BLOB" "$IMG" "$TMP/x"
		t_check "blobdev: ezfs extract --device" 0
		t_manifest "$TMP/x" --no-times >"$TMP/x.json"
		t_same_manifest "blobdev: extract against the source" "$TMP/src.json" "$TMP/x.json"

		# erofs-utils' names
		t_run cfsck "$FSCK" --device="$BLOB" "$IMG"
		t_check "blobdev: fsck.erofs --device=BLOB" 0
		t_run cdump "$DUMP" --device="$BLOB" --path=/d/e/big -e "$IMG"
		t_check "blobdev: dump.erofs --device=BLOB -e" 0 stdout "# device 1" \
			stdout "extents found"
		if command -v dump.erofs >/dev/null; then
			# Debian's own dump.erofs, same extents
			t_run deb dump.erofs --device="$BLOB" --path=/d/e/big -e "$IMG"
			if [ "$RC" = 0 ]; then
				grep -E '^ +[0-9]+:' "$OUT" | tr -s ' ' >"$TMP/deb.ext"
				grep -E '^ +[0-9]+:' "$TMP/cdump.out" | tr -s ' ' >"$TMP/our.ext"
				t_expect "blobdev: dump.erofs -e as Debian's" cmp -s "$TMP/deb.ext" "$TMP/our.ext"
			else
				echo "SKIP: Debian's dump.erofs --device rc=$RC"
			fi
		fi

		# hostile: no device, a missing one, a short one, one too many
		t_run nodev "$EZFS" ls "$IMG"
		fails_once "blobdev: no --device" "blob.img: needs extra device 1 .*--device"
		t_run missing "$EZFS" cat --device "$TMP/nonexistent" "$IMG" /small
		fails_once "blobdev: a missing device file" "blob.img: device 1: .*nonexistent: No such file"
		t_run extra "$EZFS" ls --device "$BLOB" --device "$BLOB" "$IMG"
		fails_once "blobdev: two devices for one" "2 device file\(s\) given, the image has 1"
		head -c 8192 "$BLOB" >"$TMP/short.dev"
		t_run short "$EZFS" cat --device "$TMP/short.dev" "$IMG" /d/e/big
		t_check "blobdev: a short device: an error naming it" 1 \
			stderr "blob.img: /d/e/big: read at 0: corrupt image: nid [0-9]+: blocks [0-9]+\+[0-9]+ are beyond device 1 \(.*short.dev: 2 blocks\)"
		t_run shortfsck "$EZFS" fsck --device "$TMP/short.dev" "$IMG"
		t_check "blobdev: fsck of a short device" 1 \
			stderr "nid [0-9]+ \(/[^)]*\): extent map at 0" \
			stderr "are beyond device 1 \(.*short.dev: 2 blocks\)"

		if [ $KM = 1 ]; then
			if kmount_dev "$IMG" "$BLOB" "$TMP/km"; then
				t_manifest "$TMP/km" >"$TMP/k.json"
				t_kumount "$TMP/km"
				t_manifest "$TMP/x" >"$TMP/x.json"
				t_same_manifest "blobdev: extract against the kernel (device=LOOP)" "$TMP/k.json" "$TMP/x.json"
			else
				t_fail "blobdev: the kernel refused device=LOOP"
			fi
			drop_loops
		fi
		rm -rf "$TMP/x"
	fi
fi

# --- (2) the tar index -------------------------------------------------------
TI=$SRC/tests/assets/tarindex
IDX=$TMP/idx.erofs
TAR=$TMP/layer.tar
BOTH=$TMP/both
zstd -q -d -c "$TI/idx.erofs.zst" >"$IDX"
zstd -q -d -c "$TI/layer.tar.zst" >"$TAR"
cat "$IDX" "$TAR" >"$BOTH"
WANT=$TI/idx.manifest.jsonl

# owners are restored as root only: compare without them otherwise
MOPT=()
if t_is_root; then
	cp "$WANT" "$TMP/want.json"
else
	MOPT=(--no-owner)
	python3 -c 'import json, sys
for l in open(sys.argv[1]):
    e = json.loads(l); e.pop("uid", None); e.pop("gid", None)
    print(json.dumps(e, sort_keys=True, ensure_ascii=False))' "$WANT" >"$TMP/want.json"
fi
check_view() { # WHAT IMG [--device F...]: fsck, extract, manifest
	local what=$1 img=$2
	shift 2
	t_run fsck "$EZFS" fsck "$@" "$img"
	t_check "$what: ezfs fsck" 0 stdout "0 problems"
	rm -rf "$TMP/x"
	t_run extract "$EZFS" extract -q "$@" "$img" "$TMP/x"
	t_check "$what: ezfs extract" 0
	t_manifest "$TMP/x" "${MOPT[@]}" >"$TMP/x.json"
	t_same_manifest "$what: as the kernel shows it" "$TMP/want.json" "$TMP/x.json"
	rm -rf "$TMP/x"
}
check_view "tar index + tar as one file (flat)" "$BOTH"
check_view "tar index --device layer.tar" "$IDX" --device "$TAR"
t_run cat "$EZFS" cat "$BOTH" /dir/lines.txt
t_check "flat: ezfs cat" 0 stdout "^line 01999 of a file"
t_run cfsck "$FSCK" "$BOTH"
t_check "flat: fsck.erofs" 0
t_run cfsck "$FSCK" --device="$TAR" "$IDX"
t_check "tar index: fsck.erofs --device=layer.tar" 0
rm -rf "$TMP/fx"
t_run cfsckx "$FSCK" --device="$TAR" --extract="$TMP/fx" "$IDX"
t_check "tar index: fsck.erofs --device --extract" 0
if t_is_root; then # owners are restored as root only
	t_manifest "$TMP/fx" >"$TMP/fx.json"
	t_same_manifest "tar index: fsck.erofs --device --extract" "$WANT" "$TMP/fx.json"
fi
rm -rf "$TMP/fx"
t_run info "$EZFS" info "$BOTH"
t_check "flat: ezfs info shows the device in the image" 0 \
	stdout "device 1 +tag '', blocks [0-9]+, uniaddr 4, in the image \(flat\)"

# the same chunks addressed as device 0 at uniaddr + block (the unified
# address space): with --device they go to the tar by its range, flat
# they are in the file; the kernel agrees
python3 - "$IDX" "$TMP/idx0.erofs" >"$TMP/patch.out" <<'EOF'
import struct, sys
def crc32c(crc, data):
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc
d = bytearray(open(sys.argv[1], 'rb').read())
sb = 1024
bits = d[sb + 12]; bs = 1 << bits
meta = struct.unpack_from('<I', d, sb + 40)[0] * bs
so = struct.unpack_from('<H', d, sb + 88)[0] * 128
uni = struct.unpack_from('<I', d, so + 68)[0]
n = 0
for pos in range(meta, len(d) - 64, 32):
    fmt, xic, mode = struct.unpack_from('<HHH', d, pos)
    if (fmt >> 1) & 7 != 4 or (mode & 0o170000) != 0o100000:
        continue
    ext = fmt & 1
    size = struct.unpack_from('<Q' if ext else '<I', d, pos + 8)[0]
    cf = struct.unpack_from('<I', d, pos + 16)[0] & 0xffff
    if not cf & 0x20:
        continue
    core = 64 if ext else 32
    xs = 0 if not xic else 12 + (xic - 1) * 4
    a = (pos + core + xs + 7) & ~7
    cb = bits + (cf & 31)
    for i in range((size + (1 << cb) - 1) >> cb):
        hi, dev, lo = struct.unpack_from('<HHI', d, a + 8 * i)
        if dev == 1 and lo != 0xffffffff:
            struct.pack_into('<HHI', d, a + 8 * i, 0, 0, lo + uni)
            n += 1
if struct.unpack_from('<I', d, sb + 8)[0] & 1:
    ln = bs - 1024 if bs > 1024 else bs
    buf = bytearray(d[1024:1024 + ln]); buf[4:8] = b'\0\0\0\0'
    struct.pack_into('<I', d, sb + 4, crc32c(0xffffffff, buf))
open(sys.argv[2], 'wb').write(d)
print(n, 'chunks moved to device 0')
EOF
t_expect "device-0 chunks: patched $(cat "$TMP/patch.out")" grep -q '^[1-9][0-9]* chunks' "$TMP/patch.out"
cat "$TMP/idx0.erofs" "$TAR" >"$TMP/both0"
check_view "device-0 chunks, flat" "$TMP/both0"
check_view "device-0 chunks --device layer.tar" "$TMP/idx0.erofs" --device "$TAR"
t_run stat0 "$EZFS" stat -e --device "$TAR" "$TMP/idx0.erofs" /dir/odd.bin
t_check "device-0 chunks: stat -e shows the device" 0 stdout "mapped,device=1"
if [ $KM = 1 ]; then
	if kmount_dev "$TMP/idx0.erofs" "$TAR" "$TMP/km"; then
		t_manifest "$TMP/km" >"$TMP/k.json"
		t_kumount "$TMP/km"
		t_same_manifest "device-0 chunks: the kernel with device=LOOP" "$WANT" "$TMP/k.json"
	else
		t_fail "the kernel refused the device-0 index with device=LOOP"
	fi
	drop_loops
fi

# ezfs mkfs's own tar index of the same tar, read both ways
t_run ezmk "$EZFS" mkfs --tar=i "$TMP/ez.idx" "$TAR"
if [ "$RC" = 0 ]; then
	cat "$TMP/ez.idx" "$TAR" >"$TMP/ez.both"
	check_view "ezfs mkfs --tar=i + tar (flat)" "$TMP/ez.both"
	check_view "ezfs mkfs --tar=i --device layer.tar" "$TMP/ez.idx" --device "$TAR"
else
	echo "SKIP: ezfs mkfs --tar=i (rc=$RC: $(head -c 200 "$ERR"))"
fi

# the image at an offset: extra devices keep their own start
head -c 3072 /dev/zero | cat - "$BOTH" >"$TMP/at3072"
t_run off "$EZFS" cat --offset 3072 "$TMP/at3072" /hello.txt
t_check "flat at --offset 3072: ezfs cat" 0 stdout "^hello, tar index$"
head -c 1536 /dev/zero | cat - "$IDX" >"$TMP/idx3072"
t_run offdev "$EZFS" cat --offset 1536 --device "$TAR" "$TMP/idx3072" /dir/odd.bin
tar -xOf "$TAR" ./dir/odd.bin >"$TMP/odd.want"
t_expect "--offset with --device: ezfs cat is the tar's file" cmp -s "$OUT" "$TMP/odd.want"
t_run cdump "$DUMP" --offset=3072 "$TMP/at3072"
t_check "dump.erofs --offset=3072" 0 stdout "Filesystem"

# hostile: the index alone, the pair cut short, a short tar
t_run alone "$EZFS" ls "$IDX"
fails_once "tar index alone" "idx.erofs: extra device 1 .* should be at blocks 4\.\.[0-9]+ of the image, which ends at block 4: give it with --device"
head -c $(($(stat -c %s "$BOTH") - 70000)) "$BOTH" >"$TMP/cut"
t_run cut "$EZFS" fsck "$TMP/cut"
fails_once "flat pair cut short" "cut: extra device 1 .* should be at blocks"
head -c 20000 "$TAR" >"$TMP/short.tar"
t_run shorttar "$EZFS" ls --device "$TMP/short.tar" "$IDX"
fails_once "a short tar" "device 1: .*short.tar: 20000 bytes, the device table says [0-9]+ blocks of 512 bytes"

# ezfs mount -o device=FILE (FUSE), where it can run
if t_is_root && [ -c /dev/fuse ] && (exec 3<>/dev/fuse) 2>/dev/null &&
	! "$EZFS" mount --help 2>&1 | grep "without FUSE" >/dev/null; then
	MP=$TMP/fm
	if t_fuse_start "$IDX" "$TMP/fuse.log" -o device="$TAR"; then
		t_manifest "$MP" >"$TMP/f.json"
		t_fuse_stop || t_fail "ezfs umount"
		T_PIDS=()
		t_same_manifest "ezfs mount -o device=layer.tar" "$WANT" "$TMP/f.json"
	else
		t_fail "ezfs mount -o device=layer.tar: $(head -c 300 "$TMP/fuse.log")"
	fi
	t_run fm "$EZFS" mount -f -o device="$TAR",device="$TAR" "$IDX" "$MP"
	fails_once "ezfs mount with two devices for one" "2 device file\(s\) given, the image has 1"
else
	echo "SKIP: ezfs mount -o device= (needs root, /dev/fuse and FUSE support)"
fi

if [ $KM = 1 ]; then
	if t_kmount "$BOTH" "$TMP/km"; then
		t_manifest "$TMP/km" >"$TMP/k.json"
		t_kumount "$TMP/km"
		t_same_manifest "flat: the kernel mount as the committed manifest" "$WANT" "$TMP/k.json"
	else
		t_fail "the kernel refused the index + tar"
	fi
	if kmount_dev "$IDX" "$TAR" "$TMP/km"; then
		t_manifest "$TMP/km" >"$TMP/k.json"
		t_kumount "$TMP/km"
		t_same_manifest "tar index: the kernel mount with device=LOOP" "$WANT" "$TMP/k.json"
	else
		t_fail "the kernel refused the index with device=LOOP"
	fi
	drop_loops
fi
t_done
