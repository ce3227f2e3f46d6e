#!/bin/bash
# SPDX-License-Identifier: MIT
# mkfs-memory.sh - with fragments, ezfs mkfs' memory does not grow with
# the packed inode: a generated tree of 1600 files of 48000 bytes of
# random hex digits (unique, no repeats; zstd halves them) is one whole-file
# fragment each, about 73 MiB of packed inode. With -E fragments and
# -E all-fragments the build's peak RSS (/usr/bin/time -f %M) stays under
# 128 MiB (the fragments and the packed bytes held in memory made it 230
# MiB); the image is the same for 1 and 2 workers and passes ezfs fsck;
# the spool and packed files leave nothing in TMPDIR. Not timed. Skips
# without /usr/bin/time or python3, and for sanitizer builds (their
# shadow memory is not the builder's).
# Exit 0 pass, 1 fail, 77 skip.
set -u

. "$(dirname "$0")/../lib.sh"
t_init
t_need_cmd python3
[ -x /usr/bin/time ] || t_skip "/usr/bin/time is not installed"
if command -v ldd >/dev/null && ldd "$EZFS" 2>/dev/null | grep -Eq 'lib(a|t|ub)san'; then
	t_skip "a sanitizer build: its RSS is not the builder's"
fi

LIMIT_KB=$((128 * 1024))
tree=$TMP/tree
python3 - "$tree" <<'EOF' || { t_fail "generating the tree"; t_done; }
import os, random, sys
root = sys.argv[1]
rnd = random.Random(20)
for d in range(16):
    os.makedirs(f"{root}/d{d:02d}")
    for i in range(100):
        with open(f"{root}/d{d:02d}/f{i:03d}", "wb") as f:
            f.write(rnd.randbytes(24000).hex().encode())
EOF

spool=$TMP/spool
mkdir -p "$spool"
for e in fragments all-fragments; do
	for j in 1 2; do
		img=$TMP/img-$e-$j
		TMPDIR=$spool /usr/bin/time -f %M -o "$TMP/rss" "$EZFS" mkfs -q \
			-T0 -U clear -zzstd -C65536 -E"$e" --workers=$j \
			"$img" "$tree" >"$TMP/out" 2>&1
		rc=$?
		kb=$(tail -n 1 "$TMP/rss")
		if [ $rc != 0 ]; then
			t_fail "-E$e -j$j: mkfs exit $rc: $(head -n 3 "$TMP/out")"
			continue
		fi
		t_expect "-E$e -j$j: peak RSS ${kb} KB under $LIMIT_KB KB" \
			[ "$kb" -lt "$LIMIT_KB" ]
		t_expect "-E$e -j$j: nothing left in TMPDIR" \
			[ -z "$(ls -A "$spool")" ]
	done
	t_expect "-E$e: the same image for 1 and 2 workers" \
		cmp -s "$TMP/img-$e-1" "$TMP/img-$e-2"
	t_expect "-E$e: ezfs fsck" "$EZFS" fsck -q "$TMP/img-$e-2"
	size=$(stat -c %s "$TMP/img-$e-2")
	t_expect "-E$e: the packed inode compressed (image $size bytes)" \
		[ "$size" -lt $((60 * 1024 * 1024)) ]
done
t_done
