#!/bin/bash
# SPDX-License-Identifier: MIT
# mkfs.erofs 1.9.3 options with parity fixtures (../shared/fixtures/parity,
# whose README gives each command): ezfs mkfs runs the README's command
# line on the same tree (make_tree.py 5 src --small) and its image must
# show the fixture's manifest through ezfs extract and the kernel's mount,
# and pass ezfs fsck and (FSCK_EROFS2) 1.9.3's fsck.erofs.
#
#   --root-xattr-isize=256 -x1   the root's xattr size at least 256 (also
#                                a root with xattrs of its own: the larger)
#   --fsalignblks=16 -zlz4hc     the size a multiple of 16 blocks, and of
#                                16 for N=10 (rounded up to a power of 2)
#   -zlz4hc --zfeature-bits=6    the fixture's feature set (ztailpacking,
#                                fragments, dedupe); with MKFS_EROFS2 more
#                                bit sets give 1.9.3's feature bits
#   --xattr-inode-digest -zlz4   ezfs fsck, the fsck.erofs name and (with
#                                FSCK_EROFS2) 1.9.3's fsck.erofs
#                                --xattr-inode-digest accept the digests;
#                                ezfs checks 1.9.3's; a changed digest is
#                                a problem; =user.fp shows each file's
#                                SHA-256 (extract, kernel); a tar source
#   --vmdk-desc=vmdk-desc.vmdk   the fixture's descriptor byte for byte
#                                with the fixture image's UUID (-U): the
#                                CID comes from it; a blob device named
#
# Images are not compared byte for byte with 1.9.3's: ezfs lays the same
# tree out its own way (the plain image of this command line differs too).
# Bad values: one line (and the usage hint), exit 2, no image. Needs root (make_tree.py).
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
t_init
t_need_make_tree
t_need_cmd zstd cmp
PAR=$SHARED/fixtures/parity
[ -f "$PAR/README.md" ] || t_skip "no parity fixtures in $PAR"
t_peer_mkfs
PEER_FSCK=${FSCK_EROFS2:-}
[ -z "$PEER_FSCK" ] && [ -n "$PEER" ] && PEER_FSCK=$(dirname "$PEER")/fsck.erofs
[ -n "$PEER_FSCK" ] && [ -x "$PEER_FSCK" ] || {
	PEER_FSCK=
	echo "SKIP: 1.9.3's fsck of ezfs images (set FSCK_EROFS2 to its fsck.erofs)"
}

cd "$TMP" || exit 1
python3 "$MKTREE" 5 src --small >/dev/null || { t_fail "make_tree.py"; t_done; }
mkdir -p out
T=-T1700000000

# parity NAME ARGS...: ezfs mkfs ARGS out/NAME.img src (the README's line),
# then fsck, extract and the kernel against the fixture's manifest.
parity() {
	local name=$1
	shift
	t_run "$name" "$EZFS" mkfs -q "$@" "out/$name.img" src
	if [ "$RC" != 0 ]; then
		t_fail "$name: ezfs mkfs rc=$RC: $(head -c 300 "$ERR")"
		return 1
	fi
	t_check_image "$name" "out/$name.img" "$PAR/$name.manifest.jsonl"
	if [ -n "$PEER_FSCK" ]; then
		t_run "$name.peer-fsck" "$PEER_FSCK" "out/$name.img"
		t_check "$name: fsck.erofs 1.9.3 accepts ezfs's image" 0
	fi
}

# field IMG LABEL: the value of "LABEL:" in ezfs info (or stat) output
info_field() { "$EZFS" info "$1" | sed -n "s/^$2: *//p" | head -n 1; }
stat_field() { "$EZFS" stat "$1" "$2" | sed -n "s/^$3: *//p" | head -n 1; }

# ---- --root-xattr-isize ----
parity root-xattr-isize $T --root-xattr-isize=256 -x1 &&
	t_expect "root-xattr-isize: the root's xattr size is 256" \
		[ "$(stat_field out/root-xattr-isize.img / 'Xattr size')" = 256 ]
# a root with xattrs of its own: the larger of its body and N
mkdir -p rx && cp -a src/big rx/ && setfattr -n user.r -v "$(printf '%0100d' 0)" rx
"$EZFS" mkfs -q $T -x1 out/rx0.img rx && "$EZFS" mkfs -q $T -x1 \
	--root-xattr-isize=130 out/rx1.img rx && "$EZFS" mkfs -q $T -x1 \
	--root-xattr-isize=64 out/rx2.img rx ||
	t_fail "root-xattr-isize: a root with xattrs: ezfs mkfs failed"
