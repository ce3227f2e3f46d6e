#!/bin/bash
# SPDX-License-Identifier: MIT
# Benchmark, not a test: read speed of one big file through the kernel's
# EROFS driver (mount -t erofs -o loop,ro), `ezfs mount`, erofsfuse (where
# installed) and squashfuse (on a squashfs image of the same data), for each
# algorithm x pcluster size. fio, 4 KiB psync reads, caches dropped and the
# file system mounted afresh before every run (so no FUSE daemon keeps a
# warm cache from the previous workload):
#   seq    fio --rw=read
#   rand   fio --rw=randread --runtime=RAND_RUNTIME (a cap, not time_based)
#   small  fio --rw=randread --io_size=5% of the file
# Prints MiB/s, one row per algorithm x cluster, one column per
# target x workload; optionally a CSV too.
#
# usage: bench/read-compare.sh          (as root; knobs as env vars)
#   EZFS         ezfs binary                    (build/tools/ezfs/ezfs)
#   WORK         data, images, mount points     (/tmp/ezfs-readbench)
#   DATA         the file to read; default: /tmp/anchors/data/text.txt when
#                there (shared/bench/datasets.sh), else WORK/text.txt made
#                of Linux Documentation/ text then sources, SIZE_MIB long
#   SIZE_MIB     size of the generated file     (256)
#   LINUX_SRC    Linux tree for that            (/tmp/lead/data/linux, else
#                unpacked from linux-source-6.1 into WORK/linux)
#   ALGS         algorithms, ALG or ALG,LEVEL   ("deflate,9 lz4hc,12 zstd,3")
#   CLUSTERS     pcluster sizes                 ("4K 16K 64K 256K 1M")
#   TARGETS      ("kernel ezfs erofsfuse squashfuse"); missing tools are
#                left out with a note
#   WORKLOADS    ("seq rand small")
#   MKFS_EROFS   build the erofs images with this mkfs.erofs (e.g. 1.9.3)
#                instead of ezfs mkfs
#   EROFSFUSE    erofsfuse binary               (erofsfuse in PATH)
#   SQUASHFUSE   squashfuse binary              (squashfuse in PATH)
#   EZFS_OPTS    -o options for ezfs mount      (none)
#   RAND_RUNTIME seconds cap of rand            (20)
#   REPEAT       runs of each cell, the median is printed (1); the runs
#                go round the targets, so a slow moment hits all alike
#   NICE         run fio and the daemons at this nice value (e.g. -10)
#   CSV          also write every run there (alg,cluster,target,workload,
#                MiB/s,load1,run)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
EZFS=${EZFS:-$top/build/tools/ezfs/ezfs}
WORK=${WORK:-/tmp/ezfs-readbench}
SIZE_MIB=${SIZE_MIB:-256}
ALGS=${ALGS:-deflate,9 lz4hc,12 zstd,3}
CLUSTERS=${CLUSTERS:-4K 16K 64K 256K 1M}
TARGETS=${TARGETS:-kernel ezfs erofsfuse squashfuse}
WORKLOADS=${WORKLOADS:-seq rand small}
EROFSFUSE=${EROFSFUSE:-$(command -v erofsfuse || true)}
SQUASHFUSE=${SQUASHFUSE:-$(command -v squashfuse || true)}
EZFS_OPTS=${EZFS_OPTS:-}
RAND_RUNTIME=${RAND_RUNTIME:-20}
REPEAT=${REPEAT:-1}
CSV=${CSV:-}
MNT=$WORK/mnt

say() { echo "bench: $*" >&2; }
die() { say "$*"; exit 1; }
[ "$(id -u)" = 0 ] || die "run as root (mounts, drop_caches)"
command -v fio >/dev/null || die "fio is not installed (scripts/deps.sh bench)"
run_nice=()
[ -n "${NICE:-}" ] && run_nice=(nice -n "$NICE")
mkdir -p "$WORK" "$MNT"

# --- the data ---------------------------------------------------------------
if [ -z "${DATA:-}" ] && [ -s /tmp/anchors/data/text.txt ]; then
	DATA=/tmp/anchors/data/text.txt
