#!/bin/bash
# SPDX-License-Identifier: MIT
# Benchmark, not a test: the dispatch modes through the commands. One
# large file per image (algorithm x pcluster size), read by
#   cat      ezfs cat IMG FILE > /dev/null
#   extract  ezfs extract -q IMG DIR   (DIR on tmpfs, emptied before each run)
#   fsck     ezfs fsck -q IMG
# each with --dispatch inline, queue and percpu. The image stays in the page
# cache (read once before), so what is measured is the decoding and the
# writing, not the disk. Prints per cell and mode MiB/s of file data (size /
# wall time of the whole command, start-up included: the median of REPEAT
# runs, which go round the modes so that a slow moment hits all alike), the
# ratio to the first mode (inline) and the CPU time (user + system, median)
# the command took, with the load average (1 min) before each row. The
# output of every mode is compared with the data once (cat: sha256;
# extract: cmp), and `ezfs accel stats --json` must count batches under
# every mode but inline (the decodes handed to the workers together).
#
# On a machine others use, the scheduler shares the CPUs between sessions
# (autogroup), not threads: a command's workers then get no more CPU than
# its one thread would, and the ratio says nothing. Run it on a quiet
# machine, or with CHRT="chrt -f 50" (as root) so that each run gets both
# CPUs. Times are taken without a process of their own ($EPOCHREALTIME,
# times): a fork of the shell alone took 35-75 ms on a busy 2-CPU VM.
#
# usage: bench/dispatch-commands.sh       (knobs as env vars)
#   EZFS      ezfs binary                         (build/tools/ezfs/ezfs)
#   WORK      data and images                     (/tmp/ezfs-dispbench)
#   OUT       extract target, on tmpfs            (/dev/shm/ezfs-dispbench)
#   DATA      the file; default: WORK/data, the C headers of /usr/include
#             (*.h, sorted by path, concatenated), cut at SIZE_MIB
#   SIZE_MIB  size of the generated file          (64)
#   CONFIGS   ALG,LEVEL:PCLUSTER ...  ("deflate,9:256K lz4hc,12:64K
#             lz4hc,12:256K zstd,3:64K zstd,3:256K")
#   MODES     ("inline queue percpu"); the first is the ratio's base
#   CMDS      ("cat extract fsck")
#   REPEAT    runs of each cell, median printed   (5)
#   CHRT      run the whole script (and so every command) under this, e.g.
#             "chrt -f 50" (as root: the threads get the CPUs even on a
#             busy machine)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
EZFS=${EZFS:-$top/build/tools/ezfs/ezfs}
WORK=${WORK:-/tmp/ezfs-dispbench}
OUT=${OUT:-/dev/shm/ezfs-dispbench}
SIZE_MIB=${SIZE_MIB:-64}
CONFIGS=${CONFIGS:-deflate,9:256K lz4hc,12:64K lz4hc,12:256K zstd,3:64K zstd,3:256K}
MODES=${MODES:-inline queue percpu}
CMDS=${CMDS:-cat extract fsck}
REPEAT=${REPEAT:-5}
# the whole script under CHRT, so that its own forks get the CPUs too
if [ -n "${CHRT:-}" ] && [ -z "${EZFS_DISPBENCH_RT:-}" ]; then
	EZFS_DISPBENCH_RT=1 exec ${CHRT} "$0" "$@"
fi

say() { echo "bench: $*" >&2; }
die() { say "$*"; exit 1; }
[ -x "$EZFS" ] || die "no ezfs binary at $EZFS (build first, or set EZFS)"
EZFS=$(realpath "$EZFS")
mkdir -p "$WORK/tree"

# --- the data -----------------------------------------------------------
if [ -z "${DATA:-}" ]; then
	DATA=$WORK/data-${SIZE_MIB}m
	if [ ! -s "$DATA" ]; then
		say "making $DATA"
		find /usr/include -type f -name '*.h' -print0 | LC_ALL=C sort -z |
			xargs -0 cat 2>/dev/null | head -c $((SIZE_MIB << 20)) \
			>"$DATA" || true
	fi
fi
[ -s "$DATA" ] || die "no data at $DATA"
name=$(basename "$DATA")
ln -f "$DATA" "$WORK/tree/$name" 2>/dev/null || cp -f "$DATA" "$WORK/tree/$name"
bytes=$(stat -c %s "$DATA")
sum=$(sha256sum <"$DATA" | cut -d' ' -f1)

