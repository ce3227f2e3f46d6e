#!/bin/bash
# SPDX-License-Identifier: MIT
# ezfs under erofs-utils' names (the links beside $EZFS in the build tree):
# dump.erofs -s/-S/--path/--nid/-e against Debian's dump.erofs on the same
# images, --ls, --cat, --blkid-udev; fsck.erofs exit status on good and
# damaged images; fsck.erofs --extract (and ezfs fsck --extract) against
# the fixture's manifest, xattrs only with --xattrs; the deapexer and AOSP
# spellings; mkfs.erofs --help through its link; messages that start with
# the name called; dump.erofs -S of fragment images as 1.9.3 counts them
# and --nid of a number where no inode lies.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
t_init
t_need_fixtures
t_need_cmd dump.erofs fsck.erofs mkfs.erofs

BIN=$(dirname "$EZFS")
tmo=${EZFS_TEST_TIMEOUT:-120}

# --- the links --------------------------------------------------------
for n in mkfs.erofs fsck.erofs dump.erofs; do
	if [ -L "$BIN/$n" ] && [ "$(readlink -f "$BIN/$n")" = "$(readlink -f "$EZFS")" ]; then
		t_pass "link $n -> ezfs"
	else
		t_fail "no link $BIN/$n -> ezfs"
	fi
done
DUMP=$BIN/dump.erofs
FSCK=$BIN/fsck.erofs
[ -x "$DUMP" ] && [ -x "$FSCK" ] || { t_done; }

t_run mkfshelp "$BIN/mkfs.erofs" --help
if grep -q -- '--tar=' "$OUT" "$ERR"; then
	t_pass "mkfs.erofs --help names --tar="
else
	echo "SKIP: mkfs.erofs --help (through the link) lacks --tar= (mkfs.erofs spellings not landed yet)"
fi
t_run dumpv "$DUMP" -V
t_expect "dump.erofs -V" grep -q '^dump.erofs ' "$OUT"
t_run fsckv "$FSCK" -V
t_expect "fsck.erofs -V" grep -q '^fsck.erofs ' "$OUT"
t_run dumph "$DUMP" --help
t_expect "dump.erofs --help" grep -q -- '--blkid-udev' "$OUT"
t_run fsckh "$FSCK" --help
t_expect "fsck.erofs --help" grep -q -- '--extract\[=X\]' "$OUT"

# "Label:   value" lines of Debian's output must be in ours, same values;
# the features Debian names must all be in ours (it knows fewer).
same_fields() {
	local what=$1 deb=$2 ours=$3 line label val got bad=0 w

	while IFS= read -r line; do
		case $line in *:*) ;; *) continue ;; esac
		label=${line%%:*}
		val=$(printf '%s' "${line#*:}" | sed 's/^[[:space:]]*//; s/[[:space:]]*$//')
		got=$(grep -m1 -F -- "$label:" "$ours" | sed "s/^[^:]*:[[:space:]]*//; s/[[:space:]]*\$//") || true
		if [ "$label" = "Filesystem features" ]; then
			for w in $val; do
				case " $got " in *" $w "*) ;; *) bad=1
					echo "  $what: feature $w missing: '$got'" ;; esac
			done
		elif [ "$val" != "$got" ]; then
			bad=1
			echo "  $what: '$label': Debian '$val', ours '$got'"
		fi
	done < "$deb"
	[ $bad = 0 ]
}

# The long --version of both (1.9.3's spelling)
t_run dumpv "$DUMP" --version
t_expect "dump.erofs --version" grep -q '^dump.erofs ' "$OUT"
t_run fsckv "$FSCK" --version
t_expect "fsck.erofs --version" grep -q '^fsck.erofs ' "$OUT"

