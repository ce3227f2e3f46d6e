#!/bin/bash
# SPDX-License-Identifier: MIT
# Benchmark, not a test: how long does extracting a whole image take with
# `ezfs extract`, Debian's `fsck.erofs --extract` (erofs-utils 1.5) and
# `unsquashfs` (squashfs-tools 4.5)? The data set is the Linux 6.1 source
# tree from Debian's linux-source-6.1. Images are read warm from the page
# cache; the target is on tmpfs. Prints the best of RUNS wall times.
#
# usage: bench/extract-compare.sh        (as root; knobs below, as env vars)
#   EZFS        ezfs binary                 (build/tools/ezfs/ezfs)
#   WORK        data and images             (/tmp/ezfs-bench)
#   TARGET      extraction target, tmpfs    (/dev/shm/ezfs-bench-out)
#   RUNS        runs per tool, best counts  (3)
#   SRC_TREE    tree to pack                (WORK/linux, from linux-source-6.1)
#   EROFS_OPTS  mkfs.erofs options          (-zlz4hc)
#   SQFS_OPTS   mksquashfs options          (-comp lz4 -Xhc -b 131072)
#   EZFS_ARGS   extra ezfs extract options  (none)
#   VERIFY=1    diff -r each tool's first extraction against the source tree
#   TOOLS       which to run                ("ezfs fsck.erofs unsquashfs")
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
EZFS=${EZFS:-$top/build/tools/ezfs/ezfs}
WORK=${WORK:-/tmp/ezfs-bench}
TARGET=${TARGET:-/dev/shm/ezfs-bench-out}
RUNS=${RUNS:-3}
SRC_TREE=${SRC_TREE:-$WORK/linux}
EROFS_OPTS=${EROFS_OPTS:--zlz4hc}
SQFS_OPTS=${SQFS_OPTS:--comp lz4 -Xhc -b 131072}
EZFS_ARGS=${EZFS_ARGS:-}
TOOLS=${TOOLS:-ezfs fsck.erofs unsquashfs}

say() { echo "bench: $*" >&2; }
[ -x "$EZFS" ] || { say "no ezfs at $EZFS (make build)"; exit 1; }
mkdir -p "$WORK"

# 1. The data set.
if [ "$SRC_TREE" = "$WORK/linux" ] && [ ! -f "$WORK/linux/Makefile" ]; then
	"$top/scripts/deps.sh" core bench >&2
	tarball=$(ls /usr/src/linux-source-6.1.tar.* 2>/dev/null | head -n 1)
	[ -n "$tarball" ] || { say "no /usr/src/linux-source-6.1.tar.*"; exit 1; }
	say "unpacking $tarball"
	rm -rf "$WORK/linux"
	mkdir -p "$WORK/linux"
	tar -xaf "$tarball" -C "$WORK/linux" --strip-components=1
fi
[ -d "$SRC_TREE" ] || { say "no source tree at $SRC_TREE"; exit 1; }
files=$(find "$SRC_TREE" -type f | wc -l)
bytes=$(find "$SRC_TREE" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
say "data: $SRC_TREE, $files files, $((bytes / 1048576)) MiB"

# 2. The images, rebuilt when the options change.
tag() { echo "$1" | tr -c 'A-Za-z0-9\n' '_'; }
erofs_img=$WORK/$(basename "$SRC_TREE").$(tag "$EROFS_OPTS").erofs
sqfs_img=$WORK/$(basename "$SRC_TREE").$(tag "$SQFS_OPTS").sqfs
need() { case " $TOOLS " in *" $1 "*) return 0 ;; esac; return 1; }
if { need ezfs || need fsck.erofs; } && [ ! -s "$erofs_img" ]; then
	say "mkfs.erofs $EROFS_OPTS"
	# shellcheck disable=SC2086  # option lists
	mkfs.erofs --quiet $EROFS_OPTS "$erofs_img.tmp" "$SRC_TREE" >/dev/null
	mv "$erofs_img.tmp" "$erofs_img"
fi
if need unsquashfs && [ ! -s "$sqfs_img" ]; then
	say "mksquashfs $SQFS_OPTS"
	# shellcheck disable=SC2086
	mksquashfs "$SRC_TREE" "$sqfs_img.tmp" $SQFS_OPTS -noappend -quiet -no-progress >/dev/null
	mv "$sqfs_img.tmp" "$sqfs_img"
fi
cat "$erofs_img" "$sqfs_img" > /dev/null 2>&1 || true   # warm the page cache

# 3. Timing.
# shellcheck disable=SC2086  # EZFS_ARGS is an option list
run_tool() {
	case "$1" in
	ezfs) "$EZFS" extract -q $EZFS_ARGS "$erofs_img" "$TARGET" ;;
	fsck.erofs) fsck.erofs --extract="$TARGET" "$erofs_img" ;;
	unsquashfs) unsquashfs -q -no-progress -d "$TARGET" "$sqfs_img" ;;
	*) say "unknown tool $1"; return 2 ;;
	esac
}
version() {
	case "$1" in
	ezfs) "$EZFS" --version | head -n 1 ;;
	fsck.erofs) echo "fsck.erofs $(dpkg-query -W -f='${Version}' erofs-utils 2>/dev/null)" ;;
	unsquashfs) unsquashfs -version 2>/dev/null | head -n 1 | awk '{ print $1, $3 }' ;;
	esac
}
rows=()
for tool in $TOOLS; do
	img=$erofs_img
	[ "$tool" = unsquashfs ] && img=$sqfs_img
	best=
	all=
	for r in $(seq "$RUNS"); do
		rm -rf "$TARGET"
		sync
		t0=$(date +%s.%N)
		if ! run_tool "$tool" > "$WORK/$tool.log" 2>&1; then
			say "$tool failed: $(tail -n 2 "$WORK/$tool.log" | tr '\n' ' ')"
			best=FAIL
			break
		fi
		t=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }')
		all="$all $(printf '%.2f' "$t")"
		if [ -z "$best" ] || awk -v t="$t" -v b="$best" 'BEGIN { exit !(t < b) }'; then best=$t; fi
		if [ "$r" = 1 ]; then
			got=$(find "$TARGET" -type f | wc -l)
			[ "$got" = "$files" ] || say "$tool: $got files extracted, expected $files"
			if [ -n "${VERIFY:-}" ]; then
				diff -r --no-dereference "$SRC_TREE" "$TARGET" > /dev/null &&
					say "$tool: diff -r clean" || say "$tool: diff -r found differences"
			fi
		fi
	done
	rm -rf "$TARGET"
	mib=$(( $(stat -c %s "$img") / 1048576 ))
	if [ "$best" = FAIL ]; then
		rows+=("$(printf '%-12s %-28s %9s %9s %10s  %s' "$tool" "$(version "$tool")" "$mib" FAIL - "")")
	else
		rows+=("$(printf '%-12s %-28s %9s %9.2f %10.1f  %s' "$tool" "$(version "$tool")" "$mib" "$best" \
			"$(awk -v n="$bytes" -v t="$best" 'BEGIN { print n / 1048576 / t }')" "$all")")
	fi
done

echo
echo "Extract $(basename "$SRC_TREE") ($files files, $((bytes / 1048576)) MiB) to $TARGET, best of $RUNS, $(nproc) CPUs"
echo "erofs image: mkfs.erofs $EROFS_OPTS; squashfs image: mksquashfs $SQFS_OPTS"
printf '%-12s %-28s %9s %9s %10s  %s\n' tool version "image MiB" "best s" "MiB/s" "runs (s)"
printf '%s\n' "${rows[@]}"
