#!/bin/bash
# SPDX-License-Identifier: MIT
# An asynchronous engine (ENGINE, default the test engine "async-test",
# which completes out of order after 20-400 us and fails one request in
# 29 in each of DPDK's ways: error, short and long output, out of space,
# plus one that never completes) under inline, queue:2 and percpu, on
# images packed by ezfs mkfs (deflate, 4K and 64K pclusters) of a 12 MiB
# file and a small one:
#   - ezfs accel stats gives the digest and byte count of the default
#     software engines; the engine served requests, and from this one
#     reader had 8 or more in flight at once (in_flight_max); with
#     async-test, fallbacks and errors were counted (its faults), and
#     nothing is left in flight;
#   - cat gives the file's bytes, extract the tree, fsck passes with the
#     software's byte count; a mount (-o accel=ENGINE,dispatch=MODE; root
#     and /dev/fuse, else left out with a line) gives the files' bytes
#     and its counters show the engine;
# and with one pcluster in the middle overwritten, fsck, cat and extract
# give the software engines' verdict (exit status and problem count),
# each within the time limit. With a DPDK engine also: a stream cut short
# (its last 200 bytes gone: DPDK reports a success with a short output,
# and the ISA-L driver never returns) gives software's verdict through
# ENGINE and through dpdk:compress_isal with a 500 ms deadline, which
# then takes the device out of use with one line; and a 1 ms deadline
# on the good image still gives the file's bytes.
# ENGINE=dpdk:compress_zlib runs the same through the DPDK plugin; it
# skips where `ezfs accel list` shows that engine unusable.
#
# usage: tests/interop/engine-async.sh [ENGINE]
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
t_init
t_need_cmd python3
unset EZFS_ACCEL EZFS_DISPATCH EZFS_STRICT_ACCEL
ENGINE=${1:-async-test}
MODES="inline queue:2 percpu"
LIMIT=120 # seconds any one command may take

