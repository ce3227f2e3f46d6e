#!/bin/bash
# SPDX-License-Identifier: MIT
# s3://BUCKET/KEY (lib/remote/s3.c, docs/remote.md): fixtures served by
# tests/interop/s3_server.py, which checks every Signature Version 4 header
# with botocore (the AWS SDK for Python) and answers as S3 does. Credentials
# and region from the environment, from ~/.aws/credentials and config (a
# named profile, a session token), AWS_ENDPOINT_URL; a public bucket read
# unsigned; ezfs fsck, cat, ls -R and extract against the local image, ezfs
# mount against the kernel's manifest (root, /dev/fuse); a wrong secret, a
# missing key, no credentials for a private bucket and malformed URLs: exit
# 1 with one line naming the URL.
#
# usage: tests/interop/remote-s3.sh [NAME...]   (default: lz4-4k zstd-256k)
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
t_init
t_need_fixtures
t_need_cmd zstd
if "$EZFS" cache --cache-dir "$TMP/probe" ls 2>&1 | grep -q "without libcurl"; then
	t_skip "ezfs was built without libcurl (remote images)"
fi
t_need_botocore
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(lz4-4k zstd-256k)

ROOT=$TMP/s3
mkdir -p "$ROOT/private/img dir" "$ROOT/public"
SRV_PID=
stop_server() {
	[ -z "$SRV_PID" ] || { kill "$SRV_PID" 2>/dev/null || :; wait "$SRV_PID" 2>/dev/null || :; }
	SRV_PID=
}
trap 'stop_server; t_cleanup' EXIT
# start_server [REGION [TOKEN]]: sets PORT; requests logged to $TMP/s3.log
start_server() {
	stop_server
	rm -f "$TMP/port"
	"$PY" "$SRC/tests/interop/s3_server.py" "$ROOT" "$TMP/port" AKIDEZFSTEST \
		'wJalr/K7MDENG+bPxRfiCY' "$@" 2>>"$TMP/s3.log" &
	SRV_PID=$!
	PORT=$(t_portfile "$TMP/port")
	[ "$PORT" != 0 ] || { t_fail "s3_server.py did not start: $(tail -3 "$TMP/s3.log")"; t_done; }
}

# a clean environment: nothing of the caller's AWS settings or files
for v in $(env | sed -n 's/^\(AWS_[A-Z0-9_]*\)=.*/\1/p'); do unset "$v"; done
export HOME=$TMP/home
mkdir -p "$HOME"
creds() {
	export AWS_ACCESS_KEY_ID=AKIDEZFSTEST AWS_SECRET_ACCESS_KEY='wJalr/K7MDENG+bPxRfiCY'
}
nocreds() { unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN; }

start_server eu-west-1
export AWS_ENDPOINT_URL=http://127.0.0.1:$PORT AWS_REGION=eu-west-1
creds
for n in "${names[@]}"; do
	t_fixture_unpack "$n" || continue
	cp "$img" "$ROOT/private/img dir/$n.img"
	u="s3://private/img dir/$n.img"
	t_run fsck-$n "$EZFS" fsck --no-cache "$u"
	t_check "$n: ezfs fsck $u (signed, path-style)" 0
	"$EZFS" ls -R "$img" / >"$TMP/$n.local.ls"
	t_run ls-$n "$EZFS" ls -R --no-cache "$u" /
	if [ "$RC" = 0 ] && cmp -s "$TMP/$n.local.ls" "$OUT"; then
		t_pass "$n: ls -R over s3:// as of the local image"
	else
		t_fail "$n: ls -R over s3:// (rc $RC): $(head -c 200 "$ERR")"
	fi
	rm -rf "$TMP/x-$n" "$TMP/l-$n"
	t_run ex-$n "$EZFS" extract -q --no-cache "$u" "$TMP/x-$n"
	"$EZFS" extract -q "$img" "$TMP/l-$n" || :
	if [ "$RC" = 0 ] && t_manifest "$TMP/l-$n" >"$TMP/l-$n.jsonl" &&
		t_manifest "$TMP/x-$n" >"$TMP/x-$n.jsonl" &&
		cmp -s "$TMP/l-$n.jsonl" "$TMP/x-$n.jsonl"; then
		t_pass "$n: extract over s3:// as of the local image"
	else
		t_fail "$n: extract over s3:// (rc $RC): $(head -c 200 "$ERR")"
	fi
	if t_is_root && [ -c /dev/fuse ] && (exec 3<>/dev/fuse) 2>/dev/null &&
		! "$EZFS" mount --help 2>&1 | grep -q "without FUSE"; then
		MP=$TMP/mnt-$n
		if t_fuse_start "$u" "$TMP/mount-$n.log" --no-cache; then
			t_manifest "$MP" >"$TMP/$n.mount.jsonl" || :
			t_same_manifest "$n: ezfs mount of $u shows the kernel's tree" \
				"$want" "$TMP/$n.mount.jsonl"
			t_expect "$n: ezfs umount" t_fuse_stop
		else
			t_fail "$n: ezfs mount $u"
		fi
		unset MP
	else
		echo "SKIP: $n: mount over s3:// (needs root and a usable /dev/fuse)"
	fi
