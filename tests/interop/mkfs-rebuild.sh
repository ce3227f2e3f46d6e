#!/bin/bash
# SPDX-License-Identifier: MIT
# ezfs mkfs IMAGE LAYER.erofs... (rebuild mode), as containerd's fsmerge
# runs it: `mkfs.erofs --aufs --ovlfs-strip=1 --quiet meta.erofs
# layer1.erofs layer2.erofs layer3.erofs`, the last layer uppermost.
#
# Three layer tars made here (an upper whiteout deleting a lower file and
# a lower directory, an opaque directory, a file replaced, a directory
# replaced by a file, directories merged over three layers, a hard link,
# a symlink, an xattr, a file over 1 MiB, an empty directory) become
# layer images the two ways containerd makes them: `--tar=f --aufs
# -Enoinline_data` and
# `--tar=i --aufs` with the tar appended to the index. Each set is merged
# (through the mkfs.erofs link beside ezfs where there is one); the meta
# image holds only metadata (one block device slot per layer, every file
# one chunk on its layer's device). Checked: ezfs fsck, ls, cat and
# extract with --device per layer, the kernel's mount of the meta image
# with -o device= (loop devices) against overlayfs' mount of the layer
# images (lowerdir=l3:l2:l1), and, with MKFS_EROFS2 (mkfs.erofs 1.9.3),
# its meta image of the plain layers: the same kernel view, no smaller.
# Chunk-based layers (a block map with a hole and chunks stored once,
# 8-byte indexes) merge too: ezfs cat and the kernel give the files.
# Refused: a layer that is not an EROFS image, a missing layer, a layer
# of another block size, a layer with inline tails, a compressed one, a
# tar index without its tar: one line, exit 1, no image. -z, -C, -b and
# --chunksize are warned about and ignored (as 1.9.3 ignores them).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
t_init
t_need_shared
t_need_cmd python3 cmp

T0=1700000000
MKFS=("$EZFS" mkfs)
if [ -x "$(dirname "$EZFS")/mkfs.erofs" ]; then
	MKFS=("$(dirname "$EZFS")/mkfs.erofs")
else
	echo "SKIP: no mkfs.erofs link beside $EZFS: merging with 'ezfs mkfs'"
fi

# ---- three layers, deterministic ----
python3 - "$TMP" "$T0" "$SRC/tests" <<'EOF'
import io, random, sys, tarfile
tmp, t0 = sys.argv[1], int(sys.argv[2])
sys.path.insert(0, sys.argv[3])
import tarlib
rnd = random.Random(17)
def ti(name, *a, **kw):
    return tarlib.entry(name, t0, *a, **kw)
def layer(n, items):
    with tarfile.open(f"{tmp}/l{n}.tar", "w", format=tarfile.PAX_FORMAT) as tf:
        tf.addfile(ti(".", tarfile.DIRTYPE, 0o755, mtime=t0 + n))
        for it in items:
            if isinstance(it, tuple):
                t, data = it
                t.size = len(data)
                tf.addfile(t, io.BytesIO(data))
            else:
                tf.addfile(it)
def f(name, data, **kw):
    return (ti(name, **kw), data)
def d(name, mode=0o755, **kw):
    return ti(name, tarfile.DIRTYPE, mode, **kw)
big = rnd.randbytes((1 << 20) + 4099)
note = ti("d/note", size=0)
note.pax_headers = {"SCHILY.xattr.user.note": "base"}
layer(1, [
    f("big", big), d("d"), f("d/a", b"a\n"), f("d/gone", b"gone\n"),
    (note, b"note\n"), d("d/sub"), f("d/sub/s", b"s\n"),
    d("opq"), f("opq/x", b"x\n"), d("opq/deep"), f("opq/deep/y", b"y\n"),
    f("rep", b"old\n"), d("repdir"), f("repdir/f", b"f\n"),
    d("keep"), f("keep/k", b"k\n"), d("rmdir"), f("rmdir/r", b"r\n"),
    d("empty"),
    f("hl1", b"hard\n"), ti("hl2", tarfile.LNKTYPE, linkname="hl1"),
    ti("sym", tarfile.SYMTYPE, 0o777, linkname="d/a"),
])
layer(2, [
    d("d", mode=0o750, uid=1000, gid=1000, mtime=t0 + 20),
    f("d/b", b"b\n"), ti("d/.wh.gone"), d("d/sub"), f("d/sub/s2", b"s2\n"),
    d("opq"), ti("opq/.wh..wh..opq"), f("opq/new", b"new\n"),
    f("rep", b"replaced in layer 2\n"), f("repdir", b"now a file\n"),
    ti(".wh.rmdir"), d("new"), f("new/n", rnd.randbytes(5000)),
])
layer(3, [
    d("d"), f("d/c", b"c\n"), d("d/sub"), f("d/sub/s3", b"s3\n"),
    f("top", b"top\n"), ti(".wh.keep"), f("d/b", b"b again in 3\n"),
])
EOF

