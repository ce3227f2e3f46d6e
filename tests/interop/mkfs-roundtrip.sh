#!/bin/bash
# SPDX-License-Identifier: MIT
# mkfs-roundtrip.sh - ezfs mkfs images read back by ezfs, the kernel and
# fsck.erofs must equal the source tree; images must be reproducible.
#
# Environment: EZFS (or EZFS_BIN) the ezfs binary, SRC (or EZFS_SRC) the
# source tree, EZFS_SHARED the shared material (default $SRC/../shared).
# Exit 0 pass, 1 fail, 77 skip.
set -u

. "$(dirname "$0")/../lib.sh"
t_init
t_need_make_tree
t_need_cmd cmp
FSCK_EROFS=0
command -v fsck.erofs >/dev/null && FSCK_EROFS=1
[ "$FSCK_EROFS" = 1 ] || echo "note: fsck.erofs not installed: its checks skipped"
if t_sanitized && [ "$FSCK_EROFS" = 1 ]; then
	echo "note: fsck.erofs checks the plain build's images (the same bytes)"
	FSCK_EROFS=0
fi

# check NAME TREE IMG MANIFEST_OPTS...: ezfs fsck, ezfs extract, kernel.
# A tree's manifest is made once per set of options (the trees do not
# change once made).
check() {
	local name=$1 tree=$2 img=$3 want
	shift 3
	want=$TMP/src.$(printf '%s ' "$tree" "$@" | md5sum | cut -c1-12).json
	[ -s "$want" ] || t_manifest "$tree" "$@" >"$want"
	t_check_image "$name" "$img" "$want" "$@"
}

# fsck.erofs (Debian 1.5: 4 KiB blocks, lz4 only) extracts and compares.
check_fsck_erofs() {
	local name=$1 tree=$2 img=$3
	[ "$FSCK_EROFS" = 1 ] || return 0
	rm -rf "$TMP/fx"
	t_run fsck_erofs fsck.erofs --extract="$TMP/fx" "$img"
	# diff -r reports special files it cannot compare: ignore those lines
	if [ "$RC" = 0 ] && ! diff -r --no-dereference "$tree" "$TMP/fx" 2>&1 |
		grep -v -e 'special file while' -e 'is a fifo while' \
			-e 'is a socket while' | grep -q .; then
		t_pass "$name: fsck.erofs --extract + diff -r"
	else
		t_fail "$name: fsck.erofs rc=$RC: $(tail -c 300 "$ERR")"
	fi
	rm -rf "$TMP/fx"
}

mk() { "$EZFS" mkfs -q --no-fsync "$@"; }

# "matrix": every algorithm at every pcluster size from 4 KiB to 1 MiB on
# another tree (a ctest of its own, so that ctest -j runs it beside the rest).
if [ "${1:-}" = matrix ]; then
	tree=$TMP/tree4
	python3 "$MKTREE" 4 "$tree" --small || t_fail "make_tree 4"
	# a sanitizer build runs half of it: every algorithm, every size
	k=0
	for alg in lz4 lz4hc deflate libdeflate zstd lzma; do
		for c in 4096 16384 65536 262144 1048576; do
			k=$((k + 1))
			t_sanitized && [ $((k % 2)) = 0 ] && continue
			name="seed 4 [-z $alg -C $c]"
			if ! mk -z "$alg" -C "$c" "$TMP/img" "$tree" 2>"$TMP/mkfs.err"; then
				t_fail "$name: mkfs: $(head -c 300 "$TMP/mkfs.err")"
				continue
			fi
			check "$name" "$tree" "$TMP/img"
			# Debian's fsck.erofs 1.5 reads lz4 (and lz4hc) only
			case $alg in
			lz4*) check_fsck_erofs "$name" "$tree" "$TMP/img";;
			esac
		done
	done
	t_done
fi