# Messages start with the name the user typed, and so does the hint.
# said NAME RC PATTERN: exit status RC, stderr matches PATTERN (ERE),
# and no line says "ezfs ..." ("Try 'ezfs ...", "ezfs mkfs:").
said() {
	[ "$RC" = "$2" ] && grep -qE -- "$3" "$ERR" &&
		! grep -qE "(^|')ezfs[ :]" "$ERR" ||
		{ echo "  rc $RC: $(head -c 300 "$ERR")"; return 1; }
}
mkdir -p "$TMP/src"
for n in mkfs.erofs fsck.erofs dump.erofs; do
	t_run pfx "$BIN/$n" --no-such-option "$TMP/x.img" "$TMP/src"
	t_expect "$n: a usage error starts '$n:'" said "$n" 2 "^$n: unknown option"
	t_expect "$n: its hint is 'Try '$n --help'.'" grep -qxF "Try '$n --help'." "$ERR"
done
t_run pfx "$BIN/mkfs.erofs" -z bogus "$TMP/x.img" "$TMP/src"
t_expect "mkfs.erofs -z bogus: 'mkfs.erofs: bad -z'" said mkfs.erofs 2 "^mkfs.erofs: bad -z"
t_run pfx "$BIN/mkfs.erofs" "$TMP/x.img" "$TMP/no-such-dir"
t_expect "mkfs.erofs of a missing source: one line 'mkfs.erofs: ...'" \
	said mkfs.erofs 1 "^mkfs.erofs: .*no-such-dir"
t_expect "mkfs.erofs of a missing source: one line" [ "$(wc -l < "$ERR")" = 1 ]
t_run pfx "$DUMP" "$TMP/no-such.img"
t_expect "dump.erofs of a missing image: 'dump.erofs: IMG: ...'" \
	said dump.erofs 1 "^dump.erofs: $TMP/no-such.img: "
t_run pfx "$FSCK" "$TMP/no-such.img"
t_expect "fsck.erofs of a missing image: 'fsck.erofs: IMG: ...'" \
	said fsck.erofs 1 "^fsck.erofs: $TMP/no-such.img: "
t_run pfx "$EZFS" mkfs "$TMP/x.img" "$TMP/no-such-dir"
t_expect "ezfs mkfs keeps its own 'ezfs mkfs:'" grep -q "^ezfs mkfs: " "$ERR"

# docs/compat.md's table of what the names still refuse stays true: each
# option it lists is refused (exit 2, one line and the hint).
refused=$(python3 - "$SRC/docs/compat.md" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
sec = text.split("## What the names still refuse", 1)[1]
for line in sec.splitlines():
    cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
    if len(cells) != 3 or cells[0] not in ("mkfs.erofs", "fsck.erofs", "dump.erofs"):
        continue
    tool, opts, why = cells
    if why.startswith("only in an ezfs built without"):
        continue
    m = re.match(r"`-E \^OPT` for (.*)", opts)
    if m:
        for name in re.findall(r"`([^`]+)`", m.group(1)):
            print(tool, "-E^" + name)
        continue
    for o in re.findall(r"`([^`]+)`", opts):
        o = o.replace("\\|", "|")
        o = re.sub(r"\[=[^]]*\]$", "", o)          # --clean[=data|rvsp|0]
        o = o.replace(" ", "")                      # -E fragdedupe
        o = o.replace("=...", "=x").replace("=FILE", "=x").replace("=NAME", "=x")
        o = o.replace("=N", "=1")
        print(tool, o)
PY
)
if [ "$(wc -l <<<"$refused")" -lt 10 ]; then
	t_fail "docs/compat.md: the table of refused options was not read ($(wc -l <<<"$refused") rows)"
fi
mkdir -p "$TMP/rtree"
echo x > "$TMP/rtree/f"
while read -r tool opt; do
	[ -n "$tool" ] || continue
	case $tool in
	mkfs.erofs) t_run ref "$BIN/mkfs.erofs" -q "$opt" "$TMP/r.img" "$TMP/rtree" ;;
	*) t_run ref "$BIN/$tool" "$opt" "$TMP/none.img" ;;
	esac
	t_expect "docs/compat.md: $tool $opt is refused (exit 2, one line)" \
		eval '[ "$RC" = 2 ] && [ "$(grep -vc "^Try " "$ERR")" = 1 ] && [ ! -e "$TMP/r.img" ]'