fi
if [ -z "${DATA:-}" ]; then
	DATA=$WORK/text-${SIZE_MIB}m.txt
	if [ ! -s "$DATA" ]; then
		src=${LINUX_SRC:-/tmp/lead/data/linux}
		if [ ! -d "$src/Documentation" ]; then
			src=$WORK/linux
			if [ ! -f "$src/Makefile" ]; then
				"$top/scripts/deps.sh" core bench >&2
				tarball=$(ls /usr/src/linux-source-6.1.tar.* | head -n 1)
				mkdir -p "$src"
				tar -xaf "$tarball" -C "$src" --strip-components=1
			fi
		fi
		say "making $DATA ($SIZE_MIB MiB) from $src"
		{
			(cd "$src" && LC_ALL=C find Documentation -type f \
				\( -name '*.rst' -o -name '*.txt' \) | LC_ALL=C sort |
				xargs cat)
			(cd "$src" && LC_ALL=C find . -type f \
				\( -name '*.c' -o -name '*.h' \) | LC_ALL=C sort |
				xargs cat)
		} 2>/dev/null | head -c $((SIZE_MIB << 20)) >"$DATA.tmp" || true
		[ "$(stat -c %s "$DATA.tmp")" = $((SIZE_MIB << 20)) ] ||
			die "$src holds less than $SIZE_MIB MiB of text"
		mv "$DATA.tmp" "$DATA"
	fi
fi
[ -s "$DATA" ] || die "no data file $DATA"
fsize=$(stat -c %s "$DATA")
name=text.txt
srcdir=$WORK/src-$(basename "$DATA" | tr -c 'A-Za-z0-9\n' _)
if [ ! -s "$srcdir/$name" ]; then
	mkdir -p "$srcdir"
	ln -f "$DATA" "$srcdir/$name" 2>/dev/null || cp "$DATA" "$srcdir/$name"
fi
say "data: $DATA, $((fsize >> 20)) MiB"

# --- targets that can run ---------------------------------------------------
have=()
for t in $TARGETS; do
	case $t in
	kernel) grep -qw erofs /proc/filesystems || modprobe erofs 2>/dev/null ||
		{ say "kernel: no erofs driver, left out"; continue; } ;;
	ezfs) [ -x "$EZFS" ] || { say "ezfs: no binary at $EZFS, left out"; continue; } ;;
	erofsfuse) [ -n "$EROFSFUSE" ] && [ -x "$EROFSFUSE" ] ||
		{ say "erofsfuse: not installed (set EROFSFUSE=path), left out"; continue; } ;;
	squashfuse) [ -n "$SQUASHFUSE" ] && [ -x "$SQUASHFUSE" ] && command -v mksquashfs >/dev/null ||
		{ say "squashfuse: squashfuse or mksquashfs missing (scripts/deps.sh bench), left out"; continue; } ;;
	*) die "unknown target '$t' (kernel ezfs erofsfuse squashfuse)" ;;
	esac
	have+=("$t")
done
[ ${#have[@]} -gt 0 ] || die "no target can run"

bytes() { # 4K, 1M, 65536 -> bytes
	case $1 in
	*[kK]) echo $((${1%?} << 10)) ;;
	*[mM]) echo $((${1%?} << 20)) ;;
	*) echo "$1" ;;
	esac
}

# --- images -----------------------------------------------------------------
# erofs_img ALG LEVEL CLUSTER -> path (built once, kept in WORK)
erofs_img() {
	local alg=$1 lvl=$2 cl=$3 img tool=ezfs
	[ -n "${MKFS_EROFS:-}" ] && tool=mkfs.erofs
	img=$WORK/$alg-$lvl-$cl.$tool.erofs
	if [ ! -s "$img" ]; then
		say "mkfs ($tool) $alg level $lvl, pcluster $cl"
		if [ -n "${MKFS_EROFS:-}" ]; then
			"$MKFS_EROFS" --quiet -z"$alg,level=$lvl" -C"$(bytes "$cl")" \
				"$img.tmp" "$srcdir" >/dev/null
		else
			"$EZFS" mkfs -q -z "$alg,level=$lvl" -C "$(bytes "$cl")" \
				"$img.tmp" "$srcdir" >/dev/null
		fi
		mv "$img.tmp" "$img"
	fi
	echo "$img"
}

# sqfs_img ALG CLUSTER -> path: the squashfs counterpart (gzip for deflate,
# lz4 -Xhc for lz4hc), block size = the pcluster size (4K..1M).
sqfs_img() {
	local alg=$1 cl=$2 img comp
	case $alg in
	deflate) comp=(-comp gzip) ;;
	lz4hc) comp=(-comp lz4 -Xhc) ;;
	lz4) comp=(-comp lz4) ;;
	zstd) comp=(-comp zstd) ;;
	lzma) comp=(-comp xz) ;;
	*) return 1 ;;
	esac
	img=$WORK/$alg-$cl.sqfs
	if [ ! -s "$img" ]; then
		say "mksquashfs ${comp[*]} -b $cl"
		mksquashfs "$srcdir" "$img.tmp" "${comp[@]}" -b "$(bytes "$cl")" \
			-noappend -quiet -no-progress >/dev/null
		mv "$img.tmp" "$img"
	fi
	echo "$img"
}

