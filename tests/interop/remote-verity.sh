#!/bin/bash
# SPDX-License-Identifier: MIT
# No fetched byte served unverified (issue 36, docs/verity.md): an image of
# ezfs mkfs --verity (its tree checked by Debian's veritysetup) pushed to
# Debian's docker-registry carries the EROFS image spec's
# org.erofs.dmverity.* annotations in both layer media types (and a config
# with os.features ["erofs"] and the layer as its diff_id); read by
# manifest digest, its root is taken from them (a trusted root) and every
# block fetched is checked before it is served or cached. One byte flipped
# in the registry's copy (a file's data, then a hash block of the tree) is
# refused by cat, fsck and the FUSE mount with a line naming dm-verity, and
# the bad block never reaches the persistent cache; the files it does not
# hold still read. The same over http:// (nginx) with --root-hash, and for
# a layer pushed with --chunk-index instead of a tree (the spec's chunk
# index, checked byte for byte here). Without either: one warning, and
# --require-verified refuses; a tag's manifest is no trust anchor for
# --require-verified.
#
# usage: tests/interop/remote-verity.sh
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
t_init
t_need_cmd python3 veritysetup cmp
t_need_registry

# --- the image: files of random bytes, each starting with its marker -----
src=$TMP/src
mkdir -p "$src/d"
python3 - "$src" <<'EOF'
import os, random, sys
r = random.Random(36)
root = sys.argv[1]
for name, n in (("a", 200000), ("d/b", 300000), ("c", 5000)):
    with open(os.path.join(root, name), "wb") as f:
        f.write(b"MARK-%s-" % name.replace("/", "_").encode() * 8)
        f.write(bytes(r.getrandbits(8) for _ in range(n)))
EOF
IMG=$TMP/v.img
t_run mkfs "$EZFS" mkfs -q --verity --verity-salt=00112233 "$IMG" "$src"
ROOT=$(sed -n 's/^roothash=//p' "$OUT")
HOFF=$(sed -n 's/^hash-offset=//p' "$OUT")
if [ "$RC" = 0 ] && [ -n "$ROOT" ] && veritysetup verify "$IMG" "$IMG" "$ROOT" --hash-offset="$HOFF" >"$TMP/vs.out" 2>&1; then
	t_pass "mkfs --verity: veritysetup verify accepts the tree (root $ROOT, hash offset $HOFF)"
else
	t_fail "mkfs --verity: rc=$RC $(head -c 300 "$ERR") $(head -c 200 "$TMP/vs.out")"
	t_done
fi
PLAIN=$TMP/plain.img
"$EZFS" mkfs -q "$PLAIN" "$src"
# off_of IMG NAME: the byte of IMG where file NAME's marker starts
off_of() {
	python3 -c 'import sys; d=open(sys.argv[1],"rb").read(); print(d.find(b"MARK-%s-" % sys.argv[2].encode()))' "$1" "$2"
}
OFF_A=$(off_of "$IMG" a)
[ "$OFF_A" -gt 0 ] && [ "$OFF_A" -lt "$HOFF" ] || { t_fail "no marker of a in the image"; t_done; }

# --- the registry -----------------------------------------------------------
t_registry && rc=0 || rc=$?
PIDS+=("$REG_PID")
[ $rc = 0 ] || { t_fail "docker-registry did not start"; t_done; }
R=oci://127.0.0.1:$RPORT

