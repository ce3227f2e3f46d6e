#!/bin/bash
# SPDX-License-Identifier: MIT
# ezfs mkfs --tar: a make_tree.py tree packed by GNU tar (pax with xattrs,
# gnu with long names) and by Python's tarfile (LIBARCHIVE.xattr, pax
# mtimes), plain, gzip and xz, from a file and from standard input, built
# with lz4hc, zstd or no compression. Each image passes ezfs fsck and its
# ezfs extract (and kernel mount, where possible) shows the source tree.
# Then the tar semantics (later members replace earlier ones, missing
# parents, hard links) and hostile archives (truncated, bad checksum,
# '..' names, garbage, empty): exit 1, one line naming the input, no image.
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
t_init
t_need_make_tree
t_need_cmd tar gzip xz cmp

python3 "$MKTREE" 11 "$TMP/src" --small >/dev/null || exit 1
# tar cannot hold sockets
t_manifest "$TMP/src" | grep -v '"type": "s"' >"$TMP/full.json"
# GNU format: seconds only, no xattrs
python3 - "$TMP/full.json" >"$TMP/gnu.json" <<'EOF'
import json, sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    e.pop("xattrs", None)
    e.pop("mtime_ns", None)
    print(json.dumps(e, sort_keys=True))
EOF

(cd "$TMP/src" && tar --xattrs --xattrs-include='*' --format=pax \
	--numeric-owner -cf "$TMP/pax.tar" . 2>/dev/null)
(cd "$TMP/src" && tar --format=gnu --numeric-owner -cf "$TMP/gnu.tar" . \
	2>/dev/null)
gzip -1 -c "$TMP/pax.tar" >"$TMP/pax.tgz"
xz -0 -T1 -c "$TMP/pax.tar" >"$TMP/pax.txz"
# Python's tarfile: xattrs as LIBARCHIVE.xattr (base64), ns mtimes
python3 - "$TMP/src" "$TMP/py.tar" <<'EOF'
import base64, os, sys, tarfile, urllib.parse
src, out = sys.argv[1], sys.argv[2]
with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as t:
    for d, dirs, files in os.walk(src):
        dirs.sort()
        names = ([None] if d == src else []) + sorted(dirs + files)
        for n in names:
            p = d if n is None else os.path.join(d, n)
            arc = os.path.relpath(p, src)
            ti = t.gettarinfo(p, arc)
            if ti is None:
                continue        # socket
            st = os.lstat(p)
            ti.mtime = st.st_mtime_ns // 10**9
            ph = {"mtime": "%d.%09d" % divmod(st.st_mtime_ns, 10**9)}
            for x in os.listxattr(p, follow_symlinks=False):
                v = os.getxattr(p, x, follow_symlinks=False)
                ph["LIBARCHIVE.xattr." + urllib.parse.quote(x)] = \
                    base64.b64encode(v).decode()
            ti.pax_headers = ph
            if ti.isreg():
                with open(p, "rb") as f:
                    t.addfile(ti, f)
            else:
                t.addfile(ti)
EOF

# check NAME IMG EXPECTED_MANIFEST
check() {
	local name=$1 img=$2 want=$3 opts=()

	[ "$want" = "$TMP/gnu.json" ] && opts=(--no-times)
	t_run fsck "$EZFS" fsck -q "$img"
	[ "$RC" = 0 ] && t_pass "$name: ezfs fsck" ||
		t_fail "$name: ezfs fsck rc=$RC: $(head -c 300 "$ERR")"
	rm -rf "$TMP/x"
	t_run extract "$EZFS" extract -q "$img" "$TMP/x"
	if [ "$RC" = 0 ]; then
		if [ "$want" = "$TMP/gnu.json" ]; then
			python3 - "$TMP/x" "$SHARED" >"$TMP/x.json" <<'EOF'
import json, subprocess, sys
o = subprocess.run(["python3", sys.argv[2] + "/tools/manifest.py",
                    sys.argv[1]], capture_output=True, text=True).stdout
for l in o.splitlines():
    e = json.loads(l)
    e.pop("xattrs", None)
    e.pop("mtime_ns", None)
    print(json.dumps(e, sort_keys=True))
EOF
		else
			t_manifest "$TMP/x" >"$TMP/x.json"
		fi
		t_same_manifest "$name: ezfs extract" "$want" "$TMP/x.json"
	else
		t_fail "$name: ezfs extract rc=$RC: $(head -c 300 "$ERR")"
	fi
	rm -rf "$TMP/x"
}

