#!/bin/bash
# SPDX-License-Identifier: MIT
# mkfs-compare.sh - benchmark (not a test): image size, ratio and wall time
# of ezfs mkfs, Debian mkfs.erofs and mksquashfs on the same inputs.
#
# Inputs: the Debian linux-source-6.1 tree (installed with apt if missing,
# extracted under $WORK) and one text file concatenated from its *.c, *.h,
# *.rst and *.txt files (sorted paths, at most $TEXT_MAX bytes).
#
# Environment:
#   EZFS       ezfs binary (default: first of build*/tools/ezfs/ezfs)
#   WORK       scratch directory (default /tmp/ezfs-mkfs-bench)
#   SUBSET     sub-directory of the linux tree to use instead of all of it
#              (a reduced input, e.g. SUBSET=drivers/net)
#   TEXT_MAX   size cap of the text file (default 67108864)
#   ALGS       algorithms (default "lz4 lz4hc lzma deflate zstd")
#   CLUSTERS   cluster sizes in bytes (default "4096 65536 1048576")
#   EXTRA      extra ezfs -E options to add as separate rows
#              (default "ztailpacking,fragments")
#   MKFS_EROFS mkfs.erofs to compare with (default: mkfs.erofs in PATH)
#   WORKERS    threads for every tool (default: nproc)
# Output: one table row per run on stdout; images are deleted after use.
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-/tmp/ezfs-mkfs-bench}
TEXT_MAX=${TEXT_MAX:-67108864}
ALGS=${ALGS:-"lz4 lz4hc lzma deflate zstd"}
CLUSTERS=${CLUSTERS:-"4096 65536 1048576"}
EXTRA=${EXTRA-"ztailpacking,fragments"}
MKFS_EROFS=${MKFS_EROFS:-$(command -v mkfs.erofs || true)}
WORKERS=${WORKERS:-$(nproc)}
if [ -z "${EZFS:-}" ]; then
	for c in "$ROOT"/build*/tools/ezfs/ezfs; do
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
TEXTDIR=$WORK/text${SUBSET:+-$(echo "$SUBSET" | tr / _)}
if [ ! -f "$TEXTDIR/text.txt" ]; then
	mkdir -p "$TEXTDIR"
	(cd "$TREE" && find . -type f \( -name '*.c' -o -name '*.h' -o \
		-name '*.rst' -o -name '*.txt' \) -print0 | LC_ALL=C sort -z |
		xargs -0 cat) | head -c "$TEXT_MAX" >"$TEXTDIR/text.txt"
fi

now() { date +%s.%N; }
# run TOOLNAME ALG CLUSTER DATASET INBYTES IMG CMD...
run() {
	local tool=$1 alg=$2 cl=$3 ds=$4 inb=$5 img=$6 t0 t1 sz
	shift 6
	rm -f "$img"
	t0=$(now)
	if ! "$@" >/dev/null 2>"$WORK/err"; then
		printf '| %s | %s | %s | %s | failed: %s | | |\n' "$ds" "$tool" \
			"$alg" "$cl" "$(head -c 80 "$WORK/err" | tr '\n' ' ')"
		return
	fi
	t1=$(now)
	sz=$(stat -c %s "$img")
	awk -v ds="$ds" -v tool="$tool" -v alg="$alg" -v cl="$cl" -v sz="$sz" \
		-v inb="$inb" -v t0="$t0" -v t1="$t1" 'BEGIN {
		printf "| %s | %s | %s | %s | %.2f | %.4f | %.2f |\n",
			ds, tool, alg, cl, sz / 1048576, sz / inb, t1 - t0 }'
	rm -f "$img"
}

sqfs_comp() {
	case $1 in
	lz4) echo "-comp lz4";;
	lz4hc) echo "-comp lz4 -Xhc";;
	lzma) echo "-comp xz";;
	deflate) echo "-comp gzip";;
	zstd) echo "-comp zstd";;
	esac
}

echo "# $(date -u +%FT%TZ) $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), workers $WORKERS"
echo "# ezfs: $EZFS; mkfs.erofs: ${MKFS_EROFS:-none}; mksquashfs: $(command -v mksquashfs || echo none)"
echo
echo "| dataset | tool | algorithm | cluster | image MiB | ratio | wall s |"
echo "|---|---|---|---|---|---|---|"
IMG=$WORK/out.img
for ds in tree text; do
	if [ $ds = tree ]; then
		src=$TREE
	else
		src=$TEXTDIR
	fi
	inb=$(find "$src" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
	run ezfs none - $ds "$inb" "$IMG" "$EZFS" mkfs -q -T0 --workers="$WORKERS" "$IMG" "$src"
	[ -n "$MKFS_EROFS" ] &&
		run mkfs.erofs none - $ds "$inb" "$IMG" "$MKFS_EROFS" --quiet -T0 "$IMG" "$src"
	for alg in $ALGS; do
		for cl in $CLUSTERS; do
			run ezfs "$alg" "$cl" $ds "$inb" "$IMG" "$EZFS" mkfs -q -T0 \
				--workers="$WORKERS" -z "$alg" -C "$cl" "$IMG" "$src"
			for e in $EXTRA; do
				run ezfs "$alg -E$e" "$cl" $ds "$inb" "$IMG" "$EZFS" mkfs \
					-q -T0 --workers="$WORKERS" -z "$alg" -C "$cl" -E "$e" \
					"$IMG" "$src"
			done
			# Debian's mkfs.erofs 1.5 knows lz4 and lz4hc only
			case $alg in lz4|lz4hc)
				[ -n "$MKFS_EROFS" ] &&
					run mkfs.erofs "$alg" "$cl" $ds "$inb" "$IMG" \
						"$MKFS_EROFS" --quiet -T0 -z"$alg" -C"$cl" "$IMG" "$src";;
			esac
			if command -v mksquashfs >/dev/null; then
				# shellcheck disable=SC2046
				run mksquashfs "$alg" "$cl" $ds "$inb" "$IMG" mksquashfs \
					"$src" "$IMG" -noappend -quiet -no-progress \
					-processors "$WORKERS" -b "$cl" $(sqfs_comp "$alg")
			fi
		done
	done
done
