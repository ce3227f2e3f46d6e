#!/bin/bash
# SPDX-License-Identifier: MIT
# Benchmark, not a test: cold reads of one big file through the kernel's
# EROFS driver (mount -t erofs -o loop,ro), `ezfs mount`, erofsfuse and
# squashfuse (on a squashfs image of the same data), per algorithm x
# pcluster size x workload. fio, 4 KiB psync reads; before every run the
# file system is mounted afresh and the page cache dropped, so every run is
# the first read of a fresh mount (no daemon keeps a warm cache):
#   seq    fio --rw=read
#   rand   fio --rw=randread --runtime=RAND_RUNTIME (a cap, not time_based)
#   small  fio --rw=randread --io_size=5% of the file
# Each cell is the median of REPEAT runs; the runs go round the tools
# (kernel, ezfs, erofsfuse, squashfuse, kernel, ...) so that a slow moment
# of the machine falls on all of them alike.
#
# Beside the tools, per cell:
#   best     the fastest of the others, and ezfs / best
#   decode   the decode rate of `ezfs accel bench` for that algorithm and
#            pcluster size (raw, one CPU, the algorithm's first engine) on a
#            16 MiB sample of the same data
#   io       the file's size over the time a cold `cat IMAGE` takes: what
#            the disk allows for reading that image front to back
#   fuse     sequential cells: `ezfs mount` reading an uncompressed image
#            of the same data, that image's file in the page cache: what
#            FUSE allows without decoding or the disk (random reads of a
#            compressed file get whole extents into the page cache, which
#            an uncompressed one does not: no ceiling there)
#   limit    the ceilings ezfs comes within 80 % of ("decode", "io",
#            "fuse"), else "ezfs" (none: the daemon's own work is what to
#            look at)
#
# One command for the whole table (as root, on a quiet machine; about an
# hour, the rand runs of erofsfuse and squashfuse at 1M taking their cap):
#   MKFS_EROFS=/path/to/erofs-utils-1.9.3/mkfs/mkfs.erofs \
#   EROFSFUSE=/path/to/erofs-utils-1.9.3/fuse/erofsfuse bench/read-compare.sh
#
# Knobs (environment):
#   EZFS         ezfs binary                    (build/tools/ezfs/ezfs)
#   MKFS_EROFS   mkfs.erofs that builds the EROFS images (erofs-utils 1.9.3
#                built from source); unset: ezfs mkfs builds them
#   EROFSFUSE    erofsfuse binary (from the same erofs-utils build)
#   SQUASHFUSE   squashfuse binary              (squashfuse in PATH)
#   MKSQUASHFS   mksquashfs binary              (mksquashfs in PATH)
#   FIO          fio binary                     (fio in PATH)
#   WORK         data, images, mount points     (/tmp/ezfs-readbench)
#   DATA         the file to read; default: WORK/text-SIZE_MIBm.txt made of
#                Linux Documentation/ text then sources
#   SIZE_MIB     size of that file              (128)
#   LINUX_SRC    Linux tree for that            (unpacked from
#                linux-source-6.1 into WORK/linux)
#   ALGS         algorithms, ALG or ALG,LEVEL   ("lz4hc,12 zstd,3 deflate,9")
#   CLUSTERS     pcluster sizes                 ("4K 64K 256K 1M")
#   WORKLOADS    ("seq rand small")
#   CELLS        only these cells, "ALG,LEVEL:CLUSTER:WORKLOAD ..." (e.g.
#                "lz4hc,12:4K:seq zstd,3:64K:seq zstd,3:1M:rand");
#                overrides ALGS, CLUSTERS and WORKLOADS
#   TARGETS      ("kernel ezfs erofsfuse squashfuse"); a tool that cannot
#                run is left out with a note
#   EZFS_OPTS    -o options for ezfs mount      (none)
#   RAND_RUNTIME seconds cap of rand            (20)
#   REPEAT       runs of each cell, the median is printed (3)
#   CEILINGS     0: no io and fuse runs (the limit column then says less)
#   CSV          also write every run there (cell,target,MiB/s,load1,run)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
EZFS=${EZFS:-$top/build/tools/ezfs/ezfs}
WORK=${WORK:-/tmp/ezfs-readbench}
SIZE_MIB=${SIZE_MIB:-128}
ALGS=${ALGS:-lz4hc,12 zstd,3 deflate,9}
CLUSTERS=${CLUSTERS:-4K 64K 256K 1M}
TARGETS=${TARGETS:-kernel ezfs erofsfuse squashfuse}
WORKLOADS=${WORKLOADS:-seq rand small}
EROFSFUSE=${EROFSFUSE:-$(command -v erofsfuse || true)}
SQUASHFUSE=${SQUASHFUSE:-$(command -v squashfuse || true)}
MKSQUASHFS=${MKSQUASHFS:-$(command -v mksquashfs || true)}
FIO=${FIO:-$(command -v fio || true)}
EZFS_OPTS=${EZFS_OPTS:-}
RAND_RUNTIME=${RAND_RUNTIME:-20}
REPEAT=${REPEAT:-3}
CEILINGS=${CEILINGS:-1}
CSV=${CSV:-}
MNT=$WORK/mnt

