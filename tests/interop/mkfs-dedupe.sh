#!/bin/bash
# SPDX-License-Identifier: MIT
# mkfs-dedupe.sh - -E dedupe across files on decoded data (9.11): a tree
# whose later files repeat parts of an earlier one (c: a middle part of a
# between other bytes, d: a prefix of a, e: a with a few bytes changed)
# is built with -E dedupe,ztailpacking (1-block pclusters) and with
# -C16384. The later files refer to a's pclusters: `ezfs stat -e` shows
# PARTIAL_REF extents ("partial": the pcluster decodes to more than the
# extent uses) and extents stored at a's addresses; the image is smaller
# than without dedupe and the same for 1 and 2 workers; ezfs fsck, ezfs
# extract and (as root) the kernel mount show the tree. With MKFS_EROFS2
# (mkfs.erofs 1.9.3) its fsck.erofs --extract reads the image too, and
# ezfs's image is no larger than 1.9.3's. Exit 0 pass, 1 fail, 77 skip.
set -u

. "$(dirname "$0")/../lib.sh"
t_init
t_need_cmd python3
t_kmount_ok
t_peer_mkfs
[ -z "$PEER" ] || PFSCK=$(dirname "$PEER")/../fsck/fsck.erofs

TREE=$TMP/tree
python3 - "$TREE" <<'PY' || { t_fail "generating the tree"; t_done; }
import os, random, sys
root = sys.argv[1]
r = random.Random(3)
words = [bytes(r.choice(b"abcdefghijklmnop") for _ in range(r.randrange(2, 9)))
         for _ in range(3000)]
a = b" ".join(r.choice(words) for _ in range(120000))
e = bytearray(a)
for k in range(40000, len(e), 90000):
    e[k:k + 3] = b"XYZ"
os.makedirs(root + "/x")
files = {"a": a, "x/c": b"hdr" * 1000 + a[100000:200000] + b"tail" * 500,
         "x/d": a[:300000], "x/e": bytes(e)}
for n, d in files.items():
    with open(f"{root}/{n}", "wb") as f:
        f.write(d)
PY
t_manifest "$TREE" --no-times >"$TMP/src.json"

# img NAME ARGS...: ezfs mkfs ARGS $TMP/NAME.img TREE (-q -T0 -U clear)
img() {
	local name=$1
	shift
	rm -f "$TMP/$name.img"
	t_run "$name" "$EZFS" mkfs -q -T0 -U clear "$@" "$TMP/$name.img" "$TREE"
	[ "$RC" = 0 ] || { t_fail "$name: mkfs rc=$RC: $(head -c 300 "$ERR")"; return 1; }
}
# addrs IMG PATH: the physical addresses of PATH's extents, one a line
addrs() {
	"$EZFS" stat -e "$1" "$2" |
		awk '$1 ~ /^[0-9]+\.\.[0-9]+$/ && $3 ~ /^[0-9]+$/ { print $2 }'
}

# NAME|OPTIONS|-E without dedupe (may be empty)
for cfg in "1blk|-zlz4hc,9|ztailpacking" "16k|-zlz4hc -C16384|" \
	"lzma|-zlzma -C8192|"; do
	IFS='|' read -r n o x <<<"$cfg"
	read -ra a <<<"$o"
	plain=("${a[@]}")
	[ -n "$x" ] && plain+=("-E$x")
	dd=("${a[@]}" "-E${x:+$x,}dedupe")
	img "$n-plain" "${plain[@]}" || continue
	img "$n" "${dd[@]}" || continue
	img "$n-j1" "${dd[@]}" --workers=1 || continue
	t_expect "$n: the same image for 1 and 2 workers" \
		cmp -s "$TMP/$n.img" "$TMP/$n-j1.img"
	ed=$(stat -c %s "$TMP/$n.img")
	pl=$(stat -c %s "$TMP/$n-plain.img")
	t_expect "$n: dedupe makes it smaller ($ed < $pl bytes)" [ "$ed" -lt "$pl" ]
	"$EZFS" stat -e "$TMP/$n.img" /x/c >"$TMP/c.ext"
	t_expect "$n: /x/c has PARTIAL_REF extents" grep -q 'partial' "$TMP/c.ext"
	addrs "$TMP/$n.img" /a | sort -u >"$TMP/a.addr"
	for f in /x/c /x/d /x/e; do
		shared=$(addrs "$TMP/$n.img" $f | sort -u | comm -12 - "$TMP/a.addr" | wc -l)
		t_expect "$n: $f refers to $shared of a's pclusters" [ "$shared" -gt 2 ]
	done
	t_check_image "$n" "$TMP/$n.img" "$TMP/src.json" --no-times
	[ -n "$PEER" ] || continue
	if [ -x "$PFSCK" ]; then
		rm -rf "$TMP/px"
		t_expect "$n: 1.9.3's fsck.erofs --extract" \
			"$PFSCK" --extract="$TMP/px" "$TMP/$n.img"
		t_manifest "$TMP/px" --no-times >"$TMP/px.json" 2>/dev/null
		t_same_manifest "$n: 1.9.3's extract" "$TMP/src.json" "$TMP/px.json"
	fi
	rm -f "$TMP/$n-peer.img"
	"$PEER" --quiet -T0 -U clear "${dd[@]}" "$TMP/$n-peer.img" "$TREE" \
		>/dev/null 2>&1
	pe=$(stat -c %s "$TMP/$n-peer.img" 2>/dev/null || echo 0)
	echo "  $n sizes: ezfs $ed bytes (without dedupe $pl), mkfs.erofs 1.9.3 $pe bytes"
	t_expect "$n: no larger than 1.9.3's ($ed <= $pe)" \
		[ "$pe" -gt 0 ] && [ "$ed" -le "$pe" ]
done
t_done
