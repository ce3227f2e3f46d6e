#!/bin/bash
# SPDX-License-Identifier: MIT
# The counters of a mounted remote image (docs/remote.md, Counters): an
# image of ezfs mkfs (a 2.5 MiB text file, lz4hc 64K pclusters) served by
# nginx (its own config on a free port of 127.0.0.1), mounted as
# http://...; after a cat of the file, `ezfs accel stats MNT` prints the
# remote: lines and --json a remote object valid against
# docs/schemas/accel-stats-mount.json with requests > 0, bytes fetched at
# least the file's stored (compressed) bytes, a hit rate and the fetch
# latency p50 <= p99; after the page cache is dropped, a second cat of the
# same file reaches the daemon again but fetches nothing. A mount of the local image
# prints no remote: line and "remote": null.
#
# usage: tests/interop/remote-stats.sh
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
t_init
t_need_cmd python3
if "$EZFS" cache --cache-dir "$TMP/probe" ls 2>&1 | grep -q "without libcurl"; then
	t_skip "ezfs was built without libcurl (remote images)"
fi
t_need_fuse
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || t_skip "nginx is not installed (scripts/deps.sh installs nginx-light)"
CHECK=(python3 "$SRC/tests/interop/json-check.py" validate
	"$SRC/docs/schemas/accel-stats-mount.json")
NGINX_PID=
stop_nginx() {
	[ -z "$NGINX_PID" ] && return 0
	kill "$NGINX_PID" 2>/dev/null || true
	wait "$NGINX_PID" 2>/dev/null || true
	NGINX_PID=
}
trap 'stop_nginx; t_cleanup' EXIT

# --- the image ------------------------------------------------------------
mkdir -p "$TMP/src"
python3 - "$TMP/src/big.txt" <<'PY'
import random, sys
r = random.Random(1)
words = [''.join(r.choice('abcdefghij') for _ in range(r.randint(2, 9)))
         for _ in range(3000)]
open(sys.argv[1], 'w').write(' '.join(r.choice(words) for _ in range(400000)))
PY
WWW=$TMP/www
mkdir -p "$WWW" "$TMP/nginx"
"$EZFS" mkfs -q -z lz4hc -C 65536 "$WWW/img.img" "$TMP/src" >/dev/null
stored=$("$EZFS" stat --json "$WWW/img.img" /big.txt |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["stored_bytes"])')
echo "  big.txt: $(stat -c %s "$TMP/src/big.txt") bytes, $stored stored"

# --- nginx ----------------------------------------------------------------
chmod 644 "$WWW/img.img"
t_nginx "$WWW" || { t_fail "nginx did not start"; t_done; }
URL=http://127.0.0.1:$PORT/img.img

# J FILE KEY...: the value at the path KEY... of the document in FILE
J() {
	python3 -c 'import json,sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2:]:
    v = v[k]
print(v)' "$@"
}
validate() {
	"${CHECK[@]}" "$2" >"$TMP/chk" 2>&1 || true
	if grep -q '^ok:' "$TMP/chk"; then
		t_pass "$1: valid against accel-stats-mount.json"
	else
		t_fail "$1: $(head -c 300 "$TMP/chk")"
	fi
}