done
n=${names[0]}
img=$TMP/$n.img
want=$SHARED/fixtures/$n.manifest.jsonl
u="s3://private/img dir/$n.img"
# the largest file of the manifest
f=/$(python3 -c 'import json, sys
e = [json.loads(l) for l in open(sys.argv[1])]
print(max((x for x in e if x["type"] == "f"), key=lambda x: x["size"])["path"])' "$want")

# the persistent cache: the warm rerun fetches nothing (a signed
# conditional request answered 304)
t_run warm1 "$EZFS" ls -R --cache-dir "$TMP/cache" "$u" /
t_run warm2 "$EZFS" ls -R --cache-dir "$TMP/cache" --remote-stats "$u" /
t_check "cached: ls -R again" 0 stderr "fetched=0 "

# credentials from ~/.aws (a profile), with a session token
nocreds
unset AWS_REGION AWS_ENDPOINT_URL
start_server ap-south-1 'FQoGZXIvYXdzE//token+with/slashes=='
mkdir -p "$HOME/.aws"
cat >"$HOME/.aws/credentials" <<EOF
[default]
aws_access_key_id = AKIDWRONG
aws_secret_access_key = nope

[ci]
aws_access_key_id = AKIDEZFSTEST
# a comment
aws_secret_access_key=wJalr/K7MDENG+bPxRfiCY
aws_session_token = FQoGZXIvYXdzE//token+with/slashes==
EOF
cat >"$HOME/.aws/config" <<EOF
[default]
region = us-east-1

[profile ci]
region = ap-south-1
endpoint_url = http://127.0.0.1:$PORT/
EOF
t_run prof env AWS_PROFILE=ci "$EZFS" cat --no-cache "$u" "$f"
if [ "$RC" = 0 ] && "$EZFS" cat "$img" "$f" | cmp -s - "$OUT"; then
	t_pass "profile ci of ~/.aws (region, endpoint, session token): cat $f"
else
	t_fail "profile ci of ~/.aws: rc $RC: $(head -c 300 "$ERR")"
fi
t_run prof-bad env AWS_PROFILE=ci AWS_SESSION_TOKEN= AWS_CONFIG_FILE="$HOME/.aws/config" \
	AWS_SHARED_CREDENTIALS_FILE=/dev/null "$EZFS" ls --no-cache "$u" /
t_check "no credentials for a private bucket: refused" 1 stderr "s3://private/img dir/$n.img: .*403"
t_one_line "no credentials: one line" "$ERR"
rm -rf "$HOME/.aws"

# a wrong secret, a missing key, the public bucket unsigned
start_server eu-west-1
export AWS_ENDPOINT_URL=http://127.0.0.1:$PORT AWS_REGION=eu-west-1
creds
t_run badsecret env AWS_SECRET_ACCESS_KEY=wrong "$EZFS" ls --no-cache "$u" /
t_check "a wrong secret: refused" 1 stderr "s3://private/img dir/$n.img: .*403"
t_one_line "a wrong secret: one line" "$ERR"
t_run badregion env AWS_REGION=us-west-2 "$EZFS" ls --no-cache "$u" /
t_check "another region's signature: refused" 1 stderr "403"
t_run nokey "$EZFS" ls --no-cache "s3://private/none.img" /
t_check "a missing key: one line, 404" 1 stderr "s3://private/none.img: .*404"
t_one_line "a missing key: one line" "$ERR"
cp "$img" "$ROOT/public/$n.img"
nocreds
t_run public "$EZFS" ls -R --no-cache "s3://public/$n.img" /
if [ "$RC" = 0 ] && cmp -s "$TMP/$n.local.ls" "$OUT" &&
	grep -q "GET /public/$n.img 20[06] unsigned" "$TMP/s3.log"; then
	t_pass "a public bucket without credentials: unsigned requests, ls -R right"
else
	t_fail "public bucket: rc $RC: $(head -c 200 "$ERR")"
fi
for bad in "s3://" "s3://bucket" "s3://bucket/" "s3://UPPER/key" "s3://a/key" \
	"s3://bad_bucket/key"; do
	t_run badurl "$EZFS" ls "$bad" /
	t_check "'$bad': a usage error of one line" 1 stderr "not an object s3://BUCKET/KEY"
	t_one_line "'$bad': one line" "$ERR"
done
t_run badep env AWS_ENDPOINT_URL=ftp://x "$EZFS" ls "$u" /
t_check "an endpoint that is not http(s): one line" 1 stderr "endpoint 'ftp://x'"
if grep -q "signed SignatureDoesNotMatch" "$TMP/s3.log" &&
	grep -Eq "GET /private/img%20dir/$n.img 20[06] signed" "$TMP/s3.log"; then
	t_pass "the server checked signatures (good ones served, bad ones refused)"
else
	t_fail "the server's log shows no checked signature: $(tail -5 "$TMP/s3.log")"
fi
t_done
