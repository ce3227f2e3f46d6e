#!/bin/bash
# SPDX-License-Identifier: MIT
# Android containers read in place (docs/android.md): sparse images made by
# Debian's img2simg and by android-img.py (DONT_CARE, FILL, CRC32 chunks),
# split sets (simg2simg), super images with two partitions (android-img.py,
# from the liblp format), sparse super images; every command on them must
# see exactly the fixture inside, and broken containers get one error line.
# ezfs info says a sparse image is one, with simg_dump's chunk counts.
#
# usage: tests/interop/android-read.sh
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
t_init
t_need_fixtures
AIMG="$SRC/tests/interop/android-img.py"
A=plain # system_a and the sparse images
B=lz4-4k # system_b (compressed)
for n in $A $B; do
	[ -f "$SHARED/fixtures/$n.img.zst" ] || t_skip "no fixture $n"
done
t_fixture_unpack $A
imgA=$img wantA=$want
t_fixture_unpack $B
imgB=$img wantB=$want

LIBSPARSE=1
if ! command -v img2simg >/dev/null || ! command -v simg2img >/dev/null ||
	! command -v simg2simg >/dev/null; then
	LIBSPARSE=0
	echo "SKIP: img2simg/simg2img/simg2simg checks (android-sdk-libsparse-utils is not installed; scripts/deps.sh installs it)"
fi
EXTRACT=1
if ! t_is_root; then
	EXTRACT=0
	echo "SKIP: extract comparisons need root (owners, devices); running fsck and ls only"
fi
KMOUNT=0 # a container is no block device: the kernel cannot mount it

