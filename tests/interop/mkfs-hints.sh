#!/bin/bash
# SPDX-License-Identifier: MIT
# mkfs-hints.sh - ezfs mkfs with several algorithms and --compress-hints,
# -E48bit, --uid-offset/--gid-offset: images read back by ezfs fsck,
# ezfs extract and the kernel equal the source; hinted files really got
# their algorithm and pcluster size; bad hints files and -z lists fail
# with one line, exit 2 and no image.
#
# Environment: EZFS (or EZFS_BIN), SRC (or EZFS_SRC), EZFS_SHARED.
# Exit 0 pass, 1 fail, 77 skip.
set -u

. "$(dirname "$0")/../lib.sh"
t_init
t_need_make_tree
t_need_cmd awk

TREE=$TMP/tree
python3 "$MKTREE" 1 "$TREE" --small >/dev/null || t_skip "make_tree.py failed"
t_manifest "$TREE" >"$TMP/src.json"

check() { t_check_image "$@"; }

# mkfs NAME ARGS...: build $TMP/NAME.img from the tree.
mkfs() {
	local name=$1
	shift
	t_run mkfs "$EZFS" mkfs -q "$@" "$TMP/$name.img" "$TREE"
	[ "$RC" = 0 ] || t_fail "$name: mkfs rc=$RC: $(head -c 300 "$ERR")"
}

# extents IMG PATH: "ALG PLEN" per compressed extent of PATH.
extents() {
	"$EZFS" stat -e "$1" "$2" |
		awk '$1 ~ /^[0-9]+\.\.[0-9]+$/ && $5 ~ /encoded/ { print $4, $3 }'
}

