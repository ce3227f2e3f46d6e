#!/bin/bash
# SPDX-License-Identifier: MIT
# Every symbol that libezfs.so exports must carry the ezfs_ prefix, and the
# public API must be there (a library that exports nothing would pass the
# first check). The static library, whose every global symbol a program
# links against, must define nothing unprefixed: public functions are
# ezfs_, internal ones ezi_ (so ezfs_ means "declared in include/ezfs").
#
# usage: tests/unit/test_symbols.sh [LIBEZFS.so [LIBEZFS.a]]
#        (default: $EZFS_LIB)
set -euo pipefail
lib=${1:-${EZFS_LIB:-}}
[ -n "$lib" ] || { echo "usage: $0 LIBEZFS.so"; exit 2; }
[ -f "$lib" ] || { echo "FAIL: $lib does not exist"; exit 1; }
command -v nm >/dev/null || { echo "SKIP: nm (binutils) is not installed"; exit 77; }

# Defined dynamic symbols, less the linker's own markers.
syms=$(nm -D --defined-only "$lib" | awk '{print $NF}' |
	grep -v -E '^(_init|_fini|_edata|_end|__bss_start|_DYNAMIC|_GLOBAL_OFFSET_TABLE_)$' | sort -u)
bad=$(grep -v '^ezfs_' <<<"$syms" || true)
n=$(grep -c . <<<"$syms" || true)
fails=0
if [ -n "$bad" ]; then
	echo "FAIL: exported symbols without the ezfs_ prefix:"
	sed 's/^/  /' <<<"$bad" | head -n 40
	fails=$((fails + 1))
else
	echo "ok: all $n exported symbols start with ezfs_"
fi
for want in ezfs_image_open ezfs_image_close; do
	if grep -qx "$want" <<<"$syms"; then
		echo "ok: $want is exported"
	else
		echo "FAIL: $want is not exported"
		fails=$((fails + 1))
	fi
done
# libezfs reads images without FUSE: libfuse3 belongs to libezfs-fuse only.
if command -v readelf >/dev/null; then
	if readelf -d "$lib" | grep -q 'NEEDED.*libfuse'; then
		echo "FAIL: $(basename "$lib") needs libfuse3 (lib/mount belongs in libezfs-fuse)"
		fails=$((fails + 1))
	else
		echo "ok: $(basename "$lib") does not need libfuse3"
	fi
else
	echo "SKIP: readelf is not installed: the libfuse3 check did not run"
fi

# The ABI as debian/libezfs0.symbols records it: a symbol added or removed
# without that file changing is an ABI change nobody saw.
src=${EZFS_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
symfile=$src/debian/libezfs0.symbols
# symcheck SONAME LIBRARY: the file's section for SONAME against LIBRARY's exports
symcheck() {
	local listed have added gone
	listed=$(awk -v so="$1" '/^[^ *]/ {f = ($1 == so); next}
		f && /^ ezfs_/ {sub(/@.*/, "", $1); print $1}' "$symfile" | sort -u)
	have=$(nm -D --defined-only "$2" | awk '{print $NF}' | grep '^ezfs_' | sort -u)
	added=$(comm -13 <(echo "$listed") <(echo "$have") | grep . || true)
	gone=$(comm -23 <(echo "$listed") <(echo "$have") | grep . || true)
	if [ -n "$added$gone" ]; then
		echo "FAIL: $(basename "$2") exports differ from $1 in debian/libezfs0.symbols:"
		[ -z "$added" ] || sed 's/^/  new, not in the file: /' <<<"$added" | head -n 40
		[ -z "$gone" ] || sed 's/^/  in the file, not exported: /' <<<"$gone" | head -n 40
		fails=$((fails + 1))
	else
		echo "ok: $(basename "$2") exports exactly the $(grep -c . <<<"$have") symbols of $1 in debian/libezfs0.symbols"
	fi
}
if [ -f "$symfile" ]; then
	symcheck libezfs.so.0 "$lib"
	fuse=$(dirname "$lib")/libezfs-fuse.so
	if [ -f "$fuse" ]; then
		symcheck libezfs-fuse.so.0 "$fuse"
	else
		echo "SKIP: $fuse was not built: its symbols were not compared"
	fi
else
	echo "FAIL: $symfile is missing"
	fails=$((fails + 1))
fi

a=${2:-}
if [ -n "$a" ]; then
	[ -f "$a" ] || { echo "FAIL: $a does not exist"; exit 1; }
	public=$(grep -ho 'EZFS_API[^;(]*(' "$src"/include/ezfs/*.h |
		sed 's/.*[ *]\(ezfs_[a-z0-9_]*\)($/\1/' | sort -u)
	# less what a sanitizer adds (__odr_asan.NAME, __asan_*, __tsan_*...)
	adefs=$(nm -g --defined-only "$a" | awk 'NF == 3 {print $3}' |
		grep -v -E '^__(odr_asan|asan|ubsan|tsan|sanitizer)' | sort -u)
	bad=$(grep -v -E '^(ezfs_|ezi_)' <<<"$adefs" || true)
	if [ -n "$bad" ]; then
		echo "FAIL: $(basename "$a") defines symbols without the ezfs_ or ezi_ prefix:"
		sed 's/^/  /' <<<"$bad" | head -n 40
		fails=$((fails + 1))
	else
		echo "ok: every global symbol of $(basename "$a") is ezfs_ or ezi_"
	fi
	# not_public WHAT SYMBOLS: fail on the ezfs_ ones include/ezfs lacks
	not_public() {
		local bad
		bad=$(comm -23 <(grep '^ezfs_' <<<"$2" || true) \
			<(sort -u <<<"$public"))
		if [ -n "$bad" ]; then
			echo "FAIL: ezfs_ symbols $1 that include/ezfs does not declare (internal ones are ezi_):"
			sed 's/^/  /' <<<"$bad" | head -n 40
			fails=$((fails + 1))
		else
			echo "ok: every ezfs_ symbol $1 is public API"
		fi
	}
	not_public "of $(basename "$a")" "$adefs"
	not_public "$(basename "$lib") exports" "$syms"
fi
[ $fails -eq 0 ]
