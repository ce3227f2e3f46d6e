#!/bin/bash
# SPDX-License-Identifier: MIT
# Random 4 KiB reads through ezfs mount decode each extent about once.
# Extents start and end inside pages; the kernel takes a page into its cache
# only whole, so the daemon joins the edges of neighbouring extents
# (lib/mount/edge.c). Without that, every read of a page shared by two
# extents came back to the daemon and decoded both again (2.4 decodes per
# extent for fio randread on a 256 KiB deflate image).
#
# A 12 MiB text file, deflate at 64 KiB and zstd-3 at 256 KiB pclusters,
# every page read once in a shuffled order (readahead off), then the whole
# file sequentially on a fresh mount: the bytes equal the source, and from
# `ezfs accel stats MNT`: decodes at most 1.25 times the extents (+4),
# random read requests of the deflate image at most 1.5 times; random
# reads join edge pages and are answered from the pcluster cache without
# a copy; the zstd file read sequentially leaves the cache extent by
# extent. Then lz4hc at 4 KiB pclusters: one random page read leaves the
# 256 KiB after it in the page cache (fincore).
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
t_init

t_need_fuse
t_need_cmd python3
unset EZFS_ACCEL EZFS_DISPATCH EZFS_STRICT_ACCEL

mkdir -p "$TMP/src"

# Deterministic text: words of a small vocabulary, ratio ~0.3 with deflate.
python3 - "$TMP/src/text" <<'EOF'
import random, sys
rng = random.Random(5)
words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz")
                 for _ in range(rng.randint(2, 9))) for _ in range(3000)]
out, n = [], 0
while n < 12 << 20:
    line = " ".join(rng.choice(words) for _ in range(rng.randint(4, 14)))
    out.append(line)
    n += len(line) + 1
open(sys.argv[1], "w").write("\n".join(out)[:12 << 20])
EOF
# stats_check NAME: `ezfs accel stats MNT` against the extents.
stats_check() {
	local name=$1 reads direct edges decodes limit
	t_run stats "$EZFS" accel stats "$MP"
	sed 's/^/  /' "$OUT"
	reads=$(awk '/^mount: /{print $2}' "$OUT")
	direct=$(awk '/^mount: /{sub(/^\(/, "", $4); print $4}' "$OUT")
	edges=$(awk '/^mount: /{for (i = 1; i < NF; i++) if ($(i + 1) == "edge") print $i}' "$OUT")
	decodes=$(awk '$2 == "deflate" || $2 == "zstd" {n += $3} END {print n + 0}' "$OUT")
	limit=$((extents * 5 / 4 + 4))
	echo "$name: extents $extents, read requests ${reads:-?}, decodes $decodes, edge pages ${edges:-?}, limit $limit"
	t_expect "$name: decodes ($decodes) at most $limit" [ "$decodes" -le "$limit" -a "$decodes" -ge "$extents" ]
	# (a sequential reader is read ahead by the kernel; the helpers only
	# decode ahead of it into the cache)
	case $name in
	*random*)
		t_expect "$name: edge pages joined (${edges:-?})" [ "${edges:-0}" -gt 0 ]
		t_expect "$name: reads answered from the cache without a copy" [ "${direct:--1}" = "${reads:-}" ] ;;
	esac
	# Without the edge table every page shared by two extents came back:
	# about twice the extents in read requests (165 for 82). A busy
	# machine adds a few (pages asked for before a helper stored them).
	# Large extents answered whole to a sequential reader leave the
	# decoded cache (their buffers take the next decodes): all but the
	# last few, still held when the reader stops.
	if [ "$name" = "zstd sequential" ]; then
		gone=$(awk '/^cache: /{for (i = 1; i < NF; i++) if ($(i + 1) == "let") print $i}' "$OUT")
		t_expect "$name: extents let go once in the page cache (${gone:-?}) at least $((extents - 4))" \
			[ "${gone:-0}" -ge $((extents - 4)) ]
	fi
	if [ "$name" = "deflate random" ]; then
		t_expect "$name: read requests (${reads:-?}) at most $((extents * 3 / 2))" \
			[ "${reads:-999999}" -le $((extents * 3 / 2)) ]
	fi
}

