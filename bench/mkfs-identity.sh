#!/bin/bash
# SPDX-License-Identifier: MIT
# mkfs-identity.sh - not a test: the sha256 of the images `ezfs mkfs` makes
# under many option sets (every algorithm at several -C sizes, fragments,
# dedupe, ztailpacking, 48bit, -m, --zD, chunks, blobs, -b 512/1024,
# --tar=f/=i, rebuilds, --offset, --sparse, block lists...) from several
# trees, with a fixed time and UUID: a change to lib/write that is meant to
# move code, not bytes, keeps every sum.
#
#   bench/mkfs-identity.sh > sums          the sums, one "SHA256  CASE" a line
#   bench/mkfs-identity.sh --check sums    the same cases, compared: each
#                                          differing or failing case named,
#                                          exit 1 if any
#
# Trees (made once under $WORK): make_tree.py seeds 1 (default), 2 --small
# and 3 --big, and a copy of $REAL (default /usr/include) with a few option
# sets (BIG=0 leaves it out). A tar of t1 (plain and gzip) is the --tar
# source, two plain images of t1 and t2 the rebuild's layers.
#
# Environment: EZFS (default build/tools/ezfs/ezfs), WORK (default
# /tmp/ezfs-mkfs-identity), SHARED (default ../shared beside the source
# tree), REAL, BIG, ONLY (a regex: only the cases it matches).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
EZFS=${EZFS:-$src/build/tools/ezfs/ezfs}
WORK=${WORK:-/tmp/ezfs-mkfs-identity}
SHARED=${SHARED:-$src/../shared}
REAL=${REAL:-/usr/include}
BIG=${BIG:-1}
ONLY=${ONLY:-.}
check=
if [ "${1:-}" = --check ]; then
	check=${2:?usage: $0 [--check SUMS]}
	[ -r "$check" ] || { echo "$check: cannot read" >&2; exit 2; }
fi
[ -x "$EZFS" ] || { echo "$EZFS: not built" >&2; exit 2; }
mkdir -p "$WORK/img"
T=(-T 1700000000 -U 6f1c1e2a-3b4d-4e5f-8a9b-0c1d2e3f4a5b)

# the trees, once
tree() { # NAME SEED [ARG]
	[ -d "$WORK/$1" ] && return 0
	python3 "$SHARED/tools/make_tree.py" "$2" "$WORK/$1.part" ${3:+"$3"} >/dev/null
	mv "$WORK/$1.part" "$WORK/$1"
}
tree t1 1
tree t2 2 --small
tree t3 3 --big
if [ "$BIG" = 1 ] && [ ! -d "$WORK/real" ]; then
	cp -a "$REAL" "$WORK/real.part" && mv "$WORK/real.part" "$WORK/real"
fi
if [ ! -f "$WORK/t1.tar" ]; then
	tar -C "$WORK/t1" --sort=name --format=pax -cf "$WORK/t1.tar.part" . 2>/dev/null || true
	mv "$WORK/t1.tar.part" "$WORK/t1.tar"
	gzip -9 -n -c "$WORK/t1.tar" >"$WORK/t1.tar.gz"
fi
printf '4096 1 .*\\.h$\n65536 0 .*\n' >"$WORK/hints"

out=$WORK/sums.$$
: >"$out"
trap 'rm -f "$out"' EXIT

# one CASE ARGS... -- SOURCE...: the image (and any blob or list it makes)
one() {
	local name=$1 a=() s
	shift
	[[ $name =~ $ONLY ]] || return 0
	while [ "$1" != -- ]; do a+=("$1"); shift; done
	shift
	local img=$WORK/img/$name.img
	rm -f "$img" "$img".*
	if ! "$EZFS" mkfs -q "${T[@]}" "${a[@]}" "$img" "$@" 2>"$WORK/img/$name.err"; then
		echo "FAILED  $name" >>"$out"
		return 0
	fi
	s=$(sha256sum <"$img")
	echo "${s%% *}  $name" >>"$out"
	for x in "$img".*; do
		[ -f "$x" ] || continue
		s=$(sha256sum <"$x")
		echo "${s%% *}  $name${x#"$img"}" >>"$out"
	done
	rm -f "$img" "$img".*
}

