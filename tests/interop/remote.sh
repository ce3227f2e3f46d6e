#!/bin/bash
# SPDX-License-Identifier: MIT
# Remote images (libezfs-remote, docs/remote.md): every fixture served by
# nginx (its own config on a free port of 127.0.0.1, this test's folder as
# its root) and read as http://...: ezfs fsck, ls -R against the local
# image's, extract against the manifest (root), ezfs mount where /dev/fuse
# is usable; bytes fetched vs read from --remote-stats; a warm rerun from
# the persistent cache fetches 0 bytes; a cold ls -R takes at most 6
# requests; the reader's hints on an image of ezfs mkfs (ls -R cold in at
# most 2 round trips, the metadata area hinted at open; a cold cat of a
# file fetches at most its pclusters); ezfs cache ls|gc. Then hostile
# servers (tests/interop/remote-srv.py): one that ignores Range (taken
# whole when small, refused in one line when not), one that accepts and
# never answers (fails within the bound, one line), 503 always (retried,
# then one line), 503 to the first request of each range (retried, reads
# right), one that answers another range than asked (refused), kill -9
# during a fill (the rerun is clean), a daemonized mount, and a registry
# of the test's own whose tokens last 3 requests (refreshed on each 401).
# Then Debian's docker-registry (auth silly: a Bearer challenge): ezfs
# push of a fixture, fsck/ls -R/mount of oci://127.0.0.1:PORT/test/erofs:tag
# (warm: 0 bytes), REPO@digest, --blob, --layer, an unknown tag, and a
# blob changed in the registry's storage (refused by its digest), and the
# registry gone after a full fill (the cache serves). Images without a
# dm-verity tree get one warning each (not counted here).
#
# usage: tests/interop/remote.sh [NAME...]     (default: every fixture)
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
t_init
t_need_fixtures
t_need_cmd python3 zstd
if "$EZFS" cache --cache-dir "$TMP/probe" ls 2>&1 | grep -q "without libcurl"; then
	t_skip "ezfs was built without libcurl (remote images)"
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || t_skip "nginx is not installed (scripts/deps.sh installs nginx-light)"
t_fixture_names "$@"
t_sanitized_names 3
SRV=$SRC/tests/interop/remote-srv.py
# the servers are stopped here, before lib.sh's cleanup
SRV_PIDS=()
stop_servers() {
	local p
	for p in "${SRV_PIDS[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "${SRV_PIDS[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	SRV_PIDS=()
}
trap 'stop_servers; t_cleanup' EXIT
tmo=${EZFS_TEST_TIMEOUT:-120}

# nlines FILE: its lines but the warning that an image without a dm-verity
# tree is read unchecked (tests/interop/remote-verity.sh checks that one)
nlines() { grep -vc "warning: no dm-verity tree" "$1" || true; }

# stat KEY FILE: the value of KEY= in the last --remote-stats line
stat_of() { tail -n 1 "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"; }

# --- nginx --------------------------------------------------------------
WWW=$TMP/www
mkdir -p "$WWW"
t_nginx "$WWW" 'location /moved/ { rewrite ^/moved/(.*)$ /$1 redirect; }
		location /slow/ { alias '"$WWW"'/; limit_rate 2m; }' ||
	{ SRV_PIDS+=("$NGINX_PID"); t_fail "nginx did not start"; t_done; }
SRV_PIDS+=("$NGINX_PID")
BASE=http://127.0.0.1:$PORT
CACHE=$TMP/cache
export EZFS_REMOTE_STATS=$TMP/stats

extract=1
t_is_root || { extract=0; echo "SKIP: extract comparison needs root (owners, devices, trusted.* xattrs)"; }
fuse=0
if t_is_root && [ -c /dev/fuse ] && (exec 3<>/dev/fuse) 2>/dev/null &&
	"$EZFS" mount --help 2>&1 | grep -q usage:; then
	fuse=1
else
	echo "SKIP: ezfs mount of URLs (needs root and a usable /dev/fuse)"
fi

tot_fetched=0 tot_read=0
for name in "${names[@]}"; do
	t_fixture_unpack "$name" || continue
	mv "$img" "$WWW/$name.img"
	chmod 644 "$WWW/$name.img"
	local_img=$WWW/$name.img
	url=$BASE/$name.img
	: >"$TMP/stats"

	t_run fsck timeout "$tmo" "$EZFS" fsck -q --cache-dir "$CACHE" "$url"
	if [ "$RC" = 0 ]; then
		f=$(stat_of fetched "$TMP/stats") r=$(stat_of read "$TMP/stats")
		q=$(stat_of requests "$TMP/stats") s=$(stat_of size "$TMP/stats")
		echo "  $name: fsck over http: $q requests, fetched $f of $s bytes, read $r"
		tot_fetched=$((tot_fetched + f)) tot_read=$((tot_read + r))
		if [ "$f" -le "$s" ]; then
			t_pass "$name: fsck over http (each byte fetched at most once)"
		else
			t_fail "$name: fsck over http fetched $f bytes of a $s byte image"
		fi
	else
		t_fail "$name: ezfs fsck $url exited $RC: $(head -c 300 "$ERR")"
	fi

	# warm: the cache holds it all, one conditional request, 0 bytes
	: >"$TMP/stats"
	t_run fsck2 timeout "$tmo" "$EZFS" fsck -q --cache-dir "$CACHE" "$url"
	f=$(stat_of fetched "$TMP/stats")
	if [ "$RC" = 0 ] && [ "${f:-x}" = 0 ]; then
		t_pass "$name: warm fsck fetches 0 bytes ($(stat_of requests "$TMP/stats") request)"
	else
		t_fail "$name: warm fsck rc=$RC fetched ${f:-?} bytes: $(head -c 300 "$ERR")"
	fi

	# ls -R without a persistent cache equals the local image's
	t_run lsl "$EZFS" ls -R "$local_img" /
	: >"$TMP/stats"
	t_run lsr timeout "$tmo" "$EZFS" ls -R --no-cache "$url" /
	if [ "$RC" = 0 ] && cmp -s "$TMP/lsl.out" "$TMP/lsr.out"; then
		t_pass "$name: ls -R over http ($(stat_of requests "$TMP/stats") requests, fetched $(stat_of fetched "$TMP/stats") bytes for $(stat_of read "$TMP/stats") read)"
	else
		t_fail "$name: ls -R over http rc=$RC differs: $(diff "$TMP/lsl.out" "$TMP/lsr.out" | head -n 3) $(head -c 200 "$ERR")"
	fi
	# the directories' blocks hinted whole, the rest in 64 KiB misses:
	# the fixtures' trees (mkfs.erofs layouts) take at most 6 requests
	q=$(stat_of requests "$TMP/stats")
	if [ "${q:-99}" -le 6 ]; then
		t_pass "$name: ls -R cold takes $q requests (at most 6)"
	else
		t_fail "$name: ls -R cold took ${q:-?} requests (more than 6)"
	fi

	if [ $extract = 1 ]; then
		rm -rf "$TMP/x"
		t_run extract timeout "$tmo" "$EZFS" extract -q --no-cache "$url" "$TMP/x"
		if [ "$RC" = 0 ]; then
			t_manifest "$TMP/x" >"$TMP/got.jsonl"
			t_same_manifest "$name: extract over http" "$want" "$TMP/got.jsonl"
		else
			t_fail "$name: ezfs extract $url exited $RC: $(head -c 300 "$ERR")"
		fi
		rm -rf "$TMP/x"
	fi

	if [ $fuse = 1 ]; then
		if t_fuse_start "$url" "$TMP/m.log" --no-cache; then
			t_manifest "$MP" >"$TMP/m.jsonl" 2>"$TMP/m.err" || true
			t_same_manifest "$name: ezfs mount $url" "$want" "$TMP/m.jsonl"
			t_expect "$name: umount" t_fuse_stop
			# gone: lib.sh's cleanup would fail to kill it
			T_PIDS=()
		else
			t_fail "$name: ezfs mount $url"
		fi
	fi
done
echo "  all fixtures: fetched $tot_fetched bytes, read $tot_read bytes (cold, fsck)"

# --- the reader's hints, on an image of ezfs mkfs (metadata at the end) --
# 300 files in 8 MB (bench/remote-tree.py), lz4 64K. At open the metadata
# area is fetched in one round trip (its ranges together); ls -R then
# reads nothing more; a cat of one file fetches exactly its pclusters.
python3 "$SRC/bench/remote-tree.py" "$TMP/htree" 300 8000000
t_run hmkfs "$EZFS" mkfs -z lz4 -C 65536 -T 0 "$WWW/hint.img" "$TMP/htree"
chmod 644 "$WWW/hint.img"
hurl=$BASE/hint.img
: >"$TMP/stats"
t_run hls "$EZFS" ls -R --no-cache "$hurl" /
t_run hlsl "$EZFS" ls -R "$WWW/hint.img" /
rounds=$(stat_of rounds "$TMP/stats") hinted=$(stat_of hinted "$TMP/stats")
if cmp -s "$TMP/hls.out" "$TMP/hlsl.out" && [ "${rounds:-9}" -le 2 ] &&
	[ "${hinted:-0}" -gt 0 ] && [ "$(stat_of hits "$TMP/stats")" = "$(stat_of reads "$TMP/stats")" ]; then
	t_pass "hints: ls -R cold in $rounds round trips ($(stat_of requests "$TMP/stats") requests; the metadata area, $hinted bytes, hinted at open; every read a hit)"
else
	t_fail "hints: ls -R cold: $(tail -n 1 "$TMP/stats") $(head -c 200 "$ERR")"
fi
# a compressed file of more than one pcluster's worth
hfile=
for f in $(cd "$TMP/htree" && find . -type f -size +100k | sort | sed 's,^\.,,'); do
	if "$EZFS" stat -e "$WWW/hint.img" "$f" | grep -q ' lz4 .*encoded'; then
		hfile=$f
		break
	fi
done
if [ -n "$hfile" ]; then
	# its pclusters, in 4 KiB cache blocks (inline ones are metadata)
	hwant=$("$EZFS" stat -e "$WWW/hint.img" "$hfile" | awk '
		$2 ~ /^[0-9]+$/ && $3 ~ /^[0-9]+$/ && $5 ~ /mapped/ && $5 !~ /inline|fragment/ {
			s += (int(($2 + $3 + 4095) / 4096) - int($2 / 4096)) * 4096 }
		END { print s + 0 }')
	: >"$TMP/stats"
	t_run hstat "$EZFS" stat --no-cache "$hurl" "$hfile"
	f0=$(stat_of fetched "$TMP/stats")
	: >"$TMP/stats"
	t_run hcat "$EZFS" cat --no-cache "$hurl" "$hfile"
	f1=$(stat_of fetched "$TMP/stats")
	if cmp -s "$TMP/hcat.out" "$TMP/htree$hfile" && [ "$hwant" -gt 0 ] &&
		[ $((f1 - f0)) -le "$hwant" ]; then
		t_pass "hints: a cold cat of $hfile fetches $((f1 - f0)) bytes beyond its stat's: at most its pclusters ($hwant bytes in 4 KiB blocks)"
	else
		t_fail "hints: cat $hfile fetched $f1 - $f0 bytes, its pclusters take $hwant: $(head -c 200 "$ERR")"
	fi
else
	t_fail "hints: no compressed file of more than 100 KiB in the tree"
fi

# --- the cache: ls lists, gc empties ------------------------------------
# options before or after the subcommand, as every other command takes them
n=${#names[@]}
t_run cls "$EZFS" cache ls --cache-dir "$CACHE"
if [ "$RC" = 0 ] && [ "$(grep -c "$BASE/" "$OUT")" = "$n" ] &&
	head -n 1 "$OUT" | grep -q '^KEY  *CACHED  *SIZE  *LAST USE  *IMAGE$'; then
	t_pass "cache ls --cache-dir DIR lists the $n images under a header"
else
	t_fail "cache ls rc=$RC: $(grep -c "$BASE/" "$OUT") of $n images listed: $(head -c 300 "$OUT") $(head -c 200 "$ERR")"
fi
t_run cgc "$EZFS" cache gc --max 0 --cache-dir "$CACHE"
t_run cls2 "$EZFS" cache --cache-dir "$CACHE" ls
if [ "$RC" = 0 ] && [ "$(wc -l <"$OUT")" = 1 ] && ! ls "$CACHE"/*.map >/dev/null 2>&1; then
	t_pass "cache gc --max 0 empties the cache"
else
	t_fail "cache gc left: $(head -c 200 "$OUT")"
fi

# the largest fixture, for the bounds below
big=${names[0]}
for n in "${names[@]}"; do
	[ "$(stat -c %s "$WWW/$n.img")" -gt "$(stat -c %s "$WWW/$big.img")" ] && big=$n
done
size=$(stat -c %s "$WWW/$big.img")

# --cache-max below the image's size: read from memory, nothing stored
t_run cmax timeout "$tmo" "$EZFS" fsck -q --cache-dir "$TMP/cmax" --cache-max 1M "$BASE/$big.img"
used=$(du -sk "$TMP/cmax" 2>/dev/null | cut -f1)
if [ "$size" -le 1048576 ]; then
	echo "SKIP: --cache-max 1M: $big is not larger than 1 MiB"
elif [ "$RC" = 0 ] && [ "${used:-9999}" -le 1024 ] && ! ls "$TMP/cmax"/*.data >/dev/null 2>&1 &&
	grep -q "larger than the cache may grow" "$ERR"; then
	t_pass "--cache-max 1M and a $size byte image: not stored ($used KiB in the folder): $(head -c 150 "$ERR")"
else
	t_fail "--cache-max 1M: rc=$RC, $used KiB stored: $(ls -l "$TMP/cmax" 2>&1 | head -c 200) $(head -c 200 "$ERR")"
fi

# a full disk under the cache (a 2 MiB tmpfs): one warning naming the
# folder and the errno, the reads go on from the network, fsck is clean;
# with room again the next open caches
if t_is_root && mkdir -p "$TMP/full" && mount -t tmpfs -o size=2m tmpfs "$TMP/full" 2>/dev/null; then
	T_MOUNTS+=("$TMP/full")
	: >"$TMP/stats"
	t_run full timeout "$tmo" "$EZFS" fsck -q --cache-dir "$TMP/full/c" "$BASE/$big.img"
	nw=$(grep -c "cache folder $TMP/full/c: No space left on device" "$ERR" || true)
	if [ "$size" -le 3145728 ]; then
		echo "SKIP: full cache disk: $big is not larger than 3 MiB"
	elif [ "$RC" = 0 ] && [ "$nw" = 1 ] && [ "$(nlines "$ERR")" = 1 ]; then
		t_pass "a full cache disk: fsck clean, one line: $(head -c 200 "$ERR")"
	else
		t_fail "a full cache disk: rc=$RC, $nw warnings: $(head -c 400 "$ERR")"
	fi
	t_run lsfull timeout "$tmo" "$EZFS" ls -R --cache-dir "$TMP/full/c" "$BASE/$big.img" /
	t_run lslocal "$EZFS" ls -R "$WWW/$big.img" /
	if [ "$RC" = 0 ] && cmp -s "$TMP/lsfull.out" "$TMP/lslocal.out"; then
		t_pass "a full cache disk: ls -R equals the local image's"
	else
		t_fail "a full cache disk: ls -R differs: $(head -c 300 "$TMP/lsfull.err")"
	fi
	mount -o remount,size=64m "$TMP/full"
	t_run full2 timeout "$tmo" "$EZFS" fsck -q --cache-dir "$TMP/full/c" "$BASE/$big.img"
	: >"$TMP/stats"
	t_run full3 timeout "$tmo" "$EZFS" fsck -q --cache-dir "$TMP/full/c" "$BASE/$big.img"
	f=$(stat_of fetched "$TMP/stats")
	if [ "$RC" = 0 ] && [ "${f:-x}" = 0 ] && [ "$(nlines "$TMP/full2.err")" = 0 ]; then
		t_pass "room again: the next open caches (a warm rerun fetches 0 bytes)"
	else
		t_fail "room again: rc=$RC fetched=${f:-?}: $(head -c 300 "$TMP/full2.err")"
	fi
	umount "$TMP/full"
else
	echo "SKIP: full cache disk (needs root to mount a tmpfs)"
fi
# the map that cannot be written (its temporary name taken by a folder):
# the same single warning, a clean fsck
key=$(python3 -c 'import sys
h = 0xcbf29ce484222325
for c in sys.argv[1].encode():
    h = ((h ^ c) * 0x100000001b3) % 2**64
print("%016x" % h)' "$BASE/$big.img")
mkdir -p "$TMP/mapc/$key.map.tmp"
t_run nomap timeout "$tmo" "$EZFS" fsck -q --cache-dir "$TMP/mapc" "$BASE/$big.img"
if [ "$RC" = 0 ] && [ "$(nlines "$ERR")" = 1 ] && grep -q "cache folder $TMP/mapc: Is a directory" "$ERR"; then
	t_pass "a cache map that cannot be written: fsck clean, one line: $(head -c 200 "$ERR")"
else
	t_fail "a cache map that cannot be written: rc=$RC: $(head -c 300 "$ERR")"
fi

# one image for the hostile servers: the first fixture
small=${names[0]}

# kill -9 during a fill (2 MB/s): the next run reads right from what the
# map lists and fetches only the rest
"$EZFS" fsck -q --cache-dir "$TMP/kcache" "$BASE/slow/$big.img" >/dev/null 2>&1 &
kpid=$!
sleep 2.5
kill -9 "$kpid" 2>/dev/null || true
wait "$kpid" 2>/dev/null || true
: >"$TMP/stats"
t_run kfsck timeout "$tmo" "$EZFS" fsck -q --cache-dir "$TMP/kcache" "$BASE/slow/$big.img"
f=$(stat_of fetched "$TMP/stats")
if [ "$RC" = 0 ] && [ -n "$f" ] && [ "$f" -lt "$size" ]; then
	t_pass "$big: after kill -9 during a fill, fsck is clean and fetches $f of $size bytes"
else
	t_fail "$big: after kill -9: rc=$RC fetched ${f:-?} of $size: $(head -c 300 "$ERR")"
fi

# a daemonized mount (the source crosses the fork)
if [ $fuse = 1 ]; then
	mkdir -p "$TMP/dmnt"
	T_MOUNTS+=("$TMP/dmnt")
	t_run dmount timeout 60 "$EZFS" mount --no-cache "$BASE/$small.img" "$TMP/dmnt"
	if [ "$RC" = 0 ] && mountpoint -q "$TMP/dmnt"; then
		t_manifest "$TMP/dmnt" >"$TMP/d.jsonl" 2>/dev/null || true
		t_same_manifest "$small: daemonized ezfs mount of a URL" \
			"$SHARED/fixtures/$small.manifest.jsonl" "$TMP/d.jsonl"
		t_expect "$small: ezfs umount of the daemon" "$EZFS" umount "$TMP/dmnt"
	else
		t_fail "daemonized mount: rc=$RC: $(head -c 300 "$ERR")"
	fi
fi
# a redirect: followed, and the image reads the same
: >"$TMP/stats"
t_run redir timeout "$tmo" "$EZFS" fsck -q --no-cache "$BASE/moved/$small.img"
if [ "$RC" = 0 ] && [ "$(stat_of redirects "$TMP/stats")" = 1 ]; then
	t_pass "a redirect is followed and remembered ($(stat_of requests "$TMP/stats") requests)"
else
	t_fail "redirect: rc=$RC redirects=$(stat_of redirects "$TMP/stats"): $(head -c 300 "$ERR")"
fi
t_run nf "$EZFS" info --no-cache "$BASE/nothing.img"
if [ "$RC" = 1 ] && [ "$(nlines "$ERR")" = 1 ] && grep -q "$BASE/nothing.img: .*404" "$ERR"; then
	t_pass "404: one line naming the URL"
else
	t_fail "404: rc=$RC: $(head -c 300 "$ERR")"
fi

# --- hostile servers ----------------------------------------------------
start_srv() { # MODE: sets SPORT
	rm -f "$TMP/port.$1"
	python3 "$SRV" "$1" "$TMP/port.$1" "$WWW" "$TMP/srv.$1.log" \
		>"$TMP/srv.$1.out" 2>&1 &
	SRV_PIDS+=($!)
	local i
	for i in $(seq 100); do
		[ -s "$TMP/port.$1" ] && break
		sleep 0.1
	done
	SPORT=$(cat "$TMP/port.$1")
}

start_srv norange
url=http://127.0.0.1:$SPORT/$small.img
t_run nr timeout "$tmo" "$EZFS" fsck -q --no-cache "$url"
if [ "$RC" = 0 ] && [ "$(wc -l <"$TMP/srv.norange.log")" = 1 ]; then
	t_pass "a server ignoring Range: a small image is taken whole from its first answer (1 request)"
else
	t_fail "ignoring Range: rc=$RC: $(head -c 300 "$ERR")"
fi
EZFS_REMOTE_WHOLE_MAX=4096 t_run nr2 timeout "$tmo" "$EZFS" fsck -q --no-cache "$url"
if [ "$RC" = 1 ] && [ "$(nlines "$ERR")" = 1 ] && grep -q "$url: .*ignores Range" "$ERR"; then
	t_pass "a server ignoring Range, image too large to take whole: one line"
else
	t_fail "ignoring Range (large): rc=$RC: $(head -c 300 "$ERR")"
fi

start_srv stall
url=http://127.0.0.1:$SPORT/$small.img
t0=$(date +%s)
t_run st timeout 60 "$EZFS" info --no-cache --remote-timeout 1 --remote-retries 2 "$url"
dt=$(($(date +%s) - t0))
if [ "$RC" = 1 ] && [ "$dt" -le 15 ] && [ "$(nlines "$ERR")" = 3 ] &&
	[ "$(grep -c "no answer from 127.0.0.1:$SPORT for 1 s; retrying, [12] of 2" "$ERR")" = 2 ] &&
	tail -n 1 "$ERR" | grep -q "$url: .*no answer from 127.0.0.1:$SPORT for 1 s"; then
	t_pass "a server that accepts and never answers: a line per retry, then the error, after ${dt}s ($(head -n 1 "$ERR" | cut -c1-120))"
else
	t_fail "stalled server: rc=$RC after ${dt}s: $(head -c 400 "$ERR")"
fi

# a mount whose read waits on a server that stops answering: the mount's
# log says so after the first timeout, and ezfs umount says what the read
# waits for; once the read fails (EIO), umount succeeds
if [ $fuse = 1 ]; then
	STALL_FLAG=$TMP/stall.flag start_srv stallon
	url=http://127.0.0.1:$SPORT/$big.img
	if t_fuse_start "$url" "$TMP/sm.log" --no-cache --remote-timeout 1 --remote-retries 1; then
		# the largest file (text: its blocks are fetched on the read)
		sf=$(cd "$MP" && find . -type f -printf '%s %p\n' | sort -n | tail -n 1 | cut -d' ' -f2-)
		touch "$TMP/stall.flag"
		timeout 120 cat "$MP/$sf" >/dev/null 2>"$TMP/scat.err" &
		cpid=$!
		sleep 0.5
		t_run sum "$EZFS" umount "$MP"
		if [ "$RC" = 1 ] && grep -q "busy: a read waits on 127.0.0.1:$SPORT" "$ERR"; then
			t_pass "ezfs umount while a read waits: $(head -c 200 "$ERR")"
		else
			t_fail "ezfs umount while a read waits on $sf: rc=$RC: $(head -c 300 "$ERR")"
		fi
		# the kernel asks again for the pages that failed: each read
		# ends within the bound (1 s, one retry), the cat later
		crc=0
		wait "$cpid" || crc=$?
		if [ "$crc" = 1 ] && grep -q "no answer from 127.0.0.1:$SPORT for 1 s; retrying, 1 of 1" "$TMP/sm.log"; then
			t_pass "the waiting read fails (EIO) and the mount's log said why: $(grep -m1 'no answer' "$TMP/sm.log" | cut -c1-150)"
		else
			t_fail "the waiting read: cat exited $crc: $(head -c 300 "$TMP/sm.log")"
		fi
		t_expect "ezfs umount once the read has failed" t_fuse_stop
		T_PIDS=()
	else
		t_fail "mount of $url (stallon)"
	fi
fi

start_srv 503
url=http://127.0.0.1:$SPORT/$small.img
t_run e5 timeout 60 "$EZFS" info --no-cache --remote-retries 2 "$url"
reqs=$(wc -l <"$TMP/srv.503.log")
if [ "$RC" = 1 ] && [ "$reqs" = 3 ] && [ "$(nlines "$ERR")" = 1 ] && grep -q "$url: .*503" "$ERR"; then
	t_pass "503 always: $reqs requests (2 retries), then one line"
else
	t_fail "503: rc=$RC after $reqs requests: $(head -c 300 "$ERR")"
fi

start_srv flaky
url=http://127.0.0.1:$SPORT/$small.img
: >"$TMP/stats"
t_run fl timeout "$tmo" "$EZFS" fsck -q --no-cache "$url"
if [ "$RC" = 0 ] && [ "$(stat_of retries "$TMP/stats")" -ge 1 ]; then
	t_pass "503 to the first request for each range: retried ($(stat_of retries "$TMP/stats") retries), fsck clean"
else
	t_fail "flaky: rc=$RC: $(head -c 300 "$ERR")"
fi

start_srv lie
url=http://127.0.0.1:$SPORT/$small.img
t_run li timeout "$tmo" "$EZFS" fsck -q --no-cache "$url"
if [ "$RC" != 0 ] && grep -q "asked for bytes" "$ERR"; then
	t_pass "a server answering another range: refused ($(head -n 1 "$ERR" | cut -c1-150))"
else
	t_fail "lying server: rc=$RC: $(head -c 300 "$ERR")"
fi

# a registry whose tokens are good for 3 requests: each 401 mid-read
# gets a new token from the challenge's realm, and the read goes on
IMAGE=$small.img USES=3 start_srv bearer
: >"$TMP/stats"
t_run be timeout "$tmo" "$EZFS" fsck -q --no-cache "oci://127.0.0.1:$SPORT/test:tag"
ntok=$(grep -c "^token" "$TMP/srv.bearer.log" || true)
n401=$(grep -c "^401" "$TMP/srv.bearer.log" || true)
if [ "$RC" = 0 ] && [ "$ntok" -ge 3 ] && [ "$n401" -ge 3 ]; then
	t_pass "tokens expiring mid-read: $n401 answers 401, $ntok tokens fetched, fsck clean"
else
	t_fail "expiring tokens: rc=$RC, $ntok tokens, $n401 401s: $(head -c 300 "$ERR")"
fi

# Ctrl-C during a push: the upload stops and its session is deleted (an
# upload side of a registry of the test's own that reads at ~1 MiB/s)
start_srv upload
"$EZFS" push -q "$WWW/$big.img" "oci://127.0.0.1:$SPORT/test:t" >"$TMP/pint.out" 2>"$TMP/pint.err" &
ppid=$!
for i in $(seq 100); do
	grep -q "^PUT " "$TMP/srv.upload.log" 2>/dev/null && break
	sleep 0.1
done
sleep 0.5
kill -INT "$ppid" 2>/dev/null || true
prc=0
wait "$ppid" || prc=$?
sleep 0.3
if [ "$prc" = 130 ] && grep -q "^DELETE /v2/test/blobs/uploads/u1" "$TMP/srv.upload.log" &&
	! grep -q "^PUT done" "$TMP/srv.upload.log" && grep -q "interrupted" "$TMP/pint.err"; then
	t_pass "Ctrl-C during a push: exit $prc, the upload session deleted ($(grep -c . "$TMP/srv.upload.log") requests)"
else
	t_fail "Ctrl-C during a push: exit $prc: $(tr '\n' ' ' <"$TMP/srv.upload.log" | head -c 300) $(head -c 200 "$TMP/pint.err")"
fi

# --- an OCI registry: Debian's docker-registry ---------------------------
REG=$(command -v docker-registry || true)
if [ -z "$REG" ]; then
	echo "SKIP: the registry part: docker-registry is not installed (scripts/deps.sh installs it)"
	t_done
fi
start_srv token
TPORT=$SPORT
# auth silly: a Bearer challenge naming the token server; any token passes
t_registry "auth:
  silly:
    realm: http://127.0.0.1:$TPORT/token
    service: ezfs-test" && rc=0 || rc=$?
SRV_PIDS+=("$REG_PID")
[ $rc = 0 ] || { t_fail "docker-registry did not start"; t_done; }
REF=oci://127.0.0.1:$RPORT/test/erofs:tag
push_name=${names[0]}
for n in "${names[@]}"; do
	# a compressed fixture where there is one
	case $n in zstd-256k | lz4-4k) push_name=$n; break ;; esac
done
want=$SHARED/fixtures/$push_name.manifest.jsonl
t_run push timeout "$tmo" "$EZFS" push "$WWW/$push_name.img" "$REF"
digest=sha256:$(sha256sum "$WWW/$push_name.img" | cut -d' ' -f1)
mdigest=$(sed -n 's/^manifest //p' "$OUT")
if [ "$RC" = 0 ] && [ "$(sed -n 's/^layer //p' "$OUT")" = "$digest" ] && [ -n "$mdigest" ]; then
	t_pass "push $push_name to $REF (layer $digest, manifest $mdigest)"
else
	t_fail "push: rc=$RC out=$(head -c 100 "$OUT"): $(head -c 300 "$ERR")"
fi
ntok=$(wc -l <"$TMP/srv.token.log")
if [ "$ntok" -ge 1 ]; then
	t_pass "push: the Bearer challenge was answered with a token ($ntok token requests)"
else
	t_fail "push: no token was asked for (auth silly)"
fi

: >"$TMP/stats"
t_run ofsck timeout "$tmo" "$EZFS" fsck -q --cache-dir "$TMP/ocache" "$REF"
if [ "$RC" = 0 ]; then
	t_pass "fsck $REF ($(stat_of requests "$TMP/stats") requests, fetched $(stat_of fetched "$TMP/stats") of $(stat_of size "$TMP/stats") bytes)"
else
	t_fail "fsck $REF: rc=$RC: $(head -c 300 "$ERR")"
fi
: >"$TMP/stats"
t_run ofsck2 timeout "$tmo" "$EZFS" fsck -q --cache-dir "$TMP/ocache" "$REF"
if [ "$RC" = 0 ] && [ "$(stat_of fetched "$TMP/stats")" = 0 ]; then
	t_pass "warm fsck $REF fetches 0 bytes"
else
	t_fail "warm fsck $REF: rc=$RC fetched $(stat_of fetched "$TMP/stats"): $(head -c 300 "$ERR")"
fi
t_run ols1 "$EZFS" ls -R "$WWW/$push_name.img" /
t_run ols timeout "$tmo" "$EZFS" ls -R --no-cache "$REF" /
if [ "$RC" = 0 ] && cmp -s "$TMP/ols1.out" "$TMP/ols.out"; then
	t_pass "ls -R $REF equals the image's"
else
	t_fail "ls -R $REF: rc=$RC: $(head -c 300 "$ERR")"
fi
# what is pushed is checked first: a tar is refused and nothing is sent
tar -C "$WWW" -cf "$TMP/some.tar" "$push_name.img"
t_run ptar timeout "$tmo" "$EZFS" push -q "$TMP/some.tar" "oci://127.0.0.1:$RPORT/test/tar:t"
t_run ptar2 timeout "$tmo" "$EZFS" info --no-cache "oci://127.0.0.1:$RPORT/test/tar:t"
if [ "$(cat "$TMP/ptar.err" | wc -l)" = 1 ] && grep -q "is a tar archive, not an EROFS image.*nothing was uploaded" "$TMP/ptar.err" &&
	[ "$RC" = 1 ] && grep -q "not found\|404\|unknown" "$ERR"; then
	t_pass "push of a tar: refused in one line, nothing in the registry ($(head -c 120 "$TMP/ptar.err"))"
else
	t_fail "push of a tar: $(head -c 300 "$TMP/ptar.err") / $(head -c 200 "$ERR")"
fi
# an Android sparse image goes up expanded: the layer is simg2img's output
if command -v img2simg >/dev/null && command -v simg2img >/dev/null; then
	img2simg "$WWW/$push_name.img" "$TMP/sp.simg"
	simg2img "$TMP/sp.simg" "$TMP/sp.raw"
	t_run psp timeout "$tmo" "$EZFS" push -q "$TMP/sp.simg" "oci://127.0.0.1:$RPORT/test/sparse:t"
	t_run psp2 timeout "$tmo" "$EZFS" ls -R --no-cache "oci://127.0.0.1:$RPORT/test/sparse:t" /
	if [ "$(sed -n 's/^layer //p' "$TMP/psp.out")" = "sha256:$(sha256sum "$TMP/sp.raw" | cut -d' ' -f1)" ] &&
		[ "$RC" = 0 ] && cmp -s "$OUT" "$TMP/ols1.out"; then
		t_pass "push of a sparse image: the layer is what simg2img expands, and reads back"
	else
		t_fail "push of a sparse image: $(head -c 200 "$TMP/psp.out") $(head -c 200 "$TMP/psp.err") $(head -c 200 "$ERR")"
	fi
else
	echo "SKIP: push of a sparse image (img2simg, simg2img: android-sdk-libsparse-utils)"
fi
# trailing data (a dm-verity tree, here 8 KiB of junk) goes up with it;
# an image 4 KiB into its file needs --offset, and the layer starts there
cat "$WWW/$push_name.img" >"$TMP/tail.img"
head -c 8192 /dev/urandom >>"$TMP/tail.img"
t_run ptail timeout "$tmo" "$EZFS" push -q "$TMP/tail.img" "oci://127.0.0.1:$RPORT/test/tail:t"
if [ "$RC" = 0 ] && [ "$(sed -n 's/^layer //p' "$OUT")" = "sha256:$(sha256sum "$TMP/tail.img" | cut -d' ' -f1)" ]; then
	t_pass "push of an image with trailing data: accepted, the layer whole"
else
	t_fail "push with trailing data: rc=$RC: $(head -c 300 "$ERR")"
fi
{ head -c 4096 /dev/zero; cat "$WWW/$push_name.img"; } >"$TMP/off.img"
t_run poff0 timeout "$tmo" "$EZFS" push -q "$TMP/off.img" "oci://127.0.0.1:$RPORT/test/off:t"
t_run poff timeout "$tmo" "$EZFS" push -q --offset 4096 "$TMP/off.img" "oci://127.0.0.1:$RPORT/test/off:t"
if [ "$(wc -l <"$TMP/poff0.err")" = 1 ] && grep -q -- "--offset" "$TMP/poff0.err" && [ "$RC" = 0 ] &&
	[ "$(sed -n 's/^layer //p' "$OUT")" = "$digest" ]; then
	t_pass "push of an image 4 KiB into its file: refused without --offset (one line), with it the layer is the image"
else
	t_fail "push --offset: $(head -c 200 "$TMP/poff0.err") rc=$RC $(head -c 200 "$ERR")"
fi
# no tag means latest; an upper-case repository gets its own line
t_run plat timeout "$tmo" "$EZFS" push -q "$WWW/$push_name.img" "oci://127.0.0.1:$RPORT/test/lat"
t_run plat2 timeout "$tmo" "$EZFS" ls -R --no-cache "oci://127.0.0.1:$RPORT/test/lat:latest" /
t_run plat3 timeout "$tmo" "$EZFS" ls -R --no-cache "oci://127.0.0.1:$RPORT/test/lat" /
if [ "$(sed -n 's/^layer //p' "$TMP/plat.out")" = "$digest" ] && cmp -s "$TMP/plat2.out" "$TMP/ols1.out" &&
	cmp -s "$TMP/plat3.out" "$TMP/ols1.out"; then
	t_pass "oci://HOST/REPO without a tag is REPO:latest (push and read)"
else
	t_fail "no tag: $(head -c 200 "$TMP/plat.err") $(head -c 200 "$TMP/plat2.err") $(head -c 200 "$TMP/plat3.err")"
fi
t_run pup "$EZFS" info --no-cache "oci://127.0.0.1:$RPORT/Test/Erofs:tag"
if [ "$RC" = 1 ] && [ "$(nlines "$ERR")" = 1 ] && grep -q "'Test/Erofs' has upper-case letters" "$ERR"; then
	t_pass "an upper-case repository: $(head -c 150 "$ERR")"
else
	t_fail "upper-case repository: rc=$RC: $(head -c 300 "$ERR")"
fi
t_run ocls "$EZFS" cache ls --cache-dir "$TMP/ocache"
if [ "$RC" = 0 ] && grep -q " $REF\$" "$OUT" && ! grep -q "/blobs/" "$OUT"; then
	t_pass "cache ls names an oci:// image by its reference"
else
	t_fail "cache ls of oci://: $(head -c 300 "$OUT")"
fi

t_run odig timeout "$tmo" "$EZFS" ls --no-cache "oci://127.0.0.1:$RPORT/test/erofs@$mdigest" /
t_run oblob timeout "$tmo" "$EZFS" ls --no-cache --blob "$digest" "$REF" /
t_run ol1 timeout "$tmo" "$EZFS" ls --no-cache --layer 1 "$REF" /
if [ "$RC" = 1 ] && grep -q "has 1 layers" "$ERR" && [ -s "$TMP/odig.out" ] && [ -s "$TMP/oblob.out" ]; then
	t_pass "REPO@digest and --blob read; --layer 1 of one layer: $(head -c 120 "$ERR")"
else
	t_fail "digest/--blob/--layer: rc=$RC: $(head -c 300 "$ERR")"
fi
t_run onf "$EZFS" info --no-cache "oci://127.0.0.1:$RPORT/test/erofs:nothing"
if [ "$RC" = 1 ] && [ "$(nlines "$ERR")" = 1 ] && grep -q "not found\|404\|unknown" "$ERR"; then
	t_pass "an unknown tag: one line ($(head -c 120 "$ERR"))"
else
	t_fail "unknown tag: rc=$RC: $(head -c 300 "$ERR")"
fi
if [ $fuse = 1 ]; then
	if t_fuse_start "$REF" "$TMP/om.log" --no-cache; then
		t_manifest "$MP" >"$TMP/om.jsonl" 2>"$TMP/om.err" || true
		t_same_manifest "ezfs mount $REF" "$want" "$TMP/om.jsonl"
		t_expect "umount $REF" t_fuse_stop
		T_PIDS=()
	else
		t_fail "ezfs mount $REF"
	fi
fi
# a blob changed in the registry's storage: the digest check refuses it
blob=$(find "$TMP/registry/store" -path "*/blobs/sha256/*/${digest#sha256:}/data")
if [ -f "$blob" ]; then
	printf 'X' | dd of="$blob" bs=1 seek=$(($(stat -c %s "$blob") - 1)) conv=notrunc status=none
	t_run obad timeout "$tmo" "$EZFS" fsck -q --no-cache "$REF"
	if [ "$RC" != 0 ] && grep -q "does not match its digest" "$ERR"; then
		t_pass "a blob that does not match its digest is refused"
	else
		t_fail "tampered blob: rc=$RC: $(head -c 300 "$ERR")"
	fi
fi
# extract of the changed blob: the whole layer fails its digest, so every
# file written from it is listed as unverified (also in --errors) and kept,
# no other file is blamed, and its cache entry is dropped
if [ -f "$blob" ] && [ $extract = 1 ]; then
	rm -rf "$TMP/xbad" "$TMP/x0"
	"$EZFS" extract -q "$WWW/$push_name.img" "$TMP/x0"
	t_run xbad timeout "$tmo" "$EZFS" extract -q --cache-dir "$TMP/xcache" --errors "$TMP/xbad.list" "$REF" "$TMP/xbad"
	nfiles=$(cd "$TMP/x0" 2>/dev/null && find . ! -type d | wc -l)
	nlist=$(wc -l <"$TMP/xbad.list" 2>/dev/null || echo 0)
	nout=$(cd "$TMP/xbad" && find . ! -type d | wc -l)
	if [ "$RC" = 1 ] && grep -q "failed its digest check" "$ERR" && ! grep -q "not extracted" "$ERR" &&
		[ "$nlist" = "$nfiles" ] && [ "$nout" = "$nfiles" ] && [ "$nfiles" -gt 0 ] &&
		! ls "$TMP/xcache"/*.map >/dev/null 2>&1; then
		t_pass "extract of a blob that fails its digest: exit 1, $nlist files listed unverified and kept, the cache entry dropped"
	else
		t_fail "extract of a bad blob: rc=$RC, $nlist listed, $nout written of $nfiles: $(head -c 400 "$ERR") $(ls "$TMP/xcache" 2>&1 | head -c 100)"
	fi
fi
# the registry gone after a full fill: the cache still serves (the
# reference's blob found by the name it was opened as, then read whole
# from the cache and checked against its digest)
kill "$REG_PID" 2>/dev/null || true
wait "$REG_PID" 2>/dev/null || true
: >"$TMP/stats"
t_run ogone timeout "$tmo" "$EZFS" fsck -q --cache-dir "$TMP/ocache" "$REF"
if [ "$RC" = 0 ] && [ "$(stat_of fetched "$TMP/stats")" = 0 ] && [ "$(nlines "$ERR")" = 1 ] &&
	grep -q "registry 127.0.0.1:$RPORT unreachable; using the cached blob $digest" "$ERR"; then
	t_pass "the registry gone after a full fill: fsck $REF from the cache ($(stat_of requests "$TMP/stats") requests, 0 bytes), one line: $(head -c 150 "$ERR")"
else
	t_fail "registry gone: rc=$RC fetched $(stat_of fetched "$TMP/stats"): $(head -c 300 "$ERR")"
fi
t_run ogone2 timeout "$tmo" "$EZFS" ls --no-cache "$REF" /
if [ "$RC" != 0 ] && [ "$(nlines "$ERR")" = 1 ]; then
	t_pass "the registry gone, no cache: one line ($(head -c 120 "$ERR"))"
else
	t_fail "registry gone, --no-cache: rc=$RC: $(head -c 300 "$ERR")"
fi
t_done
