#!/bin/bash
# SPDX-License-Identifier: MIT
# What extract, export and mkfs --tar do with holes, sizes and names
# (docs/extract.md), checked with GNU tar, bsdtar, simg2simg and Python's
# zipfile:
#  (a) extract writes holes where the image has holes or whole blocks of
#      zeros, --no-sparse writes every byte;
#  (b) a split sparse set given as simg2img takes it (NAME.0 NAME.1 ...);
#  (c) fsck.erofs --extract into a non-empty directory names --overwrite;
#  (d) mkfs --tar=f reads every compression export writes (gzip, xz,
#      zstd) and lzma, told by their first bytes, from a file or a pipe;
#  (e) sparse files: export writes pax sparse members (GNU tar and bsdtar
#      read them back), mkfs --tar=f reads GNU, oldgnu and pax sparse
#      members (0.0, 0.1, 1.0), a 5 GiB file taking no 5 GiB anywhere;
#  (f) cpio refuses a file of 4 GiB or more before writing anything;
#  (g) one line per export says what the format could not hold;
#  (h) zip stores UTF-8 names with the UTF-8 flag.
# Files of gigabytes are sparse files here: nothing writes their zeros.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
t_init
BIN=$(dirname "$EZFS")

# kib FILE: the KiB a file takes on disk
kib() { du -k "$1" | cut -f1; }
# all CMD -- CMD ...: every command succeeds (for one t_expect)
all() {
	local c=()
	while [ $# -gt 0 ]; do
		if [ "$1" = -- ]; then
			"${c[@]}" || return 1
			c=()
		else
			c+=("$1")
		fi
		shift
	done
	"${c[@]}"
}

# --- (a) holes on extraction --------------------------------------------
mkdir -p "$TMP/h"
python3 - "$TMP/h" <<'EOF'
import os, sys
d = sys.argv[1]
# one data byte in 1 MiB; data, 3 MiB of zeros, data
with open(os.path.join(d, "one"), "wb") as f:
    f.truncate(1 << 20)
    f.seek(300000)
    f.write(b"x")
with open(os.path.join(d, "mid"), "wb") as f:
    f.write(os.urandom(70000))
    f.write(bytes(3 << 20))
    f.write(b"tail" * 1000)
EOF
for z in "" "-z lz4" "-z zstd" "--chunksize 65536"; do
	# shellcheck disable=SC2086
	"$EZFS" mkfs -q $z "$TMP/h.img" "$TMP/h" || { t_fail "(a) mkfs $z"; continue; }
	rm -rf "$TMP/hx" "$TMP/hy"
	t_run hx "$EZFS" extract -q "$TMP/h.img" "$TMP/hx"
	t_check "(a) mkfs ${z:-(plain)}: extract" 0
	t_expect "(a) ${z:-plain}: one byte in 1 MiB takes $(kib "$TMP/hx/one") KiB (at most 8)" \
		[ "$(kib "$TMP/hx/one")" -le 8 ]
	t_expect "(a) ${z:-plain}: 3 MiB of zeros between data: $(kib "$TMP/hx/mid") KiB (under 200)" \
		[ "$(kib "$TMP/hx/mid")" -lt 200 ]
	t_expect "(a) ${z:-plain}: the same bytes" cmp -s "$TMP/h/mid" "$TMP/hx/mid"
	t_expect "(a) ${z:-plain}: the same bytes (one)" cmp -s "$TMP/h/one" "$TMP/hx/one"
	t_run hy "$EZFS" extract -q --no-sparse "$TMP/h.img" "$TMP/hy"
	t_expect "(a) ${z:-plain}: --no-sparse writes every block ($(kib "$TMP/hy/one") KiB)" \
		all [ "$RC" = 0 ] -- [ "$(kib "$TMP/hy/one")" -ge 1024 ] -- \
		cmp -s "$TMP/h/one" "$TMP/hy/one"
done

# --- (b) a split sparse set as simg2img takes it --------------------------
if command -v simg2simg >/dev/null && command -v img2simg >/dev/null; then
	mkdir -p "$TMP/s"
	for i in $(seq 1 40); do
		head -c $((i * 9000)) /dev/urandom >"$TMP/s/f$i"
	done
	"$EZFS" mkfs -q "$TMP/s.img" "$TMP/s"
	img2simg "$TMP/s.img" "$TMP/s.simg"
	simg2simg "$TMP/s.simg" "$TMP/s.img_sparsechunk" 300000
	set -- "$TMP"/s.img_sparsechunk.*
	n=$#
	t_expect "(b) simg2simg made a split set ($n files)" [ "$n" -ge 3 ]
	rm -rf "$TMP/sx"
	# the shell's order: .10 before .2 where there are ten
	t_run sx "$EZFS" extract -q "$@" "$TMP/sx"
	t_check "(b) extract NAME.0 NAME.1 ... DIR" 0
	t_expect "(b) ... the tree" diff -r "$TMP/s" "$TMP/sx"
	rm -rf "$TMP/sx"
	t_run sx "$EZFS" extract -q "$TMP/s.img_sparsechunk.0" "$TMP/sx" /f7
	t_expect "(b) NAME.0 alone, with a PATH" all [ "$RC" = 0 ] -- cmp -s "$TMP/s/f7" "$TMP/sx/f7"
	rm -rf "$TMP/sx"
	t_run sx "$EZFS" extract -q "$TMP/s.img_sparsechunk.0" "$TMP/s.img_sparsechunk.1" "$TMP/sx"
	t_check "(b) a set cut short: a usage error naming the next file" 2 \
		stderr "s\.img_sparsechunk\.2 exists too"
	t_expect "(b) ... nothing extracted" [ ! -e "$TMP/sx" ]
	t_run sx "$EZFS" extract -q "$TMP/s.img_sparsechunk.0" "$TMP/s.img_sparsechunk.2" \
		"$TMP/s.img_sparsechunk.2" "$TMP/sx"
	t_check "(b) a file given twice: a usage error" 2 stderr "given twice"
else
	echo "SKIP: (b) img2simg/simg2simg (android-sdk-libsparse-utils; scripts/deps.sh installs it)"
fi

# --- (c) fsck.erofs --extract into a non-empty directory ------------------
mkdir -p "$TMP/full"
echo x >"$TMP/full/there"
t_run cf "$BIN/fsck.erofs" --extract="$TMP/full" "$TMP/h.img"
t_check "(c) fsck.erofs --extract into a non-empty directory: --overwrite named" 1 \
	stderr "^fsck\.erofs: .*full: directory not empty \(use --overwrite\)"
if grep -qE -- "--force|ezfs extract" "$ERR"; then
	t_fail "(c) ... no --force, no 'ezfs extract': $(head -c 300 "$ERR")"
else
	t_pass "(c) ... no --force, no 'ezfs extract'"
fi
t_run cf "$BIN/fsck.erofs" --extract="$TMP/full" --overwrite "$TMP/h.img"
t_check "(c) ... --overwrite does it" 0

# --- (d) compressed tar input --------------------------------------------
mkdir -p "$TMP/t/d"
head -c 300000 /dev/urandom >"$TMP/t/d/rand"
seq 1 50000 >"$TMP/t/text"
ln -s d/rand "$TMP/t/sym"
"$EZFS" mkfs -q "$TMP/t.img" "$TMP/t"
"$EZFS" ls -lR "$TMP/t.img" / >"$TMP/t.want" 2>&1
HAVE_EXPORT=1
"$EZFS" export --help 2>&1 | grep -q "without libarchive" && HAVE_EXPORT=0
for z in gzip xz zstd; do
	[ "$HAVE_EXPORT" = 1 ] || break
	"$EZFS" export -q --compress=$z -o "$TMP/t.$z" "$TMP/t.img"
	t_run tz "$EZFS" mkfs -q --tar=f "$TMP/tz.img" "$TMP/t.$z"
	"$EZFS" ls -lR "$TMP/tz.img" / >"$TMP/tz.got" 2>&1
	t_expect "(d) export --compress=$z | mkfs --tar=f: the same tree" \
		all [ "$RC" = 0 ] -- cmp -s "$TMP/t.want" "$TMP/tz.got"
	t_run tp sh -c "cat '$TMP/t.$z' | '$EZFS' mkfs -q --tar=f '$TMP/tp.img'"
	t_expect "(d) ... $z from a pipe" [ "$RC" = 0 ]
done
tar -C "$TMP/t" -cf "$TMP/t.tar" .
for c in "gzip -c" "xz -c" "xz --format=lzma -c" "zstd -q -c"; do
	command -v "${c%% *}" >/dev/null || continue
	$c "$TMP/t.tar" >"$TMP/t.z"
	t_run tz "$EZFS" mkfs -q --tar=f "$TMP/tz.img" "$TMP/t.z"
	t_check "(d) GNU tar | $c | mkfs --tar=f" 0
	t_run tf "$EZFS" fsck -q "$TMP/tz.img"
	t_check "(d) ... fsck" 0
done
if command -v zstd >/dev/null; then
	zstd -q -c "$TMP/t.tar" | head -c 20000 >"$TMP/t.cut"
	t_run tc "$EZFS" mkfs -q --tar=f "$TMP/tc.img" "$TMP/t.cut"
	t_check "(d) a cut zstd archive: one line, exit 1" 1 stderr "truncated zstd data"
	t_expect "(d) ... no image left" [ ! -e "$TMP/tc.img" ]
fi

# --- (e) sparse files out and in ----------------------------------------
if [ "$HAVE_EXPORT" = 1 ]; then
	mkdir -p "$TMP/sp"
	# 5 GiB with 4 bytes at each end: a sparse file, never written whole
	truncate -s 5G "$TMP/sp/big"
	printf head | dd of="$TMP/sp/big" conv=notrunc status=none
	printf tail | dd of="$TMP/sp/big" bs=1 seek=$((5 * 1024 * 1024 * 1024 - 4)) \
		conv=notrunc status=none
	"$EZFS" mkfs -q --chunksize 1048576 "$TMP/sp.img" "$TMP/sp"
	t_run se "$EZFS" export -q -o "$TMP/sp.tar" "$TMP/sp.img"
	t_expect "(e) export of a 5 GiB sparse file: exit 0, $(stat -c %s "$TMP/sp.tar") bytes (under 1 MiB)" \
		all [ "$RC" = 0 ] -- [ "$(stat -c %s "$TMP/sp.tar")" -lt 1048576 ]
	t_expect "(e) ... a pax sparse member (GNU.sparse records)" grep -aq "GNU.sparse.realsize=5368709120" "$TMP/sp.tar"
	t_run sl tar -tvf "$TMP/sp.tar"
	t_check "(e) GNU tar lists it at 5 GiB" 0 stdout " 5368709120 .* big$"
	if command -v bsdtar >/dev/null; then
		t_run sb bsdtar -tvf "$TMP/sp.tar"
		t_check "(e) bsdtar lists it at 5 GiB" 0 stdout " 5368709120 .* big$"
	fi
	mkdir -p "$TMP/spx"
	t_run sx tar -xf "$TMP/sp.tar" -C "$TMP/spx"
	t_expect "(e) GNU tar extracts it: 5 GiB in $(kib "$TMP/spx/big") KiB, its ends" \
		all [ "$RC" = 0 ] -- [ "$(stat -c %s "$TMP/spx/big")" = 5368709120 ] -- \
		[ "$(kib "$TMP/spx/big")" -lt 1024 ] -- \
		[ "$(head -c 4 "$TMP/spx/big")" = head ] -- [ "$(tail -c 4 "$TMP/spx/big")" = tail ]
	rm -rf "$TMP/spx"
	t_run sm "$EZFS" mkfs -q --chunksize 1048576 --tar=f "$TMP/sp2.img" "$TMP/sp.tar"
	t_expect "(e) mkfs --tar=f of it: an image of $(kib "$TMP/sp2.img") KiB (under 4 MiB)" \
		all [ "$RC" = 0 ] -- [ "$(kib "$TMP/sp2.img")" -lt 4096 ]
	t_expect "(e) ... with its ends" all [ "$("$EZFS" cat --length 4 "$TMP/sp2.img" /big)" = head ] -- \
		[ "$("$EZFS" cat --skip $((5 * 1024 * 1024 * 1024 - 4)) "$TMP/sp2.img" /big)" = tail ]
	t_run sp sh -c "'$EZFS' export -q '$TMP/sp.img' | '$EZFS' mkfs -q --chunksize 1048576 --tar=f '$TMP/sp3.img'"
	t_expect "(e) export | mkfs --tar=f through a pipe: $(kib "$TMP/sp3.img") KiB" \
		all [ "$RC" = 0 ] -- [ "$(kib "$TMP/sp3.img")" -lt 4096 ]
	rm -f "$TMP/sp.img" "$TMP/sp2.img" "$TMP/sp3.img"
fi
# GNU tar's sparse forms into mkfs --tar=f (compressed zeros, null chunks)
mkdir -p "$TMP/gs"
python3 - "$TMP/gs" <<'EOF2'
import os, sys
d = sys.argv[1]
with open(os.path.join(d, "a"), "wb") as f:
    f.truncate(20 << 20)
    f.seek(3 << 20); f.write(os.urandom(5000))
    f.seek(15 << 20); f.write(b"end" * 100)
with open(os.path.join(d, "holes"), "wb") as f:
    f.truncate(1 << 20)
with open(os.path.join(d, "many"), "wb") as f:
    f.truncate(10 << 20)
    for i in range(40):   # more runs than an old GNU header holds
        f.seek(i * 250000); f.write(b"x%d" % i)
EOF2
for fmt in "--format=gnu" "--format=oldgnu" "--format=pax --sparse-version=0.0" \
	"--format=pax --sparse-version=0.1" "--format=pax --sparse-version=1.0"; do
	# shellcheck disable=SC2086
	tar -S $fmt -C "$TMP/gs" -cf "$TMP/gs.tar" . || { t_fail "(e) tar -S $fmt"; continue; }
	for z in "-z lz4" "--chunksize 65536"; do
		# shellcheck disable=SC2086
		t_run gm "$EZFS" mkfs -q $z --tar=f "$TMP/gs.img" "$TMP/gs.tar"
		ok=$RC
		for f in a holes many; do
			"$EZFS" cat "$TMP/gs.img" /$f | cmp -s - "$TMP/gs/$f" || ok=1
		done
		# 31 MiB of files, their data in 41 places: 41 chunks at most
		t_expect "(e) tar -S $fmt | mkfs $z --tar=f: the files ($(kib "$TMP/gs.img") KiB)" \
			all [ "$ok" = 0 ] -- [ "$(kib "$TMP/gs.img")" -lt 4096 ]
	done
done
# a sparse map that lies: one line, no image
tar -S --format=gnu -C "$TMP/gs" -cf "$TMP/gs.tar" a
python3 - "$TMP/gs.tar" <<'EOF2'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
b[386:398] = b"%011o\0" % (1 << 30)   # the first run far past the end
s = sum(b[0:148]) + 8 * 32 + sum(b[156:512])
b[148:156] = b"%06o\0 " % s
open(p, "wb").write(bytes(b))
EOF2
t_run gb "$EZFS" mkfs -q --tar=f "$TMP/gb.img" "$TMP/gs.tar"
t_check "(e) a sparse map outside the file: one line, exit 1" 1 stderr "sparse map"
t_expect "(e) ... no image" [ ! -e "$TMP/gb.img" ]

# --- (f) cpio and a file of 4 GiB ---------------------------------------
if [ "$HAVE_EXPORT" = 1 ]; then
	mkdir -p "$TMP/c4/d"
	echo small >"$TMP/c4/a"
	truncate -s 5G "$TMP/c4/d/huge"
	"$EZFS" mkfs -q --chunksize 1048576 "$TMP/c4.img" "$TMP/c4"
	t_run c4 "$EZFS" export --format=cpio -o "$TMP/c4.cpio" "$TMP/c4.img"
	t_check "(f) cpio of a 5 GiB file: refused, naming it and pax" 1 \
		stderr "/d/huge: 5368709120 bytes, more than a cpio member holds" stderr "pax"
	t_expect "(f) ... no archive, no temporary file" [ -z "$(ls "$TMP" | grep '^c4\.cpio')" ]
	t_run c5 sh -c "'$EZFS' export --format=cpio '$TMP/c4.img' > '$TMP/c5.out'"
	t_expect "(f) ... to stdout: exit 1, nothing written" all [ "$RC" = 1 ] -- [ ! -s "$TMP/c5.out" ]
	t_run c6 "$EZFS" export --format=cpio -o "$TMP/c6.cpio" "$TMP/c4.img" /a
	t_check "(f) cpio of the small file beside it: fine" 0
	rm -f "$TMP/c4.img"
fi

# --- (g) what each format could not hold ---------------------------------
if [ "$HAVE_EXPORT" = 1 ]; then
	mkdir -p "$TMP/g/d"
	echo one >"$TMP/g/x"
	setfattr -n user.note -v hi "$TMP/g/x" 2>/dev/null || true
	ln "$TMP/g/x" "$TMP/g/d/x2"
	mkfifo "$TMP/g/fifo"
	python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$TMP/g/sock"
	python3 -c 'import os,sys; f=open(sys.argv[1],"wb"); f.truncate(1<<20); f.seek(4096); f.write(b"x")' "$TMP/g/sparse"
	touch -d "2020-01-02 03:04:05.123456789" "$TMP/g/x" "$TMP/g/d" "$TMP/g/fifo" "$TMP/g/sparse" "$TMP/g"
	"$EZFS" mkfs -q "$TMP/g.img" "$TMP/g"
	xat=0
	getfattr -n user.note "$TMP/g/x" >/dev/null 2>&1 && xat=1
	for f in pax gnu cpio zip; do
		t_run g$f "$EZFS" export --format=$f -o "$TMP/g.$f" "$TMP/g.img"
		n=$(grep -c "what $f cannot hold" "$ERR")
		t_expect "(g) $f: exit 0, one summary line ($n)" all [ "$RC" = 0 ] -- [ "$n" = 1 ]
		line=$(grep "what $f cannot hold" "$ERR")
		case $f in
		pax) want=("sockets (1 entry, left out)") nowant="xattrs|mtimes|holes|links" ;;
		gnu) want=("sub-second mtimes (" "sockets (1 entry" "holes (1 file, written as zeros)" "pax keeps them")
		     nowant="hard links" ;;
		cpio) want=("sub-second mtimes (" "hard links (1 entry, stored as copies)" "holes (1 file")
		      nowant="devices" ;;
		zip) want=("devices and FIFOs (1 entry, left out)" "hard links (1 entry" "sockets (1 entry")
		     nowant="nothing-else" ;;
		esac
		for w in "${want[@]}"; do
			t_expect "(g) $f: '$w'" grep -qF -- "$w" <<<"$line"
		done
		# x and d/x2 are one inode with an xattr: a tar links the
		# second path, cpio and zip store it again (xattrs lost twice)
		nx="1 entry"
		case $f in cpio | zip) nx="2 entries" ;; esac
		if [ "$xat" = 1 ] && [ "$f" != pax ]; then
			t_expect "(g) $f: 'xattrs ($nx)'" grep -qF "xattrs ($nx)" <<<"$line"
		fi
		if grep -qE -- "$nowant" <<<"$line"; then
			t_fail "(g) $f: not /$nowant/: $line"
		else
			t_pass "(g) $f: nothing it holds named"
		fi
	done
	t_run gq "$EZFS" export -q --format=gnu -o "$TMP/g.gnu" "$TMP/g.img"
	t_expect "(g) -q: the summary line alone" all [ "$(grep -c . "$ERR")" = 1 ] -- grep -q "what gnu cannot hold" "$ERR"
fi

# --- (h) zip names ----------------------------------------------------------
if [ "$HAVE_EXPORT" = 1 ]; then
	mkdir -p "$TMP/u"
	echo a >"$TMP/u/caf$(printf '\303\251').txt"
	echo b >"$TMP/u/plain.txt"
	echo c >"$TMP/u/bad$(printf '\377').txt"
	"$EZFS" mkfs -q "$TMP/u.img" "$TMP/u"
	t_run uz "$EZFS" export --format=zip -o "$TMP/u.zip" "$TMP/u.img"
	t_check "(h) zip: a name that is not UTF-8 left out, said so" 0 \
		stderr "left out: zip holds UTF-8 names only" stderr "names that are not UTF-8 \(1 entry"
	t_run uzp python3 - "$TMP/u.zip" <<'EOF2'
import sys, zipfile
for i in zipfile.ZipFile(sys.argv[1]).infolist():
    print("%s %s" % (i.filename, "utf8" if i.flag_bits & 0x800 else "ascii"))
EOF2
	t_check "(h) zip: the UTF-8 name with the UTF-8 flag (Python's zipfile)" 0 \
		stdout "^café.txt utf8$" stdout "^plain.txt"
fi

t_done
