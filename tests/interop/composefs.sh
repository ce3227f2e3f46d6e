#!/bin/bash
# SPDX-License-Identifier: MIT
# composefs images (tests/assets/composefs/, made by mkcomposefs from the
# dump files of composefs' tests/assets): ezfs fsck, ls -R, stat, extract
# and ranges of the 8 PiB chunk-based files against the kernel's view in
# the committed manifests, and against a live kernel mount where root and
# loop devices exist. Two assets (bigfile-xattr, honggfuzz-bigfile-with-
# acl) have their chunk block map outside the inode (mkcomposefs moves it
# to a block of its own when it does not fit after the xattrs): the kernel
# then maps the chunks from the bytes after the inode, reads image bytes
# for the first chunk and fails past the end of the image; ezfs must give
# the same bytes, fail there too, and fsck must say so.
#
# With MKCOMPOSEFS (a mkcomposefs binary) and COMPOSEFS_ASSETS (composefs'
# tests/assets folder) set, the committed images are also remade and must
# be byte-identical, and the large assets (config*, cs9-*) are made, and
# ezfs extract compared with the kernel mount of each.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
t_init
t_need_cmd zstd python3

A=$SRC/tests/assets/composefs
NODATA=$A/manifest-nodata.py
MANIFEST=$SHARED/tools/manifest.py
[ -f "$MANIFEST" ] || t_skip "no $MANIFEST (the shared tools)"
BROKEN=" bigfile-xattr honggfuzz-bigfile-with-acl "
GIB=$((1 << 30))

manifest() { python3 "$NODATA" "$MANIFEST" "$@"; }

KM=0
t_can_kmount && KM=1 || echo "SKIP: kernel comparison (needs root, loop devices and erofs)"
# 8 PiB sparse files do not fit ext4: extract onto a tmpfs where we can
XROOT=
if t_is_root && mkdir -p "$TMP/tmpfs" && mount -t tmpfs -o size=256m tmpfs "$TMP/tmpfs" 2>/dev/null; then
	T_MOUNTS+=("$TMP/tmpfs")
	XROOT=$TMP/tmpfs
else
	echo "SKIP: ezfs extract (device nodes, owners and a tmpfs for the 8 PiB files need root)"
fi

# paths of "ezfs ls -R" output, as manifest.py names them
ls_paths() {
	awk '/^\/.*:$/ { d = substr($0, 2, length($0) - 2); sub(/^\//, "", d); next }
	     NF { print (d == "" ? $0 : d "/" $0) }' "$1" | LC_ALL=C sort
}

