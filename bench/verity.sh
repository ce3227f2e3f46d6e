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
# STEPS=remote: a warm lazy read instead: a 64,000,000-byte file of random
# bytes in an image of `ezfs mkfs --verity` (uncompressed), pushed to
# Debian's docker-registry on 127.0.0.1 (started here), every block in the
# persistent cache; `ezfs cat --cache-dir C oci://...@MANIFEST /big`
# against the same with --no-verity.
#
# usage: bench/verity.sh            (knobs below, as env vars)
#   EZFS      ezfs binary                          (build/tools/ezfs/ezfs)
#   WORK      data and images                      (/tmp/ezfs-bench)
#   TARGET    extraction target, tmpfs             (/dev/shm/ezfs-bench-out)
#   SRC_TREE  tree to pack                         (WORK/linux)
#   CONFIGS   mkfs options, one set per word, '+'
#             between options, none for none       ("-zlz4hc,12+-C65536 -zlz4+-C65536 none")
#   RUNS      runs per command, the median counts  (5)
#   STEPS     "mkfs read", one of them, or remote  (mkfs read)
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
[ "$STEPS" = remote ] || [ -d "$SRC_TREE" ] || {
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

remote_step() {
	local reg port d ref pid hoff
	reg=$(command -v docker-registry) || { say "no docker-registry: the remote step is left out"; return 0; }
	command -v python3 >/dev/null || { say "no python3: the remote step is left out"; return 0; }
	d=$WORK/remote
	rm -rf "$d"
	mkdir -p "$d/src" "$d/store"
	head -c 64000000 /dev/urandom >"$d/src/big"
	hoff=$("$EZFS" mkfs -q --verity "$d/big.img" "$d/src" | sed -n 's/^hash-offset=//p')
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	printf 'version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: 127.0.0.1:%s\n' \
		"$d/store" "$port" >"$d/config.yml"
	"$reg" serve "$d/config.yml" >"$d/registry.log" 2>&1 &
	pid=$!
	for _ in $(seq 50); do
		python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' "$port" 2>/dev/null && break
		sleep 0.2
	done
	ref=oci://127.0.0.1:$port/bench/verity@$("$EZFS" push -q "$d/big.img" "oci://127.0.0.1:$port/bench/verity:1" | sed -n 's/^manifest //p')
	"$EZFS" cat --cache-dir "$d/cache" "$ref" /big | cmp -s - "$d/src/big" || { say "the pushed image does not read back"; kill "$pid"; return 1; }
	pair remote "$EZFS" cat --cache-dir "$d/cache" "$ref" /big \
		-- "$EZFS" cat --no-verity --cache-dir "$d/cache" "$ref" /big
	echo "| none (64 MB random file) | $(($(stat -c %s "$d/big.img") / 1048576)) | $((($(stat -c %s "$d/big.img") - hoff) / 1024)) | oci:// cat, warm cache | $B | $A | $(ratio "$A" "$B") | $BC | $AC | $(ratio "$AC" "$BC") |"
	kill "$pid"
	wait "$pid" 2>/dev/null || true
}

case " $STEPS " in *" mkfs "* | *" read "*) ;; *)
	echo "| mkfs options | image MiB | tree KiB | step | plain wall s | verified wall s | ratio | plain CPU s | verified CPU s | ratio |"
	echo "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|"
	remote_step
	exit
	;;
esac
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
