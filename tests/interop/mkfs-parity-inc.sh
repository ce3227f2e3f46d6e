#!/bin/bash
# SPDX-License-Identifier: MIT
# mkfs --gzinfo, --incremental, --clean=0 and --async-queue-limit against
# mkfs.erofs 1.9.3
# (../shared/fixtures/parity, README.md there gives each command):
#  - --gzinfo=FILE with --tar=f of the gzip layer writes the SOCI zinfo
#    byte for byte as 1.9.3 (layer.zinfo), from the file and from standard
#    input, through `ezfs mkfs` and the mkfs.erofs name; the image shows the
#    fixture's tree; --gzinfo of a plain tar or without --tar: one line;
#  - --incremental=data: the fixture's tree, then s2, then s3 appended
#    show 1.9.3's kernel view (incremental.manifest.jsonl), the UUID kept;
#    a missing image, an image of another block size (-b), a file that is
#    no EROFS image and a full disk: one line, exit 1, the destination byte
#    for byte as it was (and no file made for the missing one);
#  - --async-queue-limit=1 leaves the image byte for byte the same, a bad
#    N is a usage error; --clean=0 of a directory or a tar copies the data
#    (the image of a plain build), of layers it is refused as 1.9.3 does;
#    --incremental=rvsp of a tar: its files read as zeros, the image's stay;
#  - with MKFS_EROFS2 (1.9.3's mkfs.erofs): fresh gzip archives (levels
#    1 and 9, two concatenated members) give the same zinfo bytes, and
#    three other trees (and two with a directory and a file changing
#    places, hard links and xattrs) appended in sequence, and a tar with
#    --incremental=rvsp and --clean=rvsp, the same tree as 1.9.3's image
#    shows (the kernel's view as root, else ezfs extract's).
#
# usage: EZFS_BIN=build/tools/ezfs/ezfs tests/interop/mkfs-parity-inc.sh
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
t_init
t_need_fixtures
t_need_cmd tar gzip cmp
PAR=$SHARED/fixtures/parity
[ -f "$PAR/layer.zinfo" ] || t_skip "no parity fixtures at $PAR"
T=(-T1700000000)
BIN=$(dirname "$EZFS")

# said WHAT RC: the last t_run exited RC with exactly one line on stderr
# (besides "Try ..."), naming the file and the reason
one_line() {
	[ "$RC" = "$2" ] && [ "$(grep -vc '^Try ' "$ERR")" = 1 ] &&
		grep -q "$1" "$ERR"
}

# ---- --gzinfo ---------------------------------------------------------
t_run gz "$EZFS" mkfs -q "${T[@]}" --tar=f --gzinfo="$TMP/layer.zinfo" \
	"$TMP/gz.img" "$PAR/layer.tar.gz"
if [ "$RC" = 0 ] && cmp -s "$TMP/layer.zinfo" "$PAR/layer.zinfo"; then
	t_pass "gzinfo: layer.zinfo byte for byte 1.9.3's ($(stat -c %s "$PAR/layer.zinfo") bytes)"
else
	t_fail "gzinfo: rc=$RC, $(cmp "$TMP/layer.zinfo" "$PAR/layer.zinfo" 2>&1 | head -c 200) $(head -c 300 "$ERR")"
fi
KMOUNT=0
t_can_kmount && KMOUNT=1
[ "$KMOUNT" = 1 ] || echo "SKIP: kernel mount checks (no root, loop device or erofs module)"
t_check_image "gzinfo image" "$TMP/gz.img" "$PAR/gzinfo.manifest.jsonl"
if [ -L "$BIN/mkfs.erofs" ]; then
	t_run gzname "$BIN/mkfs.erofs" --quiet "${T[@]}" --tar=f \
		--gzinfo="$TMP/name.zinfo" "$TMP/gzname.img" - <"$PAR/layer.tar.gz"
	t_expect "gzinfo: the mkfs.erofs name, the layer on standard input" \
		eval '[ "$RC" = 0 ] && cmp -s "$TMP/name.zinfo" "$PAR/layer.zinfo"'
else
	echo "SKIP: no mkfs.erofs link beside $EZFS"
fi
tar -C "$TMP" -cf "$TMP/plain.tar" layer.zinfo
cp "$TMP/gz.img" "$TMP/gz.orig"
t_run gzplain "$EZFS" mkfs -q --tar=f --gzinfo="$TMP/p.zinfo" "$TMP/gz.img" \
	"$TMP/plain.tar"
