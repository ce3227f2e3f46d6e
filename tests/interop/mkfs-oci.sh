#!/bin/bash
# SPDX-License-Identifier: MIT
# mkfs --oci against Debian's docker-registry on 127.0.0.1:
#  - a two-layer image (gzip tar layers: a whiteout of a file, of a
#    directory, of a name that is not there, an opaque directory with new
#    entries beside it, a file replaced, hard links, a symlink, xattrs)
#    built with --oci shows exactly the tree the OCI rules give: the
#    layers applied to a directory by an independent script
#    (oci_apply.py), compared with manifest.py against ezfs extract and,
#    as root, the kernel's mount; no whiteout is left;
#  - layer=1 and blob= build that layer only, its whiteouts as overlayfs
#    ones (0/0 character devices, the opaque xattr), as --aufs of its tar;
#  - --oci=i of a plain tar layer is a tar index that mounts with the
#    blob as its device; of the merged gzip layers it is refused;
#  - an unreachable registry, a missing tag, a layer index past the end:
#    one line, exit 1, the destination byte for byte as it was;
#  - with MKFS_EROFS2 (1.9.3's mkfs.erofs): layer 0 (no whiteouts, where
#    the rules agree) shows 1.9.3's tree.
#
# usage: EZFS_BIN=build/tools/ezfs/ezfs tests/interop/mkfs-oci.sh
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
t_init
t_need_shared
t_need_cmd python3 tar gzip
HERE=$(cd "$(dirname "$0")" && pwd)
if "$EZFS" mkfs --oci "$TMP/probe.img" 127.0.0.1:1/none 2>&1 | grep -q "without libcurl"; then
	t_skip "ezfs was built without libcurl (--oci)"
fi
command -v "${REG:-docker-registry}" >/dev/null ||
	t_skip "docker-registry is not installed (scripts/deps.sh installs it)"
t_registry || t_skip "docker-registry did not start"
T_PIDS+=("$REG_PID")
T=(-T1700000000)
MO=()
t_is_root || MO=(--no-owner)

# said WHAT RC: exactly one line on stderr (besides "Try ..."), naming
# WHAT, exit RC
one_line() {
	[ "$RC" = "$2" ] && [ "$(grep -vc '^Try ' "$ERR")" = 1 ] && grep -q "$1" "$ERR"
}

# ---- the layers -------------------------------------------------------
L0=$TMP/l0 L1=$TMP/l1
mkdir -p "$L0/etc/sub" "$L0/opq/sub" "$L0/del/deep" "$L0/keepdir"
echo keep >"$L0/etc/keep"
echo gone >"$L0/etc/gone"
echo x >"$L0/etc/sub/x"
echo a >"$L0/opq/a"
echo b >"$L0/opq/sub/b"
echo d >"$L0/del/deep/d"
echo k >"$L0/keepdir/k"
seq 20000 >"$L0/big"
echo h >"$L0/h1" && ln "$L0/h1" "$L0/h2"
ln -s etc/keep "$L0/link"
setfattr -n user.layer -v zero "$L0/keepdir" 2>/dev/null
mkdir -p "$L1/etc" "$L1/opq/sub" "$L1/new"
: >"$L1/etc/.wh.gone"
: >"$L1/.wh.del"
: >"$L1/.wh.nothing"
: >"$L1/opq/.wh..wh..opq"
echo fresh >"$L1/opq/fresh"
echo c >"$L1/opq/sub/c"
echo changed >"$L1/etc/keep"
echo n >"$L1/new/n"
setfattr -n user.layer -v one "$L1/new" 2>/dev/null
for l in l0 l1; do
	tar -C "$TMP/$l" --format=pax --xattrs --sort=name -cf "$TMP/$l.tar" . &&
		gzip -n -k "$TMP/$l.tar" || t_fail "tar of $l"
done
HOSTP=127.0.0.1:$RPORT
mapfile -t DIG < <(python3 "$HERE/oci_push.py" "$HOSTP" test/two v1 \
	"$TMP/l0.tar.gz" "$TMP/l1.tar.gz")
python3 "$HERE/oci_push.py" "$HOSTP" test/plain v1 "$TMP/l0.tar" >/dev/null
[ "${#DIG[@]}" = 2 ] || t_fail "pushing the image: ${DIG[*]}"

KMOUNT=0
t_can_kmount && KMOUNT=1
[ "$KMOUNT" = 1 ] || echo "SKIP: kernel mounts (not root or no erofs): ezfs extract only"

