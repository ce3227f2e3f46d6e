#!/bin/bash
# SPDX-License-Identifier: MIT
# --json (docs/json.md): info, ls, stat, fsck, accel list|stats on every
# fixture validate against docs/schemas and agree with the manifests (ls -R
# sizes, modes, owners, mtimes; stat's xattrs; info's inode count = fsck's;
# info's minimum Linux as docs/kernels.md lists it); names that are not
# UTF-8 come out as U+FFFD plus a _hex twin; errors stay one line on
# stderr. Also mkfs --max-kernel (one line, no image) and the default block
# size.
#
# usage: tests/interop/json.sh [NAME...]     (default: every fixture)
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
t_init
t_need_fixtures
t_fixture_names "$@"

schemas=$SRC/docs/schemas
check=(python3 "$SRC/tests/interop/json-check.py")
tmo=${EZFS_TEST_TIMEOUT:-120}
if python3 -c 'import jsonschema' 2>/dev/null; then
	echo "validator: python3-jsonschema"
else
	echo "validator: json-check.py's own (python3-jsonschema is not installed)"
fi

# The oldest Linux of each fixture and the feature that sets it
# (docs/kernels.md).
declare -A kernel=(
	[48bit]="6.15 (48bit)" [all-fragments]="6.10 (zstd)"
	[bs1024]="6.8 (subpage_compressed)" [chunk-indexes]="5.15 (chunked_file)"
	[chunked]="5.15 (chunked_file)" [compact-inodes]="5.4 (base)"
	[deflate-16k]="6.6 (deflate)" [dir-compress]="5.4 (base)"
	[dir-compressed]="6.1 (fragments)" [dot-omitted]="6.15 (48bit)"
	[extended-inodes]="5.4 (base)" [fragments-dedupe]="6.1 (fragments)"
	[libdeflate-128k]="6.6 (deflate)" [lz4-4k]="5.4 (base)"
	[lz4hc-64k]="5.13 (big_pcluster)" [lzma-1m]="5.16 (lzma)"
	[metazone]="5.4 (base)" [plain-inline]="5.4 (base)" [plain]="5.4 (base)"
	[tar]="5.13 (big_pcluster)" [xattr-filter]="5.4 (base)"
	[zstd-256k]="6.10 (zstd)" [ztailpacking]="5.17 (ztailpacking)"
)

# run_json FILE CMD...: CMD's stdout into FILE; a failure is a FAIL line.
run_json() {
	local f=$1
	shift
	if ! timeout "$tmo" "$@" >"$f" 2>"$TMP/err"; then
		t_fail "$name: $* exited non-zero: $(head -c 300 "$TMP/err")"
	elif [ -s "$TMP/err" ]; then
		t_fail "$name: $* wrote to stderr: $(head -c 300 "$TMP/err")"
	fi
}

