#!/bin/bash
# SPDX-License-Identifier: MIT
# What ezfs writes for Android and for archives (docs/android.md):
#  (a) simg2img of `ezfs mkfs --sparse` is byte for byte the plain image;
#  (b) an image with labels and capabilities, extracted with --android by
#      a non-root user and rebuilt from the sidecars with the ezfs mkfs
#      line written beside them, shows the kernel the same tree;
#  (c) `ezfs export | ezfs mkfs --tar=f` gives every fixture's tree (but
#      its sockets, which no tar holds); GNU tar lists and extracts the
#      archive; the other formats and compressions are listed by bsdtar;
#  (d) on a fixture with three damaged pclusters, extract and export
#      --keep-going name exactly those three files, write everything else
#      exactly and exit 1; without it export leaves no file;
#  (e) ezfs mount SUPER:NAME.
#
# usage: tests/interop/android-out.sh [FIXTURE...]   (default: every one)
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
t_init
t_need_fixtures
t_fixture_names "$@"
AIMG="$SRC/tests/interop/android-img.py"
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)

KMOUNT=0
if t_can_kmount; then
	KMOUNT=1
else
	echo "SKIP: kernel mount checks (no root, loop device or erofs module)"
fi
HAVE_EXPORT=1
if "$EZFS" export --help 2>&1 | grep -q "without libarchive"; then
	HAVE_EXPORT=0
	echo "SKIP: ezfs export checks (ezfs built without libarchive)"
fi

# view NAME IMG OUT: the tree of IMG as the kernel shows it (else as ezfs
# extract writes it, as root) into OUT; false when neither can be had.
view() {
	if [ "$KMOUNT" = 1 ]; then
		t_kmount "$2" "$TMP/v.mnt" || {
			echo "  the kernel refused $2"
			return 1
		}
		t_manifest "$TMP/v.mnt" >"$3"
		t_kumount "$TMP/v.mnt"
		return 0
	fi
	t_is_root || return 1
	rm -rf "$TMP/v.x"
	"$EZFS" extract -q "$2" "$TMP/v.x" || return 1
	t_manifest "$TMP/v.x" >"$3"
	rm -rf "$TMP/v.x"
}

# drop_paths IN OUT [PATH...]: the manifest without those paths, nor
# sockets (with SOCK=1)
drop_paths() {
	python3 - "$@" <<'EOF'
import json, os, sys
src, out, drop = sys.argv[1], sys.argv[2], set(sys.argv[3:])
with open(out, "w") as o:
    for line in open(src):
        e = json.loads(line)
        if e["path"] in drop:
            continue
        if os.environ.get("SOCK") == "1" and e["type"] == "s":
            continue
        o.write(line)
EOF
}