# option sets for every make_tree.py tree
sets=(
	"plain|"
	"lz4|-z lz4"
	"lz4-C64k|-z lz4 -C 65536"
	"lz4hc|-z lz4hc"
	"lz4hc12-C16k|-z lz4hc,12 -C 16384"
	"lz4hc-C1m|-z lz4hc -C 1048576"
	"zstd|-z zstd"
	"zstd-C128k|-z zstd -C 131072"
	"lzma-C64k|-z lzma -C 65536"
	"lzma6-dict|-z lzma,6,dictsize=131072 -C 131072"
	"deflate-C16k|-z deflate -C 16384"
	"libdeflate-C64k|-z libdeflate,9 -C 65536"
	"ztail|-z lz4hc -E ztailpacking"
	"ztail-C64k|-z zstd -C 65536 -E ztailpacking"
	"frag|-z lz4hc -C 65536 -E fragments"
	"frag-ztail|-z lz4hc -C 65536 -E fragments,ztailpacking"
	"allfrag|-z lz4hc -E all-fragments"
	"allfrag-zstd|-z zstd -C 131072 -E all-fragments,ztailpacking"
	"dedupe|-z lz4hc -C 65536 -E dedupe"
	"dedupe-frag|-z lz4hc -C 65536 -E dedupe,fragments,ztailpacking"
	"dedupe-lzma|-z lzma -C 131072 -E dedupe"
	"48bit-lzma|-z lzma -C 65536 -E 48bit"
	"48bit-zstd|-z zstd -C 65536 -E 48bit"
	"48bit-deflate|-z deflate -C 16384 -E 48bit,ztailpacking"
	"48bit-dot|-E 48bit,dot-omitted"
	"legacy|-z lz4hc -C 16384 -E legacy-compress"
	"metabox|-z lz4hc -m 4096"
	"metabox-frag|-z lz4hc -C 65536 -m 16384 -E fragments"
	"zD|-z lz4hc --zD -E fragments"
	"zD-ztail|-z zstd -C 65536 --zD -E ztailpacking"
	"hints|-z lz4hc:lzma --compress-hints $WORK/hints -C 65536"
	"chunk4k|--chunksize 4096"
	"chunk64k-idx|--chunksize 65536 -E force-chunk-indexes"
	"chunk-blob|--chunksize 8192 --blobdev @BLOB@"
	"b1024|-b 1024"
	"b1024-lz4hc|-b 1024 -z lz4hc -C 8192 -E ztailpacking"
	"b512-frag|-b 512 -z lz4 -E fragments"
	"noinline|-E noinline_data"
	"extended|-E force-inode-extended"
	"compact-x0|-E force-inode-compact -x 0"
	"noxattr|-x -1 -z lz4"
	"offset|--offset 8192 -z lz4"
	"sparse|--sparse -z lz4hc"
	"blocklist|--block-list-file @LIST@ --chunksize 4096"
	"root|--all-root --mkfs-time"
)
for t in t1 t2 t3; do
	for s in "${sets[@]}"; do
		name=${s%%|*}
		# shellcheck disable=SC2206
		args=(${s#*|})
		args=("${args[@]/@BLOB@/$WORK/img/$t-$name.img.blob}")
		args=("${args[@]/@LIST@/$WORK/img/$t-$name.img.list}")
		one "$t-$name" "${args[@]}" -- "$WORK/$t"
	done
done
# tar sources
one tar-f --tar=f -- "$WORK/t1.tar"
one tar-f-gz --tar=f -- "$WORK/t1.tar.gz"
one tar-f-frag --tar=f -z lz4hc -C 65536 -E fragments,ztailpacking -- "$WORK/t1.tar"
one tar-f-dedupe --tar=f -z zstd -C 65536 -E dedupe -- "$WORK/t1.tar"
one tar-f-chunk --tar=f --chunksize 4096 -- "$WORK/t1.tar"
one tar-i --tar=i -- "$WORK/t1.tar"
one tar-i-b4096 --tar=i -b 4096 -- "$WORK/t1.tar"
one tar-i-ext --tar=i -E force-inode-extended -- "$WORK/t1.tar"
# rebuild: the layers are plain images of t1 and t2
if [[ rebuild =~ $ONLY ]]; then
	"$EZFS" mkfs -q "${T[@]}" -E noinline_data "$WORK/l1.erofs" "$WORK/t1"
	"$EZFS" mkfs -q "${T[@]}" -E noinline_data "$WORK/l2.erofs" "$WORK/t2"
	one rebuild -- "$WORK/l1.erofs" "$WORK/l2.erofs"
	one rebuild-b-ext -E force-inode-extended -- "$WORK/l2.erofs" "$WORK/l1.erofs"
fi
# the real tree
if [ "$BIG" = 1 ]; then
	one real-plain -- "$WORK/real"
	one real-lz4hc -z lz4hc -- "$WORK/real"
	one real-frag -z lz4hc -C 65536 -E fragments,ztailpacking -- "$WORK/real"
	one real-dedupe -z zstd -C 65536 -E dedupe -- "$WORK/real"
	one real-allfrag-zD -z lz4hc -E all-fragments --zD -- "$WORK/real"
	one real-metabox -z lz4hc -m 4096 -- "$WORK/real"
	one real-chunk -b 1024 --chunksize 4096 -- "$WORK/real"
	one real-lzma -z lzma -C 131072 -E 48bit -- "$WORK/real"
fi

if [ -z "$check" ]; then
	cat "$out"
	exit 0
fi
bad=0
while read -r sum name; do
	want=$(awk -v n="$name" '$2 == n {print $1}' "$check")
	if [ "$sum" = FAILED ]; then
		echo "FAILED: $name: $(head -c 300 "$WORK/img/$name.err")"
		bad=$((bad + 1))
	elif [ -z "$want" ]; then
		echo "NEW: $name (not in $check)"
	elif [ "$sum" != "$want" ]; then
		echo "DIFFERS: $name"
		bad=$((bad + 1))
	fi
done <"$out"
n=$(wc -l <"$out")
[ $bad = 0 ] && echo "ok: $n sums as in $check" && exit 0
echo "$bad of $n cases differ or fail"
exit 1