done <<<"$refused"

# --- one image made by Debian's mkfs.erofs -----------------------------
mkdir -p "$TMP/tree/d/e"
printf 'hello\n' > "$TMP/tree/a.txt"
head -c 300000 /dev/urandom > "$TMP/tree/d/rand"
seq 1 50000 > "$TMP/tree/d/e/seq"
ln -s a.txt "$TMP/tree/link"
mkfs.erofs -zlz4hc "$TMP/deb.img" "$TMP/tree" >/dev/null 2>&1 ||
	t_fail "Debian's mkfs.erofs failed"

images=("$TMP/deb.img")
for name in plain lz4hc-64k deflate-16k; do
	t_fixture_unpack "$name" && images+=("$img")
done

for im in "${images[@]}"; do
	n=$(basename "$im" .img)
	t_run ours "$DUMP" -s "$im"
	if [ "$RC" -ne 0 ]; then
		t_fail "$n: dump.erofs -s exited $RC"
		head -n 3 "$ERR"
	elif dump.erofs -s "$im" > "$TMP/deb.out" 2>/dev/null; then
		t_expect "$n: dump.erofs -s fields as Debian's" \
			same_fields "$n -s" "$TMP/deb.out" "$OUT"
	else
		t_expect "$n: dump.erofs -s shape" grep -q '^Filesystem UUID: ' "$OUT"
	fi
	t_run ours "$DUMP" -S "$im"
	if dump.erofs -S "$im" > "$TMP/deb.out" 2>/dev/null; then
		head -n 14 "$TMP/deb.out" > "$TMP/deb14.out"
		t_expect "$n: dump.erofs -S counts as Debian's" \
			same_fields "$n -S" "$TMP/deb14.out" "$OUT"
	fi
	t_run fsck timeout "$tmo" "$FSCK" "$im"
	t_expect "$n: fsck.erofs exits 0" [ "$RC" -eq 0 ]
done

# -S of fragment images (Debian's 1.5 cannot read them): the packed
# inode's blocks count as file data, as dump.erofs 1.9.3 counts them.
# These lines are what 1.9.3's dump.erofs -S prints for the fixtures
# (made by 1.9.3, so fixed bytes); with a 1.9.3 dump.erofs at hand
# (DUMP_EROFS2, or dump/dump.erofs beside MKFS_EROFS2's mkfs/) the
# whole output is compared with it as well.
peer_dump=${DUMP_EROFS2:-}
[ -z "$peer_dump" ] && [ -n "${MKFS_EROFS2:-}" ] &&
	peer_dump=$(dirname "$MKFS_EROFS2")/../dump/dump.erofs
[ -n "$peer_dump" ] && [ -x "$peer_dump" ] ||
	{ peer_dump=; echo "SKIP: -S against dump.erofs 1.9.3 (set DUMP_EROFS2)"; }
while IFS='|' read -r name comp uncomp total rate; do
	t_fixture_unpack "$name" || continue
	t_run ours "$DUMP" -S "$img"
	t_expect "$name: dump.erofs -S as 1.9.3's ($rate)" eval '
		grep -qx "Filesystem compressed files: *$comp" "$OUT" &&
		grep -qx "Filesystem uncompressed files: *$uncomp" "$OUT" &&
		grep -qx "Filesystem total file size: *$total Bytes" "$OUT" &&
		grep -qx "Filesystem compress rate: *$rate" "$OUT"'
	if [ -n "$peer_dump" ]; then
		"$peer_dump" -S "$img" > "$TMP/peer.out" 2>&1
		t_expect "$name: dump.erofs -S, every line as 1.9.3's" \
			cmp -s "$TMP/peer.out" "$OUT"
	fi