# ---- the layer images: plain (--tar=f) and tar indexes (--tar=i) ----
for n in 1 2 3; do
	t_run lf$n "$EZFS" mkfs --tar=f --aufs --quiet -Enoinline_data \
		-T "$T0" --mkfs-time "$TMP/p$n.erofs" "$TMP/l$n.tar"
	[ "$RC" = 0 ] || t_fail "layer $n --tar=f: $(head -c 300 "$ERR")"
	t_run li$n "$EZFS" mkfs --tar=i --aufs --quiet "$TMP/i$n.idx" \
		"$TMP/l$n.tar"
	[ "$RC" = 0 ] || t_fail "layer $n --tar=i: $(head -c 300 "$ERR")"
	cat "$TMP/i$n.idx" "$TMP/l$n.tar" >"$TMP/i$n.erofs"
done

# merge SET: SET.meta from SET1..3.erofs, its --device arguments in DEVS
merge() {
	local s=$1
	DEVS=(--device "$TMP/${s}1.erofs" --device "$TMP/${s}2.erofs"
		--device "$TMP/${s}3.erofs")
	t_run "merge$s" "${MKFS[@]}" --aufs --ovlfs-strip=1 --quiet \
		"$TMP/$s.meta" "$TMP/${s}1.erofs" "$TMP/${s}2.erofs" \
		"$TMP/${s}3.erofs"
	if [ "$RC" = 0 ] && [ ! -s "$ERR" ]; then
		t_pass "$s: merged ($(stat -c %s "$TMP/$s.meta") bytes)"
	else
		t_fail "$s: merge rc=$RC: $(head -c 300 "$ERR")"
	fi
}

# ezfs' view of SET.meta with the layers as devices
ezfs_view() {
	local s=$1 img=$TMP/$1.meta
	t_run "fsck$s" "$EZFS" fsck "${DEVS[@]}" "$img"
	t_check "$s: ezfs fsck --device x3" 0
	t_run "info$s" "$EZFS" info "${DEVS[@]}" "$img"
	t_check "$s: three device slots, tags the layers' UUIDs" 0 \
		stdout "Extra devices: *3" \
		stdout "device 3 +tag '[0-9a-f]{32}'"
	t_run "cat$s" "$EZFS" cat "${DEVS[@]}" "$img" /rep
	t_check "$s: cat /rep: the upper layer's file" 0 \
		stdout "^replaced in layer 2$"
	t_run "catb$s" "$EZFS" cat "${DEVS[@]}" "$img" /d/b
	t_check "$s: cat /d/b: layer 3's" 0 stdout "^b again in 3$"
	"$EZFS" cat "${DEVS[@]}" "$img" /big >"$TMP/big.$s" 2>"$TMP/big.err"
	python3 - "$TMP/l1.tar" "$TMP/big.$s" <<'EOF' ||
import sys, tarfile
with tarfile.open(sys.argv[1]) as tf:
    want = tf.extractfile("big").read()
sys.exit(open(sys.argv[2], "rb").read() != want)
EOF
		t_fail "$s: cat /big differs from layer 1's"
	t_run "ls$s" "$EZFS" ls -R "${DEVS[@]}" "$img" /
	if grep -qE '(^|/| )(gone|rmdir|keep|x|deep|\.wh\.[^ ]*)$' "$OUT"; then
		t_fail "$s: ls shows what a whiteout or an opaque dir hides: $(grep -E '(gone|rmdir|keep|x|deep|wh)$' "$OUT" | head -5 | tr '\n' ' ')"
	else
		t_pass "$s: ls: whiteouts applied, opaque opq, no .wh. names"
	fi
	t_run "st$s" "$EZFS" stat -e "${DEVS[@]}" "$img" /new/n
	t_check "$s: stat -e /new/n: one chunk on device 2" 0 \
		stdout "^Layout: *chunk_based" stdout "mapped,device=2"
	rm -rf "$TMP/x$s"
	t_run "x$s" "$EZFS" extract "${DEVS[@]}" "$img" "$TMP/x$s"
	t_check "$s: ezfs extract --device x3" 0
}

