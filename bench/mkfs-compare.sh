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
#   PLAIN      0: only the EXTRA rows (no plain rows, no `none` row)
#   MKFS_EROFS mkfs.erofs to compare with (default: mkfs.erofs in PATH;
#              Debian's 1.5 runs only lz4/lz4hc without -E; "none": no
#              such column)
#   MKFS_EROFS2 a second mkfs.erofs (1.6 or later: every algorithm, levels
#              as -zALG,level=N, -E options), e.g. a local build of 1.9.3
#              (default: none). In both tools `deflate` is the tool's own
#              one-pass encoder (1.9.3: kite, as in ANCHORS.md) and
#              `libdeflate` libdeflate's (ALGS="libdeflate,9")
#   SQUASHFS   0: leave mksquashfs out (default 1 when installed)
#   WORKERS    threads for every tool (default: nproc)
#   REPEAT     runs of each command per row (default 1), the tools taking
#              turns; the row shows the median wall time and the largest
#              peak RSS
# Output: a markdown table on stdout (MiB, wall seconds and peak resident
# MiB (/usr/bin/time -f %M; "-" without it) per tool, the ratio of ezfs's
# image to the input); images are deleted after use.
#
# LINES=pipelines (or the argument --lines): instead of the matrix, the
# mkfs.erofs command lines of real pipelines (Android's build_image.py,
# a vendor's, systemd-repart, dracut, osbuild, Fedora CoreOS, kiwi,
# archiso, Flatcar, kata, containerd's tar on stdin), each run as written
# by ezfs under its mkfs.erofs name and by $MKFS_EROFS2 (required), on
# every directory of TREES (default: the linux tree, or SUBSET of it).
# One row per line and tree: image bytes of each, ezfs / MKFS_EROFS2,
# wall seconds of each, and (as root, with manifest.py: MANIFEST, default
# ../shared/tools/manifest.py) whether the kernel mounts both images as
# the same tree ("same"; "DIFF" keeps both manifests under $WORK).
# PIPES="kiwi fcos ..." runs only those lines.
set -u
case " $* " in *" --lines "*) LINES=pipelines ;; esac

ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-/tmp/ezfs-mkfs-bench}
TEXT_MAX=${TEXT_MAX:-67108864}
ALGS=${ALGS:-"lz4 lz4hc lzma deflate zstd"}
CLUSTERS=${CLUSTERS:-"4096 65536 1048576"}
EXTRA=${EXTRA-"ztailpacking,fragments"}
MKFS_EROFS=${MKFS_EROFS:-$(command -v mkfs.erofs || true)}
[ "$MKFS_EROFS" = none ] && MKFS_EROFS=
REPEAT=${REPEAT:-1}
PLAIN=${PLAIN:-1}
MKFS_EROFS2=${MKFS_EROFS2:-}
DATASETS=${DATASETS:-"tree text"}
SQUASHFS=${SQUASHFS:-1}
command -v mksquashfs >/dev/null || SQUASHFS=0
WORKERS=${WORKERS:-$(nproc)}
now() { date +%s.%N; }

# The pipelines' lines: NAME|OPTIONS, with @IMG and @SRC where the
# pipeline puts them, @UUID, @TS, @HINTS (a compress-hints file), @EXCL
# (a path of the tree) and @TAR (the tree as a tar on standard input).
PIPELINES=(
	"android|-z lz4hc --compress-hints @HINTS -b 4096 -T @TS -U @UUID -C 262144 @IMG @SRC"
	"android-chunk|-z lz4hc --compress-hints @HINTS -b 4096 -T @TS -U @UUID -C 262144 --chunksize 4096 @IMG @SRC"
	"android-legacy|-z lz4hc --compress-hints @HINTS -b 4096 -T @TS -U @UUID -C 262144 -E legacy-compress @IMG @SRC"
	"vendor|-z lz4hc,9 -b 4096 -T @TS -U @UUID -E dedupe,ztailpacking @IMG @SRC"
	"repart|-U @UUID @IMG @SRC --quiet"
	"repart-z|-zlz4hc,level=12 -b 4096 -U @UUID @IMG @SRC --quiet"
	"dracut|--exclude-path=@EXCL -C 65536 -E fragments -x -1 -U 00000000-0000-0000-0000-000000000000 -T 0 -z lz4hc @IMG @SRC"
	"osbuild|-z lzma,6 -E ztailpacking,force-inode-blockmap @IMG @SRC"
	"fcos|-Eall-fragments,fragdedupe=inode -C131072 --quiet @IMG @SRC"
	"fcos-lzma|-zlzma -Efragments -C131072 @IMG @SRC"
	"kiwi|-Eall-fragments -C524288 -z lzma,level=6,dictsize=524288 @IMG @SRC"
	"archiso|-U @UUID -- @IMG @SRC"
	"flatcar|--all-root -zlz4hc,12 @IMG @SRC"
	"kata|-Enoinline_data @IMG @SRC"
	"containerd|--tar=f --aufs -Enoinline_data -b4096 -T0 --mkfs-time @IMG @TAR"
)

