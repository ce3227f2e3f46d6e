#!/bin/bash
# SPDX-License-Identifier: MIT
# Differential test of the decompression engines and dispatch modes. For
# each image, `ezfs accel stats` reads every file and prints a digest of
# the contents: with the defaults (inline dispatch, default order) that is
# the reference, and it must be the same under queue:2 and percpu dispatch,
# with each usable engine of the image's algorithms, and with the test
# engine "fail" first on deflate images (forced fallback: same bytes, a
# counted fallback; with --strict-accel the read must fail). Images: every
# fixture (whose default reading fixtures.sh compares with the kernel), and
# a small tree packed by `ezfs mkfs` with each algorithm, whose extraction
# must equal the tree. Settings come both from the environment and from the
# command-line options, which must beat it (even a bad EZFS_DISPATCH).
#
# usage: tests/interop/engines.sh [NAME...]     (default: every fixture)
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
t_init
t_need_fixtures

t_fixture_names "$@"
unset EZFS_ACCEL EZFS_DISPATCH EZFS_STRICT_ACCEL
tmo=${EZFS_TEST_TIMEOUT:-120}

# usable engines per algorithm, from `ezfs accel list`
t_run list "$EZFS" accel list --all
usable() { awk -v a="$1" '$2 == a && $3 == "yes" && $1 != "fail" && $1 != "async-test" && $1 !~ /^dpdk/ {print $1}' "$OUT"; }
declare -A engines
for a in lz4 deflate zstd lzma; do
	engines[$a]=$(usable $a)
done
[ -n "${engines[deflate]}" ] || t_fail "ezfs accel list shows no deflate engine"

# digest DIR: names, types, file contents and link targets, sorted
digest() {
	(cd "$1" && { find . -mindepth 1 ! -type f ! -type l -printf '%y %p\n'
		find . -type l -printf 'l %p -> %l\n'
		find . -type f -exec sha1sum {} +; } | LC_ALL=C sort)
}

# extract: ezfs extract $img into $TMP/x, digest in $TMP/ref.digest; 0 if ok
extract() {
	rm -rf "$TMP/x"
	t_run extract timeout "$tmo" "$EZFS" extract -q "$img" "$TMP/x"
	if [ "$RC" -ne 0 ]; then
		t_fail "$name [extract]: ezfs extract exited $RC"
		head -n 5 "$ERR" | cut -c1-300
		return 1
	fi
	digest "$TMP/x" > "$TMP/ref.digest"
}

# read LABEL [ENV...] -- [OPTS...]: `ezfs accel stats` reads every file and
# prints a digest of the contents; it must be $ref (the default one)
read_digest() {
	local label=$1 envs=()
	shift
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	t_run stats timeout "$tmo" env "${envs[@]}" "$EZFS" accel stats "$@" "$img"
	got=$(sed -n 's/^digest: //p' "$OUT")
	if [ "$RC" -ne 0 ] || [ -z "$got" ]; then
		t_fail "$name [$label]: ezfs accel stats exited $RC"
		head -n 3 "$ERR" | cut -c1-300
	elif [ -z "${ref:-}" ]; then
		ref=$got
	elif [ "$got" = "$ref" ]; then
		t_pass "$name [$label]"
	else
		t_fail "$name [$label]: digest $got, default $ref"
	fi
}

# every engine of the image's algorithms, every dispatch mode, fallback
differential() {
	local algs a e fb
	ref=
	read_digest default --
	[ -n "$ref" ] || return 0
	algs=$("$EZFS" info "$img" | sed -n 's/^Algorithms: *//p' |
		{ grep -ow 'lz4\|lzma\|deflate\|zstd' || true; } | sort -u | tr '\n' ' ')
	if [ -z "$algs" ]; then
		echo "$name: nothing compressed: engines and dispatch do not apply"
		return 0
	fi
	read_digest "queue:2 (env)" EZFS_DISPATCH=queue:2 --
	read_digest "percpu (option beats env)" EZFS_DISPATCH=bogus -- --dispatch percpu
	grep -q '^read .*dispatch percpu' "$OUT" || t_fail "$name: --dispatch percpu not in effect"
	for a in $algs; do
		for e in ${engines[$a]:-}; do
			read_digest "$a=$e, queue" -- --accel "$a=$e" --dispatch queue
		done
	done
	case " $algs " in
	*" deflate "*)
		read_digest "fail first, percpu" EZFS_ACCEL=fail EZFS_DISPATCH=percpu --
		fb=$(awk '$1 == "fail" {print $5}' "$OUT")
		echo "$name: forced fallback: ${fb:-0} requests fell back to the reference engine"
		t_expect "$name: fallback counted" [ "${fb:-0}" -gt 0 ]
		t_run strict "$EZFS" accel stats --accel fail --strict-accel "$img"
		t_expect "$name: strict fallback fails" [ "$RC" -eq 1 ]
		;;
	esac
}