s0=$(stat_field out/rx0.img / 'Xattr size')
t_expect "root-xattr-isize: 130 with a body of $s0 bytes gives 132" \
	[ "$(stat_field out/rx1.img / 'Xattr size')" = 132 -a "$s0" -lt 132 ]
t_expect "root-xattr-isize: 64, smaller than the body, keeps $s0" \
	[ "$(stat_field out/rx2.img / 'Xattr size')" = "$s0" ]
t_expect "root-xattr-isize: the root's xattr kept" \
	grep -q 'user\.r' <("$EZFS" stat out/rx1.img /)
"$EZFS" fsck -q out/rx1.img >/dev/null 2>&1 &&
	t_pass "root-xattr-isize: fsck with xattrs" ||
	t_fail "root-xattr-isize: fsck with xattrs"

# ---- --fsalignblks ----
parity fsalignblks $T --fsalignblks=16 -zlz4hc
for n in 16 10 1; do
	a=$n
	[ "$n" = 10 ] && a=16
	"$EZFS" mkfs -q $T --fsalignblks=$n -zlz4hc out/fa$n.img src ||
		t_fail "fsalignblks=$n: ezfs mkfs failed"
	sz=$(stat -c %s out/fa$n.img)
	blocks=$(info_field out/fa$n.img Blocks)
	t_expect "fsalignblks=$n: $sz bytes, $blocks blocks: a multiple of $a, the superblock's count" \
		[ $((sz % (a * 4096))) = 0 -a $((blocks * 4096)) = "$sz" ]
done
t_expect "fsalignblks: 16 pads the plain size" \
	[ "$(stat -c %s out/fa16.img)" -ge "$(stat -c %s out/fa1.img)" ]

# ---- --zfeature-bits ----
if parity zfeature-bits $T -zlz4hc --zfeature-bits=6; then
	zstd -q -d -f "$PAR/zfeature-bits.img.zst" -o ref-zb.img
	t_expect "zfeature-bits=6: the fixture's features ($(info_field ref-zb.img Features))" \
		[ "$(info_field ref-zb.img Features)" = \
		"$(info_field out/zfeature-bits.img Features)" ]
fi
# applied in order with -E: a clear bit 2 or 3 turns fragments off again
# (no packed inode; dedupe shares the fragments bit)
"$EZFS" mkfs -q $T -zlz4hc -Efragments --zfeature-bits=0x12 out/zb12.img src &&
	t_expect "zfeature-bits=0x12 after -Efragments: ztailpacking, dedupe, no fragments" \
		[ "$(info_field out/zb12.img Features)" = \
		"sb_csum,mtime,xattr_filter,0padding,ztailpacking,fragments/dedupe" \
		-a -z "$(info_field out/zb12.img 'Packed nid')" ] ||
	t_fail "zfeature-bits=0x12: $(info_field out/zb12.img Features)"
if [ -n "$PEER" ]; then
	for bits in 2 4 6 0x16 0x46 0x86; do
		"$PEER" $T -zlz4hc --zfeature-bits=$bits out/p.img src >/dev/null 2>&1 &&
			"$EZFS" mkfs -q $T -zlz4hc --zfeature-bits=$bits out/e.img src ||
			{ t_fail "zfeature-bits=$bits: a build failed"; continue; }
		t_expect "zfeature-bits=$bits: 1.9.3's features ($(info_field out/p.img 'Feature bits'))" \
			[ "$(info_field out/p.img 'Feature bits')" = \
			"$(info_field out/e.img 'Feature bits')" ]
		rm -rf x && "$EZFS" extract -q out/e.img x && t_manifest x >e.json &&
			rm -rf x && "$EZFS" extract -q out/p.img x && t_manifest x >p.json
		t_same_manifest "zfeature-bits=$bits: 1.9.3's tree" p.json e.json
	done
fi

# ---- --vmdk-desc ----
zstd -q -d -f "$PAR/vmdk-desc.img.zst" -o ref-vmdk.img
uuid=$(info_field ref-vmdk.img UUID)
if parity vmdk-desc $T -U "$uuid" --vmdk-desc=vmdk-desc.vmdk; then
	t_expect "vmdk-desc: the fixture's descriptor byte for byte (UUID $uuid)" \
		cmp -s vmdk-desc.vmdk "$PAR/vmdk-desc.vmdk"
	t_expect "vmdk-desc: the image is 1.9.3's size" \
		[ "$(stat -c %s out/vmdk-desc.img)" = "$(stat -c %s ref-vmdk.img)" ]
