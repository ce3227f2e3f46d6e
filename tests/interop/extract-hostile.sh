#!/bin/bash
# SPDX-License-Identifier: MIT
# extract-hostile.sh - `ezfs extract` never writes outside its target:
#  - names in a crafted image: "..", ".", "/", "a/b", a name longer than
#    255 bytes, and a symlink pointing out of the target (relative and
#    absolute) followed by a directory of the same name with a file in it;
#    each is refused with exit 1 and one line naming the entry;
#  - symlinks already at the destination (to a file and to folders outside)
#    are replaced with --force, never written through;
#  - device nodes extracted by a user other than root are skipped with a
#    warning (as root: through setpriv to nobody);
#  - an I/O error reading one file's data from the image (LD_PRELOAD shim,
#    $EZFS_FAULTSHIM) fails that file only: cat and fsck of the others;
#    short reads from the image change nothing.
# Images are made by ezfs mkfs from placeholder names, then the names are
# rewritten in the directory blocks (tests/corrupt/erofs_img.py finds them)
# and the superblock checksum is fixed.
set -u
. "$(dirname "$0")/../lib.sh"
t_init
t_need_cmd python3
MKFS_OPTS=(-q --no-fsync -T 0 -U 01234567-89ab-cdef-0123-456789abcdef)

# craft IMG OLD:NEW...: rename entries OLD to NEW in place (same length);
# "*:+" makes the last name of a full directory block run to the block end.
craft() {
	local img=$1
	shift
	python3 - "$SRC/tests/corrupt" "$img" "$@" <<'EOF'
import struct, sys
sys.path.insert(0, sys.argv[1])
import erofs_img
img, args = sys.argv[2], [a.encode().split(b":", 1) for a in sys.argv[3:]]
d = bytearray(open(img, "rb").read())
im = erofs_img.Image(bytes(d))
bs, count = im.blksz, {}
for s, e in im.regions["dir"]:
    for c in range(s, e, bs):
        clen = min(bs, e - c)
        n = struct.unpack_from("<H", d, c + 8)[0] // 12
        offs = [struct.unpack_from("<H", d, c + 12 * i + 8)[0] for i in range(n)]
        for i, no in enumerate(offs):
            end = offs[i + 1] if i + 1 < n else clen
            name = bytes(d[c + no:c + end]).split(b"\0")[0]
            for old, new in args:
                if old not in (name, b"*") or count.get(old):
                    continue
                if new == b"+":
                    if i + 1 != n or clen != bs:
                        continue
                    d[c + no:c + bs] = b"L" * (bs - no)
                else:
                    d[c + no:c + no + len(new)] = new
                count[old] = 1
for old, new in args:
    if not count.get(old):
        sys.exit("craft: no entry %r to rewrite" % old)
erofs_img.fix_sb_checksum(d)
open(img, "wb").write(d)
EOF
}

# sandbox: $sb/canary, $sb/l1/canary, $sb/l1/l2/canary; target $sb/l1/l2/out
sb=$TMP/sb
sandbox() {
	rm -rf "$sb"
	mkdir -p "$sb/l1/l2"
	for d in "$sb" "$sb/l1" "$sb/l1/l2"; do echo canary >"$d/canary"; done
	dest=$sb/l1/l2/out
}
# outside_untouched WHAT: only the canaries (and out) above the target
outside_untouched() {
	local got
	got=$(cd "$sb" && find . -path ./l1/l2/out -prune -o -print | LC_ALL=C sort | tr '\n' ' ')
	if [ "$got" = ". ./canary ./l1 ./l1/canary ./l1/l2 ./l1/l2/canary ./l1/l2/out " ] ||
	   [ "$got" = ". ./canary ./l1 ./l1/canary ./l1/l2 ./l1/l2/canary " ]; then
		t_pass "$1: nothing written outside the target"
	else
		t_fail "$1: outside the target: $got"
	fi
	if [ -e "$TMP/outside" ] || [ -e /tmp/ezfs-hostile-abs ]; then
		t_fail "$1: written through a symlink"
		rm -rf "$TMP/outside" /tmp/ezfs-hostile-abs
	fi
}

# --- names ---
tree=$TMP/names
mkdir -p "$tree/d1/@@" "$tree/d2" "$tree/d3" "$tree/d4/a=b" "$tree/d5/lnl" \
	"$tree/d6/abt" "$tree/long"
echo x >"$tree/d1/@@/escaped"
echo x >"$tree/d2/%"
echo x >"$tree/d3/#"
echo x >"$tree/d4/a=b/escaped"
echo x >"$tree/d5/lnl/pwned"
ln -s ../../../../../outside "$tree/d5/lnk"
echo x >"$tree/d6/abt/pwned"
ln -s /tmp/ezfs-hostile-abs "$tree/d6/abs"
# 255-byte names (the most allowed), enough to fill a directory block
for i in $(seq 10 29); do
	n=$(printf "n%02d%0252d" "$i" 0)
	mkdir "$tree/long/$n"
	echo x >"$tree/long/$n/f"
