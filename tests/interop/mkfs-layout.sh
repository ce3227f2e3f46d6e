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
#  - the image is the same for --workers 1 and 2 (also uncompressed, its
#    files read ahead on the workers), and reads back whole,
#    also when the packed inode spans several 16 MiB segments (compressed
#    by the workers while the fragments are still being placed) and when
#    files over 16 MiB are compressed in parts (plain, with an inline tail,
#    with a fragment, with in-file dedupe across the parts);
#  - stretches of random bytes inside text are stored raw, block by block;
#  - a tail goes inline after metadata that ends in the next block (a
#    3000-byte xattr, a 2 MiB file's compact index), as in mkfs.erofs;
#  - metadata blocks are filled exactly where unit sizes allow: 10000
#    files whose units take 5 or 7 slots need no block beyond their sum
#    (first fit decreasing alone leaves 2-3 slots in each);
#  - -E fragments stores identical pclusters once inside a file and
#    between the heads of near-copies.
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
# workers_same LABEL TAG WA WB SRC OPTION...: SRC built with WA and with WB
# workers into $TMP/TAG<workers>.img must give the same image
workers_same() {
	local label=$1 tag=$2 wa=$3 wb=$4 src=$5 w
	shift 5
	for w in "$wa" "$wb"; do
		t_run "mkfs$tag$w" mk --workers="$w" "$@" "$TMP/$tag$w.img" "$src"
		[ "$RC" = 0 ] || t_fail "mkfs $label --workers=$w rc=$RC: $(head -c 300 "$ERR")"
	done
	t_expect "same image for --workers $wa and $wb ($label)" \
		cmp -s "$TMP/$tag$wa.img" "$TMP/$tag$wb.img"
}

t_manifest "$tree" --no-times >"$TMP/src.json"
workers_same "lz4hc-12 64K" p 1 2 "$tree" -z lz4hc,12 -C 65536
workers_same "-E fragments" f 1 2 "$tree" -z lz4hc,12 -C 65536 \
	-E ztailpacking,fragments
# uncompressed: the flat files are read ahead on the workers (zjobs.c)
workers_same "uncompressed" u 1 2 "$tree"
t_check_image "uncompressed" "$TMP/u2.img" "$TMP/src.json" --no-times
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
workers_same "36 MiB packed inode" a 1 2 "$big" -z lz4 -C 65536 \
	-E all-fragments
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
# 16 MiB parts, the last one what is left (zsplit.c)
for c in lz4: lz4:ztailpacking lz4:fragments lz4:dedupe lz4hc,3: deflate,1: \
	zstd,1:dedupe; do
	z=${c%%:*} e=${c#*:}
	workers_same "parts, $z ${e:-plain}" s 1 2 "$parts" -z "$z" \
		-C 16384 ${e:+-E $e}
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
	workers_same "mixed, $z -C $c" m 1 2 "$mixd" -z "$z" -C "$c"
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

# inline data after metadata that spans a block boundary: a 6096-byte
# file with a 3000-byte xattr (core and xattrs 3.1 KiB, tail 2000 bytes),
# and a 2 MiB file of text ending in 6000 random bytes (its compact index
# is 1.1 KiB; the random end is stored raw: a block, then the 3350 bytes
# left); both too large for one block with their metadata, so they used
# to take a block of their own
span=$TMP/span
mkdir -p "$span"
python3 - "$span" <<'EOF' || t_fail "crafting the spanning tree"
import os, random, sys
d = sys.argv[1]
r = random.Random(5)
open(d + "/x", "wb").write(bytes(r.randrange(256) for _ in range(6096)))
os.setxattr(d + "/x", "user.big", b"v" * 3000)
text = b"".join(b"%08d line of a log that compresses\n" % i
                for i in range(60000))[:2 << 20]
open(d + "/z", "wb").write(text + bytes(r.randrange(256) for _ in range(6000)))
EOF
t_manifest "$span" --no-times >"$TMP/span.json"
t_run mkfsx mk "$TMP/x.img" "$span"
[ "$RC" = 0 ] || t_fail "mkfs spanning tree rc=$RC: $(head -c 300 "$ERR")"
layout=$("$EZFS" stat "$TMP/x.img" /x | field Layout)
if [ "$layout" = flat_inline ]; then
	t_pass "tail inline after a 3000-byte xattr"
else
	t_fail "tail after a 3000-byte xattr: layout '$layout', want flat_inline"
fi
t_check_image "spanning inline tail" "$TMP/x.img" "$TMP/span.json" --no-times
t_run mkfsz mk -z lz4hc -E ztailpacking "$TMP/z.img" "$span"
[ "$RC" = 0 ] || t_fail "mkfs spanning tree -z rc=$RC: $(head -c 300 "$ERR")"
last=$("$EZFS" stat -e "$TMP/z.img" /z | tail -n 1)
case $last in
*inline*) t_pass "2 MiB file: its 3350-byte tail inline after its index" ;;
*) t_fail "2 MiB file's last extent: $last" ;;
esac
t_check_image "spanning ztailpacking" "$TMP/z.img" "$TMP/span.json" --no-times

