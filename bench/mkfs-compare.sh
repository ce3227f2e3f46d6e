#!/bin/bash
# SPDX-License-Identifier: MIT
# mkfs-compare.sh - benchmark (not a test): image size and wall time of
# ezfs mkfs, Debian's mkfs.erofs, a second mkfs.erofs (e.g. 1.9.3) and
# mksquashfs on the same inputs, one row per case, one column pair per tool.
#
# Inputs: the Debian linux-source-6.1 tree (installed with apt if missing,
# extracted under $WORK) and one text file: $TEXT, else one concatenated
# from the tree's *.c, *.h, *.rst and *.txt files (sorted paths); at most
# $TEXT_MAX bytes of it.
#
# Environment:
#   EZFS       ezfs binary (default: build/tools/ezfs/ezfs, else the first
#              other build*/ that is not a sanitizer build)
#   WORK       scratch directory (default /tmp/ezfs-mkfs-bench)
#   SUBSET     sub-directory of the linux tree to use instead of all of it
#              (a reduced input, e.g. SUBSET=drivers/net)
#   TEXT       a text file to use (e.g. the anchors' text.txt)
#   TEXT_MAX   size cap of the text file (default 67108864)
#   DATASETS   "tree text" (default), or one of them
#   ALGS       algorithms, each ALG or ALG,LEVEL
#              (default "lz4 lz4hc lzma deflate zstd")
#   CLUSTERS   cluster sizes in bytes (default "4096 65536 1048576")
#   EXTRA      -E option sets, each a row after the plain one
#              (default "ztailpacking,fragments"; "" for none)
#   MKFS_EROFS mkfs.erofs to compare with (default: mkfs.erofs in PATH;
#              Debian's 1.5 runs only lz4/lz4hc without -E)
#   MKFS_EROFS2 a second mkfs.erofs (1.6 or later: every algorithm, levels
#              as -zALG,level=N, -E options), e.g. a local build of 1.9.3
#              (default: none). In both tools `deflate` is the tool's own
#              one-pass encoder (1.9.3: kite, as in ANCHORS.md) and
#              `libdeflate` libdeflate's (ALGS="libdeflate,9")
#   SQUASHFS   0: leave mksquashfs out (default 1 when installed)
#   WORKERS    threads for every tool (default: nproc)
# Output: a markdown table on stdout (MiB and wall seconds per tool, the
# ratio of ezfs's image to the input); images are deleted after use.
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-/tmp/ezfs-mkfs-bench}
TEXT_MAX=${TEXT_MAX:-67108864}
ALGS=${ALGS:-"lz4 lz4hc lzma deflate zstd"}
CLUSTERS=${CLUSTERS:-"4096 65536 1048576"}
EXTRA=${EXTRA-"ztailpacking,fragments"}
MKFS_EROFS=${MKFS_EROFS:-$(command -v mkfs.erofs || true)}
MKFS_EROFS2=${MKFS_EROFS2:-}
DATASETS=${DATASETS:-"tree text"}
SQUASHFS=${SQUASHFS:-1}
command -v mksquashfs >/dev/null || SQUASHFS=0
WORKERS=${WORKERS:-$(nproc)}
if [ -z "${EZFS:-}" ]; then
	# build/ first; never a sanitizer build (build-asan sorts first)
	for c in "$ROOT"/build/tools/ezfs/ezfs "$ROOT"/build*/tools/ezfs/ezfs; do
		case $c in *asan*|*tsan*|*ubsan*|*fuzz*) continue;; esac
		[ -x "$c" ] && EZFS=$c && break
	done
fi
[ -x "${EZFS:-}" ] || { echo "no ezfs binary: set EZFS" >&2; exit 1; }

mkdir -p "$WORK" || exit 1
TARBALL=$(ls /usr/src/linux-source-6.1.tar.* 2>/dev/null | head -n 1)
if [ -z "$TARBALL" ]; then
	echo "installing linux-source-6.1 (apt)..." >&2
	apt-get install -y linux-source-6.1 >&2 || { echo "apt failed" >&2; exit 1; }
	TARBALL=$(ls /usr/src/linux-source-6.1.tar.* | head -n 1)
fi
TREE=$WORK/linux${SUBSET:+/$SUBSET}
if [ ! -d "$TREE" ]; then
	# with SUBSET only that part of the tarball is extracted
	top=$(tar -tf "$TARBALL" | head -n 1 | cut -d/ -f1)
	echo "extracting $TARBALL${SUBSET:+ ($SUBSET)}..." >&2
	rm -rf "$WORK/linux.tmp" && mkdir -p "$WORK/linux.tmp" &&
	tar -xf "$TARBALL" -C "$WORK/linux.tmp" --strip-components=1 \
		"$top${SUBSET:+/$SUBSET}" || exit 1
	if [ -d "$WORK/linux" ]; then
		cp -a "$WORK/linux.tmp/." "$WORK/linux/" && rm -rf "$WORK/linux.tmp"
	else
		mv "$WORK/linux.tmp" "$WORK/linux"
	fi || exit 1
fi
[ -d "$TREE" ] || { echo "no $TREE" >&2; exit 1; }
# a directory holding the text file: mkfs.erofs wants a directory
if [ -n "${TEXT:-}" ]; then
	TEXTDIR=$WORK/text-$(basename "$TEXT")-$TEXT_MAX
	[ -f "$TEXT" ] || { echo "no $TEXT" >&2; exit 1; }
