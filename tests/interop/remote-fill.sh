#!/bin/bash
# SPDX-License-Identifier: MIT
# A lazy mount of an oci:// layer through a link of the test's own
# (tests/interop/pace-proxy.py before Debian's docker-registry on
# 127.0.0.1: each request held 20 ms, all answers paced to 50 MiB/s
# together), counted request by request in the proxy's log (no timed
# assertion):
# - fill=none: the first readdir takes at most 6 requests from the start of
#   the mount, the first byte of each of several files at most 2 more;
# - fill=all: the whole blob comes in the background (the cache entry
#   complete, polled), in requests of up to 1 MiB, each byte once; every
#   file reads back as the tree; a warm remount fetches no byte of it;
# - reads while the fill runs get the right bytes;
# - a blob changed in the registry's storage (same size) is found out by
#   the fill (its digest once all is in): reads fail, nothing wrong served;
# - --cache-max below the image: no fill, one line; fill=bogus refused;
# - mkfs --order=FILE puts the listed files' data first, back to back, in
#   the list's order (the kernel reads the image as the tree);
# - --record-trace FILE: the ranges read, whole blocks, in the image;
#   push --prefetch publishes it (a range past the image refused), and a
#   cold fill=trace mount fetches its ranges in few requests, after which
#   the traced files read with no request.
# Skips without python3, libcurl, /dev/fuse or docker-registry.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
t_init
t_need_cmd python3 curl
if "$EZFS" cache --cache-dir "$TMP/probe" ls 2>&1 | grep -q "without libcurl"; then
	t_skip "ezfs was built without libcurl (remote images)"
fi
t_need_fuse

# --- a tree of text files, three levels deep --------------------------------
python3 - "$TMP/src" <<'PY'
import os, random, sys
r = random.Random(37)
words = [''.join(r.choice('abcdefghijklmnop') for _ in range(r.randint(2, 9)))
         for _ in range(4000)]