say() { echo "bench: $*" >&2; }
die() { say "$*"; exit 1; }
[ "$(id -u)" = 0 ] || die "run as root (mounts, drop_caches)"
[ -n "$FIO" ] && [ -x "$FIO" ] || die "no fio (set FIO, or scripts/deps.sh bench)"
[ -x "$EZFS" ] || die "no ezfs binary at $EZFS (build first, or set EZFS)"
mkdir -p "$WORK" "$MNT"

# --- the cells --------------------------------------------------------------
level_of() { # ALG[,LEVEL] -> LEVEL
	case $1 in
	*,*) echo "${1#*,}" ;;
	deflate) echo 9 ;; lz4hc) echo 12 ;; zstd) echo 3 ;; lzma) echo 6 ;;
	*) echo 0 ;;
	esac
}
cells=()
if [ -n "${CELLS:-}" ]; then
	for c in $CELLS; do
		IFS=: read -r a cl w <<<"$c"
		[ -n "$a" ] && [ -n "$cl" ] && [ -n "$w" ] ||
			die "CELLS: '$c' is not ALG,LEVEL:CLUSTER:WORKLOAD"
		cells+=("${a%%,*} $(level_of "$a") $cl $w")
	done
else
	for a in $ALGS; do
		for cl in $CLUSTERS; do
			for w in $WORKLOADS; do
				cells+=("${a%%,*} $(level_of "$a") $cl $w")
			done
		done
	done
fi
for c in "${cells[@]}"; do
	case ${c##* } in seq | rand | small) ;;
	*) die "unknown workload '${c##* }' (seq rand small)" ;;
	esac
done

# --- the data ---------------------------------------------------------------
if [ -z "${DATA:-}" ]; then
	DATA=$WORK/text-${SIZE_MIB}m.txt
	if [ ! -s "$DATA" ]; then
		src=${LINUX_SRC:-$WORK/linux}
		if [ ! -d "$src/Documentation" ]; then
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

# --- tools that can run -----------------------------------------------------
have=()
for t in $TARGETS; do
	case $t in
	kernel) grep -qw erofs /proc/filesystems || modprobe erofs 2>/dev/null ||
		{ say "kernel: no erofs driver, left out"; continue; } ;;
	ezfs) ;;
	erofsfuse) [ -n "$EROFSFUSE" ] && [ -x "$EROFSFUSE" ] ||
		{ say "erofsfuse: not found (set EROFSFUSE=path), left out"; continue; } ;;
	squashfuse) [ -n "$SQUASHFUSE" ] && [ -x "$SQUASHFUSE" ] &&
		[ -n "$MKSQUASHFS" ] && [ -x "$MKSQUASHFS" ] ||
		{ say "squashfuse: squashfuse or mksquashfs missing (scripts/deps.sh bench), left out"; continue; } ;;
	*) die "unknown target '$t' (kernel ezfs erofsfuse squashfuse)" ;;
	esac
	have+=("$t")
done
[ -n "${MKFS_EROFS:-}" ] && { [ -x "$MKFS_EROFS" ] || die "MKFS_EROFS: no $MKFS_EROFS"; }
tool=ezfs
[ -n "${MKFS_EROFS:-}" ] && tool=$("$MKFS_EROFS" -V 2>/dev/null | head -n 1 |
	awk '{print "mkfs.erofs-" $NF}')
say "tools: ${have[*]}; EROFS images by $tool"

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
	local alg=$1 lvl=$2 cl=$3 img
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

