#!/bin/bash
# SPDX-License-Identifier: MIT
# mkfs-compat.sh - the mkfs.erofs command lines of real pipelines (Android
# build_image.py, systemd-repart, dracut, osbuild, Fedora CoreOS and kiwi,
# archiso, Flatcar, kata, containerd) run as `ezfs mkfs` with the same
# arguments: ezfs fsck passes, the kernel mounts the image and shows the
# source tree, or the owners, modes, SELinux labels and capabilities the
# Android fs_config and file_contexts ask for; options ezfs refuses fail
# with one line naming them and exit 2.
#
# Environment: EZFS (or EZFS_BIN), SRC (or EZFS_SRC), EZFS_SHARED.
# Exit 0 pass, 1 fail, 77 skip.
set -u

. "$(dirname "$0")/../lib.sh"
t_init
t_need_shared

t_kmount_ok

UUID=6d0f6a4e-1c2b-4e53-9a7d-0123456789ab
TREE=$TMP/tree
mkdir -p "$TREE/bin" "$TREE/etc/init" "$TREE/lib/sub"
echo '#!/bin/sh' >"$TREE/bin/sh"
seq 1 20000 >"$TREE/bin/toybox"
ln -s toybox "$TREE/bin/ls"
ln "$TREE/bin/sh" "$TREE/lib/sub/sh.link"
printf 'a=1\n' >"$TREE/etc/init/a.rc"
head -c 70000 /dev/zero | tr '\0' 'z' >"$TREE/etc/zeros"
seq 1 3000 | sed 's/^/line /' >"$TREE/lib/libc.so"
: >"$TREE/etc/empty"
chmod 0755 "$TREE/bin/sh" "$TREE/bin/toybox"
chown -R 1234:5678 "$TREE" 2>/dev/null
t_manifest "$TREE" --no-times >"$TMP/src.json"
t_manifest "$TREE" --no-times --no-owner >"$TMP/src-noown.json"

# The lines run through the mkfs.erofs name beside the command, as the
# pipelines call it; `ezfs mkfs` where the build has no link.
MKFS=("$(dirname "$EZFS")/mkfs.erofs")
if [ ! -x "${MKFS[0]}" ]; then
	echo "SKIP: no mkfs.erofs link beside $EZFS: the lines run as 'ezfs mkfs'"
	MKFS=("$EZFS" mkfs)
fi

# Debian's fsck.erofs (erofs-utils 1.5) on IMG: it must pass, unless it
# says it does not know a feature of the image
DEB_FSCK=
for f in /usr/sbin/fsck.erofs /usr/bin/fsck.erofs /sbin/fsck.erofs; do
	[ -x "$f" ] && [ ! "$f" -ef "$EZFS" ] && DEB_FSCK=$f && break
done
[ -n "$DEB_FSCK" ] || echo "SKIP: Debian's fsck.erofs (erofs-utils) is not installed"
peer_fsck() { # NAME IMG [fsck.erofs args]
	local name=$1 img=$2
	shift 2
	[ -n "$DEB_FSCK" ] || return 0
	t_run peerfsck "$DEB_FSCK" "$@" "$img"
	if [ "$RC" = 0 ]; then
		t_pass "$name: Debian's fsck.erofs"
	elif grep -qiE "unidentified incompatible feature|unsupported|not supported" "$ERR"; then
		echo "  $name: Debian's fsck.erofs does not know a feature: $(head -1 "$ERR")"
	else
		t_fail "$name: Debian's fsck.erofs rc=$RC: $(head -c 300 "$ERR" "$OUT")"
	fi
}

# check NAME IMG MANIFEST_ARGS...: ezfs fsck, Debian's fsck.erofs, and the
# kernel's view of IMG against the source's manifest
check() {
	local name=$1 img=$2
	shift 2
	local want=$TMP/src.json
	case " $* " in *" --no-owner "*) want=$TMP/src-noown.json ;; esac
	t_check_image "$name" "$img" "$want" --no-times "$@"
	peer_fsck "$name" "$img"
}

