#!/bin/bash
# SPDX-License-Identifier: MIT
# mkfs-memory.sh - with fragments, ezfs mkfs' memory does not grow with
# the packed inode: a generated tree of 1600 files of 48000 bytes of
# random hex digits (unique, no repeats; zstd-3 halves them) is one whole-file
# fragment each, about 73 MiB of packed inode. With -E fragments and
# -E all-fragments the build's peak RSS (/usr/bin/time -f %M) stays under
# 128 MiB (the fragments and the packed bytes held in memory made it 230
# MiB); the image is the same for 1 and 2 workers and passes ezfs fsck;
# the spool and packed files leave nothing in TMPDIR. Without fragments,
# what stays per file is its record: a tree of 20,000 small random files
# and 40 long symlinks (every one an inline tail) and two copies of it in
# one directory: one copy peaks under 64 MiB, two copies under 96 MiB
# (the tails and the metadata area held in memory, and windows freed
# into glibc's heap, made it 104 and 190 MiB; now about 25 and 35 MiB,
# more when the workers' read-ahead of up to 64 MiB runs far ahead of a
# slow writer, which is why no ratio is asserted here); both images
# extract to their source, the same for 1 and 2 workers. Large files
# with fragments (48 MiB of words, 40 MiB of zeros, lz4 1M): under 48 MiB
# on one worker, 64 on two, the zeros' pclusters shared across the parts
# the files are cut into, the image the same for 1 and 2 workers and
# extracting to the source. Not timed. Skips
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
# gen ROOT hex: 16 x 100 files of 48000 random hex digits; gen ROOT
# small: 40 x 500 random files of 1-4095 bytes and a long symlink each
gen() {
	python3 - "$@" <<'EOF'
import os, random, sys
root, hexs = sys.argv[1], sys.argv[2] == "hex"
rnd = random.Random(20 if hexs else 7)
for d in range(16 if hexs else 40):
    top = f"{root}/d{d:02d}"
    os.makedirs(top)
    for i in range(100 if hexs else 500):
        with open(f"{top}/f{i:03d}", "wb") as f:
            if hexs:
                f.write(rnd.randbytes(24000).hex().encode())
            else:
                f.write(rnd.randbytes(rnd.randrange(1, 4096)))
    if not hexs:
        os.symlink("x" * rnd.randrange(100, 3000), f"{top}/l")
EOF
}

tree=$TMP/tree
gen "$tree" hex || { t_fail "generating the tree"; t_done; }

spool=$TMP/spool
mkdir -p "$spool"
for e in fragments all-fragments; do
	for j in 1 2; do
		img=$TMP/img-$e-$j
		TMPDIR=$spool /usr/bin/time -f %M -o "$TMP/rss" "$EZFS" mkfs -q \
			-T0 -U clear -zzstd,3 -C65536 -E"$e" --workers=$j \
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

# without fragments: the per-file records alone grow with the tree
small=$TMP/small
gen "$small/one/a" small || { t_fail "generating the small tree"; t_done; }
mkdir -p "$small/two" && cp -a "$small/one/a" "$small/two/a" &&
	cp -a "$small/one/a" "$small/two/b" || t_fail "copying the small tree"
for o in "-zlz4" "-zlz4hc -Eztailpacking"; do
	declare -A peak=()
	for t in one two; do
		img=$TMP/small-$t.img
		TMPDIR=$spool /usr/bin/time -f %M -o "$TMP/rss" "$EZFS" mkfs \
			-q -T0 -U clear $o --workers=2 "$img" "$small/$t" \
			>"$TMP/out" 2>&1 ||
			t_fail "$o $t: mkfs: $(head -n 3 "$TMP/out")"
		peak[$t]=$(tail -n 1 "$TMP/rss")
		rm -rf "$TMP/x"
		"$EZFS" extract -q "$img" "$TMP/x" &&
			t_expect "$o $t: extracts to its source" \
				diff -r --no-dereference "$small/$t" "$TMP/x"
	done
	"$EZFS" mkfs -q -T0 -U clear $o --workers=1 "$TMP/small-1.img" \
		"$small/two" >/dev/null 2>&1
	t_expect "$o: the same image for 1 and 2 workers" \
		cmp -s "$TMP/small-1.img" "$TMP/small-two.img"
	t_expect "$o: one copy peaks at ${peak[one]} KB, under 64 MiB" \
		[ "${peak[one]}" -lt $((64 * 1024)) ]
	t_expect "$o: two copies peak at ${peak[two]} KB, under 96 MiB" \
		[ "${peak[two]}" -lt $((96 * 1024)) ]
	t_expect "$o: nothing left in TMPDIR" [ -z "$(ls -A "$spool")" ]
done

# large files with fragments: their 16 MiB parts go to the image as the
# writer takes them, their pclusters shared with earlier ones part by part
# (the parts held until the whole file was merged, and a 16 MiB window a
# worker, made 48 MiB of words and 40 MiB of zeros peak at 66 MiB on one
# worker and 74 on two; now about 33 and 56), and the zeros share one
# pcluster across their parts
big=$TMP/big
mkdir -p "$big"
python3 - "$big/words" <<'EOF'
import random, sys
rnd = random.Random(11)
vocab = ["".join(rnd.choice("etaoinshrdlucmfw")
                 for _ in range(rnd.randrange(2, 10))) for _ in range(3000)]
with open(sys.argv[1], "w") as f:
    n = 0
    while n < 48 << 20:
        line = " ".join(rnd.choice(vocab) for _ in range(12)) + "\n"
        f.write(line)
        n += len(line)
EOF
head -c $((40 << 20)) /dev/zero >"$big/zeros"
for j in 1 2; do
	lim=$((j == 1 ? 48 : 64))
	TMPDIR=$spool /usr/bin/time -f %M -o "$TMP/rss" "$EZFS" mkfs -q -T0 \
		-U clear -zlz4 -C1048576 -Eztailpacking,fragments --workers=$j \
		"$TMP/big-$j.img" "$big" >"$TMP/out" 2>&1 ||
		t_fail "big -j$j: mkfs: $(head -n 3 "$TMP/out")"
	kb=$(tail -n 1 "$TMP/rss")
	t_expect "big -j$j: peak RSS ${kb} KB under $lim MiB" \
		[ "$kb" -lt $((lim * 1024)) ]
done
t_expect "big: the same image for 1 and 2 workers" \
	cmp -s "$TMP/big-1.img" "$TMP/big-2.img"
t_expect "big: ezfs fsck" "$EZFS" fsck -q "$TMP/big-2.img"
rm -rf "$TMP/x"
"$EZFS" extract -q "$TMP/big-2.img" "$TMP/x" &&
	t_expect "big: extracts to its source" diff -r "$big" "$TMP/x"
dd=$("$EZFS" info -S --json "$TMP/big-2.img" |
	sed -n 's/.*"deduplicated_bytes": *\([0-9]*\).*/\1/p')
t_expect "big: ${dd:-?} bytes of extents share a pcluster (the zeros)" \
	[ "${dd:-0}" -ge $((24 << 20)) ]
t_expect "big: nothing left in TMPDIR" [ -z "$(ls -A "$spool")" ]
t_done