# --- (a) sparse ---------------------------------------------------------
if command -v simg2img >/dev/null; then
	mkdir -p "$TMP/sp/src/d"
	head -c 300000 /dev/urandom >"$TMP/sp/src/rand"
	truncate -s 2M "$TMP/sp/src/zeros"
	printf 'text\n%.0s' $(seq 2000) >"$TMP/sp/src/d/text"
	for opts in "" "-z lz4hc -C 65536" "-z zstd -E ztailpacking" "-b 1024 -z lz4" "-b 512"; do
		# shellcheck disable=SC2086
		if "$EZFS" mkfs -q $opts -T 1700000000 -U 5f9b0e5c-1d2e-4f3a-9b8c-7d6e5f4a3b2c \
			"$TMP/sp/plain.img" "$TMP/sp/src" &&
			"$EZFS" mkfs -q --sparse $opts -T 1700000000 \
				-U 5f9b0e5c-1d2e-4f3a-9b8c-7d6e5f4a3b2c "$TMP/sp/s.img" "$TMP/sp/src" &&
			simg2img "$TMP/sp/s.img" "$TMP/sp/back.img" &&
			cmp -s "$TMP/sp/plain.img" "$TMP/sp/back.img"; then
			t_pass "mkfs --sparse ${opts:-(defaults)}: simg2img gives the plain image"
		else
			t_fail "mkfs --sparse ${opts:-(defaults)}: simg2img does not give the plain image"
		fi
		magic=$(od -An -tx4 -N4 "$TMP/sp/s.img" | tr -d ' ')
		t_expect "mkfs --sparse ${opts:-(defaults)}: a sparse image (magic $magic)" \
			[ "$magic" = ed26ff3a ]
	done
	# the 2 MiB of zeros are DONT_CARE: the sparse file is smaller
	t_expect "mkfs --sparse: zero blocks are not stored" \
		[ "$(stat -c %s "$TMP/sp/s.img")" -lt "$(stat -c %s "$TMP/sp/plain.img")" ]
	t_run sparse-ls "$EZFS" ls "$TMP/sp/s.img" /d
	t_check "ezfs reads its own sparse image" 0 stdout '^text$'
	t_run sparse-off "$EZFS" mkfs -q --sparse --offset 4096 "$TMP/sp/o.img" "$TMP/sp/src"
	t_check "mkfs --sparse --offset: a usage error" 2 stderr 'sparse'
else
	echo "SKIP: (a) simg2img is not installed (android-sdk-libsparse-utils)"
fi

# --- (b) Android round trip as non-root ---------------------------------
android_tree() {
	local s=$1
	mkdir -p "$s/bin" "$s/etc/init" "$s/lib/sub"
	printf 'shell\n' >"$s/bin/sh"
	printf 'toybox\n' >"$s/bin/toybox"
	ln -s toybox "$s/bin/ls"
	printf 'on boot\n' >"$s/etc/init/a.rc"
	# words in random order: compressible, but not so much that the
	# largest pcluster stays below -C
	python3 -c 'import random
random.seed(7)
w = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
print(" ".join(random.choice(w) + str(random.randrange(99)) for _ in range(60000)))' >"$s/lib/libc.so"
	ln "$s/bin/sh" "$s/lib/sub/sh.link"
	printf 'x\n' >"$s/etc/a+b[1].conf"
	touch -h -d @1600000000 "$s/bin/ls" "$s/bin/sh" "$s/etc/init/a.rc"
}
cat >"$TMP/fs_config" <<'EOF'
 0 0 755
system/bin 0 2000 751
system/bin/sh 0 2000 4750 capabilities=0x1000001000
system/bin/toybox 0 2000 755 capabilities=0x20
system/bin/ls 0 2000 777
system/etc 1000 1000 755
system/etc/init 0 0 755
system/etc/init/a.rc 0 0 644
system/etc/a+b[1].conf 0 0 600
system/lib 0 0 755
system/lib/sub 0 0 750
system/lib/sub/sh.link 0 2000 4750 capabilities=0x1000001000
system/lib/libc.so 0 0 644
EOF
# the labels of the Android trees (shared with mkfs-compat.sh and android-out.sh)
cp "$SRC/tests/assets/android/file_contexts" "$TMP/file_contexts"
android_tree "$TMP/asrc"
if ! "$EZFS" mkfs -q -z lz4hc -C 65536 -E ztailpacking -T 1700000000 --mkfs-time \
	-U 0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d --mount-point system \
	--fs-config-file "$TMP/fs_config" --file-contexts "$TMP/file_contexts" \
	"$TMP/system.img" "$TMP/asrc" 2>"$TMP/amkfs.err"; then
	if grep -q "without libselinux" "$TMP/amkfs.err"; then
		echo "SKIP: (b) $(head -1 "$TMP/amkfs.err")"
	else
		t_fail "(b) mkfs of the labelled image: $(head -c 300 "$TMP/amkfs.err")"
	fi
elif ! t_is_root; then
	echo "SKIP: (b) needs root to become another user and to mount"