UUID=01234567-89ab-cdef-0123-456789abcdef
for seed in 1 2 3; do
	tree=$TMP/tree$seed
	python3 "$MKTREE" "$seed" "$tree" --small || { t_fail "make_tree $seed"; continue; }
	if [ "$seed" = 1 ]; then
		sets=("" "-b 512 -E noinline_data" "-b 2048 -E force-inode-extended"
		      "-z lz4" "-z lz4hc,level=12 -C 65536" "-z lzma -C 16384 -E fragments,ztailpacking"
		      "-z deflate -C 65536" "-z zstd,3 -C 1048576"
		      "-z lz4 -C 16384 -E legacy-compress" "-z lz4hc -b 1024 -C 8192 -E fragments"
		      "-z lz4 -E ztailpacking" "-z zstd -C 65536 -E ztailpacking,legacy-compress"
		      "-z lz4 -E dedupe" "--chunksize=8192 -E force-chunk-indexes")
	elif [ "$seed" = 2 ]; then
		sets=("--chunksize=4096" "-z lz4hc -C 262144 -E ztailpacking,dedupe"
		      "-z deflate,9 -C 16384 -E ztailpacking,fragments")
	else
		sets=("-z zstd -C 16384 -E all-fragments" "-z lz4 -E dedupe,fragments")
	fi
	for opts in "${sets[@]}"; do
		name="seed $seed [${opts:-plain}]"
		# shellcheck disable=SC2086
		if ! mk $opts "$TMP/img" "$tree" 2>"$TMP/mkfs.err"; then
			t_fail "$name: mkfs: $(head -c 300 "$TMP/mkfs.err")"
			continue
		fi
		check "$name" "$tree" "$TMP/img"
		case "$opts" in
		""|"-z lz4"|"-z lz4 -C 16384 -E legacy-compress"|"-z lz4 -E ztailpacking")
			check_fsck_erofs "$name" "$tree" "$TMP/img";;
		esac
	done
	# -T (all files), --all-root, label: times and owners are rewritten
	if [ "$seed" = 1 ]; then
		name="seed 1 [-T -U -L --all-root -x 0 -z lz4hc]"
		if mk -T 1700000000 -U $UUID -L ezfs-test --all-root -x 0 -z lz4hc \
			"$TMP/img" "$tree" 2>"$TMP/mkfs.err"; then
			check "$name" "$tree" "$TMP/img" --no-times --no-owner
		else
			t_fail "$name: mkfs: $(head -c 300 "$TMP/mkfs.err")"
		fi
	fi
done

# Reproducibility: same input, -T and -U: identical bytes for any --workers.
tree=$TMP/tree1
for opts in "" "-z lz4hc -C 65536 -E fragments" "-z zstd -C 16384 -E ztailpacking,dedupe"; do
	# shellcheck disable=SC2086
	mk $opts -T 1000 -U $UUID --workers=1 "$TMP/r1.img" "$tree" &&
	mk $opts -T 1000 -U $UUID --workers=2 "$TMP/r2.img" "$tree" &&
	mk $opts -T 1000 -U $UUID --workers=2 "$TMP/r3.img" "$tree"
	if cmp -s "$TMP/r1.img" "$TMP/r2.img" && cmp -s "$TMP/r2.img" "$TMP/r3.img"; then
		t_pass "reproducible [${opts:-plain}] (--workers 1, 2, 2 again)"
	else
		t_fail "not reproducible [${opts:-plain}]"
	fi
done

# Exclusions
mk --exclude-path=manydir --exclude-regex='^names/' "$TMP/img" "$tree"
mkdir -p "$TMP/exp" && cp -a "$tree/." "$TMP/exp/" && rm -rf "$TMP/exp/manydir" && find "$TMP/exp/names" -mindepth 1 -delete
check "exclusions" "$TMP/exp" "$TMP/img" --no-times
rm -rf "$TMP/exp" "$TMP"/src.*.json

# Errors: one line, exit 1, nothing left behind.
rm -f "$TMP/bad.img"
t_run bad "$EZFS" mkfs "$TMP/bad.img" "$TMP/does-not-exist"
if [ "$RC" = 1 ] && [ "$(wc -l <"$ERR")" = 1 ] && ! ls -A "$TMP" | grep -q 'bad\.img'; then
	t_pass "missing source: one error line, exit 1, no image"
else
	t_fail "missing source: rc=$RC, $(wc -l <"$ERR") lines, $(ls -A "$TMP" | grep bad)"
fi

t_done
