#!/bin/bash
# SPDX-License-Identifier: MIT
# mkfs-options.sh - mkfs.erofs 1.9.3 options that change what goes into
# the image: --zD (compressed directories, in the packed inode),
# -E dot-omitted (directories without "."), -m (inodes in the metabox),
# --block-list-file of chunk-based files, --aufs whiteouts from a
# directory and a tar. Each line: ezfs fsck passes and the kernel shows
# the source tree; the image has what the option asks for (ezfs dump of
# the layout and features). With MKFS_EROFS2 (mkfs.erofs 1.9.3) the same
# line is built by it too: the kernel shows the same tree, and its image
# is no smaller than ezfs's (both sizes printed).
#
# Environment: EZFS (or EZFS_BIN), SRC (or EZFS_SRC), EZFS_SHARED,
# MKFS_EROFS2. Exit 0 pass, 1 fail, 77 skip.
set -u

# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
t_init
t_need_shared

t_kmount_ok
t_peer_mkfs

# a tree with small and multi-block directories
TREE=$TMP/tree
mkdir -p "$TREE/bin" "$TREE/etc/init" "$TREE/many" "$TREE/empty"
seq 1 20000 >"$TREE/bin/toybox"
ln -s toybox "$TREE/bin/ls"
printf 'a=1\n' >"$TREE/etc/init/a.rc"
seq 1 3000 | sed 's/^/line /' >"$TREE/etc/lines"
for i in $(seq 1 600); do
	echo "$i" >"$TREE/many/entry-with-a-rather-long-name-$i"
done
t_manifest "$TREE" --no-times >"$TMP/src.json"

# build NAME ARGS...: ezfs mkfs ARGS IMG TREE; checks the image
build() {
	local name=$1
	shift
	rm -f "$TMP/$name.img"
	t_run "$name" "$EZFS" mkfs -q "$@" "$TMP/$name.img" "$TREE"
	if [ "$RC" != 0 ]; then
		t_fail "$name: mkfs rc=$RC: $(head -c 300 "$ERR")"
		return 1
	fi
	t_check_image "$name" "$TMP/$name.img" "$TMP/src.json" --no-times
}

# peer NAME WANT ARGS...: 1.9.3's image of the same line: the kernel
# shows WANT, and it is no smaller than ezfs's $TMP/NAME.img
peer() {
	local name=$1 want=$2 ez pe
	shift 2
	[ -n "$PEER" ] || return 0
	rm -f "$TMP/$name-peer.img"
	RC=0
	"$PEER" --quiet "$@" "$TMP/$name-peer.img" "$TREE" >/dev/null \
		2>"$TMP/$name-peer.err" || RC=$?
	ez=$(stat -c %s "$TMP/$name.img")
	pe=$(stat -c %s "$TMP/$name-peer.img" 2>/dev/null || echo 0)
	echo "  $name sizes: ezfs $ez bytes, mkfs.erofs 1.9.3 $pe bytes"
	if [ "$RC" != 0 ] || [ "$pe" = 0 ]; then
		t_fail "$name: mkfs.erofs 1.9.3 rc=$RC: $(head -c 300 "$TMP/$name-peer.err")"
		return 0
	fi
	t_expect "$name: ezfs's image ($ez) is no larger than 1.9.3's ($pe)" \
		[ "$ez" -le "$pe" ]
	[ "$KMOUNT" = 1 ] || return 0
	if t_kmount "$TMP/$name-peer.img" "$TMP/mnt"; then
		t_manifest "$TMP/mnt" --no-times >"$TMP/peer.json"
		t_kumount "$TMP/mnt"
		t_same_manifest "$name: 1.9.3's image, kernel mount" "$want" \
			"$TMP/peer.json"
	else
		t_fail "$name: the kernel refused 1.9.3's image"
	fi
}

# layout_of IMG PATH: the inode's data layout as ezfs stat prints it
layout_of() { "$EZFS" stat "$1" "$2" 2>/dev/null | sed -n 's/^Layout: *//p'; }