else
	mkdir -p "$TMP/nr"
	cp "$TMP/system.img" "$TMP/nr/system.img"
	chown -R 65534:65534 "$TMP/nr"
	chmod 755 "$TMP"
	(cd "$TMP/nr" && "${NOBODY[@]}" "$EZFS" extract -q --android system.img out) \
		>"$TMP/ax.out" 2>"$TMP/ax.err"
	RC=$?
	if [ "$RC" = 0 ] && [ -f "$TMP/nr/out.fs_config" ] &&
		[ -f "$TMP/nr/out.file_contexts" ] && [ -f "$TMP/nr/out.mkfs" ]; then
		t_pass "(b) extract --android as non-root: out/, out.fs_config, out.file_contexts, out.mkfs"
	else
		t_fail "(b) extract --android as non-root: rc=$RC $(head -c 300 "$TMP/ax.err")"
	fi
	t_expect "(b) fs_config: the root as an empty path" grep -qx ' 0 0 0755' "$TMP/nr/out.fs_config"
	t_expect "(b) fs_config: capabilities decoded" \
		grep -qx 'system/bin/sh 0 2000 4750 capabilities=0x1000001000' "$TMP/nr/out.fs_config"
	t_expect "(b) file_contexts: the root line and escaped paths" \
		grep -qxF '/system/etc/a\+b\[1\]\.conf u:object_r:system_etc_file:s0' "$TMP/nr/out.file_contexts"
	t_expect "(b) file_contexts: the root's label" \
		grep -qx '/system u:object_r:system_file:s0' "$TMP/nr/out.file_contexts"
	line=$(cat "$TMP/nr/out.mkfs")
	case $line in
	"ezfs mkfs "*"-z lz4 "*"-C 65536 "*"-T 1700000000 "*"-U 0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d "*"ztailpacking"*"--mount-point system "*"--fs-config-file out.fs_config "*"--file-contexts out.file_contexts out.img out")
		t_pass "(b) out.mkfs: $line" ;;
	*) t_fail "(b) out.mkfs: $line" ;;
	esac
	(cd "$TMP/nr" && "${NOBODY[@]}" bash -c "${line/#ezfs/\"\$0\"} -q" "$EZFS") \
		>"$TMP/ar.out" 2>"$TMP/ar.err"
	t_expect "(b) the out.mkfs line rebuilds the image as non-root: $(head -c 200 "$TMP/ar.err")" \
		[ -s "$TMP/nr/out.img" ]
	if [ "$KMOUNT" = 1 ]; then
		view a "$TMP/system.img" "$TMP/a1.json" && view b "$TMP/nr/out.img" "$TMP/a2.json" &&
			t_same_manifest "(b) the kernel's view of the rebuilt image (labels, capabilities, owners, modes, contents, times)" \
				"$TMP/a1.json" "$TMP/a2.json"
		t_expect "(b) the view holds labels and capabilities" \
			grep -q 'security.capability.*security.selinux' "$TMP/a1.json"
	fi
	# the same with the options named one by one
	(cd "$TMP/nr" && "${NOBODY[@]}" "$EZFS" extract -q --fs-config fc2 \
		--file-contexts fx2 --mount-point /system system.img out2) 2>"$TMP/ax2.err"
	t_expect "(b) --fs-config/--file-contexts/--mount-point: the same lines" \
		cmp -s "$TMP/nr/fc2" "$TMP/nr/out.fs_config"
	t_expect "(b) ... and file_contexts" cmp -s "$TMP/nr/fx2" "$TMP/nr/out.file_contexts"
	t_run ax3 "$EZFS" extract -q --fs-config /nonexistent/dir/f "$TMP/system.img" "$TMP/ax3"
	t_check "(b) an unwritable --fs-config: one line naming it" 1 stderr '/nonexistent/dir/f'
fi