t_expect "gzinfo of a plain tar: one line, exit 1, no zinfo, the image kept" \
	eval 'one_line "plain.tar: --gzinfo needs a gzip archive" 1 &&
		[ ! -e "$TMP/p.zinfo" ] && cmp -s "$TMP/gz.img" "$TMP/gz.orig"'
t_run gznotar "$EZFS" mkfs -q --gzinfo="$TMP/p.zinfo" "$TMP/gz.img" "$TMP"
t_expect "gzinfo without --tar: a usage error" \
	eval 'one_line "gzinfo: only with --tar" 2 && [ ! -e "$TMP/p.zinfo" ]'
t_run gzdir "$EZFS" mkfs -q --tar=f --gzinfo="$TMP/no/such/z" "$TMP/gz.img" \
	"$PAR/layer.tar.gz"
t_expect "gzinfo into a missing folder: one line, exit 1, the image kept" \
	eval 'one_line "no/such/z: No such file" 1 && cmp -s "$TMP/gz.img" "$TMP/gz.orig"'

# ---- --async-queue-limit, --clean=0 -------------------------------------
# the queue bound changes how far the workers run ahead, not the image;
# --clean=0 (zeros for an S3 source's files) copies a directory's or a
# tar's data, as 1.9.3 does
mkdir -p "$TMP/q/src/d"
for i in $(seq 40); do head -c $((i * 3000)) "$PAR/layer.tar.gz" >"$TMP/q/src/d/f$i"; done
seq 100000 >"$TMP/q/src/text"
tar -C "$TMP/q/src" -cf "$TMP/q/src.tar" .
U=(-U 6ba7b810-9dad-11d1-80b4-00c04fd430c8)
t_run q0 "$EZFS" mkfs -q "${T[@]}" "${U[@]}" -zlz4hc -j4 "$TMP/q/a.img" "$TMP/q/src"
t_run q1 "$EZFS" mkfs -q "${T[@]}" "${U[@]}" -zlz4hc -j4 --async-queue-limit=1 \
	"$TMP/q/b.img" "$TMP/q/src"
t_expect "async-queue-limit=1: the image byte for byte the unbounded one's" \
	eval '[ "$RC" = 0 ] && cmp -s "$TMP/q/a.img" "$TMP/q/b.img"'
t_run qbad "$EZFS" mkfs -q --async-queue-limit=x "$TMP/q/c.img" "$TMP/q/src"
t_expect "async-queue-limit=x: a usage error, no image" \
	eval 'one_line "async-queue-limit=x: not a number" 2 && [ ! -e "$TMP/q/c.img" ]'
for src in dir tar; do
	a=("$TMP/q/src") o=()
	[ $src = tar ] && a=("$TMP/q/src.tar") o=(--tar=f)
	"$EZFS" mkfs -q "${T[@]}" "${U[@]}" -zlz4 "${o[@]}" "$TMP/q/p.img" "${a[@]}"
	t_run "clean0-$src" "$EZFS" mkfs -q "${T[@]}" "${U[@]}" -zlz4 --clean=0 \
		"${o[@]}" "$TMP/q/z.img" "${a[@]}"
	t_expect "--clean=0 of a $src: its data copied (the image of --clean)" \
		eval '[ "$RC" = 0 ] && cmp -s "$TMP/q/p.img" "$TMP/q/z.img"'
done
t_run clean0rb "$EZFS" mkfs -q --clean=0 "$TMP/q/r.img" "$TMP/q/p.img"
t_expect "--clean=0 of layers (rebuild): refused as 1.9.3 does, no image" \
	eval 'one_line "clean=0: not with layers" 2 && [ ! -e "$TMP/q/r.img" ]'