done <<'EOF2'
all-fragments|1629|70|3751936|33.69%
fragments-dedupe|1629|70|1789952|16.07%
EOF2

# --path, --nid, -e: as Debian's, where 1.5 gets them right
im=$TMP/lz4hc-64k.img
for p in / /big/text_3m /links/hard1 /sizes /special; do
	t_run ours "$DUMP" -e --path="$p" "$im"
	dump.erofs -e --path="$p" "$im" > "$TMP/deb.out" 2>/dev/null || true
	t_expect "dump.erofs -e --path=$p as Debian's" cmp -s "$TMP/deb.out" "$OUT"
done
nid=$(sed -n 's/^NID: \([0-9]*\) .*/\1/p' "$TMP/ours.out" | head -n 1)
t_run ours "$DUMP" --nid="$nid" "$im"
t_expect "dump.erofs --nid names the path" grep -qx 'File : /special' "$OUT"
t_run ours "$DUMP" --nid=999999999 "$im"
t_expect "dump.erofs --nid of no inode fails" [ "$RC" -ne 0 ]
# a nid that is no inode (past the end, inside another inode, in the
# superblock) is the user's mistake: named as such, the image not
# called corrupt
for bad in 999999999 1; do
	t_run ours "$DUMP" --nid="$bad" "$im"
	t_expect "dump.erofs --nid=$bad: one line 'nid $bad is not an inode'" \
		said dump.erofs 1 "^dump.erofs: $im: nid $bad is not an inode"
	t_expect "dump.erofs --nid=$bad: one line, the image not called corrupt" \
		eval '[ "$(wc -l < "$ERR")" = 1 ] && ! grep -qi corrupt "$ERR"'
done
t_run ours "$DUMP" --path=/no/such "$im"
t_expect "dump.erofs --path of nothing fails" [ "$RC" -ne 0 ]

# --ls: the header, then every entry with its nid and type
t_run ls "$DUMP" --path=/special --ls "$im"
t_run ezls "$EZFS" ls "$im" /special
sed -n '/^       NID TYPE  FILENAME$/,$p' "$TMP/ls.out" | tail -n +2 |
	awk '$3 != "." && $3 != ".." { print $3 }' > "$TMP/ls.names"
t_expect "dump.erofs --ls lists the directory" cmp -s "$TMP/ls.names" "$TMP/ezls.out"
fifo=$(awk '$3 == "fifo" { print $1 " " $2 }' "$TMP/ls.out")
t_run st "$DUMP" --path=/special/fifo "$im"
t_expect "dump.erofs --ls: nid and type 5 of a FIFO" \
	[ "$fifo" = "$(sed -n 's/^NID: \([0-9]*\) .*/\1/p' "$TMP/st.out") 5" ]

# --cat: the bytes
t_run cat "$DUMP" --path=/big/text_3m --cat "$im"
want_sha=$(grep '"path": "big/text_3m"' "$SHARED/fixtures/lz4hc-64k.manifest.jsonl" |
	sed 's/.*"sha256": "\([0-9a-f]*\)".*/\1/')
t_expect "dump.erofs --cat writes the file" \
	[ "$(sha256sum < "$TMP/cat.out" | cut -d' ' -f1)" = "$want_sha" ]

# --blkid-udev
t_run udev "$DUMP" --blkid-udev "$im"
uuid=$(dump.erofs -s "$im" | sed -n 's/^Filesystem UUID: *//p')
t_expect "dump.erofs --blkid-udev: ID_FS_UUID" grep -qx "ID_FS_UUID=$uuid" "$TMP/udev.out"
t_expect "dump.erofs --blkid-udev: ID_FS_TYPE" grep -qx "ID_FS_TYPE=erofs" "$TMP/udev.out"
if command -v blkid >/dev/null && blkid -o udev -p "$im" > "$TMP/blkid.out" 2>/dev/null; then
	t_expect "dump.erofs --blkid-udev as blkid -o udev -p" \
		cmp -s <(sort "$TMP/blkid.out") <(sort "$TMP/udev.out")