# pline TOOL OPTIONS SRC IMG TAR: run one line; prints "bytes | seconds"
# (or "error: ... | -")
pline() {
	local tool=$1 opts=$2 src=$3 img=$4 tar=$5 a args=() t0 t1 in=/dev/null
	for a in $opts; do
		case $a in
		@IMG) a=$img ;;
		@SRC) a=$src ;;
		@TAR) in=$tar; continue ;;
		*) a=${a//@HINTS/$WORK/hints}; a=${a//@UUID/$P_UUID}
		   a=${a//@TS/1700000000}; a=${a//@EXCL/$P_EXCL} ;;
		esac
		args+=("$a")
	done
	rm -f "$img"
	t0=$(now)
	if ! "$tool" "${args[@]}" <"$in" >/dev/null 2>"$WORK/err" ||
		[ ! -s "$img" ]; then
		echo "error: $(head -c 60 "$WORK/err" | tr '\n|' '  ') | -"
		return
	fi
	t1=$(now)
	awk -v sz="$(stat -c %s "$img")" -v t0="$t0" -v t1="$t1" \
		'BEGIN { printf "%d | %.2f", sz, t1 - t0 }'
}

# kview IMG OUT: the kernel's view of IMG (manifest.py of a loop mount)
kview() {
	local mnt=$WORK/mnt rc
	mkdir -p "$mnt"
	mount -t erofs -o loop,ro "$1" "$mnt" 2>/dev/null || return 1
	python3 "$MANIFEST" "$mnt" >"$2"
	rc=$?
	umount "$mnt"
	return $rc
}

pipelines_main() {
	local tr ln name opts e m re rm_ ratio k src tar
	[ -n "$MKFS_EROFS2" ] || { echo "LINES=pipelines needs MKFS_EROFS2" >&2; exit 1; }
	MANIFEST=${MANIFEST:-$ROOT/../shared/tools/manifest.py}
	P_UUID=3f2c1a4e-5b6d-4e7f-8a9b-0c1d2e3f4a5b
	mkdir -p "$WORK/bin" && ln -sf "$EZFS" "$WORK/bin/mkfs.erofs" || exit 1
	# Android's hints: compressed formats stored, libraries in 16K
	printf '%s\n' '0 \.(apk|jar|zip|png|jpg|webp|ttf|gz|xz)$' \
		'16384 \.so(\.[0-9.]+)?$' >"$WORK/hints"
	echo "# $(date -u +%FT%TZ) $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "# ezfs: $EZFS (as mkfs.erofs); mkfs.erofs2: $MKFS_EROFS2 ($("$MKFS_EROFS2" -V 2>&1 | head -n 1))"
	echo
	echo "| tree | line | ezfs bytes | mkfs.erofs2 bytes | ratio | ezfs s | mkfs.erofs2 s | kernel |"
	echo "|---|---|---:|---:|---:|---:|---:|---|"
	for tr in $TREES; do
		src=$(cd "$tr" && pwd) || exit 1
		# dracut leaves one path out: the last of the tree's second level
		P_EXCL=$(cd "$src" && find . -mindepth 1 -maxdepth 2 | LC_ALL=C sort |
			tail -n 1 | cut -c3-)
		tar=$WORK/tree.tar
		tar -C "$src" -cf "$tar" . || exit 1
		for ln in "${PIPELINES[@]}"; do
			name=${ln%%|*} opts=${ln#*|}
			if [ -n "${PIPES:-}" ]; then
				case " $PIPES " in *" $name "*) ;; *) continue ;; esac
			fi
			e=$(pline "$WORK/bin/mkfs.erofs" "$opts" "$src" "$WORK/e.img" "$tar")
			m=$(pline "$MKFS_EROFS2" "$opts" "$src" "$WORK/m.img" "$tar")
			ratio=-
			re=${e%% |*} rm_=${m%% |*}
			case $re$rm_ in *[!0-9]*) ;; *)
				ratio=$(awk -v a="$re" -v b="$rm_" 'BEGIN { printf "%.4f", a / b }') ;;
			esac
			k=-
			if [ "$(id -u)" = 0 ] && [ -f "$MANIFEST" ] && [ "$ratio" != - ]; then
				if kview "$WORK/e.img" "$WORK/$name.ezfs.json" &&
					kview "$WORK/m.img" "$WORK/$name.m2.json"; then
					if cmp -s "$WORK/$name.ezfs.json" "$WORK/$name.m2.json"; then
						k=same
						rm -f "$WORK/$name.ezfs.json" "$WORK/$name.m2.json"
					else
						k=DIFF
					fi
				else
					k="no mount"
				fi
			fi
			rm -f "$WORK/e.img" "$WORK/m.img"
			printf '| %s | %s | %s | %s | %s | %s |\n' "$(basename "$src")" \
				"$name" "${e%% |*} | ${m%% |*}" "$ratio" \
				"${e#* | } | ${m#* | }" "$k"
		done
		rm -f "$tar"
	done
}