t_run list "$EZFS" accel list --all --json
why=$(python3 -c 'import json, sys
for e in json.load(open(sys.argv[1]))["engines"]:
    if e["name"] == sys.argv[2]:
        print("" if e["usable"] else e.get("unusable_reason", "unusable")); break
else:
    print("not in the list")' "$OUT" "$ENGINE")
[ -z "$why" ] || t_skip "engine $ENGINE: $why"

mkdir -p "$TMP/tree"
python3 - "$TMP/tree" <<'PY'
import random, sys
r = random.Random(39)
vocab = [bytes(r.choices(b'etaoinshrdlucmfwyp', k=r.randint(2, 9)))
         for _ in range(3000)]
def lines(n):
    b = bytearray()
    while len(b) < n:
        b += b' '.join(r.choices(vocab, k=r.randint(4, 14))) + b'\n'
    return bytes(b[:n])
for name, n in (('big', 12 << 20), ('small', 100000)):
    with open(sys.argv[1] + '/' + name, 'wb') as f:
        f.write(lines(n))
PY

# digest bytes engine-requests in_flight_max fallbacks errors in_flight
stats() {
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
e = [x for x in d["engines"] if x["name"] == sys.argv[2]]
e = e[0] if e else {"requests": 0, "in_flight_max": 0, "fallbacks": 0,
                    "errors": 0, "in_flight": 0}
print(d["digest"], d["bytes"], e["requests"], e["in_flight_max"],
      e["fallbacks"], e["errors"], e["in_flight"])' "$1" "$ENGINE"
}

for pc in 4096 65536; do
	img=$TMP/d$pc.img
	t_run "mkfs-$pc" "$EZFS" mkfs -q -z deflate -C $pc "$img" "$TMP/tree"
	t_check "deflate $pc: mkfs" 0
	t_run "ref-$pc" "$EZFS" accel stats --json "$img"
	t_check "deflate $pc: accel stats, software" 0
	read -r rdig rbytes _ < <(stats "$OUT")
	t_run "reff-$pc" "$EZFS" fsck "$img"
	t_check "deflate $pc: fsck, software" 0 stdout " 0 problems"
	rsum=$(grep -o '[0-9.]* [KMG]iB decoded' "$OUT" || true)
	for m in $MODES; do
		w="deflate $pc, $ENGINE, --dispatch $m"
		o=(--accel "$ENGINE" --dispatch "$m")
		t_run "s-$pc-$m" timeout $LIMIT "$EZFS" accel stats --json "${o[@]}" "$img"
		t_check "$w: accel stats" 0
		read -r dig bytes req max fb errs now < <(stats "$OUT")
		t_expect "$w: digest and bytes '$dig $bytes' (software: '$rdig $rbytes')" \
			[ "$dig $bytes" = "$rdig $rbytes" ]
		# inline, a 1 MiB read of 64K pclusters holds about 6 whole
		# extents (no decoding ahead without workers)
		want=8
		[ "$m$pc" != inline65536 ] || want=4
		t_expect "$w: $req requests, in_flight_max $max >= $want, $now left in flight" \
			[ "$req" -gt 0 -a "$max" -ge $want -a "$now" -eq 0 ]
		if [ "$ENGINE" = async-test ]; then
			t_expect "$w: faults fell back ($fb fallbacks, $errs errors)" \
				[ "$fb" -gt 0 -a "$errs" -gt 0 ]
		fi
		if timeout $LIMIT "$EZFS" cat "${o[@]}" "$img" big | cmp -s - "$TMP/tree/big"; then
			t_pass "$w: cat"
		else
			t_fail "$w: cat gives other bytes"
		fi
		rm -rf "$TMP/x"
		t_run "x-$pc-$m" timeout $LIMIT "$EZFS" extract -q "${o[@]}" "$img" "$TMP/x"
		t_check "$w: extract" 0
		t_expect "$w: extracted tree" diff -r "$TMP/tree" "$TMP/x"
		t_run "f-$pc-$m" timeout $LIMIT "$EZFS" fsck "${o[@]}" "$img"
		t_check "$w: fsck" 0 stdout " 0 problems"
		sum=$(grep -o '[0-9.]* [KMG]iB decoded' "$OUT" || true)
		t_expect "$w: fsck counts '$sum' (software: '$rsum')" [ -n "$sum" -a "$sum" = "$rsum" ]
	done
done

# --- mount (root and a usable /dev/fuse) ------------------------------------
if t_is_root && [ -c /dev/fuse ] && (exec 3<>/dev/fuse) 2>/dev/null &&
	! "$EZFS" mount --help 2>&1 | grep -q "without FUSE"; then
	for m in $MODES; do
		w="mount, $ENGINE, dispatch $m"
		MP=$TMP/mnt-${m%%:*}
		if t_fuse_start "$TMP/d4096.img" "$TMP/mount-${m%%:*}.log" \
			-o "accel=$ENGINE,dispatch=$m"; then
			t_expect "$w: big" cmp -s "$MP/big" "$TMP/tree/big"
			t_expect "$w: small" cmp -s "$MP/small" "$TMP/tree/small"
			t_run "ms-${m%%:*}" "$EZFS" accel stats "$MP"
			# (the mount's counters carry 15 characters of a name)
			t_check "$w: accel stats of the mount" 0 stdout "${ENGINE:0:15} "
			t_expect "$w: unmounted" t_fuse_stop
		else
			t_fail "$w: the mount did not start"
		fi
	done
else
	echo "(mount left out: it needs root and a usable /dev/fuse)"
fi

# --- a damaged pcluster in the middle of big (deflate 64K) ------------------
img=$TMP/d65536.img
bad=$TMP/bad.img
cp "$img" "$bad"
read -r la pa plen < <(t_extent_at "$img" big $((6 << 20)))
t_expect "an extent at 6 MiB (la ${la:-?}, pa ${pa:-?})" [ -n "${pa:-}" ]
# half of it garbage: a stream that decodes wrong or too short
t_fill_bytes "$bad" $((pa + plen / 2)) $((plen / 2)) 0xa5
verdict() { # exit status and problem lines of a command's run
	echo "rc=$RC $(grep -c 'reading data at\|read at\|reading from the image' "$ERR" || true)"
}
t_run bf-ref "$EZFS" fsck "$bad"
fref=$(verdict)
t_run bc-ref "$EZFS" cat "$bad" big
cref=$(verdict)
t_expect "damaged: software fsck and cat fail ($fref; $cref)" [ "${fref%% *}" = rc=1 -a "${cref%% *}" = rc=1 ]
for m in $MODES; do
	w="damaged, $ENGINE, --dispatch $m"
	o=(--accel "$ENGINE" --dispatch "$m")
	t_run "bf-$m" timeout $LIMIT "$EZFS" fsck "${o[@]}" "$bad"
	got=$(verdict)
	t_expect "$w: fsck verdict '$got' (software: '$fref')" [ "$got" = "$fref" ]
	t_run "bc-$m" timeout $LIMIT "$EZFS" cat "${o[@]}" "$bad" big
	got=$(verdict)
	t_expect "$w: cat verdict '$got' (software: '$cref')" [ "$got" = "$cref" ]
	rm -rf "$TMP/x"
	t_run "bx-$m" timeout $LIMIT "$EZFS" extract -q "${o[@]}" "$bad" "$TMP/x"
	t_check "$w: extract fails" 1 stderr "big: reading from the image"
	t_expect "$w: no partial big" [ ! -e "$TMP/x/big" ]
	t_expect "$w: small extracted" cmp -s "$TMP/x/small" "$TMP/tree/small"
done

case $ENGINE in dpdk*) ;; *) t_done ;; esac
# --- DPDK: a truncated stream, the watchdog -------------------------------
cut=$TMP/cut.img
cp "$img" "$cut"
python3 - "$cut" "$pa" "$plen" <<'PY'
import sys
f = open(sys.argv[1], 'r+b')
pa, plen = int(sys.argv[2]), int(sys.argv[3])
f.seek(pa)
s = f.read(plen).lstrip(b'\0')[:-200]
f.seek(pa)
f.write(bytes(plen - len(s)) + s) # right-aligned, as mkfs writes it
PY
t_run cf-ref "$EZFS" fsck "$cut"
fcut=$(verdict)
t_expect "truncated: software fsck fails ($fcut)" [ "${fcut%% *}" = rc=1 ]
# (ISA-L's driver keeps its state in the thread that never comes back: a
# leak checker sees it lost)
noleak="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
for e in "$ENGINE" dpdk:compress_isal; do
	t_run "cf-$e" timeout $LIMIT env EZFS_DPDK_DEADLINE_MS=500 ASAN_OPTIONS="$noleak" \
		"$EZFS" fsck --accel "$e" "$cut"
	got=$(verdict)
	t_expect "truncated, $e: fsck verdict '$got' (software: '$fcut')" [ "$got" = "$fcut" ]
done
t_expect "truncated, dpdk:compress_isal: out of use after its deadline" \
	grep -q "engine dpdk:compress_isal: a request took more than 0.500 s; out of use" "$ERR"
t_run wd timeout $LIMIT env EZFS_DPDK_DEADLINE_MS=1 "$EZFS" cat --accel "$ENGINE" "$img" big
t_check "1 ms deadline, $ENGINE: cat" 0
t_expect "1 ms deadline, $ENGINE: the bytes of big" cmp -s "$OUT" "$TMP/tree/big"
t_done