# line NAME ARGS...: `mkfs.erofs ARGS` (the ARGS hold IMG and SRC as the
# words @IMG and @SRC, where the pipeline puts them)
line() {
	local name=$1 a args=()
	shift
	for a in "$@"; do
		case "$a" in
		@IMG) args+=("$TMP/$name.img") ;;
		@SRC) args+=("$TREE") ;;
		*) args+=("$a") ;;
		esac
	done
	rm -f "$TMP/$name.img"
	t_run "$name" "${MKFS[@]}" "${args[@]}"
	if [ "$RC" != 0 ] || [ ! -s "$TMP/$name.img" ]; then
		t_fail "$name: mkfs rc=$RC: $(head -c 300 "$ERR")"
		return 1
	fi
	t_pass "$name: mkfs"
}

# refused NAME WORD ARGS...: exit 2, one line naming WORD, no image
refused() {
	local name=$1 word=$2
	shift 2
	rm -f "$TMP/r.img"
	t_run "$name" "${MKFS[@]}" "$@" "$TMP/r.img" "$TREE"
	if [ "$RC" = 2 ] && grep -qF -- "$word" "$ERR" && [ ! -e "$TMP/r.img" ] &&
	   [ "$(grep -vc '^Try ' "$ERR")" = 1 ]; then
		t_pass "$name: refused naming $word"
	else
		t_fail "$name: rc=$RC, want 2 and one line naming '$word': $(head -c 300 "$ERR")"
	fi
}

# --- the pipelines' command lines ---
line repart -U "$UUID" @IMG @SRC --quiet && check repart "$TMP/repart.img"
line repart-z -zlz4hc,level=12 -b 4096 -U "$UUID" @IMG @SRC --quiet &&
	check repart-z "$TMP/repart-z.img"
line dracut --exclude-path=etc/zeros -C 65536 -E fragments -x -1 \
	-U 00000000-0000-0000-0000-000000000000 -T 0 -z lz4hc @IMG @SRC -q &&
	{
		grep -v '"path": "etc/zeros"' "$TMP/src.json" >"$TMP/dracut.json"
		t_check_image dracut "$TMP/dracut.img" "$TMP/dracut.json" --no-times
	}
line osbuild -z lzma,6 -E ztailpacking,force-inode-blockmap -q @IMG @SRC &&
	check osbuild "$TMP/osbuild.img"
line fcos -Eall-fragments,fragdedupe=inode -C131072 --quiet @IMG @SRC &&
	check fcos "$TMP/fcos.img"
line fcos-lzma -zlzma -Efragments -C131072 -q @IMG @SRC &&
	check fcos-lzma "$TMP/fcos-lzma.img"
line kiwi -Eall-fragments -C524288 -z lzma,level=6,dictsize=524288 -q \
	@IMG @SRC && check kiwi "$TMP/kiwi.img"
line archiso -q -U "$UUID" -- @IMG @SRC && check archiso "$TMP/archiso.img"
line flatcar --all-root -zlz4hc,12 -q @IMG @SRC &&
	check flatcar "$TMP/flatcar.img" --no-owner
line kata -Enoinline_data -q @IMG @SRC && check kata "$TMP/kata.img"
line e-set -q -zlz4hc -Elegacy-compress,dedupe,ztailpacking,48bit \
	-Exattr-name-filter,plain-xattr-prefixes,dot-omitted \
	-Efragdedupe=full @IMG @SRC && check e-set "$TMP/e-set.img"
line misc -q -U clear --ignore-mtime --MZ --dsunit=16 --max-extent-bytes=65536 \
	--xattr-prefix=trusted.overlay. --zD=0 --sort=path -d 3 @IMG @SRC &&
	check misc "$TMP/misc.img"
line misc2 -q -U random --preserve-mtime --hard-dereference \
	-z zstd,level=3,dictsize=65536 @IMG @SRC &&
	{
		sed 's/"link": "[^"]*", //' "$TMP/src.json" >"$TMP/deref.json"
		t_check_image misc2 "$TMP/misc2.img" "$TMP/deref.json" --no-times
	}

# the other front door: the same line as `ezfs mkfs` makes the same image
t_run door1 "${MKFS[@]}" -zlz4hc,level=12 -T 1 -U "$UUID" "$TMP/door1.img" \
	"$TREE" --quiet
t_run door "$EZFS" mkfs -zlz4hc,level=12 -T 1 -U "$UUID" "$TMP/door.img" \
	"$TREE" --quiet
if [ "$RC" = 0 ] && cmp -s "$TMP/door.img" "$TMP/door1.img"; then
	t_pass "ezfs mkfs and mkfs.erofs: the same image for the same line"
else
	t_fail "ezfs mkfs: rc=$RC, or an image unlike mkfs.erofs': $(head -c 300 "$ERR")"