# --- --zD: every directory a whole-file fragment of the packed inode ---
# (1.9.3 compresses directories with --zD and --zD=0: its parser swaps
# 0 and 1; ezfs follows its help, so the peer gets --zD)
for zl in "lz4hc:-zlz4hc" "zstd-64k:-zzstd -C65536 -Eztailpacking" \
	"frag:-zlz4hc -Efragments" "lz4-1k:-zlz4 -b1024" \
	"lzma-48:-zlzma -E48bit"; do
	n=zd-${zl%%:*}
	read -ra a <<<"${zl#*:}"
	build "$n" "${a[@]}" --zD=1 -T 0 || continue
	feat=$("$EZFS" info "$TMP/$n.img" | sed -n 's/^Features: *//p')
	lay=$(layout_of "$TMP/$n.img" /many)
	if [[ "$feat" == *fragments* ]] && [ "$lay" = compressed_full ]; then
		t_pass "$n: directories compressed ($lay; $feat)"
	else
		t_fail "$n: features '$feat', /many: '$lay'"
	fi
	peer "$n" "$TMP/src.json" "${a[@]}" --zD -T 0
done
# --zD=0 and no compression: plain directories
build zd-off -zlz4hc --zD=0 -T 0 &&
	t_expect "--zD=0: plain directories ($(layout_of "$TMP/zd-off.img" /many))" \
		grep -q '^flat' <<<"$(layout_of "$TMP/zd-off.img" /many)"
build zd-none --zD -T 0 &&
	t_expect "--zD without -z: no packed inode" \
		bash -c "! '$EZFS' info '$TMP/zd-none.img' | grep -q fragments"

