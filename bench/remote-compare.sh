#!/bin/bash
# SPDX-License-Identifier: MIT
# remote-compare.sh - benchmark (not a test): an image read over http://
# from a server that answers each request after a round trip of RTT ms
# (tests/interop/remote-srv.py delay), against downloading it whole first.
# Per RTT profile, one row each:
#   readdir    ezfs ls URL /: requests and ms to the first readdir
#   deep       ezfs cat of the first byte of the deepest file (at most five
#              levels down): requests and ms, open included
#   ls -R      ezfs ls -R: requests, bytes fetched over bytes read
#   seq        ezfs cat of the largest file: cold MB/s
#   download   the whole image in one GET, then ezfs ls of the local copy:
#              ms (the "download, then mount" baseline)
# Every run is cold (--no-cache).
#
# usage: bench/remote-compare.sh IMAGE
# Environment: EZFS (default build/tools/ezfs/ezfs), RTTS (default "0 5 20")
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
img=${1:?usage: $0 IMAGE}
EZFS=${EZFS:-$src/build/tools/ezfs/ezfs}
RTTS=${RTTS:-0 5 20}
work=$(mktemp -d "${TMPDIR:-/tmp}/ezfs-remote-bench.XXXXXX")
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT
mkdir -p "$work/www"
cp "$img" "$work/www/img"
export EZFS_REMOTE_STATS=$work/stats
stat_of() { tail -n 1 "$work/stats" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
ms() { date +%s%N; }
# the deepest file (at most 5 levels) and the largest, from the local copy
"$EZFS" ls -R -l "$work/www/img" / >"$work/ls" 2>/dev/null || true
read -r deep big < <(python3 - "$work/ls" <<'PY'
import sys
cur, deep, big = "/", ("", -1), ("", -1)
for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    if line.endswith(":") and line.startswith("/"):
        cur = line[:-1]
        continue
    f = line.split(None, 8)
    if len(f) < 9 or not f[0].startswith("-"):
        continue
    p = cur.rstrip("/") + "/" + f[8]
    d = p.count("/")
    if d <= 5 and d > deep[1]:
        deep = (p, d)
    if int(f[4]) > big[1]:
        big = (p, int(f[4]))
print(deep[0] or "/", big[0] or "/")
PY
)
printf '%-5s %-9s %9s %9s %12s %12s %9s\n' rtt row requests ms fetched read MB/s
for rtt in $RTTS; do
	rm -f "$work/port"
	DELAY_MS=$rtt python3 "$src/tests/interop/remote-srv.py" delay "$work/port" "$work/www" >/dev/null 2>&1 &
	pid=$!
	for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
	url=http://127.0.0.1:$(cat "$work/port")/img
	row() { # NAME CMD...
		local name=$1 t0 t1 mbs=-
		shift
		: >"$work/stats"
		t0=$(ms)
		"$@" >/dev/null 2>&1 || true
		t1=$(ms)
		if [ "$name" = seq ]; then
			mbs=$(python3 -c "print('%.1f' % ($(stat_of read) / max(1, $t1 - $t0) * 1e3))")
		fi
		printf '%-5s %-9s %9s %9s %12s %12s %9s\n' "$rtt" "$name" \
			"$(stat_of requests)" $(((t1 - t0) / 1000000)) \
			"$(stat_of fetched)" "$(stat_of read)" "$mbs"
	}
	row readdir "$EZFS" ls --no-cache "$url" /
	row deep sh -c "'$EZFS' cat --no-cache '$url' '$deep' | head -c 1"
	row "ls -R" "$EZFS" ls -R --no-cache "$url" /
	row seq "$EZFS" cat --no-cache "$url" "$big"
	t0=$(ms)
	python3 -c "import urllib.request,sys; open(sys.argv[2],'wb').write(urllib.request.urlopen(sys.argv[1]).read())" "$url" "$work/dl.img"
	"$EZFS" ls "$work/dl.img" / >/dev/null
	t1=$(ms)
	printf '%-5s %-9s %9s %9s %12s %12s %9s\n' "$rtt" download 1 $(((t1 - t0) / 1000000)) \
		"$(stat -c %s "$work/dl.img")" - -
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	pid=
done
