#!/bin/bash
# SPDX-License-Identifier: MIT
# Benchmark, not a test: what dm-verity costs (docs/verity.md). For each
# mkfs configuration, on the Linux 6.1 source tree (Debian's
# linux-source-6.1): `ezfs mkfs` against `ezfs mkfs --verity`, then, on
# the image with its tree, the readers with the check (the default when a
# tree is there) against the same readers with --no-verity: `ezfs extract`
# (to tmpfs) and `ezfs export` (a pax tar to /dev/null). The commands take
# turns (A B A B...), the image is warm in the page cache; each cell is the
# median of RUNS runs, wall seconds and CPU seconds (user + sys: on a
# shared machine the steadier figure), and the ratio verified/plain.
#
# usage: bench/verity.sh            (knobs below, as env vars)
#   EZFS      ezfs binary                          (build/tools/ezfs/ezfs)
#   WORK      data and images                      (/tmp/ezfs-bench)
#   TARGET    extraction target, tmpfs             (/dev/shm/ezfs-bench-out)
#   SRC_TREE  tree to pack                         (WORK/linux)
#   CONFIGS   mkfs options, one set per word, '+'
#             between options, none for none       ("-zlz4hc,12+-C65536 -zlz4+-C65536 none")
#   RUNS      runs per command, the median counts  (5)
#   STEPS     "mkfs read" or one of them           (mkfs read)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
EZFS=${EZFS:-$top/build/tools/ezfs/ezfs}
WORK=${WORK:-/tmp/ezfs-bench}
TARGET=${TARGET:-/dev/shm/ezfs-bench-out}
SRC_TREE=${SRC_TREE:-$WORK/linux}
CONFIGS=${CONFIGS:--zlz4hc,12+-C65536 -zlz4+-C65536 none}
RUNS=${RUNS:-5}
STEPS=${STEPS:-mkfs read}

say() { echo "bench: $*" >&2; }
[ -x "$EZFS" ] || { say "no ezfs at $EZFS (make build)"; exit 1; }
mkdir -p "$WORK"
[ -d "$SRC_TREE" ] || {
	say "no tree at $SRC_TREE: bench/extract-compare.sh unpacks linux-source-6.1 there"
	exit 1
}

# secs CMD...: "WALL CPU" seconds of one run (CPU: user + sys, from GNU
# time; its output thrown away)
secs() {
	local t
	t=$(command time -f '%e %U %S' "$@" 2>&1 >/dev/null | tail -n 1) ||
		{ say "failed: $*"; return 1; }
	echo "$t" | awk '{ printf "%s %.2f\n", $1, $2 + $3 }'
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# pair NAME A_CMD -- B_CMD: RUNS runs of each in turn, after one of each
# not counted; sets A and B (median wall seconds) and AC and BC (median
# CPU seconds)
pair() {
	local a=() b=() i x ta=() tb=()
	shift
	while [ "$1" != -- ]; do a+=("$1"); shift; done
	shift
	b=("$@")
	"${a[@]}" >/dev/null 2>&1 || { say "failed: ${a[*]}"; exit 1; }
	"${b[@]}" >/dev/null 2>&1 || { say "failed: ${b[*]}"; exit 1; }
	for i in $(seq "$RUNS"); do
		x=$(secs "${a[@]}") && ta+=("$x")
		x=$(secs "${b[@]}") && tb+=("$x")
	done
	A=$(printf '%s\n' "${ta[@]}" | cut -d' ' -f1 | median)
	B=$(printf '%s\n' "${tb[@]}" | cut -d' ' -f1 | median)
	AC=$(printf '%s\n' "${ta[@]}" | cut -d' ' -f2 | median)
	BC=$(printf '%s\n' "${tb[@]}" | cut -d' ' -f2 | median)
}
ratio() { echo "scale=3; $1 / $2" | bc; }

tar cf - "$SRC_TREE" 2>/dev/null | cat >/dev/null # warm the source
echo "| mkfs options | image MiB | tree KiB | step | plain wall s | verified wall s | ratio | plain CPU s | verified CPU s | ratio |"
echo "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|"
for cfg in $CONFIGS; do
	opts=()
	[ "$cfg" = none ] || IFS=+ read -r -a opts <<<"$cfg"
	img=$WORK/verity.$(echo "$cfg" | tr -c 'A-Za-z0-9\n' '_').img
	plain=$WORK/plain.img
	say "mkfs ${opts[*]:-(uncompressed)} --verity"
	"$EZFS" mkfs -q "${opts[@]}" --verity --verity-salt=00 "$img" "$SRC_TREE" >"$img.out"
	hoff=$(sed -n 's/^hash-offset=//p' "$img.out")
	size=$(stat -c %s "$img")
	mib=$((size / 1048576))
	tree=$(((size - hoff) / 1024))
	row() {
		echo "| ${opts[*]:-none} | $mib | $tree | $1 | $B | $A | $(ratio "$A" "$B") |" \
			"$BC | $AC | $(ratio "$AC" "$BC") |"
	}
	case " $STEPS " in *" mkfs "*)
		pair mkfs "$EZFS" mkfs -q "${opts[@]}" --verity --verity-salt=00 "$WORK/a.img" "$SRC_TREE" \
			-- "$EZFS" mkfs -q "${opts[@]}" "$plain" "$SRC_TREE"
		row "mkfs"
		rm -f "$WORK/a.img" "$plain"
		;;
	esac
	case " $STEPS " in *" read "*)
		cat "$img" >/dev/null
		pair extract sh -c "rm -rf '$TARGET' && exec '$EZFS' extract -q '$img' '$TARGET'" \
			-- sh -c "rm -rf '$TARGET' && exec '$EZFS' extract -q --no-verity '$img' '$TARGET'"
		row "extract"
		rm -rf "$TARGET"
		if "$EZFS" --version | grep -q '+libarchive'; then
			pair export "$EZFS" export "$img" \
				-- "$EZFS" export --no-verity "$img"
			row "export (tar)"
		fi
		;;
	esac
done
