#!/bin/bash
# SPDX-License-Identifier: MIT
# remote-compare.sh - benchmark (not a test): an image read over http://
# from a server of the test's own that answers each request after RTT ms
# (tests/interop/remote-srv.py delay), against downloading it whole first.
# Per RTT profile, one row each (rounds: round trips, batches of requests
# sent together; every run cold, --no-cache):
#   readdir    ezfs ls URL /: to the first readdir
#   deep       ezfs cat --length 1 of the largest file five levels down
#              (open included; fewer levels when the tree has none)
#   trace      ezfs cat of every 20th file (5%): bytes fetched over bytes
#              read (the pclusters and metadata the reader asked for)
#   seq        ezfs cat of the largest file: cold MB/s of file bytes
#   download   the whole image in one GET (curl): ms
# base_ms is the "download, then read" baseline of each row: the
# download's ms plus the same command on the downloaded copy. Every
# command runs REPEAT times, remote and local alternating: medians; the
# counters are the last run's (they do not vary).
# Then, at the last RTT: the cache filled (ezfs fsck), a warm ezfs mount
# of the URL against an ezfs mount of the local copy, the same reads
# through both (ls -lR and the trace's files), REPEAT times alternating:
# median seconds and the bytes the warm mounts fetched (needs root and
# /dev/fuse; skipped otherwise).
#
# usage: bench/remote-compare.sh IMAGE
#        bench/remote-compare.sh --link IMAGE   (an oci:// layer in Debian's
#        docker-registry behind a pacing link: DELAY_MS, default 20, per
#        request; RATE, default 50 MiB/s, shared; see the block below;
#        needs root, /dev/fuse, docker-registry, curl)
#        bench/remote-compare.sh --make-image OUT   (20000 files, lz4 64K,
#        about 1 GiB: bench/remote-tree.py, then ezfs mkfs)
# Environment: EZFS (default build/tools/ezfs/ezfs), RTTS (default
# "0 5 20"), REPEAT (default 3)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
EZFS=${EZFS:-$src/build/tools/ezfs/ezfs}
RTTS=${RTTS:-0 5 20}
REPEAT=${REPEAT:-3}
if [ "${1:-}" = --make-image ]; then
	out=${2:?usage: $0 --make-image OUT}
	tree=$(mktemp -d "${TMPDIR:-/tmp}/ezfs-remote-tree.XXXXXX")
	trap 'rm -rf "$tree"' EXIT
	python3 "$src/bench/remote-tree.py" "$tree/t"
	"$EZFS" mkfs -z lz4 -C 65536 -T 0 \
		-U 00000000-0000-0000-0000-000000000001 "$out" "$tree/t" >/dev/null
	ls -l "$out"
	exit 0