if [ -n "${MKFS_EROFS2:-}" ] && [ -x "$MKFS_EROFS2" ]; then
	for src in dir tar; do
		a=("$TMP/q/src") o=()
		[ $src = tar ] && a=("$TMP/q/src.tar") o=(--tar=f)
		rm -rf "$TMP/q/pv" "$TMP/q/ev"
		"$MKFS_EROFS2" --quiet "${T[@]}" -zlz4 --clean=0 --async-queue-limit=2 \
			"${o[@]}" "$TMP/q/peer.img" "${a[@]}" >/dev/null 2>&1
		"$EZFS" mkfs -q "${T[@]}" -zlz4 --clean=0 --async-queue-limit=2 \
			"${o[@]}" "$TMP/q/e.img" "${a[@]}"
		if "$EZFS" extract "$TMP/q/peer.img" "$TMP/q/pv" >/dev/null 2>&1 &&
			"$EZFS" extract "$TMP/q/e.img" "$TMP/q/ev" >/dev/null 2>&1; then
			t_manifest "$TMP/q/pv" >"$TMP/q/p.json"
			t_manifest "$TMP/q/ev" >"$TMP/q/e.json"
			t_same_manifest "--clean=0 --async-queue-limit=2 of a $src: 1.9.3's tree" \
				"$TMP/q/p.json" "$TMP/q/e.json"
		else
			t_fail "--clean=0 --async-queue-limit=2 of a $src: a build failed"
		fi
	done
else
	echo "SKIP: --clean=0 and --async-queue-limit against 1.9.3: set MKFS_EROFS2"
fi
rm -rf "$TMP/q"

# ---- --incremental ----------------------------------------------------
if ! t_is_root; then
	echo "SKIP: incremental: make_tree.py needs root (devices, owners, trusted.* xattrs)"