merge p
ezfs_view p
merge i
ezfs_view i
if [ -f "$TMP/p.meta" ]; then
	n=$(stat -c %s "$TMP/p.meta")
	t_expect "p: meta image is metadata only ($n bytes)" [ "$n" -le 8192 ]
fi

# ---- without --ovlfs-strip the whiteouts and opaque marks stay ----
t_run m0 "${MKFS[@]}" --aufs --quiet "$TMP/p0.meta" "$TMP/p1.erofs" \
	"$TMP/p2.erofs" "$TMP/p3.erofs"
t_check "p: merged without --ovlfs-strip" 0
P0=(--device "$TMP/p1.erofs" --device "$TMP/p2.erofs" --device "$TMP/p3.erofs")
t_run w0 "$EZFS" ls -l "${P0[@]}" "$TMP/p0.meta" /d
t_check "no strip: /d/gone a 0:0 whiteout" 0 stdout "^c.* 0, 0 .* gone$"
t_run w1 "$EZFS" ls -l "${P0[@]}" "$TMP/p0.meta" /
t_check "no strip: /keep and /rmdir whiteouts" 0 \
	stdout "^c.* 0, 0 .* keep$" stdout "^c.* 0, 0 .* rmdir$"
t_run w2 "$EZFS" stat "${P0[@]}" "$TMP/p0.meta" /opq
t_check "no strip: /opq keeps trusted.overlay.opaque" 0 \
	stdout 'trusted.overlay.opaque="y"'

# ---- the kernel: meta with -o device= against overlayfs of the layers ----
KMOUNT=0
if t_can_kmount &&
	{ grep -qw overlay /proc/filesystems || modprobe overlay; } 2>/dev/null; then
	KMOUNT=1
fi
LOOPS=()
loop() { # loop FILE: a read-only loop device (in $LD), freed at exit
	LD=$(losetup -r -f --show "$1") || return 1
	LOOPS+=("$LD")
}
free_loops() {
	local l
	for l in "${LOOPS[@]}"; do losetup -d "$l" 2>/dev/null; done
	LOOPS=()
}
# kmeta IMG DIR SET: mount IMG at DIR, SET1..3.erofs as its devices
kmeta() {
	local img=$1 dir=$2 s=$3 opts=ro n
	for n in 1 2 3; do
		loop "$TMP/$s$n.erofs" || return 1
		opts=$opts,device=$LD
	done
	loop "$img" || return 1
	mkdir -p "$dir"
	mount -t erofs -o "$opts" "$LD" "$dir" 2>"$TMP/kmount.err" || return 1
	T_MOUNTS+=("$dir")
}
if [ "$KMOUNT" = 1 ]; then
	for n in 1 2 3; do
		t_kmount "$TMP/p$n.erofs" "$TMP/pl$n" ||
			t_fail "kernel: layer $n refused"
	done
	mkdir -p "$TMP/ovl"
	if mount -t overlay overlay -o \
		"ro,lowerdir=$TMP/pl3:$TMP/pl2:$TMP/pl1" "$TMP/ovl"; then
		T_MOUNTS+=("$TMP/ovl")
		t_manifest "$TMP/ovl" >"$TMP/want.json"
		umount "$TMP/ovl"
	else
		t_fail "overlayfs of the three layers refused"
	fi
	for n in 1 2 3; do umount "$TMP/pl$n"; done
	# overlayfs shows a merged dir with nlink 1 and no
	# trusted.overlay.*: the manifest has neither
	for s in p i; do
		if kmeta "$TMP/$s.meta" "$TMP/m$s" $s; then
			t_manifest "$TMP/m$s" >"$TMP/k$s.json"
			umount "$TMP/m$s"
			t_same_manifest "$s: kernel mount of the meta image = overlayfs of the layers" \
				"$TMP/want.json" "$TMP/k$s.json"
			if [ -d "$TMP/x$s" ]; then
				t_manifest "$TMP/x$s" >"$TMP/x$s.json"
				t_same_manifest "$s: ezfs extract = the kernel's view" \
					"$TMP/k$s.json" "$TMP/x$s.json"
			fi
		else
			t_fail "$s: kernel refused the meta image: $(head -c 200 "$TMP/kmount.err")"
		fi
		free_loops
	done
	# the meta image with the layers appended reads as one file
	cat "$TMP/p.meta" "$TMP/p1.erofs" "$TMP/p2.erofs" "$TMP/p3.erofs" \
		>"$TMP/pall.erofs"
	if t_kmount "$TMP/pall.erofs" "$TMP/mall"; then
		t_manifest "$TMP/mall" >"$TMP/kall.json"
		t_kumount "$TMP/mall"
		t_same_manifest "p: [meta][l1][l2][l3] as one file (flat devices)" \
			"$TMP/kp.json" "$TMP/kall.json"
	else
		t_fail "p: the kernel refused [meta][l1][l2][l3]"
	fi
	t_run fall "$EZFS" fsck "$TMP/pall.erofs"
	t_check "p: ezfs fsck of [meta][l1][l2][l3] (flat)" 0