# check NAME IMG WANT RAW: fsck, extract = manifest, ls of the root and
# one cat the same as on the raw image RAW.
check() {
	local name=$1 im=$2 wt=$3 raw=$4
	if [ $EXTRACT = 1 ]; then
		t_check_image "$name" "$im" "$wt"
	else
		t_run fsck "$EZFS" fsck -q "$im"
		t_check "$name: ezfs fsck" 0
	fi
	t_run lsraw "$EZFS" ls -l "$raw" /
	cp "$OUT" "$TMP/ls.want"
	t_run ls "$EZFS" ls -l "$im" /
	if [ "$RC" = 0 ] && cmp -s "$TMP/ls.want" "$OUT"; then
		t_pass "$name: ezfs ls / as on the raw image"
	else
		t_fail "$name: ezfs ls rc=$RC: $(head -c 200 "$ERR")"
	fi
	# the largest file of the manifest, by its sha256
	local f sum
	read -r f sum < <(python3 -c '
import json, sys
best = max((json.loads(l) for l in open(sys.argv[1])),
           key=lambda e: e.get("size", -1) if e["type"] == "f" else -1)
print(best["path"], best["sha256"])' "$wt")
	if [ "$("$EZFS" cat "$im" "/$f" | sha256sum | cut -d' ' -f1)" = "$sum" ]; then
		t_pass "$name: ezfs cat /$f matches the manifest's sha256"
	else
		t_fail "$name: ezfs cat /$f differs from the manifest"
	fi
}

# bad NAME WANT_RE CMD...: fails with exit 1 and one stderr line matching.
bad() {
	local name=$1 re=$2
	shift 2
	t_run bad timeout 60 "$@"
	t_check "$name: fails with a reason" 1 stderr "$re"
	t_one_line "$name: one error line" "$ERR"
}

# --- sparse images ----------------------------------------------------
if [ $LIBSPARSE = 1 ]; then
	img2simg "$imgA" "$TMP/a.simg" || exit 1
	simg2img "$TMP/a.simg" "$TMP/a.back" || exit 1
	t_expect "simg2img gives back the raw image (sanity)" cmp -s "$imgA" "$TMP/a.back"
	rm -f "$TMP/a.back"
	check "img2simg $A" "$TMP/a.simg" "$wantA" "$imgA"
	img2simg "$imgB" "$TMP/b.simg" || exit 1
	check "img2simg $B" "$TMP/b.simg" "$wantB" "$imgB"
fi

# zeros as DONT_CARE: the fixture with 8 MiB of zeros after it, a CRC32
# chunk at the end
cp "$imgA" "$TMP/pad.img" && chmod u+w "$TMP/pad.img"
truncate -s +8M "$TMP/pad.img"
python3 "$AIMG" sparse "$TMP/pad.img" "$TMP/dc.simg" --crc >"$TMP/dc.log" || exit 1
if grep -Eq 'dont-care [1-9].*crc32 1' "$TMP/dc.log"; then
	t_pass "android-img.py wrote DONT_CARE and CRC32 chunks ($(cat "$TMP/dc.log"))"
else
	t_fail "no DONT_CARE chunks: $(cat "$TMP/dc.log")"
fi
check "DONT_CARE-rich $A" "$TMP/dc.simg" "$wantA" "$imgA"
if [ $LIBSPARSE = 1 ]; then
	simg2img "$TMP/dc.simg" "$TMP/dc.back" 2>/dev/null
	t_expect "simg2img reads android-img.py's image as the padded raw one" cmp -s "$TMP/pad.img" "$TMP/dc.back"
	rm -f "$TMP/dc.back"
fi

# FILL chunks of a non-zero value: a file of one repeated 4-byte pattern
mkdir -p "$TMP/filltree"
python3 -c 'import sys; sys.stdout.buffer.write(b"ABCD" * 65536)' >"$TMP/filltree/pattern"
printf 'tail' >"$TMP/filltree/small"
if "$EZFS" mkfs -q "$TMP/fill.img" "$TMP/filltree" >/dev/null 2>&1 ||
	"$EZFS" mkfs "$TMP/fill.img" "$TMP/filltree" >/dev/null 2>&1; then
	python3 "$AIMG" sparse "$TMP/fill.img" "$TMP/fill.simg" >"$TMP/fill.log" || exit 1
	if grep -Eq 'fill [1-9]' "$TMP/fill.log"; then
		t_pass "a FILL chunk of 0x44434241 ($(cat "$TMP/fill.log"))"
	else
		t_fail "no FILL chunk: $(cat "$TMP/fill.log")"
	fi
	t_expect "FILL: ezfs cat of the pattern file" cmp -s "$TMP/filltree/pattern" <("$EZFS" cat "$TMP/fill.simg" /pattern)
	t_run fsck "$EZFS" fsck -q "$TMP/fill.simg"
	t_check "FILL: ezfs fsck" 0
	if [ $LIBSPARSE = 1 ]; then
		img2simg "$TMP/fill.img" "$TMP/fill2.simg"
		t_expect "FILL (img2simg): ezfs cat of the pattern file" cmp -s "$TMP/filltree/pattern" <("$EZFS" cat "$TMP/fill2.simg" /pattern)
	fi
else
	t_fail "ezfs mkfs of the FILL tree failed"
fi

# --- split sets ---------------------------------------------------------
if [ $LIBSPARSE = 1 ]; then
	simg2simg "$TMP/a.simg" "$TMP/a.img_sparsechunk" 4000000 || exit 1
	n=$(ls "$TMP"/a.img_sparsechunk.* | wc -l)
	t_expect "simg2simg made a split set ($n files)" [ "$n" -ge 3 ]
	simg2img "$TMP"/a.img_sparsechunk.* "$TMP/split.back" 2>/dev/null
	t_expect "simg2img of the split set gives back the raw image (sanity)" cmp -s "$imgA" "$TMP/split.back"
	rm -f "$TMP/split.back"
	check "split set $A" "$TMP/a.img_sparsechunk.0" "$wantA" "$imgA"
	# a piece that is not a sparse image
	mkdir -p "$TMP/badset"
	cp "$TMP"/a.img_sparsechunk.* "$TMP/badset/"
	cp "$imgA" "$TMP/badset/a.img_sparsechunk.1"
	bad "split set with a raw file" "a\.img_sparsechunk\.1: not a sparse image" \
		"$EZFS" ls "$TMP/badset/a.img_sparsechunk.0" /
	# two pieces holding the same blocks
	cp "$TMP/badset/a.img_sparsechunk.0" "$TMP/badset/a.img_sparsechunk.1"
	bad "split set with overlapping files" "also in" \
		"$EZFS" fsck "$TMP/badset/a.img_sparsechunk.0"
fi

# --- ezfs info of a sparse image: says so, with its chunks as simg_dump
# counts them (every file of a split set), in the text and in --json
# simg_counts FILE...: the chunks and blocks of each type, as info prints.
simg_counts() {
	simg_dump -v "$@" | awk '
	$1 ~ /^[0-9]+$/ && NF >= 6 {
		n++
		if (/Raw data/) { r++; rb += $5 }
		else if (/Fill with/) { f++; fb += $5 }
		else if (/Don.t care/) { d++; db += $5 }
		else if (/CRC32/) c++
	}
	END { printf "%d: %d raw (%d blocks), %d fill (%d), %d don'"'"'t care (%d), %d crc32\n",
		n, r, rb, f, fb, d, db, c }'
}
if [ $LIBSPARSE = 1 ] && command -v simg_dump >/dev/null; then
	for s in a.simg dc.simg a.img_sparsechunk.0; do
		files=1
		set -- "$TMP/$s"
		if [ $s = a.img_sparsechunk.0 ]; then
			set -- "$TMP"/a.img_sparsechunk.*
			files=$#
		fi
		want_c=$(simg_counts "$@")
		blocks=$(simg_dump "$1" | sed -n 's/.*Total of \([0-9]*\) \([0-9]*\)-byte output blocks.*/\1 blocks of \2/p')
		t_run info "$EZFS" info "$TMP/$s"
		t_check "info $s: 'Container: Android sparse, $files file(s)', $blocks" 0 \
			stdout "^Container: +Android sparse, $files files?, [0-9]+ bytes stored .*, $blocks\$"
		t_check "info $s: 'Sparse chunks: $want_c' as simg_dump counts" 0 \
			stdout "^Sparse chunks: +$(sed 's/[()]/\\&/g' <<<"$want_c")\$"
		t_run infoj "$EZFS" info --json "$TMP/$s"
		t_expect "info --json $s: valid against info.json" \
			python3 "$SRC/tests/interop/json-check.py" validate \
			"$SRC/docs/schemas/info.json" "$TMP/infoj.out"
		t_expect "info --json $s: 'sparse' has the counts of the text" python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))["sparse"]