done
"$EZFS" mkfs "${MKFS_OPTS[@]}" "$TMP/names.img" "$tree" || t_fail "mkfs of the names tree"

sandbox
t_run base "$EZFS" extract -q "$TMP/names.img" "$dest"
t_expect "the image before crafting extracts (255-byte names included)" [ "$RC" = 0 ]
outside_untouched "uncrafted image"

# name_case WHAT OLD:NEW PATTERN [LINES [FORCE_RC]]: exit 1 with LINES
# (default 1) lines of error, the last matching PATTERN; with --force the
# exit status FORCE_RC (a regex, default 1).
name_case() {
	local what=$1 sub=$2 pat=$3 lines=${4:-1} frc=${5:-1}
	cp "$TMP/names.img" "$TMP/x.img"
	if ! craft "$TMP/x.img" "$sub"; then
		t_fail "$what: could not craft the image"
		return
	fi
	sandbox
	t_run "x" "$EZFS" extract -q "$TMP/x.img" "$dest"
	if [ "$RC" = 1 ] && [ "$(wc -l <"$ERR")" = "$lines" ] &&
	   tail -n 1 "$ERR" | grep -qE -- "$pat"; then
		t_pass "$what: refused, exit 1, $lines line(s)"
	else
		t_fail "$what: rc=$RC, stderr: $(head -c 300 "$ERR")"
	fi
	outside_untouched "$what"
	# --force into a non-empty target goes the same way
	sandbox
	mkdir -p "$dest/d1" "$dest/d5"
	echo mine >"$dest/d1/escaped"
	t_run "xf" "$EZFS" extract -q --force "$TMP/x.img" "$dest"
	if [[ "$RC" =~ ^($frc)$ ]]; then
		t_pass "$what, --force: exit $RC"
	else
		t_fail "$what, --force: exit $RC, expected $frc: $(head -c 300 "$ERR")"
	fi
	outside_untouched "$what, --force"
}
name_case "entry named '..'" '@@:..' "d1: invalid entry name '\.\.'"
name_case "entry named '.'" '%:.' "d2: invalid entry name '\.'"
name_case "entry named '/'" '#:/' "d3: invalid entry name '/'"
name_case "entry named 'a/b'" 'a=b:a/b' "d4: invalid entry name 'a/b'"
# a corrupt directory: one line, the command's with the library's reason
name_case "name longer than 255 bytes" '*:+' "long: .*corrupt image: nid [0-9]+: bogus directory entry name" 1
# --force replaces the symlink by the folder, inside the target
name_case "symlink out of the target, then a folder of its name" 'lnl:lnk' \
	"d5/lnk: .*(File exists|duplicate|corrupt)" 1 "0|1"
name_case "absolute symlink, then a folder of its name" 'abt:abs' \
	"d6/abs: .*(File exists|duplicate|corrupt)" 1 "0|1"

# --- symlinks already at the destination ---
tree=$TMP/plain
mkdir -p "$tree/docs/notes" "$tree/sub"
echo guide >"$tree/docs/guide.md"
echo todo >"$tree/docs/notes/todo.txt"
echo hello >"$tree/hello.txt"
echo deep >"$tree/sub/f"
"$EZFS" mkfs "${MKFS_OPTS[@]}" "$TMP/plain.img" "$tree" || t_fail "mkfs of the plain tree"
victims() {
	mkdir -p "$sb/vdir" "$sb/vdir2"
	echo canary >"$sb/vdir/canary"
	echo canary >"$sb/vfile"
	mkdir -p "$dest"
	ln -s "$sb/vdir" "$dest/docs"
	ln -s ../../../vdir2 "$dest/sub"
	ln -s "$sb/vfile" "$dest/hello.txt"
}
victims_untouched() {
	local got
	got=$(cd "$sb" && find vdir vdir2 vfile | LC_ALL=C sort | tr '\n' ' ')
	if [ "$got" = "vdir vdir/canary vdir2 vfile " ] &&
	   [ "$(cat "$sb/vfile")" = canary ] && [ "$(cat "$sb/vdir/canary")" = canary ]; then
		t_pass "$1: the symlinks' targets are untouched"
	else
		t_fail "$1: the symlinks' targets changed: $got / $(head -c 100 "$sb/vfile")"
	fi
}
sandbox
victims
t_run pre "$EZFS" extract -q "$TMP/plain.img" "$dest"
t_expect "symlinks at the destination, no --force: refused (exit 1)" [ "$RC" = 1 ]
victims_untouched "no --force"
links_left() { [ -L "$dest/docs" ] && [ -L "$dest/hello.txt" ]; }
t_expect "no --force: the symlinks are left alone" links_left
sandbox
victims
t_run pref "$EZFS" extract -q --force "$TMP/plain.img" "$dest"
t_expect "symlinks at the destination, --force: exit 0" [ "$RC" = 0 ]
victims_untouched "--force"
t_expect "--force: the symlinks are replaced by the image's entries" \
	diff -r -q --no-dereference "$tree" "$dest"