# expect_z NAME IMG PATH ALG MAXPLEN: every compressed extent of PATH is
# ALG, none is larger than MAXPLEN and one is exactly MAXPLEN.
expect_z() {
	local name=$1 img=$2 path=$3 alg=$4 max=$5 got

	got=$(extents "$img" "$path" | awk -v a="$alg" -v m="$max" '
		$1 != a { bad = bad " alg " $1 } $2 > m { bad = bad " plen " $2 }
		$2 == m { hit = 1 } END { n = NR
		if (!n) print "no compressed extents"
		else if (bad != "") print bad; else if (!hit) print "no " m "-byte pcluster" }')
	if [ -z "$got" ]; then
		t_pass "$name: $path is $alg with pclusters up to $max bytes"
	else
		t_fail "$name: $path:$got"
	fi
}

expect_flat() {
	local name=$1 img=$2 path=$3

	if "$EZFS" stat "$img" "$path" | grep -q '^Layout: *flat_'; then
		t_pass "$name: $path stored uncompressed"
	else
		t_fail "$name: $path: $("$EZFS" stat "$img" "$path" | grep Layout)"
	fi
}

expect_info() {
	local name=$1 img=$2 pattern=$3

	if "$EZFS" info "$img" | grep -q -- "$pattern"; then
		t_pass "$name: info shows '$pattern'"
	else
		t_fail "$name: info lacks '$pattern'"
	fi
}

# (a) two algorithms: lzma at 64K for some files, lz4hc at 16K for others
cat >"$TMP/hints.a" <<'EOF'
# size  algorithm  regex
65536 1 ^big/text_
16384	0	^sizes/text_

0 ^sizes/rand_
EOF
mkfs a -z lz4hc:lzma,level=6 --compress-hints="$TMP/hints.a"
check "lz4hc:lzma + hints" "$TMP/a.img" "$TMP/src.json"
expect_z "lz4hc:lzma" "$TMP/a.img" /big/text_3m lzma 65536
expect_z "lz4hc:lzma" "$TMP/a.img" /sizes/text_1048576 lz4 16384
expect_z "lz4hc:lzma" "$TMP/a.img" /big/mixed_2m lz4 4096
expect_flat "lz4hc:lzma" "$TMP/a.img" /sizes/rand_131073
expect_info "lz4hc:lzma" "$TMP/a.img" "max pcluster 16 blocks"
expect_info "lz4hc:lzma" "$TMP/a.img" "lzma (dictionary"

# (b) hints with pcluster sizes only
printf '65536 ^big/\n8192 ^sizes/text_1048576$\n' >"$TMP/hints.b"
mkfs b -z zstd -C 16384 --compress-hints="$TMP/hints.b"
check "zstd + size hints" "$TMP/b.img" "$TMP/src.json"
expect_z "zstd size hints" "$TMP/b.img" /big/text_3m zstd 65536
expect_z "zstd size hints" "$TMP/b.img" /sizes/text_1048576 zstd 8192
expect_z "zstd size hints" "$TMP/b.img" /sizes/text_1048575 zstd 16384

# (c) 48-bit layout
for z in "-z lz4hc" "-z zstd -C 65536" "-z deflate -C 12288" \
	"-z lzma -E fragments" "-z none"; do
	mkfs c -E48bit $z
	check "-E48bit $z" "$TMP/c.img" "$TMP/src.json"
	expect_info "-E48bit $z" "$TMP/c.img" "^Features:.*48bit"
done
mkfs c -E48bit -z lz4hc -C 65536
if "$EZFS" stat "$TMP/c.img" /big/text_3m | grep -q 'Layout: *compressed_full'; then
	t_pass "-E48bit: a big file uses extent records (compressed_full)"
else
	t_fail "-E48bit: $("$EZFS" stat "$TMP/c.img" /big/text_3m | grep Layout)"
fi
# zstd: fixed 64 KiB input extents stored back to back (byte addresses)
mkfs c -E48bit -z zstd -C 65536
got=$("$EZFS" stat -e "$TMP/c.img" /big/text_3m | awk '
	$1 ~ /^[0-9]+\.\.[0-9]+$/ { split($1, r, "\\.\\."); n++
		if (r[2] - r[1] != 65536 && r[2] != 1060921) bad = bad " len " $1
		if ($2 % 4096) odd++ }
	END { if (!n || !odd) bad = bad " no unaligned pcluster"; print bad }')
if [ -z "$got" ]; then
	t_pass "-E48bit zstd: 64 KiB input extents at byte addresses"
else
	t_fail "-E48bit zstd:$got"
fi

# (d) owner offsets
python3 - "$TMP/src.json" >"$TMP/off.json" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    e["uid"] += 1000
    e["gid"] += 70000
    print(json.dumps(e, sort_keys=True, ensure_ascii=False))
EOF
mkfs d -z lz4 --uid-offset=1000 --gid-offset=70000
check "uid/gid offsets" "$TMP/d.img" "$TMP/off.json"
t_run mkfs "$EZFS" mkfs -q --uid-offset=4294967295 "$TMP/e.img" "$TREE"
if [ "$RC" = 1 ] && [ ! -e "$TMP/e.img" ] && grep -q 'beyond 32 bits' "$ERR"; then
	t_pass "uid offset overflow: exit 1, no image"
else
	t_fail "uid offset overflow: rc=$RC $(head -c 200 "$ERR")"
fi

# errors: one line naming FILE:LINE (a bad -z: and the "Try" hint of
# usage errors), exit 2, nothing left behind
bad() {
	local what=$1
	shift
	t_run bad "$EZFS" mkfs -q "$@" "$TMP/bad.img" "$TREE"
	if [ "$RC" = 2 ] && [ "$(grep -vc "^Try 'ezfs mkfs --help'.$" "$ERR")" = 1 ] &&
	   ! ls -A "$TMP" | grep -q 'bad\.img'; then
		t_pass "$what: $(head -n 1 "$ERR")"
	else
		t_fail "$what: rc=$RC $(head -c 300 "$ERR")"
	fi
}
n=0
for line in "abc ^x" "4097 ^x" "4096 2 ^x" "4096 (" "4096" "2097152 ^x"; do
	n=$((n + 1))
	printf '# ok\n4096 ^y\n%s\n' "$line" >"$TMP/h$n"
	bad "hints line '$line'" -z lz4:lzma --compress-hints="$TMP/h$n"
	grep -q "h$n:3: " "$ERR" || t_fail "hints line '$line': no FILE:3 in the message"
done
bad "hints without -z" --compress-hints="$TMP/hints.b"
bad "missing hints file" -z lz4 --compress-hints="$TMP/nosuch"
for z in "lz4:bogus" "lz4,level=x" "lz4:" ":lzma" "none:lz4" "lz4,"; do
	bad "-z '$z'" -z "$z"
done
t_done