# metadata packing: 7000 files of 192 bytes (units of 7 slots: core and
# tail) and 3000 of 128 bytes (5 slots); 14 of the one and 6 of the
# other fill a block exactly
pack=$TMP/pack
mkdir -p "$pack"
python3 - "$pack" <<'EOF' || t_fail "crafting the packing tree"
import sys
d = sys.argv[1]
for i in range(10000):
    n = 192 if i % 10 < 7 else 128
    open("%s/f%05d" % (d, i), "wb").write(((b"%05d" % i) * 40)[:n])
EOF
t_run mkfsk mk "$TMP/k.img" "$pack"
[ "$RC" = 0 ] || t_fail "mkfs packing tree rc=$RC: $(head -c 300 "$ERR")"
"$EZFS" stat "$TMP/k.img" / >"$TMP/root.txt"
rsize=$(field Size <"$TMP/root.txt")
rlayout=$(field Layout <"$TMP/root.txt")
blocks=$(($(stat -c %s "$TMP/k.img") / 4096))
# block 0 has 92 slots after the superblock; the root's unit: its core
# and, inline, what is left of its entries after its full blocks
rtail=0
[ "$rlayout" = flat_inline ] && rtail=$((rsize % 4096))
slots=$((7000 * 7 + 3000 * 5 + (32 + rtail + 31) / 32))
least=$((1 + (slots - 92 + 127) / 128 + rsize / 4096))
if [ "$blocks" -le "$least" ]; then
	t_pass "metadata packed exactly: $blocks blocks (least $least)"
else
	t_fail "metadata packing: $blocks blocks, least $least"
fi
t_manifest "$pack" --no-times >"$TMP/pack.json"
t_check_image "packing tree" "$TMP/k.img" "$TMP/pack.json" --no-times
# -E fragments shares identical pclusters (as mkfs.erofs 1.9.3): inside a
# file (text, eight copies of 16 KiB of random bytes, stored raw block by
# block, and text; 4 KiB pclusters: 34 pclusters of 61, as 1.9.3) and
# between the heads that near-copies get (seven copies of a file that
# ends like an earlier one for 70 KB: each head once, not seven times)
share=$TMP/share
mkdir -p "$share"
python3 - "$share" <<'EOF' || t_fail "crafting the sharing tree"
import os, random, sys
d = sys.argv[1]
r = random.Random(11)
words = [bytes(r.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(r.randrange(2, 9)))
         for _ in range(3000)]