else
	echo "SKIP: kernel checks (no root, loop devices, erofs or overlay)"
fi

# ---- mkfs.erofs 1.9.3 on the plain layers ----
if [ -n "${MKFS_EROFS2:-}" ] && [ -x "$MKFS_EROFS2" ]; then
	t_run m2 "$MKFS_EROFS2" --aufs --ovlfs-strip=1 --quiet "$TMP/q.meta" \
		"$TMP/p1.erofs" "$TMP/p2.erofs" "$TMP/p3.erofs"
	if [ "$RC" = 0 ]; then
		a=$(stat -c %s "$TMP/p.meta")
		b=$(stat -c %s "$TMP/q.meta")
		echo "  meta image: ezfs $a bytes, mkfs.erofs 1.9.3 $b bytes"
		t_expect "1.9.3's meta image is no smaller than ezfs's" [ "$b" -ge "$a" ]
		t_run q2 "$EZFS" fsck --device "$TMP/p1.erofs" \
			--device "$TMP/p2.erofs" --device "$TMP/p3.erofs" "$TMP/q.meta"
		t_check "1.9.3's meta image: ezfs fsck --device x3" 0
		if [ "$KMOUNT" = 1 ] && kmeta "$TMP/q.meta" "$TMP/mq" p; then
			# 1.9.3's root is a new 0777 directory of the build
			# time; ezfs' (and overlayfs') that of the top layer
			t_manifest "$TMP/mq" | grep -v '"path": "\."' >"$TMP/kq.json"
			umount "$TMP/mq"
			free_loops
			grep -v '"path": "\."' "$TMP/kp.json" >"$TMP/kp2.json"
			t_same_manifest "1.9.3's meta image: the same kernel view (but the root)" \
				"$TMP/kp2.json" "$TMP/kq.json"
		elif [ "$KMOUNT" = 1 ]; then
			t_fail "kernel refused 1.9.3's meta image"
			free_loops
		fi
	else
		t_fail "mkfs.erofs 1.9.3 merge rc=$RC: $(head -c 300 "$ERR")"
	fi
else
	echo "SKIP: comparison with mkfs.erofs 1.9.3 (set MKFS_EROFS2 to its mkfs.erofs)"
fi

# ---- chunk-based layers: holes, chunks stored once, block maps ----
mkdir -p "$TMP/c1" "$TMP/c2"
python3 - "$TMP" <<'EOF'
import random, sys
t, r = sys.argv[1], random.Random(3)
a = r.randbytes(8192)
with open(f"{t}/c1/sparse", "wb") as f:
    f.write(a)
    f.seek(3 * 4096 * 8)
    f.write(a + b"tail")
with open(f"{t}/c1/dup", "wb") as f:
    f.write(a + r.randbytes(4096) + a[:4096] + a + b"x" * 100)
open(f"{t}/c2/up", "wb").write(r.randbytes(20000))
EOF
"$EZFS" mkfs -q --chunksize=4096 "$TMP/c1.erofs" "$TMP/c1"
"$EZFS" mkfs -q --chunksize=8192 -Eforce-chunk-indexes -Enoinline_data \
	"$TMP/c2.erofs" "$TMP/c2"
