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