# --- the remote mount -----------------------------------------------------
if t_fuse_start "$URL" "$TMP/m.log" --no-cache; then
	t_run st0 "$EZFS" accel stats "$MP"
	t_check "accel stats of a fresh remote mount: remote lines" 0 \
		stdout '^remote: [1-9][0-9]* requests'
	t_expect "a remote read hashes like the file" \
		cmp -s "$MP/big.txt" "$TMP/src/big.txt"
	t_run st1 "$EZFS" accel stats "$MP"
	t_check "accel stats MNT after a read" 0 \
		stdout '^remote: [1-9][0-9]* requests \([0-9]+ retries, [1-9][0-9]* round trips\), [1-9][0-9]* bytes fetched, [1-9][0-9]* read$' \
		stdout '^remote: [1-9][0-9]* reads, [0-9]+ without a request \(hit rate [0-9.]+%\), fetch latency p50 [0-9]+ us, p99 [0-9]+ us$'
	sed -n 's/^/  /; /remote:/p' "$OUT"
	t_run j1 "$EZFS" accel stats --json "$MP"
	t_check "accel stats --json MNT" 0
	cp "$OUT" "$TMP/j1.json"
	validate "accel stats --json of a remote mount" "$TMP/j1.json"
	req=$(J "$TMP/j1.json" remote requests) f1=$(J "$TMP/j1.json" remote bytes_fetched)
	r1=$(J "$TMP/j1.json" remote reads) rd1=$(J "$TMP/j1.json" remote bytes_read)
	hr=$(J "$TMP/j1.json" remote hit_rate)
	p50=$(J "$TMP/j1.json" remote fetch_us p50) p99=$(J "$TMP/j1.json" remote fetch_us p99)
	echo "  json: $req requests, $f1 bytes fetched, $rd1 read by $r1 reads, hit rate $hr, p50 $p50 us, p99 $p99 us"
	t_expect "requests > 0 ($req)" [ "$req" -gt 0 ]
	t_expect "fetched ($f1) >= the file's stored bytes ($stored)" [ "$f1" -ge "$stored" ]
	t_expect "bytes read ($rd1) >= the file's stored bytes" [ "$rd1" -ge "$stored" ]
	t_expect "a hit rate in [0, 1] ($hr)" \
		python3 -c 'import sys; sys.exit(not 0 <= float(sys.argv[1]) <= 1)' "$hr"
	t_expect "fetch latency 0 < p50 <= p99 ($p50, $p99)" \
		[ $((p50 > 0 && p50 <= p99)) = 1 ]
	m1=$(J "$TMP/j1.json" mount_reads reads)

	# the same file again, past the page cache: from the source's cache
	sync
	echo 1 >/proc/sys/vm/drop_caches
	t_expect "a second read hashes like the file" \
		cmp -s "$MP/big.txt" "$TMP/src/big.txt"
	t_run j2 "$EZFS" accel stats --json "$MP"
	cp "$OUT" "$TMP/j2.json"
	f2=$(J "$TMP/j2.json" remote bytes_fetched) r2=$(J "$TMP/j2.json" remote reads)
	m2=$(J "$TMP/j2.json" mount_reads reads)
	echo "  second read: $f2 bytes fetched, $r2 source reads (were $r1)"
	t_expect "the second read reached the daemon ($m1 -> $m2 FUSE reads)" [ "$m2" -gt "$m1" ]
	t_expect "the second read fetches nothing more ($f1 -> $f2)" [ "$f2" -eq "$f1" ]
	t_expect "umount of the remote mount" t_fuse_stop
	# gone: lib.sh's cleanup would fail to kill it
	T_PIDS=()
else
	t_fail "ezfs mount $URL: $(head -c 300 "$TMP/m.log")"
fi

# --- a local mount: no remote counters ------------------------------------
MP=$TMP/lmnt
if t_fuse_start "$WWW/img.img" "$TMP/l.log"; then
	cat "$MP/big.txt" >/dev/null
	t_run ls0 "$EZFS" accel stats "$MP"
	t_check "accel stats of a local mount" 0 stdout '^cache: '
	if grep -q '^remote:' "$OUT"; then
		t_fail "a local mount prints a remote: line"
	else
		t_pass "a local mount prints no remote: line"
	fi
	t_run lj "$EZFS" accel stats --json "$MP"
	t_check "accel stats --json of a local mount: remote is null" 0 \
		stdout '"remote": null'
	cp "$OUT" "$TMP/lj.json"
	validate "accel stats --json of a local mount" "$TMP/lj.json"
	t_expect "umount of the local mount" t_fuse_stop
	T_PIDS=()
else
	t_fail "ezfs mount of the local image"
fi
stop_nginx
t_done