# the uncompressed image of the fuse ceiling
plain_img() {
	local img=$WORK/plain.$tool.erofs
	if [ ! -s "$img" ]; then
		say "mkfs ($tool) uncompressed"
		if [ -n "${MKFS_EROFS:-}" ]; then
			"$MKFS_EROFS" --quiet "$img.tmp" "$srcdir" >/dev/null
		else
			"$EZFS" mkfs -q "$img.tmp" "$srcdir" >/dev/null
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
		"$MKSQUASHFS" "$srcdir" "$img.tmp" "${comp[@]}" -b "$(bytes "$cl")" \
			-noappend -quiet -no-progress >/dev/null
		mv "$img.tmp" "$img"
	fi
	echo "$img"
}

# --- the read ceilings: ezfs accel bench of the same data ------------------
# first_engine ALG: the first engine of its default order (lz4hc: lz4)
first_engine() {
	local a=$1
	[ "$a" = lz4hc ] && a=lz4
	"$EZFS" accel list | awk -v a="$a" '$2 == a && $4 == 1 { print $1; exit }'
}
declare -A ceil=()
ceilings() { # ALG: fills ceil[ALG/CLUSTER] (MiB/s) for every size bench prints
	local alg=$1 eng out cl mbs c
	[ -n "${ceil[$alg/done]:-}" ] && return 0
	ceil[$alg/done]=1
	eng=$(first_engine "$alg")
	[ -n "$eng" ] || { say "$alg: no engine for the ceiling"; return 0; }
	out=$("$EZFS" accel bench -e "$eng" -s 16 "$(plain_img)" 2>/dev/null) ||
		{ say "$alg: accel bench failed"; return 0; }
	# header: ENGINE ALG 4K 16K 64K 256K 1024K; row: ENGINE ALG then
	# raw through pct per size
	while read -r cl mbs; do
		ceil[$alg/$cl]=$(awk -v v="$mbs" 'BEGIN { printf "%.0f", v * 1e6 / 1048576 }')
	done < <(awk -v e="$eng" '
		$1 == "ENGINE" { for (i = 3; i <= NF; i++) sz[i - 2] = $i; n = NF - 2 }
		$1 == e && n { for (i = 1; i <= n; i++) print sz[i], $(3 * i) }' <<<"$out" |
		sed -e 's/^1024K /1M /')
	say "$alg: ceilings (accel bench -e $eng, MiB/s):$(for c in 4K 16K 64K 256K 1M; do printf ' %s %s' "$c" "${ceil[$alg/$c]:--}"; done)"
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
	ezfs | plain)
		if [ -n "$EZFS_OPTS" ]; then
			"$EZFS" mount -o "$EZFS_OPTS" "$2" "$MNT"
		else
			"$EZFS" mount "$2" "$MNT"
		fi ;;
	erofsfuse) "$EROFSFUSE" "$2" "$MNT" >/dev/null 2>&1 ;;
	squashfuse) "$SQUASHFUSE" "$2" "$MNT" ;;
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
small_bytes=$(((fsize / 20) / 4096 * 4096))
fio_run() { # WORKLOAD [IMAGE to hold in the page cache]
	local args=(--name=j --filename="$MNT/$name" --bs=4k --ioengine=psync
		--readonly --minimal)
	case $1 in
	seq) args+=(--rw=read) ;;
	rand) args+=(--rw=randread --runtime="$RAND_RUNTIME") ;;
	small) args+=(--rw=randread --io_size="$small_bytes") ;;
	esac
	sync
	echo 3 >/proc/sys/vm/drop_caches
	[ -z "${2:-}" ] || cat "$2" >/dev/null
	# terse format: field 7 is the read bandwidth in KiB/s
	"$FIO" "${args[@]}" | awk -F';' '{ printf "%.1f", $7 / 1024 }'
}

# one run of TARGET on IMG with WORKLOAD: MiB/s, FAIL or -
one_run() {
	local t=$1 img=$2 w=$3 v warm=
	[ "$img" = none ] && { echo -; return; }
	[ "$t" = plain ] && warm=$img
	if do_mount "$t" "$img"; then
		v=$(fio_run "$w" $warm) || v=FAIL
		[ -n "$v" ] || v=FAIL
	else
		say "$t: mount of $img failed"
		v=FAIL
	fi
	do_umount
	echo "$v"
}

# the io ceiling of IMG: the file's MiB over a cold read of the image
io_run() {
	local t0 t1
	sync
	echo 3 >/proc/sys/vm/drop_caches
	t0=$(date +%s%N)
	cat "$1" >/dev/null
	t1=$(date +%s%N)
	awk -v b="$fsize" -v ns=$((t1 - t0)) 'BEGIN { printf "%.1f", b / 1048576 / (ns / 1e9) }'
}