else
	TEXTDIR=$WORK/text${SUBSET:+-$(echo "$SUBSET" | tr / _)}
fi
if [ ! -f "$TEXTDIR/text.txt" ]; then
	mkdir -p "$TEXTDIR"
	if [ -n "${TEXT:-}" ]; then
		head -c "$TEXT_MAX" "$TEXT"
	else
		(cd "$TREE" && find . -type f \( -name '*.c' -o -name '*.h' -o \
			-name '*.rst' -o -name '*.txt' \) -print0 |
			LC_ALL=C sort -z | xargs -0 cat) | head -c "$TEXT_MAX"
	fi >"$TEXTDIR/text.txt"
fi

now() { date +%s.%N; }
# run IMG CMD...: prints "MiB | wall" of one run (or the error), the
# image bytes go to $WORK/size (it runs in a subshell)
run() {
	local img=$1 t0 t1 sz
	shift
	rm -f "$img"
	echo 0 >"$WORK/size"
	t0=$(now)
	if ! "$@" >/dev/null 2>"$WORK/err" || [ ! -s "$img" ]; then
		echo "$(head -c 60 "$WORK/err" | tr '\n|' '  ') | -"
		return
	fi
	t1=$(now)
	sz=$(stat -c %s "$img")
	echo "$sz" >"$WORK/size"
	rm -f "$img"
	awk -v sz="$sz" -v t0="$t0" -v t1="$t1" \
		'BEGIN { printf "%.2f | %.2f", sz / 1048576, t1 - t0 }'
}

sqfs_comp() {
	case $1 in
	lz4) echo "-comp lz4";;
	lz4hc) echo "-comp lz4 -Xhc";;
	lzma) echo "-comp xz";;
	deflate|libdeflate) echo "-comp gzip";;
	zstd) echo "-comp zstd";;
	esac
}

# case DATASET SRC INBYTES ALG LEVEL CLUSTER EOPT: one table row
case_row() {
	local ds=$1 src=$2 inb=$3 alg=$4 lvl=$5 cl=$6 e=$7 zo=() mo=() eo=()
	local c1 c2 c3 c4 ratio
	if [ "$alg" != none ]; then
		zo=(-z "$alg${lvl:+,$lvl}" -C "$cl")
		mo=(-z"$alg${lvl:+,level=$lvl}" -C"$cl")
	fi
	[ "$e" != - ] && eo=(-E "$e")
	c1=$(run "$IMG" "$EZFS" mkfs -q -T0 --workers="$WORKERS" "${zo[@]}" \
		"${eo[@]}" "$IMG" "$src")
	ratio=$(awk -v a="$(cat "$WORK/size")" -v b="$inb" 'BEGIN { printf "%.4f", a / b }')
	c2="- | -"
	# Debian's mkfs.erofs 1.5 knows lz4 and lz4hc, no levels, no -E
	case $alg$lvl$e in none-|lz4-|lz4hc-)
		[ -n "$MKFS_EROFS" ] &&
			c2=$(run "$IMG" "$MKFS_EROFS" --quiet -T0 \
				${zo[@]:+-z$alg -C$cl} "$IMG" "$src");;
	esac
	c3="- | -"
	[ -n "$MKFS_EROFS2" ] &&
		c3=$(run "$IMG" "$MKFS_EROFS2" --quiet -T0 --workers="$WORKERS" \
			"${mo[@]}" ${eo[@]:+-E"$e"} "$IMG" "$src")
	c4="- | -"
	if [ "$SQUASHFS" = 1 ] && [ "$e" = - ] && [ "$alg" != none ]; then
		# shellcheck disable=SC2046
		c4=$(run "$IMG" mksquashfs "$src" "$IMG" -noappend -quiet \
			-no-progress -processors "$WORKERS" -b "$cl" \
			$(sqfs_comp "$alg"))
	fi
	printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$ds" \
		"$alg${lvl:+-$lvl}" "${cl:--}" "$e" "$ratio" "$c1" "$c2" "$c3" "$c4"
}

echo "# $(date -u +%FT%TZ) $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), workers $WORKERS"
echo "# ezfs: $EZFS; mkfs.erofs: ${MKFS_EROFS:-none}; mkfs.erofs2: ${MKFS_EROFS2:-none}$([ -n "$MKFS_EROFS2" ] && echo " ($("$MKFS_EROFS2" -V 2>&1 | head -n 1))"); mksquashfs: $([ "$SQUASHFS" = 1 ] && command -v mksquashfs || echo none)"
echo
echo "| dataset | algorithm | cluster | -E | ezfs ratio | ezfs MiB | ezfs s | mkfs.erofs MiB | s | mkfs.erofs2 MiB | s | mksquashfs MiB | s |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
IMG=$WORK/out.img
for ds in $DATASETS; do
	case $ds in
	tree) src=$TREE;;
	text) src=$TEXTDIR;;
	*) echo "unknown dataset $ds" >&2; exit 1;;
	esac
	inb=$(find "$src" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
	case_row "$ds" "$src" "$inb" none "" "" -
	for a in $ALGS; do
		alg=${a%%,*} lvl=
		[ "$alg" != "$a" ] && lvl=${a#*,}
		for cl in $CLUSTERS; do
			for e in - $EXTRA; do
				case_row "$ds" "$src" "$inb" "$alg" "$lvl" "$cl" "$e"
			done
		done
	done
done