root = sys.argv[1]
for d in range(6):
    for s in range(5):
        p = os.path.join(root, "d%d" % d, "s%d" % s)
        os.makedirs(p)
        for f in range(12):
            n = r.choice([200, 3000, 20000, 90000, 300000])
            with open(os.path.join(p, "f%02d.txt" % f), "w") as fh:
                fh.write(' '.join(r.choice(words) for _ in range(n // 6)))
PY
"$EZFS" mkfs -q -z lz4 -C 65536 "$TMP/img" "$TMP/src" >/dev/null
size=$(stat -c %s "$TMP/img")
echo "  image: $size bytes, $(find "$TMP/src" -type f | wc -l) files"

# --- mkfs --order: the files a list names first, one after the other --------
# three large files (not inline), in an order of their own; names that are
# no file of the tree are left out
mapfile -t big < <(cd "$TMP/src" && find . -type f -size +100k | sed 's#^\./##' | sort | awk 'NR % 7 == 3' | head -n 3 | tac)
printf '%s\n' "./${big[0]}" "/${big[1]}" "${big[2]}" no/such/file d1 >"$TMP/order"
t_run ord "$EZFS" mkfs -q -z lz4 -C 65536 --order="$TMP/order" "$TMP/ord.img" "$TMP/src"
t_check "mkfs --order" 0
prev=
ok=1
for f in "${big[@]}"; do
	# the file's first and last byte in the image
	r=$("$EZFS" stat -e "$TMP/ord.img" "/$f" |
		awk '/mapped/ {if (s == "") s = $2; e = $2 + $3} END {print s, e}')
	set -- $r
	if [ -z "$prev" ]; then
		first=$1
	elif [ "$1" != "$prev" ]; then
		ok=0
		echo "  /$f starts at $1, not where the one before ends ($prev)"
	fi
	prev=$2
done
t_expect "mkfs --order: the listed files' data back to back, in the list's order, from byte $first" \
	[ "$ok" = 1 -a "$first" -le 8192 ]
t_kmount_ok
if [ "$KMOUNT" = 1 ]; then
	mkdir -p "$TMP/kord"
	if mount -t erofs -o ro,loop "$TMP/ord.img" "$TMP/kord" 2>/dev/null; then
		T_MOUNTS+=("$TMP/kord")
		t_expect "mkfs --order: the kernel reads every file as the tree" diff -r "$TMP/src" "$TMP/kord"
		umount "$TMP/kord"
	else
		t_fail "mkfs --order: the kernel does not mount the image"
	fi
fi

REG=$(command -v docker-registry || true)
[ -n "$REG" ] || t_skip "docker-registry is not installed (scripts/deps.sh installs it)"
t_registry || { t_fail "docker-registry did not start"; t_done; }
T_PIDS+=("$REG_PID")
t_run push "$EZFS" push -q "$TMP/img" "oci://127.0.0.1:$RPORT/fill:t"
t_check "push to the registry" 0
blob=sha256:$(sha256sum "$TMP/img" | cut -d' ' -f1)

# the link: a proxy of the test's own
PLOG=$TMP/proxy.log
DELAY_MS=20 RATE=$((50 << 20)) python3 "$SRC/tests/interop/pace-proxy.py" \
	"$RPORT" "$TMP/pport" "$PLOG" &
T_PIDS+=("$!")
for _ in $(seq 100); do [ -s "$TMP/pport" ] && break; sleep 0.1; done
PPORT=$(cat "$TMP/pport")
REF=oci://127.0.0.1:$PPORT/fill:t
: >"$PLOG"
nreq() { wc -l <"$PLOG"; }
# blob bytes the proxy carried (its requests: blob_reqs)
blob_bytes() { awk -v b="$blob" '$2 ~ b {s += $5} END {print s + 0}' "$PLOG"; }
blob_reqs() { awk -v b="$blob" '$2 ~ b' "$PLOG" | wc -l; }
# wait (bounded) until every block of the image is in the cache folder $1
wait_full() {
	local i
	for i in $(seq 600); do
		"$EZFS" cache --cache-dir "$1" ls 2>/dev/null |
			awk -v n="$REF" '$NF == n && $2 == $4 && $3 == $5 {ok = 1} END {exit !ok}' &&
			return 0
		sleep 0.1
	done
	return 1
}

# --- fill=none: the requests of a first readdir and of first bytes -----------
MP=$TMP/m0
if t_fuse_start "$REF" "$TMP/m0.log" --no-cache -o fill=none; then
	ls "$MP" >/dev/null
	n=$(nreq)
	t_expect "first readdir: $n requests from the start of the mount (<= 6)" [ "$n" -le 6 ]
	for f in d0/s0/f00.txt d3/s2/f07.txt d5/s4/f11.txt d1/s3/f05.txt d4/s1/f09.txt; do
		before=$(nreq)
		want=$(head -c 1 "$TMP/src/$f" | od -An -tx1)
		got=$(head -c 1 "$MP/$f" | od -An -tx1)
		n=$(($(nreq) - before))
		t_expect "first byte of /$f: right, $n requests (<= 2)" \
			[ "$got" = "$want" -a "$n" -le 2 ]
	done
	t_expect "umount (fill=none)" t_fuse_stop
	T_PIDS=("${T_PIDS[@]:0:2}")
fi

# --- fill=all: the blob in the background, then read ---------------------------
C=$TMP/cache
: >"$PLOG"
MP=$TMP/m1
if t_fuse_start "$REF" "$TMP/m1.log" --cache-dir "$C" -o fill=all,fill_rate=200M; then
	if wait_full "$C"; then
		b=$(blob_bytes) n=$(blob_reqs)
		t_pass "fill=all: the cache entry is complete ($n blob requests, $b bytes)"
		t_expect "each byte fetched once: $b blob bytes for $size (<= size + 64 KiB)" \
			[ "$b" -le $((size + 65536)) -a "$b" -ge "$size" ]
		t_expect "requests of up to 1 MiB: $n blob requests (<= size / 1 MiB + 6)" \
			[ "$n" -le $((size / 1048576 + 6)) ]
	else
		t_fail "fill=all: the cache entry did not fill: $(head -c 300 "$TMP/m1.log")"
	fi
	before=$(blob_bytes)
	t_expect "fill=all: every file reads as the tree" diff -r "$TMP/src" "$MP"
	t_expect "reads after the fill fetch nothing ($before -> $(blob_bytes) blob bytes)" \
		[ "$(blob_bytes)" = "$before" ]
	t_expect "umount (fill=all)" t_fuse_stop
	T_PIDS=("${T_PIDS[@]:0:2}")
fi
# warm: nothing fetched
: >"$PLOG"
MP=$TMP/m2
if t_fuse_start "$REF" "$TMP/m2.log" --cache-dir "$C" -o fill=all; then
	t_expect "warm remount: every file reads as the tree" diff -r "$TMP/src" "$MP"
	t_expect "warm remount: no blob byte fetched ($(blob_bytes))" [ "$(blob_bytes)" = 0 ]
	t_expect "umount (warm)" t_fuse_stop
	T_PIDS=("${T_PIDS[@]:0:2}")
fi

# --- reads while the fill runs (a slow link: 4 MiB/s) -------------------------
rm -rf "$C"
: >"$PLOG"
MP=$TMP/m3
if t_fuse_start "$REF" "$TMP/m3.log" --cache-dir "$C" -o fill=all,fill_rate=4M \
	--record-trace "$TMP/trace"; then
	t_expect "reads during the fill: every file reads as the tree" diff -r "$TMP/src" "$MP"
	t_expect "umount (during the fill)" t_fuse_stop
	T_PIDS=("${T_PIDS[@]:0:2}")
	# the trace: whole blocks, in the image, every file's bytes read
	t_expect "--record-trace: ranges of whole blocks in the image ($(wc -l <"$TMP/trace") lines)" \
		awk -v s="$size" 'NF != 2 || $1 % 4096 || ($2 % 4096 && $1 + $2 != s) || $1 + $2 > s {bad = 1} END {exit bad || NR == 0}' "$TMP/trace"
fi

# --- no room: --cache-max below the image; a full disk ---------------------
: >"$PLOG"
MP=$TMP/m4
if t_fuse_start "$REF" "$TMP/m4.log" --cache-dir "$TMP/c4" --cache-max 64K -o fill=all; then
	t_expect "--cache-max below the image: the files still read" \
		cmp -s "$MP/d2/s2/f03.txt" "$TMP/src/d2/s2/f03.txt"
	t_expect "umount (no room)" t_fuse_stop
	T_PIDS=("${T_PIDS[@]:0:2}")
	t_expect "--cache-max below the image: no fill, one line ($(grep -c 'no background fill' "$TMP/m4.log"))" \
		[ "$(grep -c 'no background fill' "$TMP/m4.log")" = 1 ]
	t_expect "--cache-max below the image: $(blob_bytes) blob bytes, < $size" \
		[ "$(blob_bytes)" -lt "$size" ]
fi
mkdir -p "$TMP/full"
if mount -t tmpfs -o size=1m tmpfs "$TMP/full" 2>/dev/null; then
	T_MOUNTS+=("$TMP/full")
	MP=$TMP/m6
	if t_fuse_start "$REF" "$TMP/m6.log" --cache-dir "$TMP/full/c" -o fill=all; then
		t_expect "a full cache disk: every file reads as the tree" diff -r "$TMP/src" "$MP"
		t_expect "umount (full disk)" t_fuse_stop
		T_PIDS=("${T_PIDS[@]:0:2}")
		t_expect "a full cache disk: the fill stops with one line" \
			[ "$(grep -c 'background fill stopped' "$TMP/m6.log")" = 1 ]
	fi
	umount "$TMP/full"
else
	echo "SKIP: the full disk (a 1 MiB tmpfs needs root)"
fi
# --- a trace published with the layer: fill=trace fetches it first ------------
# (the trace recorded above read every file: record one of a few files)
MP=$TMP/m8
if t_fuse_start "$REF" "$TMP/m8.log" --no-cache --record-trace "$TMP/trace5"; then
	# read as the replay below reads them (the reader's own read-ahead
	# of compressed bytes depends on the sizes of the reads)
	for f in d0/s1/f02.txt d2/s3/f08.txt d4/s0/f11.txt d5/s2/f06.txt; do
		cmp -s "$MP/$f" "$TMP/src/$f"
	done
	t_expect "umount (recording)" t_fuse_stop
	T_PIDS=("${T_PIDS[@]:0:2}")
fi
t_run pushtr "$EZFS" push -q --prefetch "$TMP/trace5" "$TMP/img" "oci://127.0.0.1:$RPORT/fill:trace"
t_check "push --prefetch" 0
nann=$(curl -sf -H "Accept: application/vnd.oci.image.manifest.v1+json" \
	"http://127.0.0.1:$RPORT/v2/fill/manifests/trace" |
	python3 -c 'import json,sys; print(len(json.load(sys.stdin)["layers"][0]["annotations"]["org.ezfs.prefetch"].split(",")))' || echo 0)
t_expect "push --prefetch: the org.ezfs.prefetch annotation ($nann ranges)" [ "$nann" -gt 0 ]
printf '0 %s\n' $((size + 4096)) >"$TMP/badtrace"
t_run pushbad "$EZFS" push -q --prefetch "$TMP/badtrace" "$TMP/img" "oci://127.0.0.1:$RPORT/fill:bad"
t_check "push --prefetch of a range past the image: refused in one line" 1 stderr "badtrace, line 1"
: >"$PLOG"
MP=$TMP/m9
if t_fuse_start "oci://127.0.0.1:$PPORT/fill:trace" "$TMP/m9.log" --cache-dir "$TMP/c9" -o fill=trace; then
	# the fill of the trace: until the proxy's log stops growing (bounded)
	last=-1
	for _ in $(seq 100); do
		n=$(nreq)
		[ "$n" = "$last" ] && [ "$(blob_reqs)" -gt 2 ] && break
		last=$n
		sleep 1
	done
	b=$(blob_bytes) n=$(blob_reqs)
	t_expect "fill=trace: the trace's ranges in few requests ($n blob requests for $nann ranges, $b bytes)" \
		[ "$n" -le $((nann + 4)) -a "$b" -lt "$size" ]
	for f in d0/s1/f02.txt d2/s3/f08.txt d4/s0/f11.txt d5/s2/f06.txt; do
		cmp -s "$MP/$f" "$TMP/src/$f" || t_fail "fill=trace: /$f differs"
	done
	t_expect "fill=trace: the traced files then read with no request ($n -> $(blob_reqs))" \
		[ "$(blob_reqs)" = "$n" ]
	t_expect "umount (fill=trace)" t_fuse_stop
	T_PIDS=("${T_PIDS[@]:0:2}")
fi
# --- a blob changed in the registry's storage: the fill finds it out ----------
data=$(find "$TMP/registry/store" -path "*/${blob#sha256:}/data" | head -n 1)
if [ -n "$data" ]; then
	python3 - "$data" <<'PY'
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(0, 2)
    f.seek(f.tell() // 2)
    b = f.read(1)
    f.seek(-1, 1)
    f.write(bytes([b[0] ^ 0xff]))
PY
	MP=$TMP/m7
	if t_fuse_start "$REF" "$TMP/m7.log" --cache-dir "$TMP/c7" -o fill=all; then
		for _ in $(seq 600); do
			grep -q "does not match" "$TMP/m7.log" && break
			sleep 0.1
		done
		t_run tam cat "$MP/d3/s3/f04.txt"
		t_expect "a changed blob: the fill finds it out and reads fail (rc $RC)" \
			[ "$RC" != 0 -a ! -s "$OUT" ]
		t_expect "umount (changed blob)" t_fuse_stop
		T_PIDS=("${T_PIDS[@]:0:2}")
		t_expect "a changed blob: named in the log" grep -q "does not match" "$TMP/m7.log"
	fi
else
	t_fail "the blob's file in the registry's storage was not found"
fi
t_run bad "$EZFS" mount -o fill=bogus "$REF" "$TMP/m5"
t_check "fill=bogus: refused in one line" 2 stderr "bad fill 'bogus'"
t_done
