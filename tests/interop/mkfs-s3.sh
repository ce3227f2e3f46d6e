#!/bin/bash
# SPDX-License-Identifier: MIT
# mkfs --s3=ENDPOINT,... IMAGE BUCKET[/PREFIX] against the tests' own S3
# server (tests/interop/s3_server.py: ListObjectsV2 in pages of 3 keys, every
# request's SigV4 checked with botocore):
#  - the bucket's tree: each key a path (folders implied by '/'), files
#    0644 with their bytes, folders 0755, compared with manifest.py against
#    the served folder (ezfs extract, and the kernel's mount as root); a
#    prefix gives the keys under it (whole keys, as mkfs.erofs 1.9.3);
#  - credentials from passwd_file= (s3fs's KEY:SECRET) and region=;
#  - --clean=0: every file of its size, all zeros;
#  - a wrong secret, a missing bucket, an unreachable endpoint: one line,
#    exit 1, the destination byte for byte as it was; sig=2: a usage error.
#
# usage: EZFS_BIN=build/tools/ezfs/ezfs tests/interop/mkfs-s3.sh
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
t_init
t_need_shared
if "$EZFS" mkfs --s3=http://127.0.0.1:1 "$TMP/probe.img" b 2>&1 | grep -q "without libcurl"; then
	t_skip "ezfs was built without libcurl (--s3)"
fi
t_need_botocore
for v in $(env | sed -n 's/^\(AWS_[A-Z0-9_]*\)=.*/\1/p'); do unset "$v"; done
export HOME=$TMP/home
mkdir -p "$HOME"
T=(-T1700000000)
one_line() {
	[ "$RC" = "$2" ] && [ "$(grep -vc '^Try ' "$ERR")" = 1 ] && grep -q "$1" "$ERR"
}

ROOT=$TMP/s3
B=$ROOT/private
mkdir -p "$B/etc/deep/er" "$B/usr/bin" "$B/top dir" "$ROOT/public"
echo hello >"$B/etc/a.conf"
seq 30000 >"$B/etc/deep/er/big"
: >"$B/usr/bin/empty"
printf 'x&y<z>' >"$B/top dir/amp&<name>.txt"
head -c 70000 /dev/urandom >"$B/usr/bin/tool"
echo k >"$B/k"
find "$B" -type d -exec chmod 755 {} + && find "$B" -type f -exec chmod 644 {} +
S3_PAGE=3 "$PY" "$SRC/tests/interop/s3_server.py" "$ROOT" "$TMP/port" AKIDEZFSTEST \
	'wJalr/K7MDENG+bPxRfiCY' eu-west-1 2>>"$TMP/s3.log" &
T_PIDS+=("$!")
PORT=$(t_portfile "$TMP/port")
[ "$PORT" != 0 ] || { t_fail "s3_server.py did not start: $(tail -3 "$TMP/s3.log")"; t_done; }
EP=http://127.0.0.1:$PORT
printf 'AKIDEZFSTEST:wJalr/K7MDENG+bPxRfiCY\n' >"$TMP/passwd"
chmod 600 "$TMP/passwd"
S3=(--s3="$EP,passwd_file=$TMP/passwd,urlstyle=path,sig=4,region=eu-west-1")
MO=()
t_is_root || MO=(--no-owner)
KMOUNT=0
t_can_kmount && KMOUNT=1
[ "$KMOUNT" = 1 ] || echo "SKIP: kernel mounts (not root or no erofs): ezfs extract only"

# shows WHAT IMG WANT_DIR: extract (and the kernel) show the folder's tree
shows() {
	t_manifest "$3" --no-times "${MO[@]}" >"$TMP/want.json"
	rm -rf "$TMP/x"
	if "$EZFS" extract "$2" "$TMP/x" >/dev/null 2>&1; then
		t_manifest "$TMP/x" --no-times "${MO[@]}" >"$TMP/x.json"
		t_same_manifest "$1: ezfs extract" "$TMP/want.json" "$TMP/x.json"
	else
		t_fail "$1: ezfs extract"
	fi
	[ "$KMOUNT" = 1 ] || return 0
	if t_kmount "$2" "$TMP/km"; then
		t_manifest "$TMP/km" --no-times "${MO[@]}" >"$TMP/k.json"
		t_kumount "$TMP/km"
		t_same_manifest "$1: kernel mount" "$TMP/want.json" "$TMP/k.json"
	else
		t_fail "$1: the kernel refused the image"
	fi
}