fi

# -zzstd without a level is zstd's level -1, which mkfs.erofs 1.9.3 hands
# libzstd as its "unset"; level=-N are zstd's fast levels, 0 its default
zsum() {
	rm -f "$TMP/z.img"
	"$EZFS" mkfs -q -T 1 -U "$UUID" -C 65536 "$@" "$TMP/z.img" "$TREE" &&
		md5sum <"$TMP/z.img"
}
z_un=$(zsum -zzstd) z_m1=$(zsum -zzstd,level=-1) z_3=$(zsum -zzstd,3)
z_0=$(zsum -zzstd,level=0) z_m5=$(zsum -zzstd,level=-5)
if [ -n "$z_un" ] && [ "$z_un" = "$z_m1" ] && [ "$z_0" = "$z_3" ] &&
	[ "$z_un" != "$z_3" ] && [ -n "$z_m5" ] && [ "$z_m5" != "$z_un" ]; then
	t_pass "-zzstd is level -1 as in 1.9.3; level=-5 another, 0 is 3"
else
	t_fail "-zzstd levels: none '$z_un' -1 '$z_m1' 3 '$z_3' 0 '$z_0' -5 '$z_m5'"
fi

# zstd and libdeflate fill a pcluster to a tolerance: a rest of a byte
# goes into the pcluster when it fits there, not into a raw block
mkdir -p "$TMP/zz"
head -c 1048577 /dev/zero >"$TMP/zz/z"
for z in zstd libdeflate; do
	rm -f "$TMP/zz.img"
	"$EZFS" mkfs -q -T0 -z$z -C65536 "$TMP/zz.img" "$TMP/zz" &&
		ext=$("$EZFS" stat "$TMP/zz.img" /z | sed -n 's/^Data: *//p')
	t_expect "$z: 1 MiB and a byte of zeros in one pcluster ($ext)" \
		grep -q '^1 extents, 1 pclusters, 4096 bytes' <<<"$ext"
done

# -U clear is the all-zero UUID; -V and --help
uuid_of() { od -An -tx1 -j $((1024 + 48)) -N16 "$1" | tr -d ' \n'; }
if [ "$(uuid_of "$TMP/misc.img")" = 00000000000000000000000000000000 ] &&
   [ "$(uuid_of "$TMP/misc2.img")" != 00000000000000000000000000000000 ] &&
   [ "$(uuid_of "$TMP/archiso.img")" = "$(echo "$UUID" | tr -d -)" ]; then
	t_pass "-U clear, -U random, -U UUID"
else
	t_fail "-U: $(uuid_of "$TMP/misc.img") $(uuid_of "$TMP/misc2.img")"
fi
t_run ver "${MKFS[@]}" -V
if [ "$RC" = 0 ] && grep -q "^mkfs.erofs (ezfs) [0-9]" "$OUT"; then
	t_pass "-V: $(cat "$OUT")"
else
	t_fail "-V: rc=$RC $(cat "$OUT" "$ERR")"
fi
t_run help "${MKFS[@]}" --help
if [ "$RC" = 0 ] && grep -q -- "--tar=" "$OUT"; then
	t_pass "--help names --tar= (containerd)"
else
	t_fail "--help has no --tar="
fi

# --offset=N: the image after N bytes, which are kept
printf 'KEEPME' >"$TMP/off.img"
t_run offset2 "${MKFS[@]}" -q --offset=65536 "$TMP/off.img" "$TREE"
dd if="$TMP/off.img" of="$TMP/off-plain.img" bs=65536 skip=1 2>/dev/null
if [ "$RC" = 0 ] && [ "$(head -c 6 "$TMP/off.img")" = KEEPME ]; then
	t_pass "--offset: the bytes before the image are kept"
	check offset "$TMP/off-plain.img"
else
	t_fail "--offset: rc=$RC $(head -c 300 "$ERR")"
fi

# --- refused: one line naming the option, exit 2 ---
refused metabox "-m" -m 1000
refused zD "--zD" --zD=2
refused blobdev "--blobdev" --blobdev=/dev/null
refused lz4-dict "dictsize" -z lz4hc,dictsize=65536
refused lzma-dict "dictsize" -z lzma,dictsize=100
refused fragdedupe "fragdedupe" -E fragdedupe=sometimes
refused ovlfs "--ovlfs-strip" --ovlfs-strip=2