fi

# --- fsck.erofs on damaged images -------------------------------------
cp "$im" "$TMP/bad1.img"
chmod u+w "$TMP/bad1.img"
printf '\0\0\0\0' | dd of="$TMP/bad1.img" bs=1 seek=1024 conv=notrunc 2>/dev/null
t_run fsck "$FSCK" "$TMP/bad1.img"
t_expect "fsck.erofs: no superblock, non-zero exit" [ "$RC" -ne 0 ]
# garbage over the second pcluster of big/text_3m
pa=$("$DUMP" -e --path=/big/text_3m "$im" | awk '$1 == "1:" { sub(/\.\..*/, "", $7); print $7 }')
cp "$im" "$TMP/bad2.img"
chmod u+w "$TMP/bad2.img"
head -c 4096 /dev/urandom | dd of="$TMP/bad2.img" bs=4096 seek=$((pa / 4096)) conv=notrunc 2>/dev/null
t_run fsck timeout "$tmo" "$FSCK" "$TMP/bad2.img"
t_expect "fsck.erofs: damaged pcluster at $pa, non-zero exit" [ "$RC" -ne 0 ]
t_run fsck timeout "$tmo" "$FSCK" --extract="$TMP/bx" "$TMP/bad2.img"
t_expect "fsck.erofs --extract: damaged pcluster, non-zero exit" [ "$RC" -ne 0 ]

# --no-sbcrc: an image whose stored superblock checksum is wrong (the
# field flipped, nothing else) is refused, as Debian's fsck.erofs refuses
# it, and checked with --no-sbcrc, as 1.9.3 does (DUMP_EROFS2's fsck/).
cp "$im" "$TMP/crc.img"
chmod u+w "$TMP/crc.img"
printf '\377' | dd of="$TMP/crc.img" bs=1 seek=1028 conv=notrunc 2>/dev/null
# (erofs-utils exits 0 after "failed to verify superblock checksum")
t_expect "Debian's fsck.erofs refuses the image with a flipped checksum" \
	eval 'fsck.erofs "$TMP/crc.img" 2>&1 | grep -q "verify superblock checksum"'

t_run fsck "$FSCK" "$TMP/crc.img"
t_expect "fsck.erofs: a superblock checksum mismatch, exit 1, one line" \
	eval '[ "$RC" = 1 ] && [ "$(wc -l < "$ERR")" = 1 ] && grep -q "checksum mismatch" "$ERR"'
t_run fsck timeout "$tmo" "$FSCK" --no-sbcrc "$TMP/crc.img"
t_expect "fsck.erofs --no-sbcrc: the rest of the image is clean (exit 0)" [ "$RC" = 0 ]
peer_fsck=${peer_dump:+$(dirname "$peer_dump")/fsck.erofs}
[ -n "$peer_fsck" ] && [ ! -x "$peer_fsck" ] && peer_fsck=$(dirname "$peer_dump")/../fsck/fsck.erofs
if [ -n "$peer_fsck" ] && [ -x "$peer_fsck" ]; then
	t_expect "1.9.3's fsck.erofs refuses it too" \
		eval '"$peer_fsck" "$TMP/crc.img" 2>&1 | grep -q "verify superblock checksum"'
	t_expect "1.9.3's fsck.erofs --no-sbcrc agrees: no error" \
		eval '"$peer_fsck" --no-sbcrc "$TMP/crc.img" 2>&1 >/dev/null | { ! grep -q .; }'
	t_expect "1.9.3's fsck.erofs --no-sbcrc agrees: exit 0" \
		eval '"$peer_fsck" --no-sbcrc "$TMP/crc.img" >/dev/null 2>&1'