# the bytes [off, off + len) of a file under the kernel mount
kread() { python3 -c 'import sys
f = open(sys.argv[1], "rb"); f.seek(int(sys.argv[2]))
sys.stdout.buffer.write(f.read(int(sys.argv[3])))' "$@"; }

names=()
for z in "$A"/*.img.zst; do
	names+=("$(basename "$z" .img.zst)")
done
[ ${#names[@]} -gt 0 ] || { t_fail "no images in $A"; t_done; }

for n in "${names[@]}"; do
	img=$TMP/$n.img
	want=$TMP/$n.want
	zstd -q -d -c "$A/$n.img.zst" >"$img"
	zstd -q -d -c "$A/$n.manifest.jsonl.zst" >"$want"
	broken=0
	case $BROKEN in *" $n "*) broken=1 ;; esac
	# the files the manifest holds without their data
	huge=$(python3 -c 'import json, sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e["type"] == "f" and e["size"] > int(sys.argv[2]):
        print(e["path"], e["size"])' "$want" "$GIB")

	t_run fsck "$EZFS" fsck "$img"
	if [ $broken = 0 ]; then
		t_check "$n: ezfs fsck" 0
	else
		t_check "$n: ezfs fsck finds the chunks past the end" 1 \
			stderr "nid [0-9]+ \(/[^)]*\): extent 0\+[0-9]+: physical 0\+[0-9]+ beyond the end of the image"
	fi

	t_run ls "$EZFS" ls -R "$img"
	ls_paths "$OUT" >"$TMP/ls.paths"
	python3 -c 'import json, sys
for l in open(sys.argv[1]):
    p = json.loads(l)["path"]
    if p != ".": print(p)' "$want" | LC_ALL=C sort >"$TMP/want.paths"
	if [ "$RC" = 0 ] && cmp -s "$TMP/want.paths" "$TMP/ls.paths"; then
		t_pass "$n: ezfs ls -R lists the kernel's $(wc -l <"$TMP/want.paths") paths"
	else
		t_fail "$n: ezfs ls -R rc=$RC: $(diff "$TMP/want.paths" "$TMP/ls.paths" | head -5)"
	fi

	while read -r p size; do
		[ -n "$p" ] || continue
		t_run stat "$EZFS" stat "$img" "/$p"
		t_check "$n: ezfs stat /$p: size $size, chunk-based" 0 \
			stdout "^Size: +$size\$" stdout "^Layout: +chunk_based"
		if [ $broken = 0 ]; then
			# holes: every range reads as zeros, also across chunk
			# boundaries and at the very end
			for r in 0:4096 $(((1 << 43) - 100)):200 $((size - 5000)):5000 $((size - 1)):10; do
				off=${r%:*} len=${r#*:}
				t_run cat "$EZFS" cat --skip "$off" --length "$len" "$img" "/$p"
				exp=$len
				[ $((off + len)) -le "$size" ] || exp=$((size - off))
				got=$(tr -d '\0' <"$OUT" | wc -c)
				if [ "$RC" = 0 ] && [ "$(wc -c <"$OUT")" = "$exp" ] && [ "$got" = 0 ]; then
					t_pass "$n: /$p [$off, +$len) is $exp zero bytes"
				else
					t_fail "$n: /$p [$off, +$len): rc=$RC, $(wc -c <"$OUT") bytes, $got not zero: $(head -c 200 "$ERR")"
				fi
			done
		else
			# chunk 0 maps to block 0: the image's own first bytes
			t_run cat "$EZFS" cat --skip 0 --length 4096 "$img" "/$p"
			if [ "$RC" = 0 ] && cmp -s "$OUT" <(head -c 4096 "$img"); then
				t_pass "$n: /$p [0, +4096) is the image's block 0, as the kernel reads it"
			else
				t_fail "$n: /$p [0, +4096): rc=$RC $(head -c 200 "$ERR")"
			fi
			t_run cat "$EZFS" cat --skip $(($(stat -c %s "$img") - 100)) --length 200 "$img" "/$p"
			t_check "$n: /$p across the end of the image: an error, no bytes" 1 \
				stderr "$n.img: .*beyond the end of the image"
			t_expect "$n: nothing written past the end" [ ! -s "$OUT" ]
		fi
	done <<<"$huge"

	# the images hold device nodes and owners: extraction needs root
	if [ -n "$XROOT" ]; then
		x=$XROOT/x
		rm -rf "$x"
		t_run extract "$EZFS" extract -q "$img" "$x"
		manifest "$x" >"$TMP/x.json"
		if [ $broken = 0 ]; then
			t_check "$n: ezfs extract" 0
			t_same_manifest "$n: ezfs extract" "$want" "$TMP/x.json"
		else
			t_check "$n: ezfs extract refuses the unreadable file" 1 \
				stderr "1 file not extracted"
			# all but that file as the kernel shows it
			hp=${huge%% *}
			grep -v "\"path\": \"$hp\"" "$want" >"$TMP/want.part"
			grep -v "\"path\": \"$hp\"" "$TMP/x.json" >"$TMP/x.part"
			t_same_manifest "$n: ezfs extract of the rest" "$TMP/want.part" "$TMP/x.part"
		fi
		rm -rf "$x"
	fi

	[ $KM = 1 ] || continue
	if ! t_kmount "$img" "$TMP/mnt"; then
		t_fail "$n: the kernel refused to mount it"
		continue
	fi
	manifest "$TMP/mnt" >"$TMP/k.json"
	t_same_manifest "$n: kernel mount (the committed manifest)" "$want" "$TMP/k.json"
	while read -r p size; do
		[ -n "$p" ] || continue
		for r in 0:4096 4096:8192 $(((1 << 43) - 100)):200 $((size - 5000)):5000; do
			off=${r%:*} len=${r#*:}
			if kread "$TMP/mnt/$p" "$off" "$len" >"$TMP/k.bytes" 2>/dev/null; then
				t_run cat "$EZFS" cat --skip "$off" --length "$len" "$img" "/$p"
				if [ "$RC" = 0 ] && cmp -s "$TMP/k.bytes" "$OUT"; then
					t_pass "$n: /$p [$off, +$len) as the kernel reads it"
				else
					t_fail "$n: /$p [$off, +$len): rc=$RC, differs from the kernel"
				fi
			else
				t_run cat "$EZFS" cat --skip "$off" --length "$len" "$img" "/$p"
				t_check "$n: /$p [$off, +$len): an error, as in the kernel" 1
			fi
		done
	done <<<"$huge"
	t_kumount "$TMP/mnt"
done

# --- with the peer: the images remade, and the large assets -------------
if [ -z "${MKCOMPOSEFS:-}" ] || [ -z "${COMPOSEFS_ASSETS:-}" ]; then
	echo "SKIP: remaking the images and the large assets (set MKCOMPOSEFS and COMPOSEFS_ASSETS)"
	t_done
fi
for n in "${names[@]}"; do
	src=$COMPOSEFS_ASSETS/$n.dump
	[ -f "$src" ] || { t_fail "$n: no $src"; continue; }
	t_run mk "$MKCOMPOSEFS" --from-file "$src" "$TMP/re.img"
	if [ "$RC" = 0 ] && cmp -s "$TMP/re.img" "$TMP/$n.img"; then
		t_pass "$n: mkcomposefs remakes the committed image"
	else
		t_fail "$n: mkcomposefs rc=$RC, image differs from the committed one"
	fi
done
for gz in "$COMPOSEFS_ASSETS"/*.dump.gz; do
	n=$(basename "$gz" .dump.gz)
	case $n in should-fail-*) continue ;; esac
	zcat "$gz" >"$TMP/big.dump"
	t_run mk "$MKCOMPOSEFS" --from-file "$TMP/big.dump" "$TMP/big.img"
	[ "$RC" = 0 ] || { t_fail "$n: mkcomposefs rc=$RC"; continue; }
	t_run fsck "$EZFS" fsck "$TMP/big.img"
	t_check "$n: ezfs fsck" 0
	[ $KM = 1 ] && [ -n "$XROOT" ] || continue
	t_kmount "$TMP/big.img" "$TMP/mnt" || { t_fail "$n: kernel refused it"; continue; }
	manifest "$TMP/mnt" >"$TMP/k.json"
	t_kumount "$TMP/mnt"
	rm -rf "$XROOT/x"
	t_run extract "$EZFS" extract -q "$TMP/big.img" "$XROOT/x"
	t_check "$n: ezfs extract" 0
	manifest "$XROOT/x" >"$TMP/x.json"
	t_same_manifest "$n: ezfs extract against the kernel mount" "$TMP/k.json" "$TMP/x.json"
	rm -rf "$XROOT/x"
done
t_done