if [ -z "${EZFS:-}" ]; then
	# build/ first; never a sanitizer build (build-asan sorts first)
	for c in "$ROOT"/build/tools/ezfs/ezfs "$ROOT"/build*/tools/ezfs/ezfs; do
		case $c in *asan*|*tsan*|*ubsan*|*fuzz*) continue;; esac
		[ -x "$c" ] && EZFS=$c && break
	done
fi
[ -x "${EZFS:-}" ] || { echo "no ezfs binary: set EZFS" >&2; exit 1; }

mkdir -p "$WORK" || exit 1
if [ "${LINES:-}" = pipelines ] && [ -n "${TREES:-}" ]; then
	pipelines_main
	exit
fi
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
if [ "${LINES:-}" = pipelines ]; then
	TREES=$TREE
	pipelines_main
	exit
fi
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


# run IMG CMD...: prints "MiB | wall" of one run (or the error), the
# image bytes go to $WORK/size (it runs in a subshell)
run() {
	local img=$1 t0 t1 sz rss=- tm=()
	shift
	rm -f "$img" "$WORK/rss"
	echo 0 >"$WORK/size"
	# peak RSS (KB) of the tool, where /usr/bin/time is there
	[ -x /usr/bin/time ] && tm=(/usr/bin/time -f %M -o "$WORK/rss")
	t0=$(now)
	if ! "${tm[@]}" "$@" >/dev/null 2>"$WORK/err" || [ ! -s "$img" ]; then
		echo "$(head -c 60 "$WORK/err" | tr '\n|' '  ') | - | -"
		return
	fi
	t1=$(now)
	sz=$(stat -c %s "$img")
	echo "$sz" >"$WORK/size"
	rm -f "$img"
	[ -s "$WORK/rss" ] && rss=$(tail -n 1 "$WORK/rss")
	awk -v sz="$sz" -v t0="$t0" -v t1="$t1" -v rss="$rss" \
		'BEGIN { printf "%.2f | %.2f | %s", sz / 1048576, t1 - t0,
			 rss == "-" ? "-" : sprintf("%.0f", rss / 1024) }'
}

