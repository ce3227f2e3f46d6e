#!/bin/bash
# SPDX-License-Identifier: MIT
# The commands' large-file reads under each dispatch mode: with queue or
# percpu, ezfs cat and extract read a compressed file of more than 4 MiB
# in extent-aligned windows decoded ahead by two threads, and fsck checks
# it with two threads committing in file order. For images packed by ezfs
# mkfs (deflate 64K, lz4hc 16K, zstd 256K) of a tree with two such files
# (one with a run of zeros) and a small one, under inline, queue:2 and
# percpu:
#   - cat (whole file, and --skip/--length inside it) gives the bytes;
#   - extract gives the tree;
#   - fsck passes and counts the same bytes as inline;
#   - ezfs accel stats (every file read front to back in 1 MiB reads,
#     which end inside extents: decoded ahead on the workers) gives the
#     digest and byte count of inline, and with queue or percpu counts
#     batches (the decodes ahead are handed over together);
# and, with one pcluster in the middle of the large file overwritten:
#   - fsck reports one read problem, at or before that extent;
#   - cat fails naming the offset and what it wrote is a prefix of the
#     file, ending at or before that extent;
#   - extract fails, leaves no partial file, and the other files are right.
#
# usage: tests/interop/dispatch-read.sh
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
t_init
t_need_cmd python3
unset EZFS_ACCEL EZFS_DISPATCH EZFS_STRICT_ACCEL
MODES="inline queue:2 percpu"

# --- the tree: words from a fixed generator (compressible like text) ----
mkdir -p "$TMP/tree"
python3 - "$TMP/tree" <<'EOF'
import random, sys
d = sys.argv[1]
r = random.Random(20)
words = [''.join(r.choice('etaoinshrdlucmfwyp') for _ in range(r.randint(2, 9)))
         for _ in range(3000)]
def text(n):
    out, size = [], 0
    while size < n:
        line = ' '.join(r.choice(words) for _ in range(r.randint(4, 14))) + '\n'
        out.append(line)
        size += len(line)
    return ''.join(out).encode()[:n]
open(d + '/big', 'wb').write(text(12 << 20))
open(d + '/zeros', 'wb').write(text(3 << 20) + bytes(4 << 20) + text(3 << 20))
open(d + '/small', 'wb').write(text(65536))
EOF

slice() { dd if="$1" bs=1M iflag=skip_bytes,count_bytes skip="$2" count="$3" status=none; }
SKIP=1234567
LEN=7654321
slice "$TMP/tree/big" $SKIP $LEN >"$TMP/slice"

for cfg in deflate:65536 lz4hc:16384 zstd:262144; do
	alg=${cfg%%:*}
	img=$TMP/$alg.img
	t_run "mkfs-$alg" "$EZFS" mkfs -q -z "$alg" -C "${cfg#*:}" "$img" "$TMP/tree"
	t_check "$alg: mkfs" 0
	ref=
	for m in $MODES; do
		w="$alg, --dispatch $m"
		if "$EZFS" cat --dispatch "$m" "$img" big | cmp -s - "$TMP/tree/big"; then
			t_pass "$w: cat"
		else
			t_fail "$w: cat gives other bytes"
		fi
		if "$EZFS" cat --dispatch "$m" --skip $SKIP --length $LEN "$img" big |
			cmp -s - "$TMP/slice"; then
			t_pass "$w: cat --skip --length"
		else
			t_fail "$w: cat --skip --length gives other bytes"
		fi
		rm -rf "$TMP/x"
		t_run "x-$alg" "$EZFS" extract -q --dispatch "$m" "$img" "$TMP/x"
		t_check "$w: extract" 0
		t_expect "$w: extracted tree" diff -r "$TMP/tree" "$TMP/x"
		t_run "f-$alg" "$EZFS" fsck --dispatch "$m" "$img"
		t_check "$w: fsck" 0 stdout " 0 problems"
		sum=$(grep -o '[0-9.]* [KMG]iB decoded' "$OUT" || true)
		[ -n "$ref" ] || ref=$sum
		t_expect "$w: fsck counts '$sum' (inline: '$ref')" [ -n "$sum" ] && [ "$sum" = "$ref" ]
		t_run "s-$alg" "$EZFS" accel stats --json --dispatch "$m" "$img"
		t_check "$w: accel stats" 0
		got=$(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(d["digest"], d["bytes"], d["dispatch"]["batches"])' "$OUT")
		read -r dig bytes batches <<<"$got"
		[ "$m" != inline ] || sref="$dig $bytes"
		t_expect "$w: accel stats digest and bytes '$dig $bytes' (inline: '$sref')" \
			[ "$dig $bytes" = "$sref" ]
		if [ "$m" = inline ]; then
			t_expect "$w: no batches inline ($batches)" [ "$batches" -eq 0 ]
		else
			t_expect "$w: batches counted ($batches)" [ "$batches" -gt 0 ]
		fi
	done
done

# --- a damaged pcluster in the middle of big (deflate 64K) ------------------
img=$TMP/deflate.img
bad=$TMP/bad.img
cp "$img" "$bad"
read -r la pa plen < <(t_extent_at "$img" big $((6 << 20)))
t_expect "an extent at 6 MiB (la ${la:-?}, pa ${pa:-?})" [ -n "${pa:-}" ]
t_fill_bytes "$bad" "$pa" "$plen" 0xff
for m in $MODES; do
	w="damaged, --dispatch $m"
	t_run "bf-$m" "$EZFS" fsck --dispatch "$m" "$bad"
	t_check "$w: fsck fails" 1 stdout " 1 problem" stderr "big\): reading data at [0-9]+"
	at=$(grep -oE 'reading data at [0-9]+' "$ERR" | head -n 1 | grep -oE '[0-9]+$' || echo -1)
	n=$(grep -c 'reading data at' "$ERR" || true)
	t_expect "$w: one problem, at $at <= $la" [ "$n" -eq 1 ] && [ "$at" -ge 0 ] && [ "$at" -le "$la" ]
	t_run "bc-$m" "$EZFS" cat --dispatch "$m" "$bad" big
	t_check "$w: cat fails" 1 stderr "big: read at [0-9]+"
	got=$(stat -c %s "$OUT")
	t_expect "$w: cat wrote a prefix ($got <= $la bytes)" [ "$got" -le "$la" ] &&
		cmp -s -n "$got" "$OUT" "$TMP/tree/big"
	rm -rf "$TMP/x"
	t_run "bx-$m" "$EZFS" extract -q --dispatch "$m" "$bad" "$TMP/x"
	t_check "$w: extract fails" 1 stderr "big: reading from the image"
	t_expect "$w: no partial big" [ ! -e "$TMP/x/big" ]
	t_expect "$w: zeros and small extracted" cmp -s "$TMP/x/zeros" "$TMP/tree/zeros" &&
		cmp -s "$TMP/x/small" "$TMP/tree/small"
done
t_done