# --- -E dot-omitted: no "." entries (DOT_OMITTED, 48BIT) ---
# the root's size: its entries without ".": "..", then the tree's names
want=14
for f in "$TREE"/*; do
	f=${f##*/}
	want=$((want + 12 + ${#f}))
done
size_of() { "$EZFS" stat "$1" "$2" 2>/dev/null | sed -n 's/^Size: *//p'; }
for dl in "lz4:-zlz4" "plain:" "zd:-zlz4hc --zD" "b512:-b512"; do
	n=dot-${dl%%:*}
	read -ra a <<<"${dl#*:}"
	build "$n" "${a[@]}" -Edot-omitted -T 0 || continue
	feat=$("$EZFS" info "$TMP/$n.img" | sed -n 's/^Features: *//p')
	sz=$(size_of "$TMP/$n.img" /)
	if [ "$sz" = "$want" ] && [[ "$feat" == *48bit* ]]; then
		t_pass "$n: the root's entries without \".\" ($sz bytes; $feat)"
	else
		t_fail "$n: root size $sz, want $want; features '$feat'"
	fi
	peer "$n" "$TMP/src.json" "${a[@]}" -Edot-omitted -T 0
done
# --- -m#[:X]: the tree's inodes inside the metabox inode (bit 63) ---
for ml in "lz4hc:-zlz4hc -m4096" "plain:-m4096" "big:-zlz4hc -C65536 -m65536" \
	"zd:-zlz4 --zD -m4096" "frag:-zlz4hc -Efragments -m4096" \
	"alg:-zlzma -m4096:lz4hc" "b1k:-zlz4hc -Eztailpacking -b1024 -m1024" \
	"dedupe:-zdeflate -m4096 -Ededupe"; do
	n=mbox-${ml%%:*}
	read -ra a <<<"${ml#*:}"
	build "$n" "${a[@]}" -T 0 || continue
	feat=$("$EZFS" info "$TMP/$n.img" | sed -n 's/^Features: *//p')
	root=$("$EZFS" info "$TMP/$n.img" | sed -n 's/^Root nid: *//p')
	mnid=$("$EZFS" info "$TMP/$n.img" | sed -n 's/^Metabox nid: *//p')
	# bit 63: 9223372036854775808 and up (19 digits starting with 9)
	if [[ "$feat" == *metabox* ]] && [[ "$root" == 9[0-9]* ]] &&
	   [ "${#root}" = 19 ] && [ -n "$mnid" ] && [ "${#mnid}" -lt 19 ]; then
		t_pass "$n: root nid $root in the metabox (nid $mnid; $feat)"
	else
		t_fail "$n: features '$feat', root nid '$root', metabox nid '$mnid'"
	fi
	peer "$n" "$TMP/src.json" "${a[@]}" -T 0
done

# --- --block-list-file: chunk-based files are listed by their stored
# chunks; the listed blocks, in order, hold each file's bytes ---
blist_holds() { # IMG MAP MOUNTPOINT: every listed file's blocks hold it
	python3 - "$1" "$2" "$3" "$TREE" <<'EOF'
import os, sys
img, mp, mnt, tree = sys.argv[1:5]
bs, bad, n = 4096, [], 0
data = open(img, 'rb').read()
for line in open(mp):
    w = line.split()
    rel = w[0][len('/' + mnt + '/'):]
    got = b''
    for r in w[1:]:
        a, _, z = r.partition('-')
        a = int(a)
        z = int(z) if z else a
        got += data[a * bs:(z + 1) * bs]
    want = open(os.path.join(tree, rel), 'rb').read()
    n += 1
    if got[:len(want)] != want:
        bad.append(rel)
print(n, 'files', 'bad:', ' '.join(bad[:5]) if bad else 'none')
sys.exit(1 if bad or not n else 0)
EOF
}
cp "$TREE/etc/lines" "$TREE/etc/lines.copy"
head -c 20000 /dev/zero >"$TREE/etc/zeros"
t_manifest "$TREE" --no-times >"$TMP/src.json"
for bl in "chunk:--chunksize 8192" "chunk-idx:--chunksize 4096 -Eforce-chunk-indexes" \
	"plain:-Enoinline_data"; do
	n=blist-${bl%%:*}
	read -ra a <<<"${bl#*:}"
	build "$n" "${a[@]}" --mount-point system \
		--block-list-file "$TMP/$n.map" -T 0 || continue
	if out=$(blist_holds "$TMP/$n.img" "$TMP/$n.map" system) &&
	   grep -q '^/system/etc/lines.copy [0-9]' "$TMP/$n.map"; then
		t_pass "$n: the listed blocks hold the files ($out)"
	else
		t_fail "$n: $out: $(head -3 "$TMP/$n.map")"
	fi
done
rm -f "$TREE/etc/lines.copy" "$TREE/etc/zeros"
t_manifest "$TREE" --no-times >"$TMP/src.json"

# --- --aufs, as 1.9.3: ".wh.NAME" a whiteout of mode 0 with the entry's
# owner, its directory marked copied up (an empty trusted.overlay.origin);
# a directory scan marks the directories of 0/0 devices (with or without
# --aufs); a tar's own 0/0 devices mark nothing ---
if t_is_root && command -v setfattr >/dev/null; then
	AU=$TMP/au
	mkdir -p "$AU/d1/sub" "$AU/d2" "$AU/d3"
	echo x >"$AU/d1/keep"
	echo >"$AU/d1/.wh.gone"
	chmod 640 "$AU/d1/.wh.gone"
	chown 1000:1001 "$AU/d1/.wh.gone"
	: >"$AU/d2/.wh..wh..opq"
	echo y >"$AU/d2/f"
	mknod -m 600 "$AU/d3/wh" c 0 0
	echo z >"$AU/d3/g"
	tar -C "$AU" --numeric-owner -cf "$TMP/au.tar" .
	t_manifest "$AU" --no-times >"$TMP/au-src.json"
	# the tar with --aufs: the whiteout, origin on d1, opaque d2
	W=$TMP/au-want
	mkdir -p "$W"
	tar -C "$W" --numeric-owner -xf "$TMP/au.tar"
	rm "$W/d1/.wh.gone" "$W/d2/.wh..wh..opq"
	mknod -m 000 "$W/d1/gone" c 0 0
	chown 1000:1001 "$W/d1/gone"
	setfattr -n trusted.overlay.origin -v '""' "$W/d1"
	setfattr -n trusted.overlay.opaque -v y "$W/d2"
	t_manifest "$W" --no-times >"$TMP/au-tar.json"
	# the directory scan: origin on d3 only
	setfattr -x trusted.overlay.origin "$W/d1"
	setfattr -x trusted.overlay.opaque "$W/d2"
	rm "$W/d1/gone"
	cp -a "$AU/d1/.wh.gone" "$W/d1/"
	: >"$W/d2/.wh..wh..opq"
	setfattr -n trusted.overlay.origin -v '""' "$W/d3"
	t_manifest "$W" --no-times >"$TMP/au-dir.json"
	# aufs_line NAME WANT SOURCE ARGS...: ezfs and, with MKFS_EROFS2,
	# 1.9.3: the kernel shows WANT; sizes compared
	aufs_line() {
		local name=$1 want=$2 src=$3 ez pe
		shift 3
		rm -f "$TMP/$name.img"
		t_run "$name" "$EZFS" mkfs -q "$@" "$TMP/$name.img" "$src"
		if [ "$RC" != 0 ]; then
			t_fail "$name: mkfs rc=$RC: $(head -c 300 "$ERR")"
			return
		fi
		t_check_image "$name" "$TMP/$name.img" "$want" --no-times
		[ -n "$PEER" ] || return 0
		rm -f "$TMP/$name-peer.img"
		"$PEER" --quiet "$@" "$TMP/$name-peer.img" "$src" >/dev/null 2>&1
		ez=$(stat -c %s "$TMP/$name.img")
		pe=$(stat -c %s "$TMP/$name-peer.img" 2>/dev/null || echo 0)
		echo "  $name sizes: ezfs $ez bytes, mkfs.erofs 1.9.3 $pe bytes"
		t_expect "$name: ezfs's image ($ez) is no larger than 1.9.3's ($pe)" \
			test "$pe" -gt 0 -a "$ez" -le "$pe"
		[ "$KMOUNT" = 1 ] && [ "$pe" -gt 0 ] || return 0
		if t_kmount "$TMP/$name-peer.img" "$TMP/mnt"; then
			t_manifest "$TMP/mnt" --no-times >"$TMP/peer.json"
			t_kumount "$TMP/mnt"
			t_same_manifest "$name: 1.9.3's image, kernel mount" \
				"$want" "$TMP/peer.json"
		else
			t_fail "$name: the kernel refused 1.9.3's image"
		fi
	}
	aufs_line aufs-tar "$TMP/au-tar.json" "$TMP/au.tar" --tar=f --aufs -T 0
	aufs_line aufs-tar-lz4 "$TMP/au-tar.json" "$TMP/au.tar" --tar=f --aufs \
		-zlz4hc -Enoinline_data -T 0
	aufs_line walk "$TMP/au-dir.json" "$AU" -T 0
	# --ovlfs-strip: no whiteout, no origin
	grep -v '"path": "d3/wh"' "$TMP/au-src.json" >"$TMP/au-strip.json"
	aufs_line walk-strip "$TMP/au-strip.json" "$AU" --ovlfs-strip=1 -T 0
else
	echo "SKIP: --aufs trees (mknod, chown and trusted.* xattrs need root and setfattr)"
fi

# -m with a device table (1.9.3 refuses --tar=i too): exit 2, one line
t_run mtar "$EZFS" mkfs -q --tar=i -m512 "$TMP/r.img" /dev/null
t_check "-m with --tar=i: refused" 2 stderr "-m: not with --tar=i"
t_expect "-m with --tar=i: no image" test ! -e "$TMP/r.img"
t_run mblob "$EZFS" mkfs -q -m4096 --chunksize 4096 \
	--blobdev="$TMP/blob.bin" "$TMP/r.img" "$TREE"
t_check "-m with --blobdev: refused" 2 stderr "-m: not with --blobdev"

# 48BIT compact inodes carry 32-bit mtimes after the epoch: a tar's
# whole-second mtimes (kept, --mkfs-time) need no extended inodes, and
# the kernel shows them exactly
tar -C "$TREE" --numeric-owner -cf "$TMP/tree.tar" .
rm -f "$TMP/m48.img" "$TMP/m32.img"
t_run m48 "$EZFS" mkfs -q --tar=f -zlz4 -E48bit "$TMP/m48.img" "$TMP/tree.tar"
t_run m32 "$EZFS" mkfs -q --tar=f -zlz4 "$TMP/m32.img" "$TMP/tree.tar"
e48=$("$EZFS" stat "$TMP/m48.img" /etc/lines 2>/dev/null | sed -n 's/^Inode: *//p')
e32=$("$EZFS" stat "$TMP/m32.img" /etc/lines 2>/dev/null | sed -n 's/^Inode: *//p')
if [[ "$e48" == compact* ]] && [[ "$e32" == extended* ]]; then
	t_pass "-E48bit: a tar's file has a compact inode ($e48; without: $e32)"
else
	t_fail "-E48bit tar: inode '$e48', without 48bit '$e32'"
fi
# the same times as the tar's extended inodes show (whole seconds)
rm -rf "$TMP/x32"
if "$EZFS" extract "$TMP/m32.img" "$TMP/x32" >/dev/null 2>&1; then
	t_manifest "$TMP/x32" >"$TMP/src-times.json"
	t_check_image m48 "$TMP/m48.img" "$TMP/src-times.json"
else
	t_fail "m32: ezfs extract"
fi
rm -rf "$TMP/x32"

build dot-off -zlz4 -E48bit -T 0 &&
	t_expect "-E48bit alone keeps \".\" ($(size_of "$TMP/dot-off.img" /) bytes)" \
		test "$(size_of "$TMP/dot-off.img" /)" = $((want + 13))

t_done