kcheck() {
	[ "$KMOUNT" = 1 ] || return 0
	if t_kmount "$2" "$TMP/mnt"; then
		t_manifest "$TMP/mnt" >"$TMP/k.json"
		t_kumount "$TMP/mnt"
		t_same_manifest "$1: kernel mount" "$TMP/full.json" "$TMP/k.json"
	else
		t_fail "$1: kernel refused to mount"
	fi
}

fixed=(-T 1700000000 --mkfs-time -U 0b5e0b5e-0000-4000-8000-000000000001)

# build NAME INPUT(file, or "<file" / "|file" for stdin) MKFS_OPTS...
build() {
	local name=$1 in=$2 img=$TMP/$1.img
	shift 2
	rm -f "$img"
	case $in in
	'<'*) "$EZFS" mkfs -q --tar "$@" "$img" <"${in#<}" 2>"$TMP/err" ;;
	'|'*) cat "${in#|}" | "$EZFS" mkfs -q --tar "$@" "$img" - 2>"$TMP/err" ;;
	*) "$EZFS" mkfs -q --tar "$@" "$img" "$in" 2>"$TMP/err" ;;
	esac
	RC=$?
	[ "$RC" = 0 ] || t_fail "$name: mkfs rc=$RC: $(head -c 300 "$TMP/err")"
	return "$RC"
}

build pax-lz4hc "$TMP/pax.tar" -z lz4hc "${fixed[@]}" &&
	check "pax tar, lz4hc" "$TMP/pax-lz4hc.img" "$TMP/full.json"
kcheck "pax tar, lz4hc" "$TMP/pax-lz4hc.img"
# the same archive through a pipe (spooled), gzip and xz: the same image
build pipe-lz4hc "|$TMP/pax.tar" -z lz4hc "${fixed[@]}" --workers=1
build gz-lz4hc "$TMP/pax.tgz" -z lz4hc "${fixed[@]}" --workers=2
build xz-lz4hc "<$TMP/pax.txz" -z lz4hc "${fixed[@]}"
build redir-lz4hc "<$TMP/pax.tar" -z lz4hc "${fixed[@]}"
for v in pipe gz xz redir; do
	t_expect "$v lz4hc image = plain file image (any source, any workers)" \
		cmp -s "$TMP/pax-lz4hc.img" "$TMP/$v-lz4hc.img"
done
build gzpipe-zstd "|$TMP/pax.tgz" -z zstd -E ztailpacking &&
	check "gzip tar on stdin, zstd" "$TMP/gzpipe-zstd.img" "$TMP/full.json"
kcheck "gzip tar on stdin, zstd" "$TMP/gzpipe-zstd.img"
build frag "|$TMP/pax.tar" -z lz4hc -E fragments,dedupe &&
	check "pax tar on stdin, lz4hc fragments+dedupe" "$TMP/frag.img" \
		"$TMP/full.json"
# --compress-hints see member paths as a directory scan shows them
printf '4096 1 ^sizes/text_\n' >"$TMP/hints"
build hints "$TMP/pax.tar" -z lz4hc:lzma --compress-hints="$TMP/hints" &&
	t_expect "--compress-hints match member paths" \
		sh -c "'$EZFS' stat -e '$TMP/hints.img' /sizes/text_65536 | grep -q ' lzma '"
build xz-plain "$TMP/pax.txz" &&
	check "xz tar, uncompressed" "$TMP/xz-plain.img" "$TMP/full.json"
build gnu-lz4hc "$TMP/gnu.tar" -z lz4hc &&
	check "gnu tar (long names), lz4hc" "$TMP/gnu-lz4hc.img" "$TMP/gnu.json"
build py-zstd "<$TMP/py.tar" -z zstd &&
	check "python tarfile (LIBARCHIVE.xattr), zstd" "$TMP/py-zstd.img" \
		"$TMP/full.json"

# ---- semantics, on small archives written by Python ----
python3 - "$TMP" <<'EOF'
import io, sys, tarfile
tmp = sys.argv[1]
def add(t, name, data=None, **kw):
    ti = tarfile.TarInfo(name)
    for k, v in kw.items():
        setattr(ti, k, v)
    if data is not None:
        ti.size = len(data)
        t.addfile(ti, io.BytesIO(data))
    else:
        t.addfile(ti)
with tarfile.open(tmp + "/sem.tar", "w", format=tarfile.PAX_FORMAT) as t:
    add(t, "a/b/c.txt", b"old", mtime=5000)          # parents missing
    add(t, "a/b/c.txt", b"new contents", mtime=6000) # replaces
    add(t, "a/link", type=tarfile.LNKTYPE, linkname="a/b/c.txt", mtime=1)
    add(t, "d", type=tarfile.DIRTYPE, mode=0o700, mtime=7000)
    add(t, "d/x", b"x", mtime=1)
    add(t, "d", b"now a file", mtime=8000)           # dir -> file
    add(t, "/abs/./f", b"abs", mtime=1)              # leading / dropped