# the engine options on every reading command: accepted, and bad values
# are a usage error (exit 2) naming the value
options() {
	local c args
	for c in cat extract fsck ls stat info; do
		case $c in
		cat) args=("$img" /d/e/text) ;;
		extract) rm -rf "$TMP/o"; args=("$img" "$TMP/o") ;;
		stat) args=("$img" /d/big) ;;
		*) args=("$img") ;;
		esac
		t_run opt "$EZFS" $c --accel deflate=zlib --dispatch queue:2 --strict-accel "${args[@]}"
		t_expect "$c --accel --dispatch --strict-accel: exit 0" [ "$RC" -eq 0 ]
		t_run opt "$EZFS" $c --accel deflate=bogus "${args[@]}"
		t_expect "$c --accel deflate=bogus: exit 2 naming it" [ "$RC" -eq 2 ] &&
			grep -q "bogus" "$ERR"
		t_run opt "$EZFS" $c --dispatch sideways "${args[@]}"
		t_expect "$c --dispatch sideways: exit 2" [ "$RC" -eq 2 ]
	done
	rm -rf "$TMP/o"
	# accel bench on the image's data: a zlib row, raw and through ezfs
	# (whose first round is compared with the data) at 5 pcluster sizes
	t_run bench "$EZFS" accel bench -e zlib -n 1 -s 1 "$img"
	t_expect "accel bench IMG: exit 0, 5 zlib figures" [ "$RC" -eq 0 ] &&
		[ "$(awk '$1 == "zlib"' "$OUT" | grep -o '%' | wc -l)" = 5 ]
	t_run bench "$EZFS" accel bench -e nosuch -s 1
	t_expect "accel bench -e nosuch: exit 2" [ "$RC" -eq 2 ]
}

for name in "${names[@]}"; do
	t_fixture_unpack "$name" || continue
	differential
	rm -f "$img"
done

# round trips: a small tree packed by ezfs mkfs with each algorithm
src=$TMP/src
mkdir -p "$src/lic" "$src/d/e"
cp /usr/share/common-licenses/* "$src/lic/" 2>/dev/null || true
for i in $(seq 400); do echo "line $i of a text file that compresses well $((i * 7919 % 1000))"; done > "$src/d/e/text"
for i in 1 2 3 4 5 6 7 8; do cat "$src/lic/"* "$src/d/e/text"; done > "$src/d/big" 2>/dev/null
head -c 300000 /dev/urandom > "$src/random"
: > "$src/empty"
ln -s d/e/text "$src/link"
digest "$src" > "$TMP/src.digest"
for z in lz4 lz4hc deflate zstd lzma; do
	name=mkfs-$z
	img=$TMP/$name.img
	t_run mkfs "$EZFS" mkfs -z $z -C 65536 -E ztailpacking "$img" "$src"
	if [ "$RC" -ne 0 ]; then
		if grep -qi "not supported\|unknown\|not built" "$ERR"; then
			echo "$name: ezfs mkfs cannot write $z here: $(head -n 1 "$ERR")"
		else
			t_fail "$name: ezfs mkfs exited $RC: $(head -n 1 "$ERR")"
		fi
		continue
	fi
	extract || continue
	if cmp -s "$TMP/src.digest" "$TMP/ref.digest"; then
		t_pass "$name [reference]: the tree"
	else
		t_fail "$name [reference]: differs from the source tree"
		diff "$TMP/src.digest" "$TMP/ref.digest" | head -n 6 | cut -c1-300
	fi
	differential
	[ $z = deflate ] && options
	rm -f "$img"
done
t_done
