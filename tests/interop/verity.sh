#!/bin/bash
# SPDX-License-Identifier: MIT
# dm-verity and fs-verity against their own tools (docs/verity.md):
#  - ezfs mkfs --verity trees pass Debian's `veritysetup verify` (appended
#    and in a file of their own, -b 4096 and -b 1024, --offset, a block
#    device), print roothash= and hash-offset= (also with -q) and write
#    --root-hash-file as veritysetup does; a fixed salt and UUID give the
#    same bytes, the default random salt does not;
#  - ezfs finds the tree, info tells it and that its root is no trust
#    anchor; a root given or signed (openssl smime and cms signatures of
#    the hex root against a self-signed certificate) is checked and said;
#  - one flipped byte in a local image is refused by fsck, cat, extract,
#    export and the FUSE mount with a line naming dm-verity, the block and
#    its bytes, while the files it is not in still read right; a flipped
#    byte of the tree and a wrong root are refused too;
#  - ezfs digest --fsverity equals `fsverity digest` of the extracted files;
#  - with device-mapper (/dev/mapper/control), `veritysetup open` and the
#    kernel's erofs mount of the tree ezfs wrote (else one SKIP line).
#
# usage: EZFS_BIN=build/tools/ezfs/ezfs tests/interop/verity.sh
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
t_init
t_need_cmd veritysetup fsverity openssl python3 cmp

SALT=00112233445566778899aabbccddeeff
VUUID=12345678-9abc-def0-1234-56789abcdef0