# --- (c) export ---------------------------------------------------------
if [ "$HAVE_EXPORT" = 1 ]; then
	for n in "${names[@]}"; do
		t_fixture_unpack "$n" || continue
		"$EZFS" export -q "$img" >"$TMP/c.tar" 2>"$TMP/c.err"
		rc=$?
		[ "$rc" = 0 ] || { t_fail "(c) $n: export rc=$rc $(head -c 300 "$TMP/c.err")"; continue; }
		if ! "$EZFS" mkfs -q --tar=f "$TMP/c.img" <"$TMP/c.tar" 2>"$TMP/cm.err"; then
			t_fail "(c) $n: mkfs --tar=f of the export: $(head -c 300 "$TMP/cm.err")"
			continue
		fi
		SOCK=1 drop_paths "$want" "$TMP/cwant.json"
		if view "$n" "$TMP/c.img" "$TMP/c.json"; then
			t_same_manifest "(c) $n: export | mkfs --tar=f: the same tree (sockets aside)" \
				"$TMP/cwant.json" "$TMP/c.json"
		else
			t_run cf "$EZFS" fsck "$TMP/c.img"
			t_check "(c) $n: export | mkfs --tar=f: fsck (no view here)" 0
		fi
		rm -f "$img" "$TMP/c.img"
	done
	# GNU tar lists and (as root, xattrs included) extracts it
	n=${names[0]}
	t_fixture_unpack "$n"
	"$EZFS" export -q -o "$TMP/g.tar" "$img"
	"$EZFS" export -q "$img" >"$TMP/g2.tar"
	t_expect "(c) -o FILE and stdout: the same archive" cmp -s "$TMP/g.tar" "$TMP/g2.tar"
	SOCK=1 drop_paths "$want" "$TMP/gwant.json"
	t_run gtl tar -tf "$TMP/g.tar"
	t_expect "(c) GNU tar lists every entry but the sockets" \
		[ "$RC" = 0 ] && [ "$(grep -c . "$OUT")" = "$(grep -c . "$TMP/gwant.json")" ]
	if t_is_root; then
		mkdir -p "$TMP/gx"
		tar --xattrs --xattrs-include='*' -xpf "$TMP/g.tar" -C "$TMP/gx" 2>"$TMP/gx.err"
		t_manifest "$TMP/gx" >"$TMP/gx.json"
		t_same_manifest "(c) GNU tar --xattrs extracts the fixture's tree" "$TMP/gwant.json" "$TMP/gx.json"
		rm -rf "$TMP/gx"
	fi
	if command -v bsdtar >/dev/null; then
		for f in "pax" "gnu" "cpio" "pax --compress=gzip" "gnu -J" "cpio --compress=zstd" "pax -z" "zip"; do
			# shellcheck disable=SC2086
			"$EZFS" export -q --format=$f "$img" >"$TMP/f.arc" 2>"$TMP/f.err"
			rc=$?
			cnt=$(bsdtar -tf "$TMP/f.arc" 2>/dev/null | grep -c .)
			case $f in
			zip) exp=$(python3 -c 'import json,sys
print(sum(1 for l in open(sys.argv[1]) if json.loads(l)["type"] in "dfl" and json.loads(l)["path"] != "."))' "$want") ;;
			*) exp=$(grep -c . "$TMP/gwant.json") ;;
			esac
			ok=0
			[ "$rc" = 0 ] && [ "$cnt" = "$exp" ] && ok=1
			t_expect "(c) --format=$f: bsdtar lists $cnt of $exp entries (rc=$rc)" [ "$ok" = 1 ]
		done
		# the contents of a compressed cpio are the image's
		"$EZFS" export -q --format=cpio -J "$img" big >"$TMP/f.arc" &&
			mkdir -p "$TMP/fx" && bsdtar -xf "$TMP/f.arc" -C "$TMP/fx" &&
			"$EZFS" cat "$img" /big/text_3m >"$TMP/fx.want" 2>/dev/null
		if [ -f "$TMP/fx.want" ] && [ -f "$TMP/fx/text_3m" ]; then
			t_expect "(c) cpio -J of a subtree: the file's bytes" cmp -s "$TMP/fx.want" "$TMP/fx/text_3m"
		fi
	else
		echo "SKIP: (c) other formats: bsdtar is not installed (libarchive-tools)"
	fi
	t_run fbad "$EZFS" export --format=shar "$img"
	t_check "(c) an unknown format: a usage error" 2 stderr 'shar'
	rm -f "$img"