line = "%d: %d raw (%d blocks), %d fill (%d), %d don'"'"'t care (%d), %d crc32" % (
    s["chunks"], s["raw_chunks"], s["raw_blocks"], s["fill_chunks"],
    s["fill_blocks"], s["dont_care_chunks"], s["dont_care_blocks"],
    s["crc32_chunks"])
sys.exit(not (line == sys.argv[2] and s["files"] == int(sys.argv[3]) and
    s["stored_bytes"] == sum(int(x) for x in sys.argv[4:])))' \
			"$TMP/infoj.out" "$want_c" "$files" $(stat -c %s "$@")
	done
	t_run info "$EZFS" info "$imgA"
	t_expect "info of a raw image: no Container line" \
		eval '[ "$RC" = 0 ] && ! grep -q "^Container:" "$OUT"'
	t_run infoj "$EZFS" info --json "$imgA"
	t_expect "info --json of a raw image: \"sparse\": null" \
		python3 -c 'import json, sys; sys.exit(json.load(open(sys.argv[1]))["sparse"] is not None)' "$TMP/infoj.out"
else
	echo "SKIP: ezfs info of sparse images against simg_dump (android-sdk-libsparse-utils is not installed)"
fi

# --- super images -------------------------------------------------------
python3 "$AIMG" super "$TMP/super.img" --split system_b \
	system_a="$imgA" system_b="$imgB" >"$TMP/super.log" || exit 1
t_run lpinfo "$EZFS" lpinfo "$TMP/super.img"
sizeA=$(stat -c %s "$imgA")
sizeB=$(stat -c %s "$imgB")
t_check "ezfs lpinfo lists both partitions" 0 \
	stdout "^system_a +readonly +main +$sizeA +linear:0:[0-9]+\+[0-9]+\$" \
	stdout "^system_b +readonly +main +$sizeB +linear:0:[0-9]+\+[0-9]+ linear:0:[0-9]+\+[0-9]+\$" \
	stdout "version 10\.0, slot 0 of 2" stdout "^partitions: 2\$"