t_run whole "$EZFS" mkfs -q "${T[@]}" -zlz4 "${S3[@]}" "$TMP/b.img" private
t_expect "--s3 of a bucket: built (rc=$RC $(head -c 300 "$ERR"))" [ "$RC" = 0 ]
shows "--s3: the bucket's tree" "$TMP/b.img" "$B"
n=$(grep -c 'list-type=2.* 200 signed list' "$TMP/s3.log")
t_expect "--s3: ListObjectsV2 paged ($n signed pages of 3 keys for 6 objects)" [ "$n" -ge 2 ]

rm -rf "$TMP/pre" && mkdir -p "$TMP/pre/etc" && cp -a "$B/etc/." "$TMP/pre/etc/"
t_run prefix "$EZFS" mkfs -q "${T[@]}" "${S3[@]}" "$TMP/p.img" private/etc/
shows "--s3 of BUCKET/etc/: the keys under the prefix, whole" "$TMP/p.img" "$TMP/pre"

t_run zero "$EZFS" mkfs -q "${T[@]}" --clean=0 "${S3[@]}" "$TMP/z.img" private
rm -rf "$TMP/zx"
bad=
if [ "$RC" = 0 ] && "$EZFS" extract "$TMP/z.img" "$TMP/zx" >/dev/null 2>&1; then
	while IFS= read -r -d '' f; do
		r=${f#"$B/"}
		s=$(stat -c %s "$f")
		[ "$(stat -c %s "$TMP/zx/$r" 2>/dev/null)" = "$s" ] &&
			cmp -s -n "$s" "$TMP/zx/$r" /dev/zero || bad="$bad $r"
	done < <(find "$B" -type f -print0)
else
	bad="rc=$RC $(head -c 200 "$ERR")"
fi
t_expect "--s3 --clean=0: every file of its size, zeros${bad:+ (bad:$bad)}" [ -z "$bad" ]

# ---- bad inputs -------------------------------------------------------------
cp "$TMP/b.img" "$TMP/b.orig"
printf 'AKIDEZFSTEST:wrong\n' >"$TMP/badpw"
t_run badkey "$EZFS" mkfs -q --s3="$EP,passwd_file=$TMP/badpw,urlstyle=path,region=eu-west-1" \
	"$TMP/b.img" private
t_expect "a wrong secret: one line (403), exit 1, the image kept" \
	eval 'one_line "403" 1 && cmp -s "$TMP/b.img" "$TMP/b.orig"'
t_run nobucket "$EZFS" mkfs -q "${S3[@]}" "$TMP/b.img" nosuchbucket
t_expect "a missing bucket: one line (404), exit 1, the image kept" \
	eval 'one_line "404" 1 && cmp -s "$TMP/b.img" "$TMP/b.orig"'
dead=http://127.0.0.1:$(t_free_port)
t_run dead timeout 120 "$EZFS" mkfs -q --s3="$dead,passwd_file=$TMP/passwd,region=eu-west-1" \
	"$TMP/b.img" private
t_expect "an unreachable endpoint: one line naming it, exit 1, the image kept" \
	eval 'one_line "127.0.0.1" 1 && cmp -s "$TMP/b.img" "$TMP/b.orig"'
t_run sig2 "$EZFS" mkfs -q --s3="$EP,sig=2" "$TMP/b.img" private
t_expect "sig=2: a usage error" eval 'one_line "sig=2" 2'
t_run leftover ls -A "$TMP"
t_expect "no folder of objects left beside the images" eval '! grep -q "^.ezfs-s3" "$OUT"'
t_done