fi
# with a blob device: its extent after the image's, named by its file
"$EZFS" mkfs -q $T --chunksize=8192 --blobdev=out/blob --vmdk-desc=b.vmdk \
	out/b.img src || t_fail "vmdk-desc with --blobdev: ezfs mkfs failed"
ib=$(($(stat -c %s out/b.img) / 512)) bb=$(($(stat -c %s out/blob) / 512))
t_expect "vmdk-desc with --blobdev: two extents ($ib and $bb sectors)" \
	[ "$(grep '^RW' b.vmdk)" = "RW $ib FLAT \"out/b.img\" 0
RW $bb FLAT \"out/blob\" 0" ]
# --offset moves the image's extent
"$EZFS" mkfs -q $T --offset=1048576 --vmdk-desc=o.vmdk out/o.img src &&
	t_expect "vmdk-desc with --offset=1048576: the extent at sector 2048" \
		grep -qx 'RW [0-9]* FLAT "out/o.img" 2048' o.vmdk ||
	t_fail "vmdk-desc with --offset: ezfs mkfs failed"

# ---- --xattr-inode-digest (and fsck's check of it) ----
FSCK_NAME=$(dirname "$EZFS")/fsck.erofs
if parity xattr-inode-digest $T --xattr-inode-digest -zlz4; then
	img=out/xattr-inode-digest.img
	t_run dg "$EZFS" fsck --xattr-inode-digest "$img"
	t_check "xattr-inode-digest: ezfs fsck --xattr-inode-digest" 0
	if [ -x "$FSCK_NAME" ]; then
		t_run dgc "$FSCK_NAME" --xattr-inode-digest "$img"
		t_check "xattr-inode-digest: the fsck.erofs name's --xattr-inode-digest" 0
	fi
	if [ -n "$PEER_FSCK" ]; then
		t_run dgp "$PEER_FSCK" --xattr-inode-digest "$img"
		t_check "xattr-inode-digest: fsck.erofs 1.9.3 --xattr-inode-digest accepts ezfs's digests" 0
		t_expect "xattr-inode-digest: 1.9.3 found every file's digest (no 'no digest' warning)" \
			eval '! grep -qi "no digest" "$ERR"'
	fi
	t_expect "xattr-inode-digest: 1.9.3's features (ishare_xattrs, plain_xattr_pfx, xattr_prefixes)" \
		[ "$(info_field "$img" Features)" = "$(zstd -q -d -c \
		"$PAR/xattr-inode-digest.img.zst" >ref-dg.img &&
		info_field ref-dg.img Features)" ]
	# ezfs reads 1.9.3's digests too
	t_run dgr "$EZFS" fsck --xattr-inode-digest ref-dg.img
	t_check "xattr-inode-digest: ezfs fsck checks 1.9.3's digests" 0
	# a digest changed in an inode (the last one: the first are shared
	# xattrs, in block 0): a problem naming the file, exit 1
	cp "$img" bad-dg.img
	off=$(grep -abo 'sha256:' bad-dg.img | tail -n 1 | cut -d: -f1)
	printf '\x00\x01' | dd of=bad-dg.img bs=1 seek=$((off + 7)) conv=notrunc status=none
	t_run dgb "$EZFS" fsck -q --xattr-inode-digest bad-dg.img
	t_check "xattr-inode-digest: a changed digest is a problem" 1 stderr 'inode digest'
	if [ -n "$PEER_FSCK" ]; then
		t_run dgbp "$PEER_FSCK" --xattr-inode-digest bad-dg.img
		t_expect "xattr-inode-digest: 1.9.3's fsck finds the same change" [ "$RC" != 0 ]
	fi
fi
# an image without digests: one line, exit 1
t_run dgn "$EZFS" fsck --xattr-inode-digest out/fa1.img
t_check "fsck --xattr-inode-digest of an image without them: exit 1" 1 stderr 'no inode digests'
t_expect "fsck --xattr-inode-digest of an image without them: one line" \
	[ "$(grep -c 'ezfs fsck' "$ERR")" = 1 ]
# a name with a listable prefix: every file shows it, with its SHA-256
rm -rf x
"$EZFS" mkfs -q $T --xattr-inode-digest=user.fp out/dgu.img src &&
	"$EZFS" extract -q out/dgu.img x ||
	t_fail "xattr-inode-digest=user.fp: ezfs mkfs or extract failed"
t_expect "xattr-inode-digest=user.fp: each non-empty file's user.fp is sha256: and its SHA-256" \
	python3 - x <<'PY'
