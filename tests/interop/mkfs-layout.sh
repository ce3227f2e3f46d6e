#!/bin/bash
# SPDX-License-Identifier: MIT
# mkfs-layout.sh - size choices of ezfs mkfs pinned on a crafted tree:
#  - a file a few bytes over a block whose compression saves less than a
#    full index is stored plain with an inline tail (as mkfs.erofs);
#  - a root directory too large for block 0 gets block 1: meta_blkaddr 0,
#    root NID 128, and block 0 still holds inodes;
#  - -E fragments: a whole-file near-copy of an earlier fragment keeps its
#    head in a pcluster and points its tail into the packed inode, and of
#    two large files that end alike the later one's fragment is the end of
#    the earlier one's;
#  - the image is the same for --workers 1 and 2, and reads back whole,
#    also when the packed inode spans several 16 MiB segments (compressed
#    by the workers while the fragments are still being placed) and when
#    files over 16 MiB are compressed in parts (plain, with an inline tail,
#    with a fragment, with in-file dedupe across the parts);
#  - stretches of random bytes inside text are stored raw, block by block.
# Exit 0 pass, 1 fail, 77 skip.
set -u

. "$(dirname "$0")/../lib.sh"
t_init
t_need_cmd python3
t_need_cmd cmp
KMOUNT=0
t_can_kmount && KMOUNT=1

tree=$TMP/tree
python3 - "$tree" <<'EOF' || { t_fail "crafting the tree"; t_done; }
import os, random, sys
root = sys.argv[1]
os.makedirs(root + "/n")
rnd = random.Random(7)
words = ["".join(rnd.choice("abcdefghijklmnopqrstuvwxyz")
                 for _ in range(rnd.randint(2, 9))) for _ in range(4000)]
def text(n, seed):
    r = random.Random(seed)
    out = []
    size = 0
    while size < n:
        w = r.choice(words) + (" " if r.random() < 0.9 else "\n")
        out.append(w)
        size += len(w)
    return "".join(out)[:n].encode()
# compresses, but by less than a full index would take
line = b"".join(b"%06d some text that compresses\n" % i for i in range(200))
open(root + "/small4127", "wb").write(line[:4127])
# a root directory of 3.3 KiB: one block, too large for block 0
for i in range(88):
    open(root + "/entry_with_a_long_name_%03d" % i, "wb").write(b"x")
# a, then 150 KiB of other text, then b: a's last 36 KiB after a new head
a = text(40000, 1)
open(root + "/n/a.dts", "wb").write(a)
for i in range(3):
    open(root + "/n/f%d.dts" % i, "wb").write(text(50000, 10 + i))
open(root + "/n/z.dts", "wb").write(text(2500, 99) + a[-36000:])
# large files that end alike: b's end is a's last 200 KB
os.makedirs(root + "/m")
big = text(300000, 3)
open(root + "/m/a.h", "wb").write(big)
open(root + "/m/b.h", "wb").write(text(250000, 4) + big[-200000:])
EOF

mk() { "$EZFS" mkfs -q --no-fsync -T0 -U 00000000-0000-0000-0000-000000000001 "$@"; }
field() { awk -v k="$1" '$0 ~ "^"k":" {print $NF; exit}'; }

t_manifest "$tree" --no-times >"$TMP/src.json"
for w in 1 2; do
	t_run mkfs$w mk --workers=$w -z lz4hc,12 -C 65536 "$TMP/p$w.img" "$tree"
	[ "$RC" = 0 ] || t_fail "mkfs --workers=$w rc=$RC: $(head -c 300 "$ERR")"
	t_run mkfsf$w mk --workers=$w -z lz4hc,12 -C 65536 -E ztailpacking,fragments \
		"$TMP/f$w.img" "$tree"
	[ "$RC" = 0 ] || t_fail "mkfs -E fragments --workers=$w rc=$RC: $(head -c 300 "$ERR")"
done
t_expect "same image for --workers 1 and 2" cmp -s "$TMP/p1.img" "$TMP/p2.img"
t_expect "same image for --workers 1 and 2 (-E fragments)" \
	cmp -s "$TMP/f1.img" "$TMP/f2.img"
t_check_image "plain" "$TMP/p1.img" "$TMP/src.json" --no-times
t_check_image "fragments" "$TMP/f1.img" "$TMP/src.json" --no-times

# a packed inode of 3 segments and a bit
big=$TMP/big
mkdir -p "$big/d"
for i in 1 2 3; do
	seq $((i * 2000000)) $((i * 2000000 + 1500000)) >"$big/d/r$i"
done
head -c 3000 /dev/urandom | base64 >"$big/small"
t_manifest "$big" --no-times >"$TMP/big.json"
for w in 1 2; do
	t_run mkfsa$w mk --workers=$w -z lz4 -C 65536 -E all-fragments \
		"$TMP/a$w.img" "$big"
	[ "$RC" = 0 ] || t_fail "mkfs -E all-fragments --workers=$w rc=$RC: $(head -c 300 "$ERR")"
done
t_expect "same image for --workers 1 and 2 (36 MiB packed inode)" \
	cmp -s "$TMP/a1.img" "$TMP/a2.img"
t_check_image "all-fragments, 36 MiB" "$TMP/a2.img" "$TMP/big.json" --no-times

# files compressed in parts: 20 MB of numbers, and 18.5 MB of one 604 KiB
# piece repeated (in-file dedupe refers back inside each part; the period,
# 151 blocks, does not divide the part size, so the parts differ)
parts=$TMP/parts
mkdir -p "$parts"
seq 1 2600000 >"$parts/seq"
{ head -c 200000 /dev/urandom | base64; seq 1 60000; } |
	head -c $((151 * 4096)) >"$TMP/mib"