# deflate 64 KiB: small extents (~200 KiB); zstd-3 256 KiB: large ones
# (~1 MiB, decoded ahead of a sequential reader by the helpers; -z zstd's
# level -1 stores the literals raw: 32 extents of 12 MiB, not 19).
for spec in deflate:65536 zstd:262144; do
	alg=${spec%:*}
	img=$TMP/$alg.img
	z=$alg
	[ "$alg" = zstd ] && z=zstd,3
	t_run mkfs "$EZFS" mkfs -q -z "$z" -C "${spec#*:}" "$img" "$TMP/src"
	[ "$RC" = 0 ] || { t_fail "$alg: mkfs: $(head -c 300 "$ERR")"; continue; }
	extents=$("$EZFS" stat -e "$img" /text | awk '/ extents, /{print $2}')
	[ "${extents:-0}" -gt 10 ] || { t_fail "$alg: ${extents:-no} extents"; continue; }

	t_fuse_start "$img" "$TMP/daemon.log" || { t_fail "$alg: mount"; continue; }
	sync
	echo 3 >/proc/sys/vm/drop_caches
	t_run shuffle python3 - "$MP/text" "$TMP/src/text" <<'EOF'
import os, random, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
size = os.fstat(fd).st_size
pages = list(range((size + 4095) // 4096))
random.Random(7).shuffle(pages)
got = bytearray(size)
for p in pages:
    b = os.pread(fd, 4096, p * 4096)
    got[p * 4096:p * 4096 + len(b)] = b
want = open(sys.argv[2], "rb").read()
print("pages", len(pages), "same" if got == want else "DIFFERENT")
sys.exit(0 if got == want else 1)
EOF
	t_expect "$alg: every page read once in random order equals the source" [ "$RC" = 0 ]
	stats_check "$alg random"
	t_expect "$alg: umount, daemon exits 0" t_fuse_stop

	t_fuse_start "$img" "$TMP/daemon.log" || { t_fail "$alg: mount"; continue; }
	sync
	echo 3 >/proc/sys/vm/drop_caches
	t_expect "$alg: a sequential read equals the source" cmp -s "$MP/text" "$TMP/src/text"
	stats_check "$alg sequential"
	t_expect "$alg: umount, daemon exits 0" t_fuse_stop
done

# Small extents (lz4hc, 4 KiB pclusters: ~10 KiB each): one random page
# read stores the 256 KiB that follow its extent (readaround), so a random
# reader's later reads near it need no round trip.
if command -v fincore >/dev/null; then
	img=$TMP/lz4hc.img
	t_run mkfs "$EZFS" mkfs -q -z lz4hc -C 4096 "$img" "$TMP/src"
	if [ "$RC" = 0 ] && t_fuse_start "$img" "$TMP/daemon.log"; then
		sync
		echo 3 >/proc/sys/vm/drop_caches
		t_run page python3 - "$MP/text" "$TMP/src/text" <<'EOF'
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
off = 4 << 20
b = os.pread(fd, 4096, off)
want = open(sys.argv[2], "rb").read()[off:off + 4096]
sys.exit(0 if b == want else 1)
EOF
		t_expect "lz4hc 4K: a random page equals the source" [ "$RC" = 0 ]
		res=0
		for _ in $(seq 50); do
			res=$(fincore -b -n -o RES "$MP/text" 2>/dev/null | tr -d ' ')
			[ "${res:-0}" -ge $((256 << 10)) ] && break
			sleep 0.1
		done
		echo "lz4hc 4K: after one random page read, ${res:-?} bytes of the file in the page cache"
		t_expect "lz4hc 4K: readaround stored 256 KiB or more (${res:-?} bytes)" \
			[ "${res:-0}" -ge $((256 << 10)) ]
		t_expect "lz4hc 4K: umount, daemon exits 0" t_fuse_stop
	else
		t_fail "lz4hc 4K: mkfs or mount: $(head -c 300 "$ERR")"
	fi
else
	echo "SKIP: lz4hc 4K readaround check: fincore (util-linux) is not installed"
fi
t_done