fi
if [ "${1:-}" = --link ]; then
	# The issue's link: Debian's docker-registry behind
	# tests/interop/pace-proxy.py (each request held DELAY_MS, all answers
	# together paced to RATE bytes/s); FUSE mounts of oci:// against
	# "download, then mount". Rows (medians of REPEAT cold runs, each with
	# a fresh cache folder; bytes and requests from the proxy's log):
	#   download      curl of the blob through the link
	#   dl+5%         the download, then a local ezfs mount reads the trace
	#   dl+all        the download, then a local ezfs mount reads every file
	#   first-readdir ls of the root, from the start of the mount
	#   first-byte    head -c 1 of the largest file five levels down, after
	#   5% none|trace|all   cold mount (-o fill=...) of the layer pushed
	#                 with the trace (--prefetch), reading every 20th file
	#                 in path order, whole files, one after another
	#   all fill=all  the same reading every file
	#   warm 5%|all   a remount over the complete cache
	# The trace is recorded first by a cold mount reading the 5% files
	# (--record-trace). With ORDER_SRC=DIR (the tree IMAGE was made of),
	# also "5% ord ...": an image of DIR made with --order of the 5%
	# files (ezfs mkfs $ORDER_MKFS, default -z lz4 -C 65536 --verity),
	# its own trace pushed with it. Every layer is mounted by its
	# manifest's digest.
	img=${2:?usage: $0 --link IMAGE}
	DELAY_MS=${DELAY_MS:-20}
	RATE=${RATE:-$((50 << 20))}
	REG=${REG:-docker-registry}
	work=$(mktemp -d "${TMPDIR:-/tmp}/ezfs-link-bench.XXXXXX")
	pids=()
	cleanup() {
		for m in "$work/m" "$work/local"; do
			mountpoint -q "$m" 2>/dev/null && { "$EZFS" umount "$m" || umount -l "$m"; } 2>/dev/null
		done
		for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
		rm -rf "$work"
	}
	trap cleanup EXIT
	ms() { echo $(($(date +%s%N) / 1000000)); }
	med() { tr ' ' '\n' | grep . | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
	port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
	rport=$(port)
	mkdir -p "$work/reg" "$work/m" "$work/local"
	printf 'version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: 127.0.0.1:%s\n' \
		"$work/reg/store" "$rport" >"$work/reg/config.yml"
	"$REG" serve "$work/reg/config.yml" >"$work/reg/log" 2>&1 &
	pids+=($!)
	for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$rport") 2>/dev/null && break; sleep 0.1; done
	"$EZFS" push -q "$img" "oci://127.0.0.1:$rport/bench:plain" >/dev/null
	blob=sha256:$(sha256sum "$img" | cut -d' ' -f1)
	DELAY_MS=$DELAY_MS RATE=$RATE python3 "$src/tests/interop/pace-proxy.py" "$rport" "$work/pport" "$work/plog" &
	pids+=($!)
	for _ in $(seq 100); do [ -s "$work/pport" ] && break; sleep 0.1; done
	proxy=127.0.0.1:$(cat "$work/pport")
	"$EZFS" mount "$img" "$work/local"
	(cd "$work/local" && find . -type f | LC_ALL=C sort | sed 's#^\./##') >"$work/all"
	awk 'NR % 20 == 1' "$work/all" >"$work/5"
	deep=$(cd "$work/local" && find . -mindepth 1 -maxdepth 5 -type f -printf '%d %s %P\n' |
		sort -k1,1nr -k2,2nr | awk "NR == 1" | cut -d" " -f3-)
	"$EZFS" umount "$work/local"
	echo "image: $(stat -c %s "$img") bytes, $(wc -l <"$work/all") files; 5%: $(wc -l <"$work/5") files;" \
		"link: ${DELAY_MS} ms per request, $((RATE >> 20)) MiB/s shared"
	readlist() { (cd "$1" && xargs -d '\n' cat <"$2" >/dev/null); }
	# the trace: recorded by a cold mount of the 5% reads, then pushed
	traced() { # IMAGE TAG: pushed, its trace recorded and pushed with it as TAG
		"$EZFS" push -q "$1" "oci://127.0.0.1:$rport/bench:$2-plain" >/dev/null
		rm -f "$work/trace"
		"$EZFS" mount --no-cache --record-trace "$work/trace" "oci://$proxy/bench:$2-plain" "$work/m" 2>/dev/null
		readlist "$work/m" "$work/5"
		"$EZFS" umount "$work/m"
		for _ in $(seq 50); do [ -s "$work/trace" ] && break; sleep 0.1; done
		# mounted by the manifest's digest (a dm-verity root it
		# announces is then trusted)
		ref=oci://$proxy/bench@$("$EZFS" push -q --prefetch "$work/trace" "$1" \
			"oci://127.0.0.1:$rport/bench:$2" | sed -n 's/^manifest //p')
		echo "$2: trace of $(wc -l <"$work/trace") ranges, $(awk '{s += $2} END {print s}' "$work/trace") bytes"
	}
	traced "$img" trace
	reqs() { wc -l <"$work/plog"; }
	bbytes() { awk '$2 ~ /\/blobs\// {s += $5} END {print s + 0}' "$work/plog"; }
	printf '%-16s %8s %9s %11s\n' row ms requests blob_bytes
	out() { printf '%-16s %8s %9s %11s\n' "$@"; }
	dls= d5= dall=
	for _ in $(seq "$REPEAT"); do
		: >"$work/plog"
		t=$(ms)
		curl -sf -o "$work/dl.img" "http://$proxy/v2/bench/blobs/$blob"
		d=$(($(ms) - t))
		dls="$dls $d"
		for w in 5 all; do
			sync
			echo 3 >/proc/sys/vm/drop_caches
			t=$(ms)
			"$EZFS" mount "$work/dl.img" "$work/local"
			readlist "$work/local" "$work/$w"
			"$EZFS" umount "$work/local"
			if [ $w = 5 ]; then d5="$d5 $((d + $(ms) - t))"; else dall="$dall $((d + $(ms) - t))"; fi
		done
	done
	out download "$(med <<<"$dls")" 1 "$(stat -c %s "$work/dl.img")"
	out dl+5% "$(med <<<"$d5")" 1 "$(stat -c %s "$work/dl.img")"
	out dl+all "$(med <<<"$dall")" 1 "$(stat -c %s "$work/dl.img")"
	cold() { # NAME FILL LIST: REPEAT cold mounts reading LIST
		local ts= t c
		for _ in $(seq "$REPEAT"); do
			# a folder of its own: the last daemon may still be
			# writing its map
			c=$(mktemp -d "$work/cache.XXXXXX")
			sync
			echo 3 >/proc/sys/vm/drop_caches
			: >"$work/plog"
			t=$(ms)
			"$EZFS" mount --cache-dir "$c" -o "fill=$2" "$ref" "$work/m" 2>/dev/null
			if [ "$3" = readdir ]; then
				ls "$work/m" >/dev/null
				ts="$ts $(($(ms) - t))"
				r0=$(reqs)
				t=$(ms)
				head -c 1 "$work/m/$deep" >/dev/null
				fb="$(($(ms) - t)) $(($(reqs) - r0))"
			else
				readlist "$work/m" "$work/$3"
				ts="$ts $(($(ms) - t))"
			fi
			n=$(reqs) b=$(bbytes)
			"$EZFS" umount "$work/m"
		done
		out "$1" "$(med <<<"$ts")" "$n" "$b"
		[ "$3" = readdir ] && out first-byte $fb -
		return 0
	}
	cold first-readdir none readdir
	cold "5% fill=none" none 5
	cold "5% fill=trace" trace 5
	cold "5% fill=all" all 5
	cold "all fill=all" all all
	if [ -n "${ORDER_SRC:-}" ]; then
		# the same tree, the 5% files first (mkfs --order): the trace
		# becomes one range
		"$EZFS" mkfs -q ${ORDER_MKFS:--z lz4 -C 65536 --verity} -T 0 --order="$work/5" \
			"$work/ord.img" "$ORDER_SRC" >/dev/null
		oref=$ref
		traced "$work/ord.img" ordered
		cold "5% ord trace" trace 5
		cold "5% ord all" all 5
		ref=$oref
	fi
	# warm: a complete cache, remounted
	rm -rf "$work/cache"
	"$EZFS" mount --cache-dir "$work/cache" -o fill=all "$ref" "$work/m"
	for _ in $(seq 600); do
		"$EZFS" cache --cache-dir "$work/cache" ls 2>/dev/null |
			awk 'NR > 1 && $2 == $4 && $3 == $5 {ok = 1} END {exit !ok}' && break
		sleep 0.1
	done
	"$EZFS" umount "$work/m"
	for w in 5 all; do
		ts=
		for _ in $(seq "$REPEAT"); do
			sync
			echo 3 >/proc/sys/vm/drop_caches
			: >"$work/plog"
			t=$(ms)
			"$EZFS" mount --cache-dir "$work/cache" "$ref" "$work/m" 2>/dev/null
			readlist "$work/m" "$work/$w"
			ts="$ts $(($(ms) - t))"
			"$EZFS" umount "$work/m"
		done
		out "warm $w" "$(med <<<"$ts")" "$(reqs)" "$(bbytes)"
	done
	exit 0