# view IMG OUT [DEV]: the tree the image shows (kernel as root, and ezfs
# extract); OUT.x from extract, OUT.k from the kernel
view() {
	local dev=()
	[ -n "${3:-}" ] && dev=(--device "$3")
	rm -rf "$TMP/v"
	"$EZFS" extract "${dev[@]}" "$1" "$TMP/v" >/dev/null 2>&1 &&
		t_manifest "$TMP/v" --no-times "${MO[@]}" >"$2.x"
	rm -rf "$TMP/v"
	[ "$KMOUNT" = 1 ] || return 0
	mkdir -p "$TMP/km"
	if [ -n "${3:-}" ]; then
		local l
		l=$(losetup -f --show -r "$3") || return 0
		mount -t erofs -o loop,ro,device="$l" "$1" "$TMP/km" 2>/dev/null &&
			t_manifest "$TMP/km" --no-times "${MO[@]}" >"$2.k" && umount "$TMP/km"
		losetup -d "$l" 2>/dev/null
	elif mount -t erofs -o loop,ro "$1" "$TMP/km" 2>/dev/null; then
		t_manifest "$TMP/km" --no-times "${MO[@]}" >"$2.k"
		umount "$TMP/km"
	fi
}
# shows WHAT IMG WANT [DEV]: extract (and the kernel) show WANT
shows() {
	view "$2" "$TMP/got" "${4:-}"
	t_same_manifest "$1: ezfs extract" "$3" "$TMP/got.x"
	if [ "$KMOUNT" = 1 ]; then
		t_same_manifest "$1: kernel mount" "$3" "$TMP/got.k"
	fi
	rm -f "$TMP/got.x" "$TMP/got.k"
}

# ---- merged: the OCI rules ----------------------------------------------
python3 "$HERE/oci_apply.py" "$TMP/want" "$TMP/l0.tar.gz" "$TMP/l1.tar.gz" ||
	t_fail "oci_apply.py"
t_manifest "$TMP/want" --no-times "${MO[@]}" >"$TMP/want.json"
t_run merged "$EZFS" mkfs -q "${T[@]}" -zlz4 --oci "$TMP/m.img" "$HOSTP/test/two:v1"
t_expect "--oci of two gzip layers: built (rc=$RC $(head -c 200 "$ERR"))" [ "$RC" = 0 ]
shows "--oci: the tree of the OCI rules" "$TMP/m.img" "$TMP/want.json"
t_run fsck "$EZFS" fsck "$TMP/m.img"
t_expect "--oci: ezfs fsck" [ "$RC" = 0 ]
t_expect "--oci: no whiteout, the deleted and hidden names gone, the new ones there" \
	eval '! grep -q "\.wh\.\|\"etc/gone\"\|\"del\|\"opq/a\"\|\"opq/sub/b\"" "$TMP/want.json" &&
		grep -q "\"opq/fresh\"" "$TMP/want.json" && grep -q "\"opq/sub/c\"" "$TMP/want.json"'
t_run mergedname "$EZFS" mkfs -q "${T[@]}" --oci=f "$TMP/m2.img" "oci://$HOSTP/test/two:v1"
shows "--oci=f of an oci:// reference, uncompressed" "$TMP/m2.img" "$TMP/want.json"

# ---- one layer: its whiteouts as overlayfs ones -------------------------
"$EZFS" mkfs -q "${T[@]}" --aufs --tar=f "$TMP/a1.img" "$TMP/l1.tar.gz"
view "$TMP/a1.img" "$TMP/a1"
for sel in layer=1 "blob=${DIG[1]}"; do
	t_run "one-$sel" "$EZFS" mkfs -q "${T[@]}" --oci="$sel" "$TMP/one.img" \
		"$HOSTP/test/two:v1"
	view "$TMP/one.img" "$TMP/one"
	t_expect "--oci=$sel: the layer with overlayfs whiteouts, as --aufs of its tar" \
		eval '[ "$RC" = 0 ] && cmp -s "$TMP/a1.x" "$TMP/one.x" &&
			{ [ "$KMOUNT" = 0 ] || cmp -s "$TMP/a1.k" "$TMP/one.k"; } &&
			grep -q "\"path\": \"etc/gone\", \"rdev\": \"0:0\", \"type\": \"c\"" "$TMP/one.x" &&
			grep "\"path\": \"opq\"" "$TMP/one.x" | grep -q trusted.overlay.opaque'
done