else
	mkdir -p "$TMP/inc"
	python3 "$SHARED/tools/make_tree.py" 5 "$TMP/inc/src" --small >/dev/null 2>&1 ||
		t_fail "make_tree.py 5 --small"
	zstd -q -dc "$PAR/incremental-sources.tar.zst" | tar -C "$TMP/inc" -x ||
		t_fail "incremental-sources.tar.zst"
	img=$TMP/inc.img
	t_run inc1 "$EZFS" mkfs -q "${T[@]}" -zlz4hc "$img" "$TMP/inc/src"
	uuid1=$("$EZFS" info "$img" 2>/dev/null | grep -i uuid)
	for s in s2 s3; do
		[ "$RC" = 0 ] || break
		t_run "inc-$s" "$EZFS" mkfs -q "${T[@]}" --incremental=data \
			-zlz4hc "$img" "$TMP/inc/$s"
	done
	if [ "$RC" = 0 ]; then
		t_pass "incremental: src, s2, s3 built"
		t_check_image "incremental" "$img" "$PAR/incremental.manifest.jsonl"
		t_expect "incremental: the image keeps its UUID" \
			eval '[ -n "$uuid1" ] && [ "$uuid1" = "$("$EZFS" info "$img" | grep -i uuid)" ]'
	else
		t_fail "incremental: rc=$RC: $(head -c 300 "$ERR")"
	fi

	# rvsp: the tar's files read as zeros, the image's stay
	tar -C "$TMP/inc/s2" -cf "$TMP/s2.tar" .
	cp "$img" "$TMP/rvsp.img"
	t_run rvsp "$EZFS" mkfs -q "${T[@]}" --incremental=rvsp --tar=f \
		"$TMP/rvsp.img" "$TMP/s2.tar"
	rm -rf "$TMP/rx" "$TMP/ix"
	bad=
	if [ "$RC" = 0 ] && "$EZFS" extract "$TMP/rvsp.img" "$TMP/rx" >/dev/null 2>&1 &&
		"$EZFS" extract "$img" "$TMP/ix" >/dev/null 2>&1; then
		while IFS= read -r -d '' f; do
			r=${f#"$TMP/inc/s2/"}
			n=$(stat -c %s "$f")
			[ "$(stat -c %s "$TMP/rx/$r" 2>/dev/null)" = "$n" ] &&
				cmp -s -n "$n" "$TMP/rx/$r" /dev/zero || bad="$bad $r"
		done < <(find "$TMP/inc/s2" -type f -size +0 -print0)
		# a file of the image that s2 does not hold keeps its bytes
		k=$(cd "$TMP/ix" && find . -type f -size +0 | while read -r x; do
			[ -e "$TMP/inc/s2/$x" ] || { echo "$x"; break; }; done)
		[ -n "$k" ] && cmp -s "$TMP/ix/$k" "$TMP/rx/$k" || bad="$bad (kept: $k)"
	else
		bad="rc=$RC $(head -c 200 "$ERR")"
	fi
	t_expect "incremental=rvsp of a tar: its files read as zeros, the image's kept${bad:+ (bad:$bad)}" \
		[ -z "$bad" ]
	rm -rf "$TMP/rx" "$TMP/ix" "$TMP/rvsp.img"

	# bad inputs: one line, the destination as it was
	cp "$img" "$TMP/inc.orig"
	t_run missing "$EZFS" mkfs -q --incremental "$TMP/none.img" "$TMP/inc/s2"
	t_expect "incremental onto a missing image: one line, exit 1, no file" \
		eval 'one_line "none.img: .*existing image" 1 && [ ! -e "$TMP/none.img" ]'
	t_run bsz "$EZFS" mkfs -q -b1024 --incremental "$img" "$TMP/inc/s2"
	t_expect "incremental with another block size: one line, the image kept" \
		eval 'one_line "inc.img: block size 4096, not 1024" 1 &&
			cmp -s "$img" "$TMP/inc.orig"'
	head -c 70000 /dev/urandom >"$TMP/junk.img"
	cp "$TMP/junk.img" "$TMP/junk.orig"
	t_run junk "$EZFS" mkfs -q --incremental "$TMP/junk.img" "$TMP/inc/s2"
	t_expect "incremental onto a file that is no EROFS image: one line, kept" \
		eval 'one_line "junk.img: " 1 && cmp -s "$TMP/junk.img" "$TMP/junk.orig"'
	if mkdir -p "$TMP/small" && mount -t tmpfs -o size=2m tmpfs "$TMP/small"; then
		T_MOUNTS+=("$TMP/small")
		mkdir -p "$TMP/big"
		head -c 3000000 /dev/urandom >"$TMP/big/more.bin"
		"$EZFS" mkfs -q "${T[@]}" "$TMP/small/img" "$TMP/inc/s2" &&
			cp "$TMP/small/img" "$TMP/small.orig"
		t_run full "$EZFS" mkfs -q --incremental "$TMP/small/img" "$TMP/big"
		t_expect "incremental on a full disk: one line, the image kept" \
			eval 'one_line "small/img: .*No space left" 1 &&
				cmp -s "$TMP/small/img" "$TMP/small.orig" &&
				[ "$(ls -A "$TMP/small")" = img ]'
		umount "$TMP/small"
	else
		echo "SKIP: incremental on a full disk: cannot mount a small tmpfs"
	fi
fi

# ---- fresh 1.9.3 output -------------------------------------------------
PEER=${MKFS_EROFS2:-}
if [ -z "$PEER" ] || [ ! -x "$PEER" ]; then
	echo "SKIP: fresh comparisons with mkfs.erofs 1.9.3: set MKFS_EROFS2 to its mkfs.erofs"
	t_done
fi
mkdir -p "$TMP/gt"
python3 "$SHARED/tools/make_tree.py" 7 "$TMP/gt/tree" >/dev/null 2>&1 ||
	t_fail "make_tree.py 7"
tar -C "$TMP/gt/tree" --format=pax --sort=name -cf "$TMP/gt/t.tar" . 2>/dev/null
gzip -1 -n -c "$TMP/gt/t.tar" >"$TMP/gt/l1.tar.gz"
gzip -9 -n -c "$TMP/gt/t.tar" >"$TMP/gt/l9.tar.gz"
half=$(($(stat -c %s "$TMP/gt/t.tar") / 2))
{ head -c "$half" "$TMP/gt/t.tar" | gzip -n; tail -c +$((half + 1)) "$TMP/gt/t.tar" | gzip -n; } \
	>"$TMP/gt/two.tar.gz"
for g in l1 l9 two; do
	"$PEER" --quiet "${T[@]}" --tar=f --gzinfo="$TMP/gt/$g.peer" \
		"$TMP/gt/$g.peer.img" "$TMP/gt/$g.tar.gz" >/dev/null 2>&1 ||
		t_fail "1.9.3 --gzinfo of $g.tar.gz"
	t_run "gz-$g" "$EZFS" mkfs -q "${T[@]}" --tar=f --gzinfo="$TMP/gt/$g.ezfs" \
		"$TMP/gt/$g.img" "$TMP/gt/$g.tar.gz"
	t_expect "gzinfo of a fresh $g.tar.gz: 1.9.3's bytes" \
		eval '[ "$RC" = 0 ] && cmp -s "$TMP/gt/$g.peer" "$TMP/gt/$g.ezfs"'
done
rm -rf "$TMP/gt"

t_is_root || { echo "SKIP: fresh incremental trees: make_tree.py needs root"; t_done; }
mkdir -p "$TMP/pt"
for s in 11 12 13; do
	python3 "$SHARED/tools/make_tree.py" $s "$TMP/pt/t$s" --small >/dev/null 2>&1 ||
		t_fail "make_tree.py $s"
done
# a directory and a file changing places, hard links, xattrs, a new mode
e1=$TMP/pt/e1 e2=$TMP/pt/e2
mkdir -p "$e1/a" "$e1/c/deep" "$e2/b" "$e2/c" "$e2/n"
echo one >"$e1/a/f" && echo bee >"$e1/b" && echo keep >"$e1/c/deep/k"
echo h >"$e1/h1" && ln "$e1/h1" "$e1/h2"
setfattr -n user.old -v 1 "$e1/c" 2>/dev/null
echo now-a-file >"$e2/a" && echo x >"$e2/b/x" && echo new >"$e2/c/new"
echo nh >"$e2/n/g" && ln "$e2/n/g" "$e2/n/g2" && chmod 700 "$e2/c"
setfattr -n user.new -v 2 "$e2/c" 2>/dev/null

# view IMG OUT: the tree the image shows (kernel as root, else extract)
view() {
	rm -rf "$TMP/v"
	if [ "$KMOUNT" = 1 ] && t_kmount "$1" "$TMP/v"; then
		t_manifest "$TMP/v" >"$2"
		t_kumount "$TMP/v"
	else
		"$EZFS" extract "$1" "$TMP/v" >/dev/null 2>&1 && t_manifest "$TMP/v" >"$2"
	fi
}
for set in "t11 t12 t13 -zlz4" "e1 e2 none -" "t12 e1 e2 -zlzma"; do
	read -r a b c z <<<"$set"
	zo=()
	[ "$z" = - ] || zo=("$z")
	[ "$c" = none ] && c=
	rm -f "$TMP/pt/p.img" "$TMP/pt/e.img"
	ok=1
	"$PEER" --quiet "${T[@]}" "${zo[@]}" "$TMP/pt/p.img" "$TMP/pt/$a" >/dev/null 2>&1 || ok=0
	"$EZFS" mkfs -q "${T[@]}" "${zo[@]}" "$TMP/pt/e.img" "$TMP/pt/$a" || ok=0
	for s in $b $c; do
		"$PEER" --quiet "${T[@]}" "${zo[@]}" --incremental=data "$TMP/pt/p.img" \
			"$TMP/pt/$s" >/dev/null 2>&1 || ok=0
		"$EZFS" mkfs -q "${T[@]}" "${zo[@]}" --incremental=data "$TMP/pt/e.img" \
			"$TMP/pt/$s" || ok=0
	done
	if [ $ok = 0 ]; then
		t_fail "incremental $a + $b + $c: a build failed"
		continue
	fi
	view "$TMP/pt/p.img" "$TMP/pt/p.json"
	view "$TMP/pt/e.img" "$TMP/pt/e.json"
	t_same_manifest "incremental $a + $b${c:+ + $c} ${zo[*]}: 1.9.3's tree" \
		"$TMP/pt/p.json" "$TMP/pt/e.json"
done
# rvsp of a tar, appended and clean: the files' data left out (zeros)
tar -C "$TMP/pt/t12" --format=pax -cf "$TMP/pt/t12.tar" . 2>/dev/null
for mode in incremental clean; do
	rm -f "$TMP/pt/p.img" "$TMP/pt/e.img"
	ok=1
	if [ $mode = incremental ]; then
		"$PEER" --quiet "${T[@]}" "$TMP/pt/p.img" "$TMP/pt/t11" >/dev/null 2>&1 || ok=0
		"$EZFS" mkfs -q "${T[@]}" "$TMP/pt/e.img" "$TMP/pt/t11" || ok=0
	fi
	"$PEER" --quiet "${T[@]}" -zlz4 --$mode=rvsp --tar=f "$TMP/pt/p.img" \
		"$TMP/pt/t12.tar" >/dev/null 2>&1 || ok=0
	"$EZFS" mkfs -q "${T[@]}" -zlz4 --$mode=rvsp --tar=f "$TMP/pt/e.img" \
		"$TMP/pt/t12.tar" || ok=0
	if [ $ok = 0 ]; then
		t_fail "--$mode=rvsp: a build failed"
		continue
	fi
	view "$TMP/pt/p.img" "$TMP/pt/p.json"
	view "$TMP/pt/e.img" "$TMP/pt/e.json"
	t_same_manifest "--$mode=rvsp --tar=f: 1.9.3's tree" "$TMP/pt/p.json" "$TMP/pt/e.json"
done
t_done