check "super.img:system_a" "$TMP/super.img:system_a" "$wantA" "$imgA"
check "super.img:system_b (2 extents)" "$TMP/super.img:system_b" "$wantB" "$imgB"
bad "no such partition" "no partition 'vendor_a' .*system_a, system_b" \
	"$EZFS" ls "$TMP/super.img:vendor_a" /
bad "a super image without a partition" "an Android super image: name one of its partitions as .*super\.img:NAME" \
	"$EZFS" ls "$TMP/super.img" /
sec=$(grep -m1 '^super: system_a' "$TMP/super.log" | sed 's/.*at sector //')
t_run offs "$EZFS" ls -l --offset $((sec * 512)) "$TMP/super.img" /
t_run lsraw "$EZFS" ls -l "$imgA" /
t_expect "ezfs ls --offset of system_a's first sector in the super image" cmp -s "$TMP/offs.out" "$TMP/lsraw.out"
bad "lpinfo of an EROFS image" "not a super image" "$EZFS" lpinfo "$imgA"
t_run lpinfo1 "$EZFS" lpinfo -s 1 "$TMP/super.img"
t_check "ezfs lpinfo -s 1" 0 stdout "slot 1 of 2" stdout "^system_b "
bad "lpinfo of a slot that is not there" "no metadata slot 2" \
	"$EZFS" lpinfo -s 2 "$TMP/super.img"

# version 10.2 (256-byte header), a SLOT_SUFFIXED partition named without
# its suffix
python3 "$AIMG" super "$TMP/super2.img" --minor 2 --suffixed vendor \
	vendor="$imgA" >/dev/null || exit 1
t_run lpinfo2 "$EZFS" lpinfo "$TMP/super2.img"
t_check "lpinfo: version 10.2, slot-suffixed" 0 stdout "version 10\.2" \
	stdout "^vendor +readonly,slot-suffixed "
for s in a b; do
	t_run fsck "$EZFS" fsck -q "$TMP/super2.img:vendor_$s"
	t_check "super2.img:vendor_$s (slot-suffixed vendor)" 0
done

# sparse super images, and a split set of one
if [ $LIBSPARSE = 1 ]; then
	img2simg "$TMP/super.img" "$TMP/super.simg" || exit 1
	check "sparse super.simg:system_b" "$TMP/super.simg:system_b" "$wantB" "$imgB"
	simg2simg "$TMP/super.simg" "$TMP/super.img_sparsechunk" 5000000 || exit 1
	n=$(ls "$TMP"/super.img_sparsechunk.* | wc -l)
	t_run lpinfo3 "$EZFS" lpinfo "$TMP/super.img_sparsechunk.0"
	t_check "lpinfo of a split sparse super image" 0 stdout "sparse, $n files" \
		stdout "^system_a "
	check "split super:system_a" "$TMP/super.img_sparsechunk.0:system_a" "$wantA" "$imgA"
	rm -f "$TMP"/super.img_sparsechunk.* "$TMP/super.simg"
fi

# --- broken containers ------------------------------------------------------
# poke FILE OFFSET HEXBYTES: overwrite bytes in place
poke() { printf "$(echo "$3" | sed 's/../\\x&/g')" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none; }

python3 "$AIMG" sparse "$imgA" "$TMP/s.simg" >/dev/null || exit 1
head -c 5000 "$TMP/s.simg" >"$TMP/t.simg"
bad "truncated sparse image" "truncated: chunk 0 \(raw\)" "$EZFS" ls "$TMP/t.simg" /
head -c 20 "$TMP/s.simg" >"$TMP/t.simg"
bad "truncated sparse header" "truncated sparse header" "$EZFS" fsck "$TMP/t.simg"
cp "$TMP/s.simg" "$TMP/v.simg" && poke "$TMP/v.simg" 4 0200
bad "sparse version 2" "sparse format version 2\.0" "$EZFS" cat "$TMP/v.simg" /x
cp "$TMP/s.simg" "$TMP/c.simg" && poke "$TMP/c.simg" 28 3412
bad "unknown chunk type" "chunk 0 at byte 28: unknown type 0x1234" "$EZFS" extract "$TMP/c.simg" "$TMP/none"
cp "$TMP/s.simg" "$TMP/n.simg" && poke "$TMP/n.simg" 20 ffffff00
bad "too many chunks" "truncated: [0-9]+ chunks do not fit" "$EZFS" info "$TMP/n.simg"
cp "$TMP/s.simg" "$TMP/b.simg" && poke "$TMP/b.simg" 32 ffffff00
bad "chunk past the image's blocks" "chunk 0 \(raw, [0-9]+ blocks\) at byte 28: size|run past" "$EZFS" ls "$TMP/b.simg" /
cp "$TMP/s.simg" "$TMP/z.simg" && poke "$TMP/z.simg" 12 03000000
bad "block size not a multiple of 4" "block size 3" "$EZFS" ls "$TMP/z.simg" /