# --- mounting ---------------------------------------------------------------
wait_mount() {
	for _ in $(seq 100); do
		mountpoint -q "$MNT" && return 0
		sleep 0.1
	done
	return 1
}
do_mount() { # TARGET IMG
	case $1 in
	kernel) mount -t erofs -o loop,ro "$2" "$MNT" ;;
	ezfs)
		if [ -n "$EZFS_OPTS" ]; then
			"${run_nice[@]}" "$EZFS" mount -o "$EZFS_OPTS" "$2" "$MNT"
		else
			"${run_nice[@]}" "$EZFS" mount "$2" "$MNT"
		fi ;;
	erofsfuse) "${run_nice[@]}" "$EROFSFUSE" "$2" "$MNT" >/dev/null 2>&1 ;;
	squashfuse) "${run_nice[@]}" "$SQUASHFUSE" "$2" "$MNT" ;;
	esac && wait_mount
}
do_umount() {
	mountpoint -q "$MNT" || return 0
	for _ in $(seq 50); do
		umount "$MNT" 2>/dev/null && return 0
		sleep 0.2
	done
	umount -l "$MNT"
}
trap do_umount EXIT

# --- one fio run: MiB/s on stdout ------------------------------------------
small_bytes=$(( (fsize / 20) / 4096 * 4096 ))
fio_run() { # WORKLOAD
	local args=(--name=j --filename="$MNT/$name" --bs=4k --ioengine=psync
		    --readonly --minimal)
	case $1 in
	seq) args+=(--rw=read) ;;
	rand) args+=(--rw=randread --runtime="$RAND_RUNTIME") ;;
	small) args+=(--rw=randread --io_size="$small_bytes") ;;
	*) die "unknown workload '$1' (seq rand small)" ;;
	esac
	sync
	echo 3 >/proc/sys/vm/drop_caches
	# terse format: field 7 is the read bandwidth in KiB/s
	"${run_nice[@]}" fio "${args[@]}" | awk -F';' '{ printf "%.1f", $7 / 1024 }'
}

# --- the matrix -------------------------------------------------------------
[ -n "$CSV" ] && echo "alg,cluster,target,workload,mib_s,load1,run" >"$CSV"
# median V...: the middle value (FAIL if any run failed, - if none ran)
median() {
	case " $* " in *" FAIL "*) echo FAIL; return ;; *" - "*) echo -; return ;; esac
	printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
hdr=$(printf '%-12s %-6s' alg cluster)
for t in "${have[@]}"; do
	for w in $WORKLOADS; do
		hdr+=$(printf ' %11s' "${t:0:6}-$w")
	done
done
rows=()
for spec in $ALGS; do
	alg=${spec%%,*}
	lvl=${spec#*,}
	[ "$lvl" = "$spec" ] && case $alg in
		deflate) lvl=9 ;; lz4hc) lvl=12 ;; zstd) lvl=3 ;; lzma) lvl=6 ;; *) lvl=0 ;;
	esac
	for cl in $CLUSTERS; do
		row=$(printf '%-12s %-6s' "$alg-$lvl" "$cl")
		eimg=$(erofs_img "$alg" "$lvl" "$cl")
		simg=
		declare -A got=()
		# Repetitions go round the targets, so that a slow moment of a
		# shared machine falls on all of them alike.
		for rep in $(seq "$REPEAT"); do
			for t in "${have[@]}"; do
				img=$eimg
				if [ "$t" = squashfuse ]; then
					[ -n "$simg" ] || simg=$(sqfs_img "$alg" "$cl") || simg=none
					img=$simg
				fi
				for w in $WORKLOADS; do
					v=-
					if [ "$img" != none ] && do_mount "$t" "$img"; then
						load=$(cut -d' ' -f1 /proc/loadavg)
						v=$(fio_run "$w") || v=FAIL
						[ -n "$v" ] || v=FAIL
						say "$alg-$lvl $cl $t $w: $v MiB/s (load $load, run $rep)"
						[ -n "$CSV" ] && echo "$alg-$lvl,$cl,$t,$w,$v,$load,$rep" >>"$CSV"
					elif [ "$img" != none ]; then
						say "$alg-$lvl $cl $t: mount failed"
						v=FAIL
					fi
					do_umount
					got[$t/$w]+="$v "
				done
			done
		done
		for t in "${have[@]}"; do
			for w in $WORKLOADS; do
				row+=$(printf ' %11s' "$(median ${got[$t/$w]})")
			done
		done
		unset got
		rows+=("$row")
	done
done

echo "read MiB/s, fio psync bs=4k, cold caches; file $((fsize >> 20)) MiB;" \
	"median of $REPEAT; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$hdr"
printf '%s\n' "${rows[@]}"