# --- read errors from the image: only the file hit fails ---
SHIM=${EZFS_FAULTSHIM:-}
if [ ! -f "$SHIM" ]; then
	echo "skip: read errors: no fault shim (\$EZFS_FAULTSHIM)"
else
	tree=$TMP/rd
	mkdir -p "$tree"
	for f in a b c; do head -c 20000 /dev/urandom >"$tree/$f"; done
	"$EZFS" mkfs "${MKFS_OPTS[@]}" -E noinline_data "$TMP/rd.img" "$tree" ||
		t_fail "mkfs of the read-error tree"
	# the offset of /b's data (random bytes: found once) + one block
	off=$(python3 -c 'import sys; print(open(sys.argv[1], "rb").read().find(open(sys.argv[2], "rb").read(4096)) + 4096)' \
		"$TMP/rd.img" "$tree/b")
	eio() {
		LD_PRELOAD=$SHIM EZFS_FAULT=eio EZFS_FAULT_PATH=/rd.img \
			EZFS_FAULT_RANGE=$off,1 "$@"
	}
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
	t_run rd-cat eio "$EZFS" cat "$TMP/rd.img" /b
	if [ "$RC" = 1 ] && [ ! -s "$OUT" ] && tail -n 1 "$ERR" | grep -q '/b: .*Input/output error'; then
		t_pass "read error: cat of the file hit: exit 1, EIO, no bytes"
	else
		t_fail "read error: cat /b: rc=$RC, $(wc -c <"$OUT") bytes, $(head -c 300 "$ERR")"
	fi
	t_run rd-cat2 eio "$EZFS" cat "$TMP/rd.img" /c
	c_ok() { [ "$RC" = 0 ] && cmp -s "$OUT" "$tree/c"; }
	t_expect "read error: another file reads right" c_ok
	t_run rd-fsck eio "$EZFS" fsck "$TMP/rd.img"
	if [ "$RC" = 1 ] && grep -q '(/b): .*Input/output error' "$ERR" &&
	   [ "$(grep -c 'Input/output error' "$ERR")" -le 2 ]; then
		t_pass "read error: fsck names the file hit, and only it"
	else
		t_fail "read error: fsck rc=$RC: $(head -c 300 "$ERR")"
	fi
	sandbox
	t_run rd-x eio "$EZFS" extract -q "$TMP/rd.img" "$dest"
	if [ "$RC" = 1 ] && grep -q '/b: .*Input/output error' "$ERR" &&
	   tail -n 1 "$ERR" | grep -q '1 file not extracted' &&
	   [ ! -e "$dest/b" ] && cmp -s "$tree/a" "$dest/a" &&
	   cmp -s "$tree/c" "$dest/c"; then
		t_pass "read error: extract exits 1 naming the file, leaves no partial file, extracts the others"
	else
		t_fail "read error: extract rc=$RC: $(head -c 300 "$ERR")"
	fi
	outside_untouched "read error"
	# short reads (half of each request) are only slower
	sandbox
	t_run rd-short env LD_PRELOAD="$SHIM" EZFS_FAULT=short EZFS_FAULT_PATH=/rd.img \
		"$EZFS" extract -q "$TMP/rd.img" "$dest"
	short_ok() { [ "$RC" = 0 ] && diff -r -q "$tree" "$dest" >/dev/null; }
	t_expect "short reads from the image: extract still right" short_ok
fi

# --- device nodes, extracted by another user than root ---
if ! t_is_root; then
	echo "skip: device nodes: needs root to make an image holding them"
elif ! command -v setpriv >/dev/null || ! id nobody >/dev/null 2>&1; then
	echo "skip: device nodes: no setpriv or no user nobody to extract as"
else
	tree=$TMP/dev
	mkdir -p "$tree"
	echo x >"$tree/file"
	mknod "$tree/cdev" c 1 3
	mknod "$tree/bdev" b 7 0
	mkfifo "$tree/fifo"
	"$EZFS" mkfs "${MKFS_OPTS[@]}" "$TMP/dev.img" "$tree" || t_fail "mkfs of the device tree"
	chmod 755 "$TMP"
	sandbox
	chmod -R a+rwX "$sb"
	t_run dev setpriv --reuid="$(id -u nobody)" --regid="$(id -g nobody)" --clear-groups \
		"$EZFS" extract -q "$TMP/dev.img" "$dest"
	chmod 700 "$TMP"
	if [ "$RC" = 0 ] && [ "$(grep -c 'device node skipped' "$ERR")" = 2 ] &&
	   [ "$(wc -l <"$ERR")" = 2 ]; then
		t_pass "device nodes as nobody: skipped with one warning each, exit 0"
	else
		t_fail "device nodes as nobody: rc=$RC, stderr: $(head -c 300 "$ERR")"
	fi
	no_dev() { [ ! -e "$dest/cdev" ] && [ ! -e "$dest/bdev" ] && [ -p "$dest/fifo" ] && [ -f "$dest/file" ]; }
	t_expect "device nodes as nobody: no device node made, the rest extracted" no_dev
	outside_untouched "device nodes as nobody"
fi

t_done