def text(n):
    return b" ".join(r.choice(words) for _ in range(n // 4))[:n]
rnd = bytes(r.randrange(256) for _ in range(16384))
open(d + "/rep", "wb").write(text(100000) + rnd * 8 + text(30000))
t = text(90000)
open(d + "/e.h", "wb").write(t)
head = text(17000)
for i in range(7):
    os.makedirs("%s/c%d" % (d, i))
    open("%s/c%d/x.h" % (d, i), "wb").write(head + t[-70000:])
EOF
t_manifest "$share" --no-times >"$TMP/share.json"
addrs() {
	"$EZFS" stat -e "$1" "$2" |
		awk '$2 ~ /^[0-9]+$/ && /mapped/ && !/fragment/ {print $2}'
}
t_run mkfss mk -z lz4hc -E fragments "$TMP/s.img" "$share"
[ "$RC" = 0 ] || t_fail "mkfs sharing tree rc=$RC: $(head -c 300 "$ERR")"
all=$(addrs "$TMP/s.img" /rep | wc -l)
uniq=$(addrs "$TMP/s.img" /rep | sort -u | wc -l)
if [ "$all" -gt 0 ] && [ $((uniq + 24)) -le "$all" ]; then
	t_pass "-E fragments: a file's repeated pclusters stored once ($uniq of $all)"
else
	t_fail "-E fragments: repeated pclusters: $uniq distinct of $all"
fi
t_check_image "sharing, 4K" "$TMP/s.img" "$TMP/share.json" --no-times
t_run mkfsn mk -z lz4hc -C 65536 -E fragments "$TMP/n.img" "$share"
[ "$RC" = 0 ] || t_fail "mkfs sharing tree -C 64K rc=$RC: $(head -c 300 "$ERR")"
heads=$(for i in 0 1 2 3 4 5 6; do addrs "$TMP/n.img" /c$i/x.h; done | sort -u | tr '\n' ' ')
n=$(echo $heads | wc -w)
if [ "$n" -ge 1 ] && [ "$n" = "$(addrs "$TMP/n.img" /c0/x.h | wc -l)" ]; then
	t_pass "-E fragments: seven near-copies share one head ($heads)"
else
	t_fail "-E fragments: near-copy heads at $heads"
fi
t_check_image "sharing, near-copies" "$TMP/n.img" "$TMP/share.json" --no-times
# codec contexts serve many files (zcfg.c resets them after each): files
# that compress well and badly in turn, so what one file taught a context
# (its ratio guess) would change the next one's trials; one worker sees
# every file in order, three each see every third
ctxd=$TMP/ctxd
mkdir -p "$ctxd"
for i in 0 1 2 3 4 5 6 7 8; do
	case $((i % 3)) in
	0) head -c $((150000 + i * 7000)) "$parts/seq" ;;
	1) head -c $((90000 + i * 5000)) /dev/urandom | od -An -tx1 ;;
	2) { head -c 20000 /dev/urandom; tail -c 200000 "$parts/seq"; } ;;
	esac >"$ctxd/f$i"
done
for zc in zstd,3:65536 zstd,12:16384 zstd,1:1048576 lz4hc,9:4096; do
	z=${zc%%:*} c=${zc#*:}
	workers_same "contexts reused, $z -C $c" c 1 3 "$ctxd" -z "$z" -C "$c"
done
# -E ztailpacking: the packed inode's own end goes inline after its index,
# as a file's does (mkfs.erofs compresses the packed inode as a file); one
# file of 9000 bytes that lies whole in the packed inode
ptd=$TMP/ptail
mkdir -p "$ptd"
python3 -c "
import sys
s = ''.join(f'static int field_{i:04d}(struct reg *r) {{ return r->v[{i % 97}]'
            f' + {i * 7 % 1000}; }}\\n' for i in range(200))
sys.stdout.write(s[:9000])" >"$ptd/f"
t_manifest "$ptd" --no-times >"$TMP/ptail.json"
for e in fragments ztailpacking,fragments; do
	t_run "mkfspt-$e" mk -z lz4 -C 65536 -E "$e" "$TMP/pt-$e.img" "$ptd"
	[ "$RC" = 0 ] || t_fail "mkfs packed tail -E $e rc=$RC: $(head -c 300 "$ERR")"
done
s1=$(stat -c %s "$TMP/pt-fragments.img")
s2=$(stat -c %s "$TMP/pt-ztailpacking,fragments.img")
t_expect "the packed inode's tail inline: $s2 bytes, $s1 without ztailpacking" \
	[ "$s2" -le $((s1 - 4096)) ]
t_check_image "the packed inode's tail inline" \
	"$TMP/pt-ztailpacking,fragments.img" "$TMP/ptail.json" --no-times
t_done