# agg RESULT...: one "MiB | wall | RSS" of REPEAT runs of one command:
# the median wall time, the largest RSS (the first error if any failed)
agg() {
	local r mib rss=- t
	for r in "$@"; do
		case $r in *"| - | -") echo "$r"; return;; esac
	done
	mib=${1%% |*}
	for r in "$@"; do
		r=${r##* | }
		[ "$r" != - ] && { [ "$rss" = - ] || [ "$r" -gt "$rss" ]; } && rss=$r
	done
	t=$(for r in "$@"; do r=${r#* | }; echo "${r%% |*}"; done | sort -n |
		awk '{ v[NR] = $1 }
		     END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			   printf "%.2f", m }')
	echo "$mib | $t | $rss"
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
	local r1=() r2=() r3=() r4=() k sz
	for ((k = 0; k < REPEAT; k++)); do
		r1+=("$(run "$IMG" "$EZFS" mkfs -q -T0 --workers="$WORKERS" \
			"${zo[@]}" "${eo[@]}" "$IMG" "$src")")
		sz=$(cat "$WORK/size")
		# Debian's mkfs.erofs 1.5 knows lz4 and lz4hc, no levels, no -E
		case $alg$lvl$e in none-|lz4-|lz4hc-)
			[ -n "$MKFS_EROFS" ] &&
				r2+=("$(run "$IMG" "$MKFS_EROFS" --quiet -T0 \
					${zo[@]:+-z$alg -C$cl} "$IMG" "$src")");;
		esac
		[ -n "$MKFS_EROFS2" ] &&
			r3+=("$(run "$IMG" "$MKFS_EROFS2" --quiet -T0 \
				--workers="$WORKERS" "${mo[@]}" \
				${eo[@]:+-E"$e"} "$IMG" "$src")")
		if [ "$SQUASHFS" = 1 ] && [ "$e" = - ] && [ "$alg" != none ]; then
			# shellcheck disable=SC2046
			r4+=("$(run "$IMG" mksquashfs "$src" "$IMG" -noappend \
				-quiet -no-progress -processors "$WORKERS" \
				-b "$cl" $(sqfs_comp "$alg"))")
		fi
	done
	c1=$(agg "${r1[@]}")
	ratio=$(awk -v a="$sz" -v b="$inb" 'BEGIN { printf "%.4f", a / b }')
	c2="- | - | -" c3="- | - | -" c4="- | - | -"
	[ ${#r2[@]} -gt 0 ] && c2=$(agg "${r2[@]}")
	[ ${#r3[@]} -gt 0 ] && c3=$(agg "${r3[@]}")
	[ ${#r4[@]} -gt 0 ] && c4=$(agg "${r4[@]}")
	printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$ds" \
		"$alg${lvl:+-$lvl}" "${cl:--}" "$e" "$ratio" "$c1" "$c2" "$c3" "$c4"
}

echo "# $(date -u +%FT%TZ) $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), workers $WORKERS, $REPEAT run(s) each"
echo "# ezfs: $EZFS; mkfs.erofs: ${MKFS_EROFS:-none}; mkfs.erofs2: ${MKFS_EROFS2:-none}$([ -n "$MKFS_EROFS2" ] && echo " ($("$MKFS_EROFS2" -V 2>&1 | head -n 1))"); mksquashfs: $([ "$SQUASHFS" = 1 ] && command -v mksquashfs || echo none)"
echo
echo "| dataset | algorithm | cluster | -E | ezfs ratio | ezfs MiB | ezfs s | ezfs RSS MiB | mkfs.erofs MiB | s | RSS MiB | mkfs.erofs2 MiB | s | RSS MiB | mksquashfs MiB | s | RSS MiB |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
IMG=$WORK/out.img
for ds in $DATASETS; do
	case $ds in
	tree) src=$TREE;;
	text) src=$TEXTDIR;;
	*) echo "unknown dataset $ds" >&2; exit 1;;
	esac
	inb=$(find "$src" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
	plain=-
	[ "$PLAIN" = 0 ] && plain=
	[ -n "$plain" ] && case_row "$ds" "$src" "$inb" none "" "" -
	for a in $ALGS; do
		alg=${a%%,*} lvl=
		[ "$alg" != "$a" ] && lvl=${a#*,}
		for cl in $CLUSTERS; do
			for e in $plain $EXTRA; do
				case_row "$ds" "$src" "$inb" "$alg" "$lvl" "$cl" "$e"
			done
		done
	done
done