# --- Android ---
cat >"$TMP/fs_config" <<'EOF'
 0 0 755
system/bin 0 2000 751
system/bin/sh 0 2000 4750 capabilities=0x1000001000
system/bin/toybox 0 2000 755 capabilities=0x0
system/bin/ls 0 0 777
system/etc 1000 1000 700
system/etc/init 0 0 755
system/etc/init/a.rc 0 0 644
system/etc/zeros 0 0 600
system/etc/empty 0 0 600
system/lib 0 0 755
system/lib/sub 0 0 750
system/lib/sub/sh.link 0 2000 4750 capabilities=0x1000001000
system/lib/libc.so 0 0 644
EOF
# the labels of the Android trees (shared with mkfs-compat.sh and android-out.sh)
cp "$SRC/tests/assets/android/file_contexts" "$TMP/file_contexts"
printf '4096 .*\\.rc$\n' >"$TMP/hints"

# The kernel's view the fs_config and labels ask for (capabilities as the
# 20-byte vfs_cap_data, revision 2, effective; labels without a NUL).
android_expect() { # MANIFEST FCFILE OUT [label]
	python3 - "$@" <<'EOF'
import json, re, struct, sys
src, fcfile, out = sys.argv[1:4]
labels = len(sys.argv) > 4
fs = {}
for l in open(fcfile):
    if not l.strip():
        continue
    f = l.split()
    key = "" if l[0] == " " else f.pop(0)
    caps = 0
    for x in f[3:]:
        caps = int(x.split("=")[1], 0)
    fs[key] = (int(f[0]), int(f[1]), int(f[2], 8), caps)
want = {
    "": "system_file", "bin": "system_file", "bin/sh": "shell_exec",
    "bin/toybox": "toolbox_exec", "bin/ls": "system_file",
    "etc": "system_etc_file", "etc/init": "system_etc_file",
    "etc/init/a.rc": "system_etc_file", "etc/zeros": "system_etc_file",
    "etc/empty": "system_etc_file", "lib": "system_file",
    "lib/sub": "system_lib_file", "lib/sub/sh.link": "shell_exec",
    "lib/libc.so": "system_file",
}
with open(out, "w") as o:
    for line in open(src):
        e = json.loads(line)
        p = "" if e["path"] == "." else e["path"]
        key = "system/" + p if p else ""
        uid, gid, mode, caps = fs[key]
        # a hard link carries its first path's metadata
        if e.get("link"):
            uid, gid, mode, caps = fs["system/" + e["link"]]
        e["uid"], e["gid"], e["mode"] = uid, gid, oct(mode)
        x = {}
        if caps:
            x["security.capability"] = struct.pack(
                "<5I", 0x02000001, caps & 0xffffffff, 0,
                caps >> 32, 0).hex()
        if labels:
            x["security.selinux"] = ("u:object_r:%s:s0" % want[p]).encode().hex()
        if x:
            e["xattrs"] = x
        elif "xattrs" in e:
            del e["xattrs"]
        o.write(json.dumps(e) + "\n")
EOF
}

HAVE_SE=0
if "${MKFS[@]}" -q --file-contexts "$TMP/file_contexts" "$TMP/se-probe.img" \
	"$TREE" 2>"$TMP/se.err"; then
	HAVE_SE=1
elif grep -q "without libselinux" "$TMP/se.err"; then
	echo "SKIP: --file-contexts: $(head -1 "$TMP/se.err")"
else
	t_fail "--file-contexts: $(head -1 "$TMP/se.err")"
fi

line android-fsc -q -z lz4hc --compress-hints "$TMP/hints" -b 4096 \
	--mount-point system --product-out "$TMP" \
	--fs-config-file "$TMP/fs_config" -T 1700000000 -U "$UUID" \
	--block-list-file "$TMP/blocks.map" -C 262144 @IMG @SRC &&
	{
		android_expect "$TMP/src.json" "$TMP/fs_config" "$TMP/afsc.json"
		t_check_image android-fsc "$TMP/android-fsc.img" "$TMP/afsc.json" \
			--no-times
	}