import hashlib, os, sys
n = 0
for d, _, fs in os.walk(sys.argv[1]):
    for f in fs:
        p = os.path.join(d, f)
        if os.path.islink(p) or not os.path.isfile(p):
            continue
        data = open(p, "rb").read()
        names = os.listxattr(p, follow_symlinks=False)
        if not data:
            assert "user.fp" not in names, p
            continue
        v = os.getxattr(p, "user.fp", follow_symlinks=False)
        assert v == b"sha256:" + hashlib.sha256(data).digest(), p
        n += 1
assert n > 100, n
PY
if [ "$KMOUNT" = 1 ] && t_kmount out/dgu.img "$TMP/mnt"; then
	f=$(find "$TMP/mnt" -type f -size +0 | head -n 1)
	t_expect "xattr-inode-digest=user.fp: the kernel shows it" [ "$(getfattr \
		--only-values -n user.fp "$f" 2>/dev/null | tail -c 32 | od -An -tx1 |
		tr -d ' \n')" = "$(sha256sum <"$f" | cut -c1-64)" ]
	t_kumount "$TMP/mnt"
fi
# a tar source
tar -C src --format=pax --sort=name -cf src.tar . 2>/dev/null
"$EZFS" mkfs -q $T --tar=f --xattr-inode-digest out/dgt.img src.tar &&
	t_run dgt "$EZFS" fsck --xattr-inode-digest out/dgt.img &&
	t_check "xattr-inode-digest of a tar: ezfs fsck passes" 0 ||
	t_fail "xattr-inode-digest of a tar: ezfs mkfs failed"
[ -n "$PEER_FSCK" ] && t_run dgtp "$PEER_FSCK" --xattr-inode-digest out/dgt.img &&
	t_check "xattr-inode-digest of a tar: fsck.erofs 1.9.3 passes" 0

# ---- bad values: one line, exit 2, nothing written ----
bad() { # WHAT ARGS...
	local what=$1
	shift
	rm -f out/bad.img bad.vmdk
	t_run bad "$EZFS" mkfs -q "$@" out/bad.img src
	t_check "$what: exit 2 naming the option" 2 stderr "${what%%=*}"
	t_expect "$what: one line and the usage hint" [ "$(wc -l <"$ERR")" = 2 ]
	t_expect "$what: no image" [ ! -e out/bad.img -a ! -e bad.vmdk ]
}
bad --root-xattr-isize=8 --root-xattr-isize=8
bad --root-xattr-isize=12 --root-xattr-isize=12
bad --root-xattr-isize=65533 --root-xattr-isize=65533
bad --root-xattr-isize=x --root-xattr-isize=x
bad --fsalignblks=-1 --fsalignblks=-1
bad --fsalignblks=2G --fsalignblks=2G
bad --fsalignblks=0x80000000 --fsalignblks=0x80000000
bad --zfeature-bits=256 --zfeature-bits=256
bad --zfeature-bits=-1 --zfeature-bits=-1
bad --xattr-inode-digest= --xattr-inode-digest=
bad --xattr-inode-digest --xattr-inode-digest -zlz4 -Efragments
bad --xattr-inode-digest --xattr-inode-digest -zlz4 --zD
bad --xattr-inode-digest --xattr-inode-digest --tar=i
bad --vmdk-desc= --vmdk-desc=
bad --vmdk-desc --vmdk-desc=bad.vmdk --sparse
bad --vmdk-desc --vmdk-desc=bad.vmdk --offset=100
# the tar of --tar=i, named in the descriptor: not standard input
rm -f out/bad.img
t_run vmdk-stdin "$EZFS" mkfs -q --tar=i --vmdk-desc=bad.vmdk out/bad.img <src.tar
t_check "--vmdk-desc with --tar=i from standard input: exit 2" 2 stderr 'vmdk-desc'
t_expect "--vmdk-desc with --tar=i from standard input: no image" [ ! -e out/bad.img ]
# --tar=i from a file: the tar is the second extent
"$EZFS" mkfs -q $T --tar=i --vmdk-desc=ti.vmdk out/ti.img src.tar &&
	t_expect "vmdk-desc with --tar=i: the tar's extent" \
		grep -qx "RW $(($(stat -c %s src.tar) / 512)) FLAT \"src.tar\" 0" ti.vmdk ||
	t_fail "vmdk-desc with --tar=i: ezfs mkfs failed"
# a descriptor that cannot be written: one line, exit 1
t_run vmdk-dir "$EZFS" mkfs -q --vmdk-desc=nodir/x.vmdk out/v.img src
t_check "vmdk-desc into a missing folder: exit 1 naming it" 1 stderr 'nodir/x.vmdk'
t_one_line "vmdk-desc into a missing folder: one line" "$ERR"
t_expect "vmdk-desc into a missing folder: no image" [ ! -e out/v.img ]

t_done