fi
# --[no-]xattrs without --extract=X: accepted, as by 1.9.3 (ezfs checks
# every xattr anyway)
t_run fsck timeout "$tmo" "$FSCK" --xattrs "$im"
t_expect "fsck.erofs --xattrs without --extract=X exits 0" [ "$RC" = 0 ]
t_run fsck timeout "$tmo" "$FSCK" --no-xattrs "$im"
t_expect "fsck.erofs --no-xattrs without --extract=X exits 0" [ "$RC" = 0 ]

# --- fsck.erofs --extract ---------------------------------------------
if ! t_is_root; then
	echo "SKIP: extraction comparisons need root (owners, devices)"
	t_done
fi
strip_x() { python3 -c '
import json, sys
for l in open(sys.argv[1]):
    d = json.loads(l)
    d.pop("xattrs", None)
    for k in sys.argv[2:]:
        d.pop(k, None)
    print(json.dumps(d, sort_keys=True))' "$@"; }
norm() { python3 -c '
import json, sys
for l in open(sys.argv[1]):
    print(json.dumps(json.loads(l), sort_keys=True))' "$1"; }

for name in lz4hc-64k plain; do
	want=$SHARED/fixtures/$name.manifest.jsonl
	img=$TMP/$name.img
	rm -rf "$TMP/x"
	t_run x timeout "$tmo" "$FSCK" --extract="$TMP/x" "$img"
	t_expect "$name: fsck.erofs --extract exits 0" [ "$RC" -eq 0 ]
	strip_x "$want" > "$TMP/want.jsonl"
	t_manifest "$TMP/x" > "$TMP/got.raw"
	norm "$TMP/got.raw" > "$TMP/got.jsonl"
	t_same_manifest "$name: --extract, no xattrs by default" "$TMP/want.jsonl" "$TMP/got.jsonl"

	rm -rf "$TMP/x"
	t_run x timeout "$tmo" "$FSCK" --extract="$TMP/x" --xattrs "$img"
	t_manifest "$TMP/x" > "$TMP/got.jsonl"
	t_same_manifest "$name: --extract --xattrs" "$want" "$TMP/got.jsonl"

	# into a non-empty directory: refused without --overwrite
	t_run x timeout "$tmo" "$FSCK" --extract="$TMP/x" "$img"
	t_expect "$name: --extract into a full directory fails" [ "$RC" -ne 0 ]
	# deapexer's spelling
	t_run x timeout "$tmo" "$FSCK" --extract="$TMP/x" --overwrite \
		--no-preserve-owner "$img"
	t_expect "$name: --extract --overwrite --no-preserve-owner exits 0" [ "$RC" -eq 0 ]
	t_expect "$name: --no-preserve-owner: every file is root's" \
		[ -z "$(find "$TMP/x" ! -user 0 -print -quit)" ]

	rm -rf "$TMP/x"
	t_run x timeout "$tmo" "$EZFS" fsck --extract="$TMP/x" "$img"
	t_manifest "$TMP/x" > "$TMP/got.raw"
	norm "$TMP/got.raw" > "$TMP/got.jsonl"
	t_same_manifest "$name: ezfs fsck --extract" "$TMP/want.jsonl" "$TMP/got.jsonl"
done
# --path: only that directory's contents
rm -rf "$TMP/x"
t_run x timeout "$tmo" "$FSCK" --extract="$TMP/x" --path=/big "$TMP/lz4hc-64k.img"
t_expect "--extract --path=/big" cmp -s <(cd "$TMP/x" && ls) \
	<("$EZFS" ls "$TMP/lz4hc-64k.img" /big)
t_run x "$FSCK" --overwrite "$TMP/lz4hc-64k.img"
t_expect "--overwrite without --extract=X is a usage error" [ "$RC" -eq 2 ]
t_done
