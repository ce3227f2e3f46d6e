#!/bin/bash
# SPDX-License-Identifier: MIT
# The optional parts: one build in a temporary folder with zstd,
# libdeflate, ISA-L and FUSE left out (-DEZFS_WITH_...=OFF, no tests).
# --version says so, there is no mount command, -z zstd and -z libdeflate
# are refused with one line (exit 2), a zstd image with one line at open,
# and the rest works: lz4, lzma and deflate (zlib) images are built,
# checked and read as the full build reads them.
#
# usage: tests/interop/build-options.sh
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
t_init
t_need_cmd cmake ninja

b=$TMP/build
echo "configuring and building in $b (ninja -j2, the ezfs command only)"
if ! cmake -S "$SRC" -B "$b" -G Ninja -DEZFS_WERROR=ON -DEZFS_BUILD_TESTS=OFF \
	-DEZFS_WITH_ZSTD=OFF -DEZFS_WITH_LIBDEFLATE=OFF -DEZFS_WITH_ISAL=OFF \
	-DEZFS_WITH_FUSE=OFF >"$TMP/cmake.log" 2>&1; then
	tail -n 20 "$TMP/cmake.log"
	t_fail "cmake with zstd, libdeflate, isal and fuse off"
	t_done
fi
if ! ninja -C "$b" -j2 ezfs_tool >"$TMP/ninja.log" 2>&1; then
	grep -E 'error|FAILED' "$TMP/ninja.log" | head -n 20
	t_fail "the build with zstd, libdeflate, isal and fuse off"
	t_done
fi
t_pass "builds with zstd, libdeflate, isal and fuse off"
small=$b/tools/ezfs/ezfs

t_run ver "$small" --version
t_check "--version: the features left out" 0 \
	stdout '^features: -libdeflate -isal -zstd -fuse' \
	stdout '^engines: lz4 \(liblz4 [0-9.]+\), zlib \(zlib [0-9.]+\), lzma \(liblzma [0-9.]+\)(, dpdk(:[a-z_]+)?)*$'
t_expect "the full build's --version has them" \
	grep -qE '^features: \+libdeflate \+isal \+zstd \+fuse' <("$EZFS" --version)

t_run help "$small" --help
if grep -qE '^  (mount|umount) ' "$OUT"; then
	t_fail "--help lists mount without FUSE"
else
	t_pass "no mount command in --help"
fi
t_run mount "$small" mount x y
t_check "ezfs mount: unknown command" 2 stderr "unknown command 'mount'"
t_run alist "$small" accel list --json
t_expect "accel list: no zstd, libdeflate or isal engine" python3 -c '
import json, sys
# the DPDK engines (a plugin loaded on use) are there where DPDK is
n = {e["name"] for e in json.load(open(sys.argv[1]))["engines"]
     if not e["name"].startswith("dpdk")}
sys.exit(not (n == {"lz4", "zlib", "lzma"}))' "$OUT"

src=$TMP/src
mkdir -p "$src/d"
head -c 300000 /dev/urandom | base64 >"$src/d/text"
seq 1 20000 >"$src/nums"
for z in zstd libdeflate "deflate,level=12" "lz4hc:zstd"; do
	t_run mkz "$small" mkfs -q -z"$z" "$TMP/z.img" "$src"
	t_check "mkfs -z $z: refused, exit 2" 2 stderr "built without"
	t_one_line "mkfs -z $z: one line" "$ERR"
	t_expect "mkfs -z $z: no image" [ ! -e "$TMP/z.img" ]
done
for z in lz4 lz4hc lzma deflate "deflate,level=9"; do
	rm -f "$TMP/z.img"
	t_run mkz "$small" mkfs -q -z"$z" -C65536 "$TMP/z.img" "$src"
	t_check "mkfs -z $z" 0
	t_run fz "$small" fsck -q "$TMP/z.img"
	t_check "fsck of its -z $z image" 0
	t_run fz "$EZFS" fsck -q "$TMP/z.img"
	t_check "the full build's fsck of its -z $z image" 0
	t_expect "cat of its -z $z image" cmp -s <("$small" cat "$TMP/z.img" /d/text) "$src/d/text"
done

# A zstd image: one line at open; info shows it all the same
zimg=
if [ -f "$SHARED/fixtures/zstd-256k.img.zst" ] && command -v zstd >/dev/null; then
	zstd -q -d -f "$SHARED/fixtures/zstd-256k.img.zst" -o "$TMP/zstd.img"
	zimg=$TMP/zstd.img
else
	# the full build makes one
	"$EZFS" mkfs -q -zzstd "$TMP/zstd.img" "$src" && zimg=$TMP/zstd.img
fi
if [ -n "$zimg" ]; then
	for c in "cat $zimg /nums" "fsck $zimg" "ls $zimg" "extract $zimg $TMP/x"; do
		# shellcheck disable=SC2086  # the command line is words on purpose
		t_run zr "$small" $c
		t_check "${c%% *} of a zstd image: refused" 1 stderr "compressed with zstd, which this ezfs was built without"
		t_one_line "${c%% *} of a zstd image: one line" "$ERR"
	done
	t_run zi "$small" info "$zimg"
	t_check "info of a zstd image works" 0 stdout '^Algorithms: +zstd'
else
	t_fail "no zstd image to read (no fixture, and the full build made none)"
fi

# Fixtures that need none of what was left out read as the full build reads
# them (deflate through zlib alone)
for n in lz4-4k lzma-1m deflate-16k libdeflate-128k; do
	z=$SHARED/fixtures/$n.img.zst
	if [ ! -f "$z" ] || ! command -v zstd >/dev/null; then
		continue
	fi
	zstd -q -d -f "$z" -o "$TMP/f.img"
	t_run ff "$small" fsck -q "$TMP/f.img"
	t_check "fixture $n: fsck" 0
	t_expect "fixture $n: accel stats digest as the full build's" cmp -s \
		<("$small" accel stats "$TMP/f.img" | grep '^digest') \
		<("$EZFS" accel stats "$TMP/f.img" | grep '^digest')
done
t_done