t_run mc "${MKFS[@]}" --quiet "$TMP/c.meta" "$TMP/c1.erofs" "$TMP/c2.erofs"
t_check "chunk-based layers merged" 0
CD=(--device "$TMP/c1.erofs" --device "$TMP/c2.erofs")
t_run fc "$EZFS" fsck "${CD[@]}" "$TMP/c.meta"
t_check "chunk-based layers: ezfs fsck" 0
for f in c1/sparse c1/dup c2/up; do
	"$EZFS" cat "${CD[@]}" "$TMP/c.meta" "/${f#*/}" >"$TMP/cat.out"
	t_expect "chunk-based layers: ezfs cat /${f#*/}" cmp -s "$TMP/cat.out" "$TMP/$f"
done
t_run sc "$EZFS" stat -e "${CD[@]}" "$TMP/c.meta" /sparse
t_check "chunk-based layers: /sparse keeps its hole" 0 stdout " hole$"
if [ "$KMOUNT" = 1 ]; then
	o=ro
	for n in 1 2; do
		loop "$TMP/c$n.erofs" && o=$o,device=$LD
	done
	if loop "$TMP/c.meta" && mkdir -p "$TMP/mc" &&
		mount -t erofs -o "$o" "$LD" "$TMP/mc" 2>"$TMP/kmount.err"; then
		T_MOUNTS+=("$TMP/mc")
		for f in c1/sparse c1/dup c2/up; do
			t_expect "chunk-based layers: kernel /${f#*/}" \
				cmp -s "$TMP/mc/${f#*/}" "$TMP/$f"
		done
		umount "$TMP/mc"
	else
		t_fail "chunk-based layers: kernel refused: $(head -c 200 "$TMP/kmount.err")"
	fi
	free_loops
fi

# ---- refused layers: one line, exit 1, no image ----
mkdir -p "$TMP/src" "$TMP/zsrc"
echo inline >"$TMP/src/f"
head -c 100000 /dev/zero >"$TMP/zsrc/z"
"$EZFS" mkfs -q "$TMP/inl.erofs" "$TMP/src"
"$EZFS" mkfs -q -z lz4 -Enoinline_data "$TMP/lz4.erofs" "$TMP/zsrc"
"$EZFS" mkfs -q -b 512 -Enoinline_data "$TMP/b512.erofs" "$TMP/src"
head -c 8192 /dev/urandom >"$TMP/junk.erofs"
refused() { # refused WHAT PATTERN LAYERS...
	local what=$1 pat=$2
	shift 2
	rm -f "$TMP/bad.meta"
	t_run bad "${MKFS[@]}" --aufs --ovlfs-strip=1 --quiet "$TMP/bad.meta" "$@"
	t_check "refused: $what" 1 stderr "$pat"
	t_one_line "refused: $what: one line" "$ERR"
	t_expect "refused: $what: no image" [ ! -e "$TMP/bad.meta" ]
}
refused "a layer that is not an EROFS image" "junk.erofs: not an EROFS image" \
	"$TMP/p1.erofs" "$TMP/junk.erofs"
refused "a missing layer" "nosuch.erofs: No such file" \
	"$TMP/p1.erofs" "$TMP/nosuch.erofs"
refused "a layer of another block size" "b512.erofs: block size 512, not 4096" \
	"$TMP/p1.erofs" "$TMP/b512.erofs"
refused "a layer with inline tails" "inl.erofs: /f: inline data" \
	"$TMP/p1.erofs" "$TMP/inl.erofs"
refused "a compressed layer" "lz4.erofs: /z: compressed" \
	"$TMP/p1.erofs" "$TMP/lz4.erofs"
refused "a tar index without its tar" "i1.idx: its extra device does not follow it" \
	"$TMP/i1.idx" "$TMP/i2.erofs"

# -z, -C, -b, --chunksize: warned and ignored, as 1.9.3 ignores them
t_run zb "${MKFS[@]}" -z lz4hc -C 65536 -b 1024 --chunksize=8192 \
	"$TMP/z.meta" "$TMP/p1.erofs" "$TMP/p2.erofs" "$TMP/p3.erofs"
t_check "-z -C -b --chunksize with layers: warned and ignored" 0 \
	stderr "warning: -z.*accepted and ignored" \
	stderr "warning: -b .*accepted and ignored"
t_run zf "$EZFS" fsck "${P0[@]}" "$TMP/z.meta"
t_check "... and the image is the same merge (fsck, block size 4096)" 0
t_run zi "$EZFS" info "${P0[@]}" "$TMP/z.meta"
t_check "... block size 4096, uncompressed" 0 stdout "^Block size: *4096" \
	stdout "^Algorithms: *none"

t_done