if [ "$HAVE_SE" = 1 ]; then
	android_expect "$TMP/src.json" "$TMP/fs_config" "$TMP/ase.json" label
	line android -q -z lz4hc --compress-hints "$TMP/hints" -b 4096 \
		--mount-point system --product-out "$TMP" \
		--fs-config-file "$TMP/fs_config" \
		--file-contexts "$TMP/file_contexts" -T 1700000000 -U "$UUID" \
		--block-list-file "$TMP/blocks.map" -C 262144 @IMG @SRC &&
		t_check_image android "$TMP/android.img" "$TMP/ase.json" --no-times
	line android-chunk -q -z lz4hc --compress-hints "$TMP/hints" -b 4096 \
		--mount-point system --fs-config-file "$TMP/fs_config" \
		--file-contexts "$TMP/file_contexts" -T 0 -U "$UUID" \
		--chunksize 4096 @IMG @SRC &&
		t_check_image android-chunk "$TMP/android-chunk.img" \
			"$TMP/ase.json" --no-times
	line android-legacy -q -z lz4hc -E legacy-compress -b 4096 \
		--mount-point system --fs-config-file "$TMP/fs_config" \
		--file-contexts "$TMP/file_contexts" -T 0 -U "$UUID" \
		-C 262144 @IMG @SRC &&
		t_check_image android-legacy "$TMP/android-legacy.img" \
			"$TMP/ase.json" --no-times
	if command -v sefcontext_compile >/dev/null; then
		sefcontext_compile -o "$TMP/file_contexts.bin" "$TMP/file_contexts"
		line vendor -q -z lz4hc,9 --compress-hints "$TMP/hints" -b 4096 \
			--mount-point system --fs-config-file "$TMP/fs_config" \
			--file-contexts "$TMP/file_contexts.bin" -T 0 -U "$UUID" \
			-E dedupe,ztailpacking @IMG @SRC &&
			t_check_image vendor "$TMP/vendor.img" "$TMP/ase.json" \
				--no-times
	else
		echo "SKIP: compiled file_contexts (no sefcontext_compile)"
	fi
	# libselinux's own lookups agree with the labels expected above
	if /usr/bin/python3 -c 'import selinux' 2>/dev/null; then
		/usr/bin/python3 - "$TMP/file_contexts" "$TMP/ase.json" <<'EOF' >"$TMP/pysel.out"
import json, selinux, sys
o = selinux.selinux_opt()
o.type, o.value = selinux.SELABEL_OPT_PATH, sys.argv[1]
h = selinux.selabel_open(selinux.SELABEL_CTX_FILE, o, 1)
m = {"f": 0o100000, "d": 0o40000, "l": 0o120000}
bad = 0
for line in open(sys.argv[2]):
    e = json.loads(line)
    p = "/system" + ("" if e["path"] == "." else "/" + e["path"])
    if e.get("link"):
        continue
    rc, ctx = selinux.selabel_lookup(h, p, m[e["type"]])
    if ctx.encode().hex() != e["xattrs"]["security.selinux"]:
        print("differs:", p, ctx)
        bad = 1
print("same" if not bad else "differ")
EOF
		if grep -qx same "$TMP/pysel.out"; then
			t_pass "labels as libselinux's selabel_lookup gives them"
		else
			t_fail "labels: $(head -3 "$TMP/pysel.out")"
		fi
	else
		echo "SKIP: python3-selinux: labels checked against the table only"
	fi
	if [ "$KMOUNT" = 1 ] && command -v getcap >/dev/null &&
	   t_kmount "$TMP/android.img" "$TMP/amnt"; then
		c=$(getcap "$TMP/amnt/bin/sh" | awk '{ print $2 }')
		l=$(getfattr --only-values -n security.selinux \
			"$TMP/amnt/bin/sh" 2>/dev/null)
		t_kumount "$TMP/amnt"
		if [ "$c" = "cap_net_admin,cap_block_suspend=ep" ] &&
		   [ "$l" = u:object_r:shell_exec:s0 ]; then
			t_pass "getcap and getfattr on the mount: $c, $l"
		else
			t_fail "getcap '$c', label '$l'"
		fi
	fi
fi

# --block-list-file: "/MOUNTPOINT/path RANGE..." where the data is
if [ -s "$TMP/blocks.map" ] && grep -q '^/system/bin/toybox [0-9]' "$TMP/blocks.map"; then
	t_pass "--block-list-file written (compressed)"
else
	t_fail "--block-list-file: $(head -3 "$TMP/blocks.map" 2>&1)"
fi
line blist -q --mount-point system --block-list-file "$TMP/plain.map" \
	@IMG @SRC