# manifest REPO REF: the manifest's JSON on stdout
manifest() {
	python3 - "$RPORT" "$1" "$2" <<'EOF'
import sys, urllib.request
port, repo, ref = sys.argv[1:]
rq = urllib.request.Request("http://127.0.0.1:%s/v2/%s/manifests/%s" % (port, repo, ref),
                            headers={"Accept": "application/vnd.oci.image.manifest.v1+json"})
print(urllib.request.urlopen(rq).read().decode())
EOF
}
# ann_ok JSON_FILE MEDIA_TYPE: the layer has that type and the annotations,
# and the config (from the registry) os.features ["erofs"] and the layer's
# digest as its one diff_id
ann_ok() {
	python3 - "$1" "$2" "$HOFF" "$ROOT" "$RPORT" <<'EOF'
import json, sys, urllib.request
m = json.load(open(sys.argv[1]))
l = m["layers"][0]
a = l.get("annotations", {})
c = json.load(urllib.request.urlopen("http://127.0.0.1:%s/v2/t/v/blobs/%s" % (sys.argv[5], m["config"]["digest"])))
ok = (l["mediaType"] == sys.argv[2] and
      a.get("org.erofs.dmverity.hash_offset") == sys.argv[3] and
      a.get("org.erofs.dmverity.root_digest") == "sha256:" + sys.argv[4] and
      a.get("org.erofs.dmverity.block_size") == "4096" and
      m["config"]["mediaType"] == "application/vnd.oci.image.config.v1+json" and
      c["os"] == "linux" and c["os.features"] == ["erofs"] and
      c["rootfs"] == {"type": "layers", "diff_ids": [l["digest"]]})
sys.exit(0 if ok else 1)
EOF
}