def bad(out, **kw):
    with tarfile.open(tmp + "/" + out + ".tar", "w",
                      format=tarfile.PAX_FORMAT) as t:
        add(t, "ok", b"fine", mtime=1)
        add(t, **kw)
bad("dotdot", name="x/../../etc/passwd", data=b"evil")
bad("hardlink-missing", name="h", type=tarfile.LNKTYPE, linkname="nope")
bad("under-file", name="ok/child", data=b"c")
EOF
build sem "$TMP/sem.tar" -T 4242 --mkfs-time
rm -rf "$TMP/x"
if "$EZFS" extract -q "$TMP/sem.img" "$TMP/x"; then
	t_expect "later member replaces an earlier one" \
		test "$(cat "$TMP/x/a/b/c.txt")" = "new contents"
	t_expect "hard link shares the inode" \
		test "$(stat -c %i "$TMP/x/a/link")" = "$(stat -c %i "$TMP/x/a/b/c.txt")"
	t_expect "missing parent: 0755, root, -T mtime" \
		test "$(stat -c '%a %u %g %Y' "$TMP/x/a/b")" = "755 0 0 4242"
	t_expect "directory replaced by a file" \
		test "$(cat "$TMP/x/d")" = "now a file"
	t_expect "leading / dropped" test "$(cat "$TMP/x/abs/f")" = "abs"
else
	t_fail "semantics archive: extract failed"
fi
t_run fsck "$EZFS" fsck -q "$TMP/sem.img"
[ "$RC" = 0 ] && t_pass "semantics archive: fsck" || t_fail "semantics archive: fsck"

# ---- hostile inputs: exit 1, one line naming the input, no image ----
cp "$TMP/pax.tar" "$TMP/badsum.tar"
printf 'Z' | dd of="$TMP/badsum.tar" bs=1 seek=$((512 * 3 + 10)) conv=notrunc 2>/dev/null
head -c 1000000 "$TMP/pax.tar" >"$TMP/trunc.tar"
head -c 300000 "$TMP/pax.txz" >"$TMP/trunc.txz"
head -c 1536 "$TMP/pax.tar" >"$TMP/trunc-hdr.tar"
head -c 100000 /dev/urandom >"$TMP/garbage.tar"
: >"$TMP/empty.tar"
printf '\x1f\x8bgarbage-after-gzip-magic' >"$TMP/badgz.tar"
for h in badsum trunc trunc.txz trunc-hdr garbage empty badgz dotdot \
	hardlink-missing under-file; do
	f=$TMP/$h.tar
	[ -f "$f" ] || f=$TMP/$h
	[ -f "$f" ] || { t_fail "$h: no input made"; continue; }
	img=$TMP/hostile.img
	rm -f "$img"
	t_run hostile "$EZFS" mkfs -q --tar "$img" "$f"
	if [ "$RC" = 1 ] && [ "$(wc -l <"$ERR")" = 1 ] &&
		grep -qF "$f" "$ERR" && [ ! -e "$img" ] &&
		[ -z "$(find "$TMP" -maxdepth 1 -name '.hostile.img*')" ]; then
		t_pass "$h: refused ($(cut -c1-160 "$ERR"))"
	else
		t_fail "$h: rc=$RC, image left: $([ -e "$img" ] && echo yes || echo no), stderr: $(head -c 300 "$ERR")"
	fi
done
# from stdin the message names "stdin"
t_run hostile "$EZFS" mkfs -q --tar "$TMP/hostile.img" - <"$TMP/trunc.tar"
[ "$RC" = 1 ] && grep -q '^ezfs mkfs: stdin: ' "$ERR" && [ ! -e "$TMP/hostile.img" ] &&
	t_pass "truncated on stdin: refused" ||
	t_fail "truncated on stdin: rc=$RC $(head -c 300 "$ERR")"
# --tar=headerball is refused as a usage error (--tar=i: mkfs-tarindex.sh)
t_run usage "$EZFS" mkfs --tar=headerball "$TMP/u.img" "$TMP/pax.tar"
[ "$RC" = 2 ] && grep -q "not supported" "$ERR" && [ ! -e "$TMP/u.img" ] &&
	t_pass "--tar=headerball: not supported" ||
	t_fail "--tar=headerball: rc=$RC $(head -c 200 "$ERR")"
build ungzip "$TMP/pax.tgz" --ungzip "${fixed[@]}" -z lz4hc &&
	t_expect "--ungzip accepted" cmp -s "$TMP/pax-lz4hc.img" "$TMP/ungzip.img"

t_done