fi

# --- (d) --keep-going on three damaged pclusters --------------------------
dmg=lz4-4k
if [ -f "$SHARED/fixtures/$dmg.img.zst" ]; then
	t_fixture_unpack $dmg
	files=(big/text_3m big/mixed_2m sizes/text_131072)
	ok=1
	for f in "${files[@]}"; do
		# the first compressed extent of each: 0xff bytes over its pcluster
		read -r pa plen < <("$EZFS" stat -e "$img" "/$f" 2>/dev/null |
			awk '$NF ~ /encoded/ && $2 ~ /^[0-9]+$/ { print $2, $3; exit }')
		if [ -z "${pa:-}" ]; then
			ok=0
			t_fail "(d) no compressed extent in /$f"
			continue
		fi
		head -c "$plen" /dev/zero | tr '\0' '\377' |
			dd of="$img" bs=1 seek="$pa" conv=notrunc status=none
	done
	if [ $ok = 1 ]; then
		printf '%s\n' "${files[@]}" | sort >"$TMP/d.want"
		drop_paths "$want" "$TMP/dwant.json" "${files[@]}"
		if t_is_root; then
			t_run dx "$EZFS" extract -q --keep-going --errors "$TMP/d.list" "$img" "$TMP/dx"
			t_check "(d) extract --keep-going: exit 1, a summary line" 1 stderr 'damaged'
			sort "$TMP/d.list" >"$TMP/d.got"
			t_expect "(d) extract --errors: exactly the three files" cmp -s "$TMP/d.want" "$TMP/d.got"
			t_manifest "$TMP/dx" >"$TMP/dx.json"
			t_same_manifest "(d) extract --keep-going: everything else exact" "$TMP/dwant.json" "$TMP/dx.json"
			for f in "${files[@]}"; do
				t_expect "(d) extract: /$f named on stderr" grep -qF "$f" "$ERR"
			done
		fi
		if [ "$HAVE_EXPORT" = 1 ]; then
			"$EZFS" export -q --keep-going --errors "$TMP/e.list" "$img" >"$TMP/e.tar" 2>"$TMP/e.err"
			rc=$?
			t_expect "(d) export --keep-going: exit 1 (rc=$rc)" [ "$rc" = 1 ]
			sort "$TMP/e.list" >"$TMP/e.got"
			t_expect "(d) export --errors: exactly the three files" cmp -s "$TMP/d.want" "$TMP/e.got"
			SOCK=1 drop_paths "$want" "$TMP/ewant.json" "${files[@]}"
			if "$EZFS" mkfs -q --tar=f "$TMP/e.img" <"$TMP/e.tar" &&
				view e "$TMP/e.img" "$TMP/e.json"; then
				t_same_manifest "(d) export --keep-going: everything else exact" "$TMP/ewant.json" "$TMP/e.json"
			fi
			t_run en "$EZFS" export -o "$TMP/en.tar" "$img"
			t_check "(d) export without --keep-going: exit 1 at the first" 1 stderr 'text_3m|mixed_2m|text_131072'
			t_expect "(d) ... and no partial archive" [ ! -e "$TMP/en.tar" ]
			t_expect "(d) ... nor its temporary file" [ -z "$(ls "$TMP" | grep '^en\.tar')" ]
		fi
	fi
	# a damaged block of a directory: the directory is named once, the
	# entries of its other blocks and everything outside come out
	t_fixture_unpack $dmg
	read -r pa plen < <("$EZFS" stat -e "$img" /manydir 2>/dev/null |
		awk '$NF == "mapped" && $2 ~ /^[0-9]+$/ { print $2, $3; exit }')
	total=$("$EZFS" ls "$img" /manydir 2>/dev/null | grep -c .)
	if [ -n "${pa:-}" ] && [ "$plen" -gt 4096 ] && t_is_root; then
		head -c 64 /dev/zero | tr '\0' '\377' |
			dd of="$img" bs=1 seek="$pa" conv=notrunc status=none
		t_run dd "$EZFS" extract -q --keep-going --errors "$TMP/dd.list" "$img" "$TMP/ddx"
		t_check "(d) a damaged directory block: exit 1" 1 stderr 'manydir'
		t_expect "(d) ... --errors names the directory alone" [ "$(cat "$TMP/dd.list")" = manydir ]
		got=$(find "$TMP/ddx/manydir" -mindepth 1 -maxdepth 1 | grep -c .)
		t_expect "(d) ... the entries of its other blocks come out ($got of $total)" \
			[ "$got" -gt 0 ] && [ "$got" -lt "$total" ]
		t_manifest "$TMP/ddx" | grep -v '"path": "manydir' >"$TMP/ddx.json"
		grep -v '"path": "manydir' "$want" >"$TMP/ddw.json"
		t_same_manifest "(d) ... everything outside it exact" "$TMP/ddw.json" "$TMP/ddx.json"
		if [ "$HAVE_EXPORT" = 1 ]; then
			"$EZFS" export -q --keep-going --errors "$TMP/de.list" "$img" >"$TMP/de.tar" 2>/dev/null
			rc=$?
			n=$(tar -tf "$TMP/de.tar" 2>/dev/null | grep -c '^manydir/.')
			t_expect "(d) export --keep-going of it: rc=$rc, the directory named, $n of $total entries" \
				[ "$rc" = 1 ] && [ "$(cat "$TMP/de.list")" = manydir ] && [ "$n" = "$got" ]
		fi
	fi
	rm -f "$img"