cp "$TMP/super.img" "$TMP/g.img"
poke "$TMP/g.img" 4136 ff # in the primary geometry
t_run geo1 "$EZFS" fsck -q "$TMP/g.img:system_a"
t_check "bad primary geometry: the backup is used" 0
t_run geo1l "$EZFS" lpinfo "$TMP/g.img"
t_check "lpinfo warns of the backup geometry" 0 stderr "LP geometry: checksum mismatch, using the backup"
poke "$TMP/g.img" 8232 ff # and in its backup
bad "both geometries bad" "LP geometry: checksum mismatch \(backup: checksum mismatch\)" \
	"$EZFS" ls "$TMP/g.img:system_a" /
bad "lpinfo: both geometries bad" "LP geometry: checksum mismatch" "$EZFS" lpinfo "$TMP/g.img"
cp "$TMP/super.img" "$TMP/m.img"
poke "$TMP/m.img" 12300 ff # slot 0's header checksum
t_run meta1 "$EZFS" fsck -q "$TMP/m.img:system_b"
t_check "bad slot 0 metadata: the backup is used" 0
poke "$TMP/m.img" $((12288 + 2 * 65536 + 12)) ff
bad "both metadata copies bad" "slot 0: header checksum mismatch \(backup: header checksum mismatch\)" \
	"$EZFS" cat "$TMP/m.img:system_b" /x
cp "$TMP/super.img" "$TMP/x.img"
poke "$TMP/x.img" $((12288 + 2 * 65536 + 128 + 60)) ff # a table byte, in both
poke "$TMP/x.img" $((12288 + 128 + 60)) ff
bad "tables checksum" "tables checksum mismatch" "$EZFS" lpinfo "$TMP/x.img"
head -c 20000 "$TMP/super.img" >"$TMP/tr.img"
bad "super image cut in its metadata" "slot 0: past the end" "$EZFS" ls "$TMP/tr.img:system_a" /
head -c $((2 << 20)) "$TMP/super.img" >"$TMP/tr.img"
bad "super image cut in its data" "partition 'system_a': extent 0 .* outside" \
	"$EZFS" ls "$TMP/tr.img:system_a" /
if [ $LIBSPARSE = 1 ]; then
	img2simg "$TMP/super.img" "$TMP/super.simg"
	head -c 300000 "$TMP/super.simg" >"$TMP/tr.simg"
	bad "truncated sparse super image" "truncated" "$EZFS" ls "$TMP/tr.simg:system_a" /
fi

# --- FUSE mount of a sparse image ---------------------------------------------
if t_is_root && [ -c /dev/fuse ] && (exec 3<>/dev/fuse) 2>/dev/null &&
	! "$EZFS" mount --help 2>&1 | grep -q "without FUSE"; then
	if t_fuse_start "$TMP/dc.simg" "$TMP/fuse.log"; then
		t_manifest "$MP" >"$TMP/m.json"
		t_fuse_stop || t_fail "ezfs umount of the sparse image"
		[ $EXTRACT = 1 ] && t_same_manifest "ezfs mount of a sparse image" "$wantA" "$TMP/m.json"
	else
		t_fail "ezfs mount of a sparse image"
	fi
	# lib/mount resolves IMAGE with realpath(3) before it opens it
	echo "SKIP: FUSE mount of SUPER:NAME (ezfs mount needs IMAGE to be an existing path)"
else
	echo "SKIP: FUSE mount of a sparse image (needs root, /dev/fuse and an ezfs with FUSE)"
fi
t_done