# The source: a few directories of files, some of several blocks.
src=$TMP/src
mkdir -p "$src/d1/d2" "$src/d3"
python3 - "$src" <<'EOF'
import os, random, sys
r = random.Random(36)
root = sys.argv[1]
sizes = [0, 1, 100, 4095, 4096, 4097, 70000, 300000, 1000003]
for i, n in enumerate(sizes):
    d = ("", "d1", "d1/d2", "d3")[i % 4]
    with open(os.path.join(root, d, "f%d" % i), "wb") as f:
        # half random, half text: something for lz4 to do
        f.write(bytes(r.getrandbits(8) for _ in range(n // 2)))
        f.write((b"line %d\n" % i) * ((n - n // 2) // 7 + 1))
        f.truncate(n)
EOF
ln -s d1/f1 "$src/link"

# t_status STATUS WHAT: pass if STATUS (of the test just run) is 0
t_status() { if [ "$1" = 0 ]; then t_pass "$2"; else t_fail "$2"; fi; }

# root_of OUT: the roothash= of mkfs' stdout; hoff_of OUT: its hash-offset=
root_of() { sed -n 's/^roothash=//p' "$1"; }
hoff_of() { sed -n 's/^hash-offset=//p' "$1"; }

# vs_verify WHAT DATA HASH ROOT [ARGS]: veritysetup verify accepts it
vs_verify() {
	local what=$1 data=$2 hash=$3 root=$4
	shift 4
	if veritysetup verify "$data" "$hash" "$root" "$@" >"$TMP/vs.out" 2>&1; then
		t_pass "veritysetup verify: $what"
	else
		t_fail "veritysetup verify: $what: $(head -c 300 "$TMP/vs.out")"
	fi
}

# --- building -------------------------------------------------------------

img=$TMP/v.img
t_run mk "$EZFS" mkfs -zlz4hc -T 1700000000 -U "$VUUID" --verity \
	--verity-salt=$SALT --verity-uuid=$VUUID --root-hash-file="$TMP/rh" \
	"$img" "$src"
t_check "mkfs --verity" 0 stdout '^roothash=[0-9a-f]{64}$' stdout '^hash-offset=[0-9]+$'
ROOT=$(root_of "$OUT")
HOFF=$(hoff_of "$OUT")
[ "$(cat "$TMP/rh")" = "$ROOT" ] && [ "$(stat -c %s "$TMP/rh")" = 64 ]
t_status $? "--root-hash-file holds the root, no newline, as veritysetup writes it"
t_expect "hash-offset is a multiple of 4096" [ $((HOFF % 4096)) = 0 ]
vs_verify "appended, -b 4096" "$img" "$img" "$ROOT" --hash-offset="$HOFF"
veritysetup dump "$img" --hash-offset="$HOFF" >"$TMP/dump" 2>&1
grep -q "Salt:.*$SALT" "$TMP/dump" && grep -q "UUID:.*$VUUID" "$TMP/dump" &&
	grep -q "Hash algorithm:.*sha256" "$TMP/dump" &&
	grep -q "Data block size:.*4096" "$TMP/dump"
t_status $? "veritysetup dump: sha256, 4096-byte blocks, our salt and UUID"

t_run mkq "$EZFS" mkfs -q -zlz4hc -T 1700000000 -U "$VUUID" --verity \
	--verity-salt=$SALT --verity-uuid=$VUUID "$TMP/v2.img" "$src"
t_check "mkfs -q --verity prints only roothash= and hash-offset=" 0
t_expect "  ...exactly those two lines" \
	[ "$(cat "$OUT")" = "$(printf 'roothash=%s\nhash-offset=%s' "$ROOT" "$HOFF")" ]
t_expect "a fixed salt and UUID: byte-identical images" cmp -s "$img" "$TMP/v2.img"

t_run mkr1 "$EZFS" mkfs -q -T 1700000000 -U "$VUUID" --verity "$TMP/r1.img" "$src"
r1=$(root_of "$OUT")
t_run mkr2 "$EZFS" mkfs -q -T 1700000000 -U "$VUUID" --verity "$TMP/r2.img" "$src"
r2=$(root_of "$OUT")
[ -n "$r1" ] && [ "$r1" != "$r2" ]
t_status $? "the default salt is random: two roots differ"
vs_verify "random salt" "$TMP/r2.img" "$TMP/r2.img" "$r2" --hash-offset="$(hoff_of "$OUT")"

t_run mk1k "$EZFS" mkfs -b 1024 -zlz4 --verity --verity-salt=- "$TMP/k.img" "$src"
k_root=$(root_of "$OUT")
k_hoff=$(hoff_of "$OUT")
t_check "mkfs -b 1024 --verity --verity-salt=-" 0
[ $((k_hoff % 4096)) = 0 ] && [ "$k_hoff" -ge "$(($(od -An -tu4 -j1060 -N4 "$TMP/k.img") * 1024))" ]
t_status $? "-b 1024: the data padded to 4096, the tree after it"
vs_verify "-b 1024, no salt" "$TMP/k.img" "$TMP/k.img" "$k_root" --hash-offset="$k_hoff"
veritysetup dump "$TMP/k.img" --hash-offset="$k_hoff" >"$TMP/dump" 2>&1
t_expect "  ...its superblock has no salt" grep -q "Salt:[[:space:]]*-" "$TMP/dump"
t_run f1k "$EZFS" fsck --root-hash="$k_root" "$TMP/k.img"
t_check "ezfs fsck of the -b 1024 image finds its tree" 0 stdout "0 problems; root hash $k_root"

t_run mksep "$EZFS" mkfs -zlz4 --verity-hash-file="$TMP/h.img" "$TMP/s.img" "$src"
s_root=$(root_of "$OUT")
t_check "mkfs --verity-hash-file" 0 stdout '^hash-offset=0$'
[ $(($(stat -c %s "$TMP/s.img") % 4096)) = 0 ] &&
	! grep -q verity "$TMP/s.img" && [ "$(head -c 6 "$TMP/h.img")" = verity ]
t_status $? "  ...the image has no tree, the hash file has it at 0"
vs_verify "a hash file of its own" "$TMP/s.img" "$TMP/h.img" "$s_root"

# --offset: the image and its tree start at byte 65536 of the file
head -c 65536 /dev/urandom >"$TMP/o.img"
cp "$TMP/o.img" "$TMP/o.head"
t_run mkoff "$EZFS" mkfs --offset=65536 --verity "$TMP/o.img" "$src"
o_root=$(root_of "$OUT")
o_hoff=$(hoff_of "$OUT")
t_check "mkfs --offset=65536 --verity" 0
tail -c +65537 "$TMP/o.img" >"$TMP/o.part"
t_expect "  ...the bytes before the image stay" cmp -s -n 65536 "$TMP/o.img" "$TMP/o.head"
vs_verify "--offset: the image part alone" "$TMP/o.part" "$TMP/o.part" "$o_root" --hash-offset="$o_hoff"
vs_verify "--offset: the tree in the whole file" "$TMP/o.part" "$TMP/o.img" "$o_root" \
	--hash-offset=$((65536 + o_hoff))
t_run foff "$EZFS" fsck --offset=65536 --root-hash="$o_root" "$TMP/o.img"
t_check "ezfs fsck --offset finds the tree" 0 stdout 'dm-verity: .* 0 problems'

# a block device (a loop device over a file), and one too small
if t_is_root && command -v losetup >/dev/null && loop=$(losetup -f --show "$(truncate -s 8M "$TMP/dev" && echo "$TMP/dev")" 2>/dev/null); then
	t_run mkdev "$EZFS" mkfs --verity "$loop" "$src/d1"
	t_check "mkfs --verity onto a block device" 0
	vs_verify "a block device" "$loop" "$loop" "$(root_of "$OUT")" --hash-offset="$(hoff_of "$OUT")"
	losetup -d "$loop"
	truncate -s 1200K "$TMP/small"
	loop=$(losetup -f --show "$TMP/small")
	cp "$TMP/small" "$TMP/small.before"
	t_run mksmall "$EZFS" mkfs --verity "$loop" "$src"
	t_check "a device too small for the image and its tree: refused" 1 \
		stderr "dm-verity tree need|larger than the device"
	losetup -d "$loop"
else
	echo "SKIP: block device targets (no root or no loop device)"
fi

# --- reading --------------------------------------------------------------

t_run info "$EZFS" info "$img"
t_check "info shows the tree, its root is no trust anchor" 0 \
	stdout "dm-verity: .*at byte $HOFF" stdout "Verity root hash: +$ROOT \(computed from the tree: not a trust anchor\)" \
	stdout "Verity salt: +$SALT"
t_run info2 "$EZFS" info --root-hash="$ROOT" "$img"
t_check "info --root-hash: given, trusted" 0 stdout "$ROOT \(given with --root-hash: trusted\)"
t_run fsck "$EZFS" fsck --root-hash-file="$TMP/rh" "$img"
t_check "fsck --root-hash-file: every block checked, 0 problems" 0 \
	stdout "dm-verity: [0-9]+ data blocks .* 0 problems; root hash $ROOT \(given"
t_run fsep "$EZFS" fsck --verity-hash-file="$TMP/h.img" --root-hash="$s_root" "$TMP/s.img"
t_check "fsck --verity-hash-file" 0 stdout "0 problems; root hash $s_root"
t_run fnot "$EZFS" fsck --verity "$TMP/r1.img" --hash-offset=4096
t_check "--hash-offset where there is no tree: refused" 1 stderr 'dm-verity: no tree at byte 4096'
# a superblock naming a hash libcrypto does not know: refused in one line
# (its tree's place was once computed from the shape it could not have:
# a division by zero)
cp "$img" "$TMP/alg.img"
python3 -c 'import sys
f=open(sys.argv[1],"r+b"); f.seek(int(sys.argv[2]) + 32); f.write(b"sha257")' "$TMP/alg.img" "$HOFF"
t_run falg "$EZFS" fsck "$TMP/alg.img"
t_check "a tree of an unknown hash: fsck refuses, no crash" 1 stderr "dm-verity: the superblock at byte $HOFF .*hash algorithm 'sha257' unknown"
t_one_line "the unknown hash: one line" "$ERR"
"$EZFS" mkfs -q "$TMP/plain.img" "$src" >/dev/null
t_run fplain "$EZFS" fsck --verity "$TMP/plain.img"
t_check "--verity on an image without a tree: refused" 1 stderr 'dm-verity: no tree'
t_run fplain2 "$EZFS" fsck "$TMP/plain.img"
t_check "an image without a tree: fsck as ever" 0
! grep -q dm-verity "$OUT"
t_status $? "  ...and no dm-verity line"

bad_root=$(printf '%s' "$ROOT" | tr 0-9a-f 1-9a-f0)
t_run fwrong "$EZFS" fsck --root-hash="$bad_root" "$img"
t_check "a wrong root: refused" 1 stderr "dm-verity: the tree's root hash $ROOT is not the one given"
t_one_line "  ...in one line" "$ERR"

# --json: the tree in info's and fsck's documents, valid against the schemas
check=(python3 "$SRC/tests/interop/json-check.py")
t_run ij "$EZFS" info --json --root-hash="$ROOT" "$img"
"${check[@]}" validate "$SRC/docs/schemas/info.json" "$OUT" >"$TMP/chk" 2>&1
t_status $? "info --json of an image with a tree: valid against info.json"
python3 -c 'import json, sys; v = json.load(open(sys.argv[1]))["verity"]; sys.exit(not (v["root_hash"] == sys.argv[2] and v["trust"] == "given" and v["hash_offset"] == int(sys.argv[3])))' \
	"$OUT" "$ROOT" "$HOFF"
t_status $? "  ...its verity object: the root, given, the hash offset"

# --- signatures -----------------------------------------------------------

openssl req -x509 -newkey rsa:2048 -nodes -keyout "$TMP/key.pem" -out "$TMP/cert.pem" \
	-days 2 -subj "/CN=ezfs verity test" >/dev/null 2>&1
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$TMP/key2.pem" -out "$TMP/cert2.pem" \
	-days 2 -subj "/CN=someone else" >/dev/null 2>&1
printf '%s' "$ROOT" >"$TMP/roothash.txt"
openssl smime -sign -nocerts -noattr -binary -in "$TMP/roothash.txt" -inkey "$TMP/key.pem" \
	-signer "$TMP/cert.pem" -outform der -out "$TMP/rh.p7s"
openssl cms -sign -nocerts -noattr -binary -in "$TMP/roothash.txt" -inkey "$TMP/key.pem" \
	-signer "$TMP/cert.pem" -outform DER -out "$TMP/rh.cms"
printf '%s' "$bad_root" >"$TMP/other.txt"
openssl smime -sign -nocerts -noattr -binary -in "$TMP/other.txt" -inkey "$TMP/key.pem" \
	-signer "$TMP/cert.pem" -outform der -out "$TMP/other.p7s"
t_run sig "$EZFS" fsck --root-hash-signature="$TMP/rh.p7s" --trusted-cert="$TMP/cert.pem" "$img"
t_check "a root signed (openssl smime, DER) by a trusted certificate" 0 \
	stdout "root hash $ROOT \(signed by .*CN *= *ezfs verity test.*: trusted\)"
t_run sigc "$EZFS" info --root-hash-signature="$TMP/rh.cms" --trusted-cert="$TMP/cert.pem" "$img"
t_check "a root signed with openssl cms" 0 stdout "signed by .*ezfs verity test"
t_run sig2 "$EZFS" fsck --root-hash-signature="$TMP/rh.p7s" --trusted-cert="$TMP/cert2.pem" "$img"
t_check "a signature by a certificate not trusted: refused" 1 stderr 'dm-verity: the signature .* does not verify'
t_run sig3 "$EZFS" fsck --root-hash-signature="$TMP/other.p7s" --trusted-cert="$TMP/cert.pem" "$img"
t_check "a signature of another root: refused" 1 stderr 'dm-verity: the signature .* does not verify'
t_run sig4 "$EZFS" cat --root-hash-signature="$TMP/rh.p7s" "$img" /f0
t_check "a signature without --trusted-cert: usage error" 2 stderr 'go together'
t_run sig5 "$EZFS" cat --no-verity --root-hash="$ROOT" "$img" /f0
t_check "--no-verity with a root: usage error" 2 stderr 'no-verity'

# --- a flipped byte ---------------------------------------------------------

# the first data byte of /d1/f5 (4097 bytes: blocks of its own)
pa=$("$EZFS" stat -e "$img" /d1/f5 | awk '$4 != "" && $2 ~ /^[0-9]+$/ && $3 ~ /^[0-9]+$/ { print $2; exit }')
if [ -z "$pa" ]; then
	t_fail "no extent of /d1/f5 in ezfs stat -e"
	t_done
fi
blk=$((pa / 4096))
cp "$img" "$TMP/bad.img"
printf '\xa5' | dd of="$TMP/bad.img" bs=1 seek=$((pa + 17)) conv=notrunc 2>/dev/null
range="block $blk \(bytes $((blk * 4096))-$((blk * 4096 + 4095))\)"
if veritysetup verify "$TMP/bad.img" "$TMP/bad.img" "$ROOT" --hash-offset="$HOFF" >/dev/null 2>&1; then
	t_fail "veritysetup verify accepts the flipped image"
else
	t_pass "veritysetup verify refuses the flipped image too"
fi

t_run fbad "$EZFS" fsck --root-hash="$ROOT" "$TMP/bad.img"
t_check "fsck: the flipped byte" 1 stderr "dm-verity: $range does not match its hash in the tree"
t_expect "  ...named in one line" [ "$(grep -c dm-verity "$ERR")" = 1 ]
t_run fjson "$EZFS" fsck --json --root-hash="$ROOT" "$TMP/bad.img"
"${check[@]}" validate "$SRC/docs/schemas/fsck.json" "$OUT" >"$TMP/chk" 2>&1
t_status $? "fsck --json of the flipped image: valid against fsck.json"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); v = d["verity"]; sys.exit(not (not d["clean"] and v["problem_count"] == 1 and "dm-verity: block" in v["problems"][0]))' "$OUT"
t_status $? "  ...not clean, one dm-verity problem in its verity object"
t_run fbad2 "$EZFS" fsck --no-verity "$TMP/bad.img"
! grep -q dm-verity "$ERR" "$OUT"
t_status $? "fsck --no-verity: no dm-verity line"

t_run cbad "$EZFS" cat "$TMP/bad.img" /d1/f5
t_check "cat of the file: refused" 1 stderr "dm-verity: $range"
t_expect "  ...not a byte of it on stdout past the good ones" [ "$(stat -c %s "$OUT")" -lt 4097 ]
t_run cgood "$EZFS" cat "$TMP/bad.img" /d1/d2/f6
t_check "cat of another file" 0
t_expect "  ...its bytes" cmp -s "$OUT" "$src/d1/d2/f6"
t_run cno "$EZFS" cat --no-verity "$TMP/bad.img" /d1/f5
[ "$RC" = 0 ] && ! cmp -s "$OUT" "$src/d1/f5"
t_status $? "cat --no-verity serves the changed bytes (the check is what refuses)"

t_run xbad "$EZFS" extract "$TMP/bad.img" "$TMP/x"
t_check "extract: refused" 1 stderr "dm-verity: $range"
ok=1
for f in f0 d1/f1 d1/d2/f2 d3/f3 f4 d1/d2/f6 d3/f7 f8; do
	cmp -s "$src/$f" "$TMP/x/$f" || { ok=0; echo "  $f differs"; }
done
t_expect "  ...every other file extracted right" [ $ok = 1 ]

if "$EZFS" --version | grep -q '+libarchive'; then
	t_run ebad "$EZFS" export -o "$TMP/x.tar" "$TMP/bad.img"
	t_check "export: refused" 1 stderr "dm-verity: $range"
fi

t_run dbad "$EZFS" digest "$TMP/bad.img"
t_check "digest: that file refused, the others printed" 1 stderr "dm-verity: $range" stdout '/d1/d2/f6$'

# a flipped byte of the tree (its last block: level 0)
cp "$img" "$TMP/badtree.img"
size=$(stat -c %s "$img")
printf '\x5a' | dd of="$TMP/badtree.img" bs=1 seek=$((size - 4096 + 3)) conv=notrunc 2>/dev/null
t_run ftree "$EZFS" fsck --root-hash="$ROOT" "$TMP/badtree.img"
t_check "fsck: a flipped byte of the tree" 1 \
	stderr 'dm-verity: hash block [0-9]+ of level 0 \(bytes [0-9]+-[0-9]+ of the image\) does not match the level above'

# the FUSE mount
if t_is_root && [ -c /dev/fuse ] && (exec 3<>/dev/fuse) 2>/dev/null &&
	"$EZFS" mount --help 2>&1 | grep -q roothash; then
	if t_fuse_start "$TMP/bad.img" "$TMP/mnt.err" -o "roothash=$ROOT" --log "$TMP/mnt.log"; then
		if cat "$MP/d1/f5" >/dev/null 2>"$TMP/cat.err"; then
			t_fail "mount: the flipped file reads"
		else
			t_expect "mount: the flipped file gives EIO" grep -q "Input/output error" "$TMP/cat.err"
		fi
		t_expect "mount: another file reads right" cmp -s "$MP/d1/d2/f6" "$src/d1/d2/f6"
		t_expect "mount: a log line names dm-verity and the block" \
			grep -qE "dm-verity: $range" "$TMP/mnt.log" "$TMP/mnt.err"
		t_fuse_stop || t_fail "mount: unmount"
	else
		t_fail "mount -o roothash=: $(head -c 300 "$TMP/mnt.err")"
	fi
	MP=$TMP/mnt2
	if t_fuse_start "$img" "$TMP/mnt2.err" -o "verity.roothash=$bad_root"; then
		t_fail "mount with a wrong root"
		t_fuse_stop
	else
		t_expect "mount with a wrong root: refused, naming dm-verity" grep -q "dm-verity" "$TMP/mnt2.err"
	fi
else
	echo "SKIP: the FUSE mount (no root or /dev/fuse)"
fi

# --- fs-verity digests ------------------------------------------------------

rm -rf "$TMP/x"
"$EZFS" extract "$img" "$TMP/x" >/dev/null 2>&1
(cd "$TMP/x" && find . -type f | sort | xargs fsverity digest) |
	sed 's| \./| /|' | sort >"$TMP/fsv.want"
t_run dig "$EZFS" digest --fsverity "$img"
sort "$OUT" >"$TMP/fsv.got"
t_expect "ezfs digest --fsverity = fsverity digest of the extracted files ($(wc -l <"$TMP/fsv.want") files)" \
	cmp -s "$TMP/fsv.want" "$TMP/fsv.got"
t_run dig2 "$EZFS" digest --sha256 "$img" /d1
(cd "$TMP/x" && sha256sum d1/f1 d1/d2/f2 d1/f5 d1/d2/f6) | sed 's|  |  /|' | sort >"$TMP/sha.want"
sort "$OUT" >"$TMP/sha.got"
t_expect "ezfs digest --sha256 IMG /d1 = sha256sum" cmp -s "$TMP/sha.want" "$TMP/sha.got"

# --- the kernel: device-mapper ----------------------------------------------

if [ -e /dev/mapper/control ] && t_is_root && t_can_kmount; then
	name=ezfs-verity-$$
	if veritysetup open "$img" "$name" "$ROOT" --hash-offset="$HOFF" 2>"$TMP/open.err"; then
		mkdir -p "$TMP/kmnt"
		if mount -t erofs -o ro "/dev/mapper/$name" "$TMP/kmnt" 2>"$TMP/kmnt.err"; then
			t_expect "veritysetup open + mount -t erofs: the files" cmp -s "$TMP/kmnt/d1/f5" "$src/d1/f5"
			umount "$TMP/kmnt"
		else
			t_fail "mount -t erofs /dev/mapper/$name: $(cat "$TMP/kmnt.err")"
		fi
		veritysetup close "$name"
	else
		t_fail "veritysetup open: $(head -c 300 "$TMP/open.err")"
	fi
else
	echo "SKIP: veritysetup open and the kernel's erofs mount (no device-mapper here: /dev/mapper/control is missing, or no root or erofs)"
fi

# --- command lines ----------------------------------------------------------

t_run u1 "$EZFS" mkfs --verity --tar=i "$TMP/u.img" /dev/null
t_check "--verity with --tar=i: usage error" 2 stderr 'outside the tree'
t_run u2 "$EZFS" mkfs --verity-salt=xyz "$TMP/u.img" "$src"
t_check "--verity-salt=xyz: usage error" 2 stderr 'verity-salt'
t_run u3 "$EZFS" mkfs --verity-uuid=1234 "$TMP/u.img" "$src"
t_check "--verity-uuid=1234: usage error" 2 stderr 'verity-uuid'
t_run u4 "$EZFS" fsck --root-hash=12345 "$img"
t_check "--root-hash=12345: usage error" 2 stderr 'root-hash'
t_expect "  ...no image left behind by the refused mkfs" [ ! -e "$TMP/u.img" ]

t_done