else
	echo "SKIP: (d) no fixture $dmg"
fi

# --- (e) ezfs mount SUPER:NAME --------------------------------------------
if t_is_root && [ -c /dev/fuse ] && "$EZFS" mount --help >/dev/null 2>&1 &&
	! "$EZFS" mount --help 2>&1 | grep -q "without FUSE"; then
	t_fixture_unpack plain && a=$img wa=$want
	if python3 "$AIMG" super "$TMP/super.img" system_a="$a" >/dev/null; then
		rm -f "$a"
		MP=$TMP/smnt
		pushd "$TMP" >/dev/null || exit 1
		t_fuse_start super.img:system_a "$TMP/fuse.log"
		started=$?
		popd >/dev/null || exit 1
		if [ "$started" = 0 ]; then
			t_manifest "$MP" >"$TMP/s.json"
			t_same_manifest "(e) ezfs mount super.img:system_a (a relative SUPER:NAME)" "$wa" "$TMP/s.json"
			"$EZFS" umount "$MP"
		else
			t_fail "(e) ezfs mount super.img:system_a: $(head -c 300 "$TMP/fuse.log")"
		fi
		t_run sbad "$EZFS" mount "$TMP/super.img:nope" "$MP"
		t_check "(e) a missing partition: one line naming it" 1 stderr "no partition 'nope'"
		t_run snf "$EZFS" mount "$TMP/nofile.img:system_a" "$MP"
		t_check "(e) SUPER:NAME without SUPER: no such file" 1 stderr 'nofile.img:system_a: No such file'
	fi
else
	echo "SKIP: (e) mount SUPER:NAME needs root, /dev/fuse and an ezfs with FUSE"
fi

t_done