# median V...: the middle value (FAIL if any run failed, - if none ran)
median() {
	case " $* " in *" FAIL "*) echo FAIL; return ;; *" - "*) echo -; return ;; esac
	printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
ratio() { # A B -> A/B with two decimals, or -
	awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }'
}

# --- the runs ---------------------------------------------------------------
[ -n "$CSV" ] && echo "cell,target,mib_s,load1,run" >"$CSV"
declare -A got=() fuse=() io=()
for c in "${cells[@]}"; do
	read -r alg lvl cl w <<<"$c"
	ceilings "$alg"
	eimg=$(erofs_img "$alg" "$lvl" "$cl")
	simg=
	cell="$alg-$lvl $cl $w"
	for rep in $(seq "$REPEAT"); do
		for t in "${have[@]}"; do
			img=$eimg
			if [ "$t" = squashfuse ]; then
				[ -n "$simg" ] || simg=$(sqfs_img "$alg" "$cl") || simg=none
				img=$simg
			fi
			load=$(cut -d' ' -f1 /proc/loadavg)
			v=$(one_run "$t" "$img" "$w")
			say "$cell $t: $v MiB/s (load $load, run $rep)"
			[ -n "$CSV" ] && echo "$cell,$t,$v,$load,$rep" >>"$CSV"
			got[$cell/$t]+="$v "
		done
		[ "$CEILINGS" = 1 ] || continue
		# io: per image; fuse: shared by the sequential cells
		if [ "$(echo "${io[$eimg]:-}" | wc -w)" -lt "$REPEAT" ]; then
			v=$(io_run "$eimg")
			say "io $(basename "$eimg"): $v MiB/s (run $rep)"
			io[$eimg]+="$v "
		fi
		if [ "$w" = seq ] &&
			[ "$(echo "${fuse[$w]:-}" | wc -w)" -lt "$REPEAT" ]; then
			v=$(one_run plain "$(plain_img)" "$w")
			say "fuse $w: $v MiB/s (run $rep)"
			[ -n "$CSV" ] && echo "fuse $w,ezfs,$v,$(cut -d' ' -f1 /proc/loadavg),$rep" >>"$CSV"
			fuse[$w]+="$v "
		fi
	done
done

# --- the table --------------------------------------------------------------
echo "cold reads, MiB/s: fio psync bs=4k, a fresh mount and dropped caches" \
	"before each run, median of $REPEAT (tools taking turns); file" \
	"$((fsize >> 20)) MiB, EROFS images by $tool; load average at the" \
	"end: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '| cell |'
for t in "${have[@]}"; do printf ' %s |' "$t"; done
printf ' ezfs / best | decode | io | fuse | limit |\n|---|'
for _ in "${have[@]}"; do printf -- '---:|'; done
printf -- '---:|---:|---:|---:|---|\n'
for c in "${cells[@]}"; do
	read -r alg lvl cl w <<<"$c"
	cell="$alg-$lvl $cl $w"
	eimg=$(erofs_img "$alg" "$lvl" "$cl")
	printf '| %s %s %s |' "$alg-$lvl" "$cl" "$w"
	best=0
	ez=-
	for t in "${have[@]}"; do
		# shellcheck disable=SC2086
		m=$(median ${got[$cell/$t]})
		printf ' %s |' "$m"
		if [ "$t" = ezfs ]; then
			ez=$m
		elif awk -v m="$m" -v b="$best" 'BEGIN { exit !(m + 0 > b + 0) }'; then
			best=$m
		fi
	done
	dv=${ceil[$alg/$cl]:--}
	# shellcheck disable=SC2086
	iv=$([ -n "${io[$eimg]:-}" ] && median ${io[$eimg]} || echo -)
	# shellcheck disable=SC2086
	fv=$([ -n "${fuse[$w]:-}" ] && median ${fuse[$w]} || echo -)
	limit=
	for k in "decode $dv" "io $iv" "fuse $fv"; do
		if awk -v e="$ez" -v c="${k#* }" 'BEGIN { exit !(c + 0 > 0 && e + 0 >= 0.8 * c) }'; then
			limit+=${limit:+,}${k%% *}
		fi
	done
	[ -n "$limit" ] || limit=ezfs
	case $ez in - | FAIL) limit=- ;; esac
	printf ' %s | %s | %s | %s | %s |\n' "$(ratio "$ez" "$best")" "$dv" "$iv" \
		"$fv" "$limit"
done