for mt in application/vnd.erofs.layer.v1 application/vnd.erofs; do
	tag=${mt##*/}
	tag=${tag//./-}
	t_run push timeout "$tmo" "$EZFS" push -q --media-type "$mt" "$IMG" "$R/t/v:$tag"
	md=$(sed -n 's/^manifest //p' "$OUT")
	manifest t/v "$tag" >"$TMP/m.json" 2>/dev/null
	if [ "$RC" = 0 ] && [ -n "$md" ] && ann_ok "$TMP/m.json" "$mt"; then
		t_pass "push --media-type $mt: the layer carries org.erofs.dmverity.hash_offset=$HOFF, root_digest, block_size; the config os.features [erofs] and its diff_id"
	else
		t_fail "push $mt: rc=$RC $(head -c 300 "$ERR") $(head -c 400 "$TMP/m.json")"
	fi
done
# the spec form is read back by digest: its root from the annotations
REFD=$R/t/v@$md
REFT=$R/t/v:vnd-erofs
t_run info timeout "$tmo" "$EZFS" info --no-cache "$REFD"
t_check "info REPO@MANIFEST: the tree's root is the manifest's, trusted" 0 \
	stdout "$ROOT" stdout "announced by the manifest named by digest: trusted"
# a complete cache entry of the layer by digest, for the registry down
# at the end
"$EZFS" fsck -q --cache-dir "$TMP/ocache" "$REFD" >/dev/null 2>&1
"$EZFS" cat "$IMG" /a >"$TMP/a.want"
"$EZFS" cat "$IMG" /d/b >"$TMP/b.want"
t_run cat0 timeout "$tmo" "$EZFS" cat --no-cache --require-verified "$REFD" /a
if [ "$RC" = 0 ] && cmp -s "$OUT" "$TMP/a.want" && [ ! -s "$ERR" ]; then
	t_pass "cat --require-verified REPO@MANIFEST /a: the file, no warning"
else
	t_fail "cat by digest: rc=$RC $(head -c 300 "$ERR")"
fi
t_run fsck0 timeout "$tmo" "$EZFS" fsck --no-cache "$REFD"
t_check "fsck REPO@MANIFEST: the tree and every block checked" 0 stdout "dm-verity: [0-9]+ .*$ROOT"
t_run reqtag timeout "$tmo" "$EZFS" ls --no-cache --require-verified "$REFT" /
t_check "ls --require-verified of a tag: refused (no trust anchor)" 1 stderr "require-verified.*tag"
t_one_line "ls --require-verified of a tag: one line" "$ERR"

# --- the record of verified blocks: a warm cache is not hashed again -----
W=$TMP/wcache
t_run w1 timeout "$tmo" "$EZFS" cat --cache-dir "$W" "$REFD" /a
rec=$(ls "$W"/*.vok 2>/dev/null | head -1)
t_expect "a cold read: the cache entry's record of verified blocks (KEY.vok) written" test -s "$rec"
t_run w2 env EZFS_VERBOSE=3 timeout "$tmo" "$EZFS" cat --cache-dir "$W" "$REFD" /a
if [ "$RC" = 0 ] && cmp -s "$OUT" "$TMP/a.want" && grep -Eq "[1-9][0-9]* blocks verified before, by the cache entry.s record" "$ERR"; then
	t_pass "a warm read: the blocks the record lists are served unhashed ($(grep -o '[0-9]* blocks verified before' "$ERR"))"
else
	t_fail "warm read with the record: rc=$RC $(head -c 300 "$ERR")"
fi
# every block read (fsck): the blob's digest matched, and that is kept too
"$EZFS" fsck -q --cache-dir "$W" "$REFD" >/dev/null 2>&1
t_run w2b env EZFS_VERBOSE=3 timeout "$tmo" "$EZFS" cat --cache-dir "$W" "$REFD" /d/b
if [ "$RC" = 0 ] && cmp -s "$OUT" "$TMP/b.want" && grep -q "the blob matched its digest sha256:.* before, by the cache entry's record" "$ERR" &&
	grep -Eq "[1-9][0-9]* blocks verified before" "$ERR"; then
	t_pass "a complete entry: neither its blob's digest nor its blocks are hashed again on the next open"
else
	t_fail "complete entry with the record: rc=$RC $(head -c 300 "$ERR")"
fi
# the record vouches for the bytes as they were: one flipped in the
# entry's data file since (its change time moved) is hashed and refused.
# tampered NAME CACHE WANT: flip a byte of file a in CACHE's data file,
# read a again: exit 1, a line matching WANT, the record not used
tampered() {
	python3 -c 'import sys
f=open(sys.argv[1],"r+b"); f.seek(int(sys.argv[2])); b=f.read(1); f.seek(int(sys.argv[2])); f.write(bytes([b[0]^0xff]))' "$(ls "$2"/*.data | head -1)" $((OFF_A + 100))
	t_run "tamper-${2##*/}" env EZFS_VERBOSE=3 timeout "$tmo" "$EZFS" cat --cache-dir "$2" "$REFD" /a
	if [ "$RC" = 1 ] && grep -q "$3" "$ERR" && ! grep -q "before, by the cache entry" "$ERR"; then
		t_pass "$1"
	else
		t_fail "$1: rc=$RC $(head -c 300 "$ERR")"
	fi
}
# (the entry is complete: the blob's digest is computed again and fails)
tampered "a byte flipped in the cache entry after its record: the record is not honoured, the blob refused" \
	"$W" "the blob does not match its digest"
# the same in an entry not complete: the block is hashed again and refused
"$EZFS" cat --cache-dir "$TMP/wcache3" "$REFD" /a >/dev/null 2>&1
tampered "a byte flipped in a partial cache entry after its record: the record is not honoured, dm-verity refuses the block" \
	"$TMP/wcache3" "dm-verity: block $(((OFF_A + 100) / 4096)) "
# a cache folder others may write: its record is not trusted
W2=$TMP/wcache2
"$EZFS" cat --cache-dir "$W2" "$REFD" /a >/dev/null 2>&1
chmod 0770 "$W2"
t_run w4 env EZFS_VERBOSE=3 timeout "$tmo" "$EZFS" cat --cache-dir "$W2" "$REFD" /a
if [ "$RC" = 0 ] && cmp -s "$OUT" "$TMP/a.want" && ! grep -q "before, by the cache entry" "$ERR"; then
	t_pass "a cache folder writable by its group: the record is not used (every block hashed)"
else
	t_fail "group-writable cache: rc=$RC $(head -c 300 "$ERR")"
fi

# --- no tree: one warning; --require-verified refuses ---------------------
"$EZFS" push -q "$PLAIN" "$R/t/plain:x" >/dev/null
t_run pl timeout "$tmo" "$EZFS" ls --no-cache "$R/t/plain:x" /
if [ "$RC" = 0 ] && [ "$(grep -c 'warning: no dm-verity tree' "$ERR")" = 1 ] && [ "$(wc -l <"$ERR")" = 1 ]; then
	t_pass "a layer without a tree: read, with one warning ($(head -c 150 "$ERR"))"
else
	t_fail "no tree: rc=$RC $(head -c 300 "$ERR")"
fi
t_run plr timeout "$tmo" "$EZFS" cat --no-cache --require-verified "$R/t/plain:x" /a
t_check "cat --require-verified of a layer without a tree: refused" 1 stderr "require-verified: no trusted root"
t_one_line "--require-verified without a tree: one line" "$ERR"
t_expect "--require-verified without a tree: nothing on stdout" [ ! -s "$OUT" ]

# not_cached WHAT CACHE OFF LEN: the cache entry in CACHE holds no byte of
# [OFF, OFF + LEN) (a hole in its data file: the bad bytes never got there)
not_cached() {
	local data
	data=$(ls "$2"/*.data 2>/dev/null | head -1)
	if [ -n "$data" ] && python3 - "$data" "$3" "$4" <<'EOF'; then
import sys
f = open(sys.argv[1], "rb"); f.seek(int(sys.argv[2]))
sys.exit(0 if not f.read(int(sys.argv[3])).strip(b"\0") else 1)
EOF
		t_pass "$1 never reached the cache (its bytes in the entry are a hole)"
	else
		t_fail "$1 is in the cache entry $data"
	fi
}

# --- a chunk index instead of a tree (push --chunk-index) -----------------
t_run cpush timeout "$tmo" "$EZFS" push -q --chunk-index "$PLAIN" "$R/t/ci:x"
cmd=$(sed -n 's/^manifest //p' "$OUT")
manifest t/ci x >"$TMP/ci.json" 2>/dev/null
# ci_ok REPO JSON: the spec's chunk index of the manifest JSON of REPO is
# right for $PLAIN: standalone (the layer after the image's, its target
# that layer) or embedded (after the image in its blob, announced by
# org.erofs.chunk-index.range, .digest and .mediaType); its header, and
# per 64 KiB chunk its offsets and SHA-256
ci_ok() {
	python3 - "$2" "$RPORT" "$PLAIN" "$1" <<'EOF'
import hashlib, json, struct, sys, urllib.request
m = json.load(open(sys.argv[1]))
img = open(sys.argv[3], "rb").read()
get = lambda d: urllib.request.urlopen("http://127.0.0.1:%s/v2/%s/blobs/%s" % (sys.argv[2], sys.argv[4], d)).read()
l = m["layers"][0]
a = l.get("annotations", {})
if len(m["layers"]) == 2:
    c = m["layers"][1]
    idx = get(c["digest"])
    ok = (c["mediaType"] == "application/vnd.erofs.chunk-index.v1" and
          c["annotations"]["org.erofs.chunk-index.target"] == l["digest"])
else:
    blob = get(l["digest"])
    off, end = (int(x) for x in a["org.erofs.chunk-index.range"].split(":"))
    idx = blob[off:end]
    ok = (blob[:off] == img and off == len(img) and end == len(blob) == l["size"] and
          hashlib.sha256(blob).hexdigest() == l["digest"][7:] and
          a["org.erofs.chunk-index.digest"] == "sha256:" + hashlib.sha256(idx).hexdigest() and
          a["org.erofs.chunk-index.mediaType"] == "application/vnd.erofs.chunk-index.v1")
magic, ver, comp, flags, size, n, algo, hsize = struct.unpack_from("<4sBBHQIBB", idx)
n_want = (len(img) + 65535) // 65536
ok = (ok and magic == b"\xcd\xe4\xec\x67" and ver == 1 and comp == 0 and flags == 0 and
      size == len(img) and n == n_want and algo == 1 and hsize == 32 and
      len(idx) == 32 + 48 * n and idx[22:32] == bytes(10))
for k in range(n):
    off, uoff = struct.unpack_from("<QQ", idx, 32 + 48 * k)
    ok = ok and off == uoff == k * 65536 and \
        idx[32 + 48 * k + 16:32 + 48 * k + 48] == hashlib.sha256(img[k * 65536:(k + 1) * 65536]).digest()
sys.exit(0 if ok else 1)
EOF
}
if [ "$RC" = 0 ] && ci_ok t/ci "$TMP/ci.json"; then
	t_pass "push --chunk-index: the spec's chunk index (header, SHA-256 of every 64 KiB) as the next layer, targeting the image's"
else
	t_fail "push --chunk-index: rc=$RC $(head -c 300 "$ERR") $(head -c 300 "$TMP/ci.json")"
fi
CREF=$R/t/ci@$cmd
# read_verified WHAT REF: cat --require-verified REF /a reads the file,
# with no warning
read_verified() {
	t_run rv timeout "$tmo" "$EZFS" cat --no-cache --require-verified "$2" /a
	if [ "$RC" = 0 ] && cmp -s "$OUT" "$TMP/a.want" && [ ! -s "$ERR" ]; then
		t_pass "cat --require-verified of $1 by digest: the file, no warning"
	else
		t_fail "$1, by digest: rc=$RC $(head -c 300 "$ERR")"
	fi
}
read_verified "a chunk-indexed layer" "$CREF"
t_run ctag timeout "$tmo" "$EZFS" ls --no-cache --require-verified "$R/t/ci:x" /
t_check "ls --require-verified of a chunk-indexed layer by tag: refused" 1 stderr "require-verified.*tag.*chunk index"
pblob=$(find "$TMP/registry/store" -path "*/blobs/sha256/*/$(sha256sum "$PLAIN" | cut -c1-64)/data")
POFF=$(($(off_of "$PLAIN" a) + 100000)) # inside a, a chunk of its own
PCHUNK=$((POFF / 65536))
# chunk_flipped WHAT BLOB REF CACHE: one byte of file a flipped in BLOB
# (kept as CACHE.good): cat of REF refused naming the chunk index and the
# chunk, which never reaches CACHE
chunk_flipped() {
	cp "$2" "$4.good"
	python3 -c 'import sys
f=open(sys.argv[1],"r+b"); f.seek(int(sys.argv[2])); b=f.read(1); f.seek(int(sys.argv[2])); f.write(bytes([b[0]^0xff]))' "$2" "$POFF"
	t_run cbad timeout "$tmo" "$EZFS" cat --cache-dir "$4" "$3" /a
	t_check "a flipped byte under $1: cat refused, naming the chunk index and the chunk" 1 \
		stderr "chunk index: chunk $PCHUNK .*does not match its SHA-256"
	not_cached "the flipped chunk ($1)" "$4" $((PCHUNK * 65536)) 65536
}
chunk_flipped "a chunk index" "$pblob" "$CREF" "$TMP/ccache"
t_run cbad2 timeout "$tmo" "$EZFS" cat --cache-dir "$TMP/ccache" "$CREF" /d/b
t_expect "the file in other chunks still reads" cmp -s "$OUT" "$TMP/b.want"
t_run cfsck timeout "$tmo" "$EZFS" fsck -q --no-cache "$CREF"
t_check "fsck of the flipped chunk-indexed layer: exit 1, naming the chunk index" 1 stderr "chunk index: chunk $PCHUNK "
cp "$TMP/ccache.good" "$pblob"

# --- the chunk index embedded in the layer's blob (--chunk-index=embedded) -
t_run epush timeout "$tmo" "$EZFS" push -q --chunk-index=embedded --media-type application/vnd.erofs "$PLAIN" "$R/t/ce:x"
emd=$(sed -n 's/^manifest //p' "$OUT")
manifest t/ce x >"$TMP/ce.json" 2>/dev/null
if [ "$RC" = 0 ] && ci_ok t/ce "$TMP/ce.json"; then
	t_pass "push --chunk-index=embedded: the index after the image in its blob, announced by org.erofs.chunk-index.range, .digest and .mediaType"
else
	t_fail "push --chunk-index=embedded: rc=$RC $(head -c 300 "$ERR") $(head -c 400 "$TMP/ce.json")"
fi
EREF=$R/t/ce@$emd
read_verified "a layer with an embedded chunk index" "$EREF"
eblob=$(find "$TMP/registry/store" -path "*/blobs/sha256/*/$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["layers"][0]["digest"][7:])' "$TMP/ce.json")/data")
chunk_flipped "an embedded chunk index" "$eblob" "$EREF" "$TMP/ecache"
cp "$TMP/ecache.good" "$eblob"

# --- one byte flipped in the registry's copy -----------------------------
blob=$(find "$TMP/registry/store" -path "*/blobs/sha256/*/$(sha256sum "$IMG" | cut -c1-64)/data")
[ -f "$blob" ] || { t_fail "the layer's blob is not in the registry's storage"; t_done; }
cp "$blob" "$TMP/blob.good"
flip() { # OFFSET: one byte of the blob inverted
	python3 -c 'import sys
f=open(sys.argv[1],"r+b"); f.seek(int(sys.argv[2])); b=f.read(1); f.seek(int(sys.argv[2])); f.write(bytes([b[0]^0xff]))' "$blob" "$1"
}
BAD=$((OFF_A + 100))
BLK=$((BAD / 4096))
flip "$BAD"
C=$TMP/cache
t_run bcat timeout "$tmo" "$EZFS" cat --cache-dir "$C" "$REFD" /a
t_check "cat of a file with a flipped byte: refused, naming dm-verity and the block" 1 \
	stderr "dm-verity: block $BLK .*does not match its hash in the tree of root $ROOT"
t_run bcat2 timeout "$tmo" "$EZFS" cat --cache-dir "$C" "$REFD" /d/b
if [ "$RC" = 0 ] && cmp -s "$OUT" "$TMP/b.want"; then
	t_pass "another file of the same layer still reads"
else
	t_fail "the untouched file: rc=$RC $(head -c 300 "$ERR")"
fi
not_cached "the flipped block" "$C" $((BLK * 4096)) 4096
t_run bcat3 timeout "$tmo" "$EZFS" cat --cache-dir "$C" "$REFD" /a
t_check "cat again with the cache: still refused" 1 stderr "dm-verity: block $BLK"
t_run bfsck timeout "$tmo" "$EZFS" fsck -q --no-cache "$REFD"
t_check "fsck of the flipped layer: exit 1, naming dm-verity and the block" 1 \
	stderr "dm-verity: block $BLK "
# the same layer named by its tag: the annotations' root is used too
t_run btag timeout "$tmo" "$EZFS" cat --no-cache "$REFT" /a
t_check "cat by tag: refused as well" 1 stderr "dm-verity: block $BLK"

# the FUSE mount: EIO for the file, the others read
if t_is_root && [ -c /dev/fuse ] && (exec 3<>/dev/fuse) 2>/dev/null &&
	"$EZFS" mount --help 2>&1 | grep -q usage:; then
	MP=$TMP/mnt
	if t_fuse_start "$REFD" "$TMP/mount.log" --no-cache; then
		if ! cat "$MP/a" >/dev/null 2>"$TMP/mcat.err" && grep -q "Input/output error" "$TMP/mcat.err" &&
			cmp -s "$MP/d/b" "$TMP/b.want"; then
			t_pass "mount REPO@MANIFEST: the flipped file fails with EIO, the other reads"
		else
			t_fail "mount: $(head -c 200 "$TMP/mcat.err")"
		fi
		t_fuse_stop || true
		t_expect "mount: the log names dm-verity and the block" grep -q "dm-verity: block $BLK " "$TMP/mount.log"
	else
		t_fail "mount $REFD: $(head -c 300 "$TMP/mount.log")"
	fi
else
	echo "SKIP: the FUSE mount (needs root and a usable /dev/fuse)"
fi

# a hash block of the tree flipped (level 0, the one over file a's block)
cp "$TMP/blob.good" "$blob"
flip $((HOFF + 4096 + BLK * 32 + 3))
t_run tfsck timeout "$tmo" "$EZFS" fsck -q --no-cache "$REFD"
t_check "fsck of a layer whose tree has a flipped byte: exit 1, naming dm-verity's root" 1 \
	stderr "dm-verity: the tree's root hash .* is not the one given, $ROOT"
t_run tcat timeout "$tmo" "$EZFS" cat --no-cache "$REFD" /a
t_check "cat under the flipped hash block: refused" 1 stderr "dm-verity"
cp "$TMP/blob.good" "$blob"

# --- http:// with --root-hash ----------------------------------------------
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
if [ -x "$NGINX" ]; then
	WWW=$TMP/www
	mkdir -p "$WWW"
	cp "$IMG" "$WWW/v.img"
	t_nginx "$WWW" || { t_fail "nginx did not start"; t_done; }
	PIDS+=("$NGINX_PID")
	U=http://127.0.0.1:$PORT/v.img
	t_run hcat timeout "$tmo" "$EZFS" cat --no-cache --require-verified --root-hash "$ROOT" "$U" /a
	if [ "$RC" = 0 ] && cmp -s "$OUT" "$TMP/a.want"; then
		t_pass "http:// with --root-hash and --require-verified: reads"
	else
		t_fail "http good: rc=$RC $(head -c 300 "$ERR")"
	fi
	python3 -c 'import sys
f=open(sys.argv[1],"r+b"); f.seek(int(sys.argv[2])); b=f.read(1); f.seek(int(sys.argv[2])); f.write(bytes([b[0]^0xff]))' "$WWW/v.img" "$BAD"
	t_run hbad timeout "$tmo" "$EZFS" cat --cache-dir "$TMP/hcache" --root-hash "$ROOT" "$U" /a
	t_check "http:// with a flipped byte: refused" 1 stderr "dm-verity: block $BLK .*does not match"
	t_run hreq timeout "$tmo" "$EZFS" ls --no-cache --require-verified "$U" /
	t_check "http:// without --root-hash: --require-verified refuses" 1 stderr "require-verified: no trusted root"
else
	echo "SKIP: the http:// part: nginx is not installed"
fi
# --- the registry down: the cache's record of the manifest -----------------
kill "$REG_PID" 2>/dev/null
wait "$REG_PID" 2>/dev/null
t_run off1 timeout "$tmo" "$EZFS" info --cache-dir "$TMP/ocache" "$REFD"
t_check "registry down, REPO@MANIFEST from the cache: the root is still the manifest's, trusted" 0 \
	stdout "$ROOT" stdout "announced by the manifest named by digest: trusted" stderr "unreachable"
t_run off2 timeout "$tmo" "$EZFS" cat --require-verified --cache-dir "$TMP/ocache" "$REFD" /a
if [ "$RC" = 0 ] && cmp -s "$OUT" "$TMP/a.want"; then
	t_pass "registry down: cat --require-verified from the cache reads (the record's root is trusted)"
else
	t_fail "offline cat: rc=$RC $(head -c 300 "$ERR")"
fi
# a record whose manifest was changed no longer matches the digest named:
# not used, so no trusted root
rec=$(ls "$TMP/ocache"/*.oci 2>/dev/null | head -1)
if [ -n "$rec" ]; then
	sed -i "s/$ROOT/$(printf '%064d' 0)/" "$rec"
	t_run off3 timeout "$tmo" "$EZFS" cat --require-verified --cache-dir "$TMP/ocache" "$REFD" /a
	t_check "registry down, the record's manifest changed: not used (its digest), --require-verified refuses" 1 \
		stderr "record of the manifest is not used: .*hash to" stderr "require-verified"
else
	t_fail "no record of the manifest (KEY.oci) in the cache"
fi
t_done