# ---- --oci=i: a tar index of a plain layer ------------------------------
tar_want=$TMP/plain.json
rm -rf "$TMP/pw" && mkdir -p "$TMP/pw" && tar -C "$TMP/pw" --xattrs -xf "$TMP/l0.tar"
t_manifest "$TMP/pw" --no-times "${MO[@]}" >"$tar_want"
t_run idx "$EZFS" mkfs -q "${T[@]}" --oci=i "$TMP/i.img" "$HOSTP/test/plain:v1"
t_expect "--oci=i of a plain tar layer: built (rc=$RC $(head -c 200 "$ERR"))" [ "$RC" = 0 ]
shows "--oci=i: the index with the blob as its device" "$TMP/i.img" "$tar_want" "$TMP/l0.tar"
cp "$TMP/m.img" "$TMP/m.orig"
t_run idxgz "$EZFS" mkfs -q --oci=i,layer=0 "$TMP/m.img" "$HOSTP/test/two:v1"
t_expect "--oci=i of a gzip layer: one line, exit 1, the image kept" \
	eval 'one_line "uncompressed tar layer" 1 && cmp -s "$TMP/m.img" "$TMP/m.orig"'
t_run idx2 "$EZFS" mkfs -q --oci=i "$TMP/m.img" "$HOSTP/test/two:v1"
t_expect "--oci=i of two layers: one line (choose one), the image kept" \
	eval 'one_line "indexes one layer of the 2" 1 && cmp -s "$TMP/m.img" "$TMP/m.orig"'

# ---- bad inputs ---------------------------------------------------------
dead=127.0.0.1:$(t_free_port)
t_run dead timeout 120 "$EZFS" mkfs -q --oci "$TMP/m.img" "$dead/test/two:v1"
t_expect "an unreachable registry: one line naming it, exit 1, the image kept" \
	eval 'one_line "$dead" 1 && cmp -s "$TMP/m.img" "$TMP/m.orig"'
t_run notag "$EZFS" mkfs -q --oci "$TMP/m.img" "$HOSTP/test/two:nope"
t_expect "a missing tag: one line, exit 1, the image kept" \
	eval 'one_line "test/two:nope" 1 && cmp -s "$TMP/m.img" "$TMP/m.orig"'
t_run nolayer "$EZFS" mkfs -q --oci=layer=5 "$TMP/m.img" "$HOSTP/test/two:v1"
t_expect "layer=5 of two: one line, exit 1, the image kept" \
	eval 'one_line "layer=5: the manifest has 2 layers" 1 && cmp -s "$TMP/m.img" "$TMP/m.orig"'
t_run newfile "$EZFS" mkfs -q --oci "$TMP/none.img" "$HOSTP/test/two:nope"
t_expect "a missing tag: no image made" eval '[ "$RC" = 1 ] && [ ! -e "$TMP/none.img" ]'
t_run badopt "$EZFS" mkfs -q --oci=layer=0,blob=sha256:00 "$TMP/m.img" "$HOSTP/test/two:v1"
t_expect "layer= with blob=: a usage error" eval 'one_line "exclude each other" 2'

# ---- mkfs.erofs 1.9.3 where the rules agree ------------------------------
PEER=${MKFS_EROFS2:-}
if [ -n "$PEER" ] && [ -x "$PEER" ]; then
	"$PEER" --quiet "${T[@]}" --oci=f,layer=0,insecure "$TMP/p0.img" \
		"$HOSTP/test/two:v1" >"$TMP/p0.log" 2>&1
	prc=$?
	t_run l0 "$EZFS" mkfs -q "${T[@]}" --oci=f,layer=0 "$TMP/e0.img" "$HOSTP/test/two:v1"
	if [ $prc = 0 ] && [ "$RC" = 0 ]; then
		view "$TMP/p0.img" "$TMP/p0"
		view "$TMP/e0.img" "$TMP/e0"
		t_same_manifest "--oci=f,layer=0: 1.9.3's tree (ezfs extract)" "$TMP/p0.x" "$TMP/e0.x"
		[ "$KMOUNT" = 1 ] &&
			t_same_manifest "--oci=f,layer=0: 1.9.3's tree (kernel)" "$TMP/p0.k" "$TMP/e0.k"
	else
		t_fail "--oci=f,layer=0: 1.9.3 rc=$prc ($(head -c 200 "$TMP/p0.log")), ezfs rc=$RC"
	fi
else
	echo "SKIP: --oci against mkfs.erofs 1.9.3: set MKFS_EROFS2 to its mkfs.erofs"
fi
t_done