fi
img=${1:?usage: $0 IMAGE}
work=$(mktemp -d "${TMPDIR:-/tmp}/ezfs-remote-bench.XXXXXX")
pid=
cleanup() {
	for m in "$work/m1" "$work/m2"; do
		mountpoint -q "$m" 2>/dev/null && { "$EZFS" umount "$m" || umount -l "$m"; } 2>/dev/null
	done
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/www"
ln "$img" "$work/www/img" 2>/dev/null || cp "$img" "$work/www/img"
export EZFS_REMOTE_STATS=$work/stats
stat_of() { tail -n 1 "$work/stats" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
ms() { echo $(($(date +%s%N) / 1000000)); }
# the deepest file (at most 5 levels), the largest, every 20th file
"$EZFS" ls -R -l "$work/www/img" / >"$work/ls" 2>/dev/null || true
python3 - "$work/ls" "$work" <<'PY'
import sys
cur, files = "/", []
for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    if line.endswith(":") and line.startswith("/"):
        cur = line[:-1]
        continue
    f = line.split(None, 8)
    if len(f) < 9 or not f[0].startswith("-"):
        continue
    files.append((cur.rstrip("/") + "/" + f[8], int(f[4])))
files.sort()
# the deepest level (at most 5), there the largest file: its first byte
# is in a pcluster, not in the metadata (an inline tail)
deep = max((f for f in files if f[0].count("/") <= 5),
           key=lambda f: (f[0].count("/"), f[1]), default=("/", 0))[0]
big = max(files, key=lambda f: f[1], default=("/", 0))
w = sys.argv[2]
open(w + "/deep", "w").write(deep)
open(w + "/big", "w").write("%s\n%d" % big)
open(w + "/trace", "w").write("\n".join(p for p, _ in files[::20]))
PY
deep=$(cat "$work/deep")
big=$(head -n 1 "$work/big")
bigsz=$(tail -n 1 "$work/big")
mapfile -t trace <"$work/trace"
echo "image: $(stat -c %s "$img") bytes; deep: $deep ($(($(tr -cd / <"$work/deep" | wc -c))) levels);" \
	"seq: $big ($bigsz bytes); trace: ${#trace[@]} files"
start_srv() { # RTT [PORT]
	rm -f "$work/port"
	PORT=${2:-0} DELAY_MS=$1 python3 "$src/tests/interop/remote-srv.py" delay "$work/port" "$work/www" >/dev/null 2>&1 &
	pid=$!
	for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
	url=http://127.0.0.1:$(cat "$work/port")/img
}
stop_srv() {
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	pid=
}
printf '%-4s %-8s %6s %8s %8s %11s %11s %6s %8s %8s\n' \
	rtt row rounds requests ms fetched read ratio MB/s base_ms
med() { tr ' ' '\n' | grep . | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
for rtt in $RTTS; do
	start_srv "$rtt"
	dls=
	for _ in $(seq "$REPEAT"); do
		rm -f "$work/dl.img"
		t0=$(ms)
		if command -v curl >/dev/null; then
			curl -sf -o "$work/dl.img" "$url"
		else
			python3 -c "import urllib.request,sys; open(sys.argv[2],'wb').write(urllib.request.urlopen(sys.argv[1]).read())" "$url" "$work/dl.img"
		fi
		dls="$dls $(($(ms) - t0))"
	done
	dl=$(med <<<"$dls")
	row() { # NAME LOCAL-CMD... -- REMOTE-CMD...: REPEAT times each, alternating
		local name=$1 t ts= ls= mbs=- ratio
		local -a lc=()
		shift
		while [ "$1" != -- ]; do
			lc+=("$1")
			shift
		done
		shift
		for _ in $(seq "$REPEAT"); do
			: >"$work/stats"
			t=$(ms)
			"$@" >/dev/null 2>&1 || true
			ts="$ts $(($(ms) - t))"
			t=$(ms)
			"${lc[@]}" >/dev/null 2>&1 || true
			ls="$ls $(($(ms) - t))"
		done
		t=$(med <<<"$ts")
		[ "$name" = seq ] && mbs=$(python3 -c "print('%.1f' % ($bigsz / max(1, $t) / 1e3))")
		ratio=$(python3 -c "print('%.2f' % ($(stat_of fetched) / max(1, $(stat_of read))))")
		printf '%-4s %-8s %6s %8s %8s %11s %11s %6s %8s %8s\n' "$rtt" "$name" \
			"$(stat_of rounds)" "$(stat_of requests)" "$t" \
			"$(stat_of fetched)" "$(stat_of read)" "$ratio" "$mbs" \
			$(($(med <<<"$ls") + dl))
	}
	row readdir "$EZFS" ls "$work/dl.img" / -- \
		"$EZFS" ls --no-cache "$url" /
	row deep "$EZFS" cat --length 1 "$work/dl.img" "$deep" -- \
		"$EZFS" cat --no-cache --length 1 "$url" "$deep"
	row trace "$EZFS" cat "$work/dl.img" "${trace[@]}" -- \
		"$EZFS" cat --no-cache "$url" "${trace[@]}"
	row seq "$EZFS" cat "$work/dl.img" "$big" -- \
		"$EZFS" cat --no-cache "$url" "$big"
	printf '%-4s %-8s %6s %8s %8s %11s %11s %6s %8s %8s\n' "$rtt" download 1 1 \
		"$dl" "$(stat -c %s "$work/dl.img")" - - - -
	[ "$rtt" = "${RTTS##* }" ] || stop_srv
done
# warm remount against a local mount, at the last RTT
if [ "$(id -u)" != 0 ] || [ ! -c /dev/fuse ]; then
	echo "warm remount: skipped (needs root and /dev/fuse)"
	exit 0
fi
cache=$work/cache
last=$rtt
stop_srv
start_srv 0 # the fill at 0 ms: it takes a round trip per file
: >"$work/stats"
"$EZFS" fsck --cache-dir "$cache" "$url" >/dev/null 2>&1 || true
echo "cache filled: fetched $(stat_of fetched) bytes in $(stat_of requests) requests"
port=$(cat "$work/port")
stop_srv
# the same URL (the cache entry is the URL's): the same port
start_srv "$last" "$port"
mkdir -p "$work/m1" "$work/m2"
readall() { # MNT
	ls -lR "$1" >/dev/null
	(cd "$1" && cat "${trace[@]/#\//}" "${big#/}") >/dev/null
}
: >"$work/warm"
for i in $(seq "$REPEAT"); do
	sync
	echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true
	: >"$work/stats"
	"$EZFS" mount --cache-dir "$cache" "$url" "$work/m1"
	t0=$(ms)
	readall "$work/m1"
	t1=$(ms)
	"$EZFS" umount "$work/m1"
	sleep 0.5
	f=$(stat_of fetched)
	"$EZFS" mount "$work/dl.img" "$work/m2"
	t2=$(ms)
	readall "$work/m2"
	t3=$(ms)
	"$EZFS" umount "$work/m2"
	echo "$((t1 - t0)) $((t3 - t2)) $f" >>"$work/warm"
done
python3 - "$work/warm" "${RTTS##* }" <<'PY'
import statistics, sys
rows = [list(map(int, l.split())) for l in open(sys.argv[1]) if l.strip()]
w = statistics.median(r[0] for r in rows)
l = statistics.median(r[1] for r in rows)
print("warm remount at %s ms: %d ms (runs %s), local mount %d ms (runs %s): "
      "%.2fx; fetched by the warm mounts: %s bytes" % (
          sys.argv[2], w, [r[0] for r in rows], l, [r[1] for r in rows],
          w / max(1, l), sorted(set(r[2] for r in rows))))
PY