for i in $(seq 30); do cat "$TMP/mib"; done >"$parts/rep"
# split, its parts written as they come, then stored flat over them
head -c 17000000 /dev/urandom >"$parts/rnd"
printf 'tail' >>"$parts/rep"
t_manifest "$parts" --no-times >"$TMP/parts.json"
# lz4, lz4hc: 16 MiB parts; deflate, zstd: equal parts, the last halved
# (zsplit.c)
for c in lz4: lz4:ztailpacking lz4:fragments lz4:dedupe lz4hc,3: deflate,1: \
	zstd,1:dedupe; do
	z=${c%%:*} e=${c#*:}
	for w in 1 2; do
		t_run mkfsp$w mk --workers=$w -z "$z" -C 16384 ${e:+-E $e} \
			"$TMP/s$w.img" "$parts"
		[ "$RC" = 0 ] || t_fail "mkfs parts $z ${e:-plain} --workers=$w rc=$RC: $(head -c 300 "$ERR")"
	done
	t_expect "same image for --workers 1 and 2 (parts, $z ${e:-plain})" \
		cmp -s "$TMP/s1.img" "$TMP/s2.img"
	t_check_image "parts, $z ${e:-plain}" "$TMP/s2.img" \
		"$TMP/parts.json" --no-times
done

# the 4127-byte file: one plain block and a 31-byte inline tail
layout=$("$EZFS" stat "$TMP/p1.img" /small4127 | field Layout)
if [ "$layout" = flat_inline ]; then
	t_pass "4127-byte file stored plain with an inline tail"
else
	t_fail "4127-byte file: layout '$layout', want flat_inline"
fi

# the root in block 1, block 0 used too
"$EZFS" info "$TMP/p1.img" >"$TMP/info" 2>&1
meta=$(field "Meta blkaddr" <"$TMP/info")
rootnid=$(field "Root nid" <"$TMP/info")
if [ "$meta" = 0 ] && [ "$rootnid" = 128 ]; then
	t_pass "large root: meta_blkaddr 0, root nid 128"
else
	t_fail "large root: meta_blkaddr '$meta', root nid '$rootnid'"
fi
low=$("$EZFS" stat "$TMP/p1.img" /n | field Nid)
for f in /small4127 /n/a.dts /entry_with_a_long_name_000; do
	n=$("$EZFS" stat "$TMP/p1.img" "$f" | field Nid)
	[ "$n" -lt "$low" ] && low=$n
done
if [ "$low" -lt 128 ]; then
	t_pass "block 0 holds inodes (nid $low)"
else
	t_fail "block 0 holds no inode (lowest nid seen $low)"
fi

# the near-copy: a pcluster for its head, the rest a fragment
"$EZFS" stat -e "$TMP/f1.img" /n/z.dts >"$TMP/z.txt"
if grep -q 'encoded' "$TMP/z.txt" && grep -q 'fragment' "$TMP/z.txt"; then
	t_pass "near-copy: head in a pcluster, tail in the packed inode"
else
	t_fail "near-copy: $(tr '\n' ' ' <"$TMP/z.txt" | tail -c 300)"
fi
# files that end alike: b's fragment ends where a's does in the packed inode
fragend() {
	"$EZFS" stat -e "$TMP/f1.img" "$1" | awk '/fragment/ {
		split($1, r, "\\.\\."); print $2 + r[2] - r[1] }'
}
ea=$(fragend /m/a.h)
eb=$(fragend /m/b.h)
if [ -n "$ea" ] && [ "$ea" = "$eb" ]; then
	t_pass "files that end alike share the end of one fragment"
else
	t_fail "fragment ends: a.h '$ea', b.h '$eb'"
fi
# text, 300 KB of random bytes, text, 70 KB of random bytes: the random
# stretches are stored raw, block by block (a pcluster that saves no
# block is raw whole; random-looking pclusters skip the codec, zfast.c)
mixd=$TMP/mixd
mkdir -p "$mixd"
{ head -c 600000 "$parts/seq"; head -c 300000 /dev/urandom
  head -c 400000 "$parts/seq"; head -c 70000 /dev/urandom
  head -c 100000 "$parts/seq"; } >"$mixd/f"
t_manifest "$mixd" --no-times >"$TMP/mixd.json"
for zc in lzma,6:65536 lz4hc,9:4096 deflate,9:16384 zstd,3:65536; do
	z=${zc%%:*} c=${zc#*:}
	for w in 1 2; do
		t_run mkfsm$w mk --workers=$w -z "$z" -C "$c" "$TMP/m$w.img" "$mixd"
		[ "$RC" = 0 ] || t_fail "mkfs mixed $z -C $c rc=$RC: $(head -c 300 "$ERR")"
	done
	t_expect "same image for --workers 1 and 2 (mixed, $z -C $c)" \
		cmp -s "$TMP/m1.img" "$TMP/m2.img"
	t_check_image "mixed, $z -C $c" "$TMP/m2.img" "$TMP/mixd.json" --no-times
	plain=$("$EZFS" stat -e "$TMP/m2.img" /f | awk '$NF == "mapped" && $(NF-1) == "plain"' | wc -l)
	# the 300 KB stretch is raw but for the pclusters that share it with
	# text on either side
	want=$(((300000 - 2 * c) / 4096))
	if [ "$plain" -ge "$want" ]; then
		t_pass "mixed, $z -C $c: random stretches raw ($plain blocks)"
	else
		t_fail "mixed, $z -C $c: $plain raw blocks, want >= $want"
	fi
done
t_done
