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
#      zstd) and lzma, told by their first bytes, from a file or a pipe.
# Files of gigabytes are sparse files here: nothing writes their zeros.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
t_init
BIN=$(dirname "$EZFS")

# kib FILE: the KiB a file takes on disk
kib() { du -k "$1" | cut -f1; }

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
		[ "$RC" = 0 ] && [ "$(kib "$TMP/hy/one")" -ge 1024 ] &&
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
	t_expect "(b) NAME.0 alone, with a PATH" [ "$RC" = 0 ] && cmp -s "$TMP/s/f7" "$TMP/sx/f7"
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
	stderr "^ezfs fsck\.erofs: .*full: directory not empty \(use --overwrite\)"
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
		[ "$RC" = 0 ] && cmp -s "$TMP/t.want" "$TMP/tz.got"
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

t_done