checks=()
for name in "${names[@]}"; do
	t_fixture_unpack "$name" || continue
	d=$TMP/out/$name
	mkdir -p "$d"
	run_json "$d/info.json" "$EZFS" info --json -S "$img"
	run_json "$d/ls.json" "$EZFS" ls --json -R "$img"
	run_json "$d/fsck.json" "$EZFS" fsck --json "$img"
	run_json "$d/accel.json" "$EZFS" accel stats --json "$img"
	# stat: the root, every entry with xattrs, symlinks and devices (in a
	# sanitizer build, every 8th: the same code on fewer processes); the
	# three largest files with their extents ("e" lines)
	i=0
	run_json "$d/stat-root.json" "$EZFS" stat --json "$img" /
	while IFS=$'\t' read -r how p; do
		i=$((i + 1))
		if [ "$how" = e ]; then
			run_json "$d/stat-$i.json" "$EZFS" stat --json -e "$img" "/$p"
		else
			run_json "$d/stat-$i.json" "$EZFS" stat --json "$img" "/$p"
		fi
	done < <(python3 -c '
import json, sys
es = [json.loads(l) for l in open(sys.argv[1])]
step = 8 if sys.argv[2] else 1
some = [e for e in es if e["path"] != "." and (e.get("xattrs") or e["type"] in "lcb")]
for e in some[::step]:
    print("s\t" + e["path"])
for e in sorted((e for e in es if e["type"] == "f"), key=lambda e: -e["size"])[:3]:
    print("e\t" + e["path"])' "$want" "${EZFS_SANITIZED:-}")
	exp=${kernel[$name]:-}
	if [ -z "$exp" ]; then
		t_fail "$name: no minimum Linux listed for it in this test"
		exp="?"
	fi
	t_run text "$EZFS" info "$img"
	re=${exp//./\\.}
	re=${re//\(/\\(}
	re=${re//\)/\\)}
	t_check "$name: info prints 'Minimum Linux: $exp'" 0 stdout \
		"^Minimum Linux: +$re\$"
	checks+=("$d" "$want" "$exp")
	rm -f "$img"
done

# json-check.py's verdicts on every fixture's outputs, in one run
if [ ${#checks[@]} -gt 0 ]; then
	rc=0
	"${check[@]}" fixture "$schemas" "${checks[@]}" >"$TMP/chk" || rc=$?
	while IFS= read -r line; do
		case $line in
		ok:*) t_pass "${line#ok: }" ;;
		FAIL:*) t_fail "${line#FAIL: }" ;;
		esac
	done <"$TMP/chk"
	[ $rc -le 1 ] || t_fail "json-check.py exited $rc"
fi

# fsck --json of a damaged image: its problems, not clean, exit 1
if [ -f "$SHARED/fixtures/lz4-4k.img.zst" ]; then
	zstd -q -d -f "$SHARED/fixtures/lz4-4k.img.zst" -o "$TMP/bad.img"
	python3 -c '
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(200000)
    f.write(b"\xff" * 4096)
    f.seek(1500000)
    f.write(b"\0" * 8192)' "$TMP/bad.img"
	t_run fbad "$EZFS" fsck --json "$TMP/bad.img"
	t_check "fsck --json of a damaged image: exit 1" 1 stderr "corrupt"
	"${check[@]}" validate "$schemas/fsck.json" "$OUT" >"$TMP/chk" || true
	if grep -q '^ok:' "$TMP/chk"; then
		t_pass "fsck --json of a damaged image: valid against fsck.json"
	else
		t_fail "fsck --json of a damaged image: $(head -c 300 "$TMP/chk")"
	fi
	t_expect "fsck --json of a damaged image: not clean, its problems listed with their paths" \
		python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(not (d["clean"] is False and d["problem_count"] == len(d["problems"]) > 0
              and all(p["path"] and p["message"] for p in d["problems"])))' "$OUT"
	rm -f "$TMP/bad.img"
fi

# accel list
d=$TMP/out
t_run alist "$EZFS" accel list --json --all
if [ "$RC" -eq 0 ]; then
	"${check[@]}" validate "$schemas/accel-list.json" "$OUT" >"$TMP/chk" || true
	if grep -q '^ok:' "$TMP/chk"; then
		t_pass "accel list --json --all: valid against accel-list.json"
	else
		t_fail "accel list --json: $(head -c 300 "$TMP/chk")"
	fi
	t_expect "accel list --json names the lz4 engine and the test engine" \
		python3 -c 'import json,sys; n={e["name"] for e in json.load(open(sys.argv[1]))["engines"]}; sys.exit(not {"lz4","fail"} <= n)' "$OUT"
else
	t_fail "accel list --json exited $RC"
fi

# Names, targets and xattr values that are not UTF-8, and control bytes
src=$TMP/src
mkdir -p "$src/d"
printf 'x' >"$src/d/$(printf 'bad\377name')"
# shellcheck disable=SC1003  # a backslash at the end of the name
printf 'y' >"$src/d/$(printf 'nl\nand\ttab"q\\')"
ln -s "$(printf 'to\376')" "$src/d/link"
t_run mk "$EZFS" mkfs -q "$TMP/n.img" "$src"
t_check "mkfs of odd names" 0
t_run lsn "$EZFS" ls --json "$TMP/n.img" /d
t_check "ls --json of odd names" 0
"${check[@]}" validate "$schemas/ls.json" "$OUT" >"$TMP/chk" || true
if grep -q '^ok:' "$TMP/chk"; then
	t_pass "ls --json of odd names: valid against ls.json"
else
	t_fail "ls --json of odd names: $(head -c 300 "$TMP/chk")"
fi
t_expect "a name not UTF-8: U+FFFD in name, its bytes in name_hex; a valid one has no name_hex" \
	python3 -c '
import json, sys
es = {e["name"]: e for e in json.load(open(sys.argv[1]))["entries"]}
b = es["bad\ufffdname"]
n = es["nl\nand\ttab\"q\\"]
l = es["link"]
sys.exit(not (b["name_hex"] == b"bad\xffname".hex() and "name_hex" not in n
              and l["target_hex"] == b"to\xfe".hex()
              and b["path_hex"] == b"/d/bad\xffname".hex()))' "$OUT"
t_expect "control bytes are escaped, never raw" \
	grep -qF '"nl\nand\ttab\"q\\"' "$OUT"
t_run statn "$EZFS" stat --json "$TMP/n.img" "/d/$(printf 'bad\377name')"
t_check "stat --json of a name not UTF-8" 0 stdout '"path_hex": "2f642f626164ff6e616d65"'

# accel stats --json of a running mount (root, /dev/fuse and FUSE built in)
if t_is_root && [ -c /dev/fuse ] && (exec 3<>/dev/fuse) 2>/dev/null &&
	"$EZFS" mount --help >/dev/null 2>&1; then
	if t_fuse_start "$TMP/n.img" "$TMP/daemon.log"; then
		cat "$MP/d/link" "$MP/d/$(printf 'bad\377name')" >/dev/null 2>&1 || true
		t_run mstats "$EZFS" accel stats --json "$MP"
		t_check "accel stats --json MOUNTPOINT" 0
		"${check[@]}" validate "$schemas/accel-stats-mount.json" "$OUT" >"$TMP/chk" || true
		if grep -q '^ok:' "$TMP/chk"; then
			t_pass "accel stats --json MOUNTPOINT: valid against accel-stats-mount.json"
		else
			t_fail "accel stats --json MOUNTPOINT: $(head -c 300 "$TMP/chk")"
		fi
		if t_fuse_stop; then
			t_pass "ezfs umount"
			# gone: nothing for t_cleanup to kill (a failed kill there
			# would end the script with 1 under set -e)
			T_PIDS=()
			T_MOUNTS=()
		else
			t_fail "ezfs umount"
		fi
	else
		t_fail "ezfs mount of the odd names' image"
	fi
else
	echo "SKIP: accel stats --json MOUNTPOINT needs root, /dev/fuse and ezfs mount"
fi

# Errors: one line on stderr, the exit status as without --json
printf 'not an image' >"$TMP/junk"
for c in info ls fsck "accel stats"; do
	# shellcheck disable=SC2086  # "accel stats" is two words on purpose
	t_run err "$EZFS" $c --json "$TMP/junk"
	t_check "$c --json of a non-image: exit 1" 1
	t_one_line "$c --json of a non-image: one line on stderr" "$ERR"
	t_expect "$c --json of a non-image: nothing on stdout" [ ! -s "$OUT" ]
done
t_run err "$EZFS" stat --json "$TMP/n.img" /missing
t_check "stat --json of a missing path: exit 1" 1
t_one_line "stat --json of a missing path: one line on stderr" "$ERR"
t_run err "$EZFS" ls --json "$TMP/n.img" /missing
t_check "ls --json of a missing path: exit 1" 1
t_one_line "ls --json of a missing path: one line on stderr" "$ERR"

# mkfs --max-kernel: one line naming the feature and its version, exit 2,
# no image; what the build decides: one line, exit 1, no image
echo data >"$src/a"
for args in "5.4 -E ztailpacking:5\.17 \(ztailpacking\)" "6.9 -zzstd:6\.10 \(zstd\)" \
	"6.7 -zlz4 -b1024:6\.8 \(subpage_compressed\)" "6.3 -b1024:6\.4 \(subpage_blocks\)" \
	"6.14 -E48bit:6\.15 \(48bit\)" "6.0 -zlz4hc -Efragments:6\.1 \(fragments\)" \
	"6.0 -zlz4hc -Ededupe:6\.1 \(dedupe\)" "5.12 -zlz4 -C65536:5\.13 \(big_pcluster\)" \
	"5.15 -zlzma:5\.16 \(lzma\)" "6.5 -zdeflate:6\.6 \(deflate\)" \
	"5.14 --chunksize=8192:5\.15 \(chunked_file\)"; do
	a=${args%%:*}
	pat=${args#*:}
	rm -f "$TMP/k.img"
	# shellcheck disable=SC2086  # options are words on purpose
	t_run maxk "$EZFS" mkfs -q --max-kernel=${a%% *} ${a#* } "$TMP/k.img" "$src"
	t_check "mkfs --max-kernel=$a: refused, exit 2" 2 stderr "$pat"
	t_one_line "mkfs --max-kernel=$a: one line" "$ERR"
	t_expect "mkfs --max-kernel=$a: no image" [ ! -e "$TMP/k.img" ]
done
head -c 200000 /dev/urandom | base64 >"$src/big"
echo "65536 .*" >"$TMP/hints"
t_run maxk "$EZFS" mkfs -q --max-kernel=5.12 -zlz4 --compress-hints="$TMP/hints" "$TMP/k.img" "$src"
t_check "mkfs --max-kernel=5.12 with hints of 64 KiB pclusters: exit 1 after the build" 1 stderr '5\.13 \(big_pcluster'
t_one_line "mkfs --max-kernel=5.12, hints: one line" "$ERR"
t_expect "mkfs --max-kernel=5.12, hints: no image" [ ! -e "$TMP/k.img" ]
for args in "5.17 -zlz4hc -Eztailpacking:5.17" "6.10 -zzstd:6.10" "5.4 -zlz4:5.4" \
	"6.8 -zlz4 -b1024:6.8" "6.1 -zlz4hc -C16384 -Efragments,dedupe:6.1"; do
	a=${args%%:*}
	rm -f "$TMP/k.img"
	# shellcheck disable=SC2086
	t_run maxk "$EZFS" mkfs -q --max-kernel=${a%% *} ${a#* } "$TMP/k.img" "$src"
	t_check "mkfs --max-kernel=$a: built" 0
	t_run kinfo "$EZFS" info --json "$TMP/k.img"
	t_check "mkfs --max-kernel=$a: info --json says ${args#*:} at most" 0 stdout \
		"\"version\": \"${args#*:}\""
done
t_run maxk "$EZFS" mkfs -q --max-kernel=five "$TMP/k.img" "$src"
t_check "mkfs --max-kernel=five: usage error" 2 stderr "not a version"
# The default block size is 4096 whatever the host's page size
rm -f "$TMP/k.img"
t_run mk "$EZFS" mkfs -q -zlz4 "$TMP/k.img" "$src"
t_run kinfo "$EZFS" info --json "$TMP/k.img"
t_check "the default block size is 4096 (page size here $(getconf PAGESIZE))" 0 \
	stdout '"block_size": 4096'

t_run ver "$EZFS" --version
t_check "--version lists the engines and features" 0 stdout '^engines: lz4 \(liblz4 [0-9]' \
	stdout '^features: .*[+-]zstd.*[+-]fuse'
t_done