bytes_of() { # 64K -> 65536
	local v=${1%[KkMm]}
	case $1 in
	*[Kk]) echo $((v << 10)) ;;
	*[Mm]) echo $((v << 20)) ;;
	*) echo "$v" ;;
	esac
}

# CPU seconds (user + system) of the children that ended, from bash's
# times written to file $1 (in this shell: a subshell's count starts at 0).
child_cpu() {
	awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/)
		printf "%.3f", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$1"
}

# One run of command $1 with mode $2 on image $3: prints "WALL_US CPU_MS".
run_one() {
	local t0 t1
	rm -rf "$OUT"
	times >"$WORK/times0"
	t0=$EPOCHREALTIME
	case $1 in
	cat) "$EZFS" cat --dispatch "$2" "$3" "$name" >/dev/null ;;
	extract) "$EZFS" extract -q --dispatch "$2" "$3" "$OUT" ;;
	fsck) "$EZFS" fsck -q --dispatch "$2" "$3" ;;
	esac
	t1=$EPOCHREALTIME
	times >"$WORK/times1"
	awk -v t0="$t0" -v t1="$t1" -v c0="$(child_cpu "$WORK/times0")" \
		-v c1="$(child_cpu "$WORK/times1")" \
		'BEGIN { printf "%.0f %.0f\n", (t1 - t0) * 1e6, (c1 - c0) * 1000 }'
}

# Same bytes out in every mode (once per image and mode).
verify() {
	local img=$1 m got
	for m in $MODES; do
		got=$("$EZFS" cat --dispatch "$m" "$img" "$name" | sha256sum | cut -d' ' -f1)
		[ "$got" = "$sum" ] || die "$img: cat --dispatch $m: wrong bytes"
		rm -rf "$OUT"
		"$EZFS" extract -q --dispatch "$m" "$img" "$OUT"
		cmp -s "$OUT/$name" "$DATA" || die "$img: extract --dispatch $m: wrong bytes"
		"$EZFS" fsck -q --dispatch "$m" "$img" ||
			die "$img: fsck --dispatch $m failed"
		got=$("$EZFS" accel stats --json --dispatch "$m" "$img" |
			awk -F'[:,]' '/"batches"/ { gsub(/ /, "", $2); print $2 }')
		if [ "$m" != inline ] && ! [ "${got:-0}" -gt 0 ]; then
			die "$img: accel stats --dispatch $m: no batches"
		fi
	done
	rm -rf "$OUT"
}

median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

printf '%-14s %-8s' config command
for m in $MODES; do printf ' %22s' "$m MiB/s (cpu ms)"; done
printf ' %6s\n' load
for cfg in $CONFIGS; do
	alg=${cfg%%:*}
	pc=${cfg#*:}
	img=$WORK/${alg/,/-}-$pc.img
	if [ ! -s "$img" ]; then
		say "building $img"
		rm -f "$img"
		"$EZFS" mkfs -q -z "$alg" -C "$(bytes_of "$pc")" "$img" "$WORK/tree" >/dev/null
	fi
	verify "$img"
	cat "$img" >/dev/null # the image in the page cache
	for cmd in $CMDS; do
		load=$(cut -d' ' -f1 /proc/loadavg)
		declare -A walls=() cpus=()
		for m in $MODES; do run_one "$cmd" "$m" "$img" >/dev/null; done # warm
		for r in $(seq "$REPEAT"); do
			for m in $MODES; do
				read -r w c < <(run_one "$cmd" "$m" "$img")
				walls[$m]+="$w "
				cpus[$m]+="$c "
			done
		done
		printf '%-14s %-8s' "${alg}:$pc" "$cmd"
		base=
		for m in $MODES; do
			us=$(echo "${walls[$m]}" | tr ' ' '\n' | grep . | median)
			cpu=$(echo "${cpus[$m]}" | tr ' ' '\n' | grep . | median)
			mibs=$(awk -v b="$bytes" -v u="$us" 'BEGIN {printf "%.0f", b / 1048576 / (u / 1e6)}')
			if [ -z "$base" ]; then
				base=$us
				printf ' %22s' "$mibs ($cpu)"
			else
				printf ' %22s' "$mibs $(awk -v b="$base" -v u="$us" 'BEGIN {printf "%.2fx", b / u}') ($cpu)"
			fi
		done
		printf ' %6s\n' "$load"
		unset walls cpus
	done
done
rm -rf "$OUT" "$WORK/times0" "$WORK/times1"