r=$(awk '$1 == "/system/bin/toybox" { print $2 }' "$TMP/plain.map")
s=${r%-*} e=${r#*-}
n=$(( $(stat -c %s "$TREE/bin/toybox") / 4096 ))
if [ -n "$r" ] && [ $((e - s + 1)) -ge "$n" ] &&
   cmp -s <(dd if="$TMP/blist.img" bs=4096 skip="$s" count="$n" 2>/dev/null) \
	  <(head -c $((n * 4096)) "$TREE/bin/toybox"); then
	t_pass "--block-list-file: bin/toybox's blocks $r hold its data"
else
	t_fail "--block-list-file: bin/toybox at '$r': $(head -3 "$TMP/plain.map")"
fi

# A path the fs_config lacks: one line naming it, exit 1; or kept
grep -v '^system/etc/empty ' "$TMP/fs_config" >"$TMP/fs_config.short"
t_run missing "${MKFS[@]}" -q --mount-point system \
	--fs-config-file "$TMP/fs_config.short" "$TMP/m.img" "$TREE"
if [ "$RC" = 1 ] && grep -q "system/etc/empty" "$ERR" && [ ! -e "$TMP/m.img" ]; then
	t_pass "fs_config without a path: error naming it"
else
	t_fail "fs_config without a path: rc=$RC $(head -c 300 "$ERR")"
fi
# An empty fs_config: every path kept as it is (no lines to sort)
: >"$TMP/fs_config.none"
t_run nofsc "${MKFS[@]}" -q --mount-point system \
	--fs-config-file "$TMP/fs_config.none" --fs-config-missing=keep \
	"$TMP/nofsc.img" "$TREE"
t_check "an empty fs_config, --fs-config-missing=keep: built" 0
line keep -q --mount-point system --fs-config-file "$TMP/fs_config.short" \
	--fs-config-missing=keep @IMG @SRC &&
	{
		python3 - "$TMP/afsc.json" "$TMP/src.json" >"$TMP/keep.json" <<'EOF'
import json, sys
src = {json.loads(l)["path"]: json.loads(l) for l in open(sys.argv[2])}
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e["path"] == "etc/empty":
        e = src[e["path"]]
    print(json.dumps(e))
EOF
		t_check_image keep "$TMP/keep.img" "$TMP/keep.json" --no-times
	}

# whiteouts_ok WHAT IMG MNT: the kernel shows d/gone as a 0:0 whiteout and
# o/ as an opaque directory holding only "new"
whiteouts_ok() {
	local w o n
	if ! t_kmount "$2" "$3"; then
		t_fail "$1: the kernel does not mount $2"
		return
	fi
	w=$(stat -c '%F %t:%T %u:%g' "$3/d/gone" 2>&1)
	o=$(getfattr --only-values -n trusted.overlay.opaque "$3/o" 2>/dev/null)
	n=$(ls -A "$3/o" | tr '\n' ' ')
	t_kumount "$3"
	if [ "$w" = "character special file 0:0 0:0" ] && [ "$o" = y ] &&
	   [ "$n" = "new " ]; then
		t_pass "$1: whiteout and opaque directory"
	else
		t_fail "$1: whiteout '$w', opaque '$o', o/ holds '$n'"
	fi
}

# --- containers: aufs whiteouts, --ovlfs-strip ---
CT=$TMP/layer
mkdir -p "$CT/d" "$CT/o"
echo keep >"$CT/d/f"
: >"$CT/d/.wh.gone"
: >"$CT/o/.wh..wh..opq"
echo x >"$CT/o/new"
t_run aufs "${MKFS[@]}" -q --aufs "$TMP/aufs.img" "$CT"
if [ "$RC" = 0 ]; then
	t_pass "aufs: mkfs"
	"$EZFS" fsck "$TMP/aufs.img" >/dev/null 2>&1 && t_pass "aufs: ezfs fsck" ||
		t_fail "aufs: ezfs fsck"
	[ "$KMOUNT" = 1 ] && whiteouts_ok aufs "$TMP/aufs.img" "$TMP/cmnt"
	t_run strip "${MKFS[@]}" -q --aufs --ovlfs-strip=1 "$TMP/strip.img" "$CT"
	if [ "$KMOUNT" = 1 ] && [ "$RC" = 0 ] &&
	   t_kmount "$TMP/strip.img" "$TMP/smnt"; then
		n=$(ls -A "$TMP/smnt/d" | tr '\n' ' ')
		o=$(getfattr -n trusted.overlay.opaque "$TMP/smnt/o" 2>/dev/null)
		t_kumount "$TMP/smnt"
		if [ "$n" = "f " ] && [ -z "$o" ]; then
			t_pass "--ovlfs-strip: no whiteouts, no overlay xattrs"
		else
			t_fail "--ovlfs-strip: d/ holds '$n', opaque '$o'"
		fi
	fi
else
	t_fail "aufs: mkfs rc=$RC $(head -c 300 "$ERR")"
fi
# containerd's differs: the layer tar on stdin, --tar=f with its options;
# the walking differ on a directory; --ovlfs-strip=1 on a tar
tar -C "$CT" -cf "$TMP/layer.tar" .
ctd() { # NAME STDIN ARGS...: mkfs.erofs ARGS <STDIN, ezfs fsck, whiteouts
	local name=$1 in=$2
	shift 2
	rm -f "$TMP/$name.img"
	RC=0
	"${MKFS[@]}" "$@" <"$in" >"$TMP/$name.out" 2>"$TMP/$name.err" || RC=$?
	if [ "$RC" != 0 ] || [ -s "$TMP/$name.out" ]; then
		t_fail "$name: mkfs rc=$RC (or output with --quiet): $(head -c 300 "$TMP/$name.err" "$TMP/$name.out")"
		return 1
	fi
	if "$EZFS" fsck "$TMP/$name.img" >/dev/null 2>&1; then
		t_pass "$name: mkfs and ezfs fsck"
	else
		t_fail "$name: ezfs fsck"
		return 1
	fi
	peer_fsck "$name" "$TMP/$name.img"
}
ctd ctd "$TMP/layer.tar" --tar=f --aufs --quiet -Enoinline_data -b4096 \
	-U "$UUID" -T0 --mkfs-time --sort=none "$TMP/ctd.img" &&
	[ "$KMOUNT" = 1 ] && whiteouts_ok containerd "$TMP/ctd.img" "$TMP/tmnt"
# the walking differ reads an overlayfs upper directory: whiteouts are
# 0:0 character devices and opaque directories carry the xattr already
UP=$TMP/upper
mkdir -p "$UP/d" "$UP/o"
echo keep >"$UP/d/f"
echo x >"$UP/o/new"
if mknod "$UP/d/gone" c 0 0 2>/dev/null &&
   setfattr -n trusted.overlay.opaque -v y "$UP/o" 2>/dev/null; then
	ctd walk /dev/null --quiet -Enoinline_data "$TMP/walk.img" "$UP" &&
		[ "$KMOUNT" = 1 ] &&
		whiteouts_ok "walking differ" "$TMP/walk.img" "$TMP/wmnt"
else
	echo "SKIP: walking differ: mknod or trusted.* xattrs need root"
fi
if ctd tstrip "$TMP/layer.tar" --tar=f --aufs --ovlfs-strip=1 --quiet \
	"$TMP/tstrip.img" && [ "$KMOUNT" = 1 ] &&
   t_kmount "$TMP/tstrip.img" "$TMP/tsmnt"; then
	n=$(ls -A "$TMP/tsmnt/d" | tr '\n' ' ')
	o=$(getfattr -n trusted.overlay.opaque "$TMP/tsmnt/o" 2>/dev/null)
	t_kumount "$TMP/tsmnt"
	if [ "$n" = "f " ] && [ -z "$o" ]; then
		t_pass "tar --ovlfs-strip=1: no whiteouts, no overlay xattrs"
	else
		t_fail "tar --ovlfs-strip=1: d/ holds '$n', opaque '$o'"
	fi
fi
# -T0 --mkfs-time: the build time is 0, the files keep the tar's mtimes
if [ -s "$TMP/ctd.img" ]; then
	bt=$(od -An -tu8 -j $((1024 + 24)) -N8 "$TMP/ctd.img" | tr -d ' ')
	t_run ctdls "$EZFS" ls -l "$TMP/ctd.img" /d
	if [ "$RC" = 0 ] && [ "$bt" = 0 ] && grep -q " f$" "$OUT" &&
	   ! grep " f$" "$OUT" | grep -q "1970-01-01"; then
		t_pass "containerd -T0 --mkfs-time: build time 0, files keep mtimes"
	else
		t_fail "containerd -T0 --mkfs-time: build time '$bt': $(head -c 300 "$OUT" "$ERR")"
	fi
fi

t_done
