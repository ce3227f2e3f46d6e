#!/bin/bash
# SPDX-License-Identifier: MIT
# mkfs-faults.sh - `ezfs mkfs` when things go wrong while it builds: an
# unreadable file or directory, a file that vanishes, shrinks, grows or
# fails to read between the scan and the data phase, a full disk, SIGINT
# and SIGTERM mid-build. Each case must exit non-zero (1; 130/143 for
# SIGINT/SIGTERM: the process re-raises the signal after its message),
# print exactly one error line naming the file and the reason, leave no
# image and no temporary file in the target folder, and never modify the
# source tree.
#
# Source changes come from an LD_PRELOAD shim (shim/faultshim.c, path in
# $EZFS_FAULTSHIM) at a fixed moment, not from timing. Parts needing root
# (a small tmpfs; another user for the unreadable file when running as
# root) print "skip: ..." and the rest still runs.
set -u
. "$(dirname "$0")/../lib.sh"
t_init
t_need_cmd sha256sum
SHIM=${EZFS_FAULTSHIM:-$(dirname "$EZFS")/../../tests/interop/ezfs_faultshim.so}
[ -f "$SHIM" ] || t_skip "no fault shim at $SHIM (build the ezfs_faultshim target)"
# The shim comes first in the library list; ASan builds must accept that.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"

src=$TMP/src
out=$TMP/out
pristine=$TMP/pristine

# The source: small and larger files (a tail each), a subfolder, a
# symlink; v/victim.bin is the file the faults hit.
mkdir -p "$pristine/sub" "$pristine/v"
echo hello >"$pristine/a.txt"
head -c 200000 /dev/urandom >"$pristine/big.bin"
seq 1 20000 >"$pristine/sub/numbers.txt"
head -c 70000 /dev/urandom >"$pristine/v/victim.bin"
seq 1 9000 >>"$pristine/v/victim.bin"
ln -s a.txt "$pristine/link"
touch -d @1600000000 "$pristine"/* "$pristine"/sub/* "$pristine"/v/*

fresh_src() {
	rm -rf "$src"
	cp -a "$pristine" "$src"
}

# The tree's names, types, modes, sizes, mtimes, link targets and
# contents (access times left out; what a non-root user cannot read in the
# unreadable cases is left out both times).
snapshot() {
	(cd "$1" && find . -printf '%p %y %m %s %T@ %l\n' 2>/dev/null | LC_ALL=C sort &&
		find . -type f -print0 2>/dev/null | LC_ALL=C sort -z |
		xargs -0 sha256sum 2>/dev/null)
}

mk() { "$EZFS" mkfs -q --no-fsync "$@"; }

# check NAME WANT_RC PATTERN [EXCLUDE]: judge the last t_run of mkfs into
# $out: exit status, one stderr line matching PATTERN, $out empty, and the
# source as in $TMP/before.snap (lines matching EXCLUDE left out).
check() {
	local name=$1 want=$2 pat=$3 excl=${4:-^$} ok=1 lines left
	if [ "$RC" -ne "$want" ]; then
		echo "  exit status $RC, expected $want"
		ok=0
	fi
	lines=$(wc -l <"$ERR")
	if [ "$lines" -ne 1 ]; then
		echo "  $lines lines on stderr, expected 1"
		ok=0
	fi
	if ! grep -qE -- "$pat" "$ERR"; then
		echo "  stderr does not match /$pat/"
		ok=0
	fi
	left=$(ls -A "$out" 2>/dev/null)
	if [ -n "$left" ]; then
		echo "  left in the target folder: $left"
		ok=0
	fi
	snapshot "$src" | grep -vE -- "$excl" >"$TMP/after.snap"
	grep -vE -- "$excl" "$TMP/before.snap" >"$TMP/before.f"
	if ! cmp -s "$TMP/before.f" "$TMP/after.snap"; then
		echo "  the source tree changed:"
		diff "$TMP/before.f" "$TMP/after.snap" | head -n 6
		ok=0
	fi
	if [ $ok = 1 ]; then
		t_pass "$name"
	else
		t_fail "$name"
		echo "  stderr: $(head -c 400 "$ERR")"
	fi
}

# start: a fresh source, an empty target folder, the snapshot.
start() {
	fresh_src
	rm -rf "$out"
	mkdir -p "$out"
	snapshot "$src" >"$TMP/before.snap"
}

# fault ACTION OPTS...: mkfs with the shim acting on v/victim.bin.
fault() {
	local a=$1
	shift
	t_run "fault-$a" env LD_PRELOAD="$SHIM" EZFS_FAULT="$a" \
		EZFS_FAULT_PATH=/v/victim.bin "$EZFS" mkfs -q --no-fsync "$@" \
		"$out/img" "$src"
}

# The shim must really act (a build with it and no fault is fine).
start
t_run shim-none env LD_PRELOAD="$SHIM" "$EZFS" mkfs -q --no-fsync "$out/img" "$src"
t_expect "a build with the shim loaded and no fault succeeds" [ "$RC" = 0 ] && rm -f "$out/img"

# The data phase reads files four ways: flat copy, compressed, chunked,
# packed into fragments. Every change must be caught by each.
victim='/v/victim\.bin'
for opts in "" "-z lz4" "-z lz4hc -C 16384 -E ztailpacking" \
	"--chunksize=8192" "-z lz4 -E all-fragments"; do
	what="[${opts:-plain}]"
	# shellcheck disable=SC2086
	{
		start
		fault vanish $opts
		check "vanished file $what" 1 "$victim.*(No such file|vanished)" '^\./v( |/)|v/victim'
		start
		fault shrink $opts
		check "shrunk file $what" 1 "$victim.*(shrank|changed)" 'v/victim'
		start
		fault grow $opts
		check "grown file $what" 1 "$victim.*(grew|changed)" 'v/victim'
		start
		fault eio $opts
		check "read error $what" 1 "$victim.*Input/output error"
	}
done

# A victim over 16 MiB is compressed in parts on two workers (split):
# still one error line, whichever parts meet the change; stored flat, its
# whole blocks are copied by copy_file_range (lib/write/data.c).
seq 1 2500000 >>"$pristine/v/victim.bin"
for how in "split|-z lz4" "flat, copied|"; do
	for a in shrink grow eio; do
		start
		# shellcheck disable=SC2086
		fault $a ${how#*|} --workers=2
		w="[${how%%|*}]"
		case $a in
		shrink) check "shrunk file $w" 1 "$victim.*(shrank|changed)" 'v/victim';;
		grow) check "grown file $w" 1 "$victim.*(grew|changed)" 'v/victim';;
		eio) check "read error $w" 1 "$victim.*Input/output error";;
		esac
	done
done
head -c 70000 /dev/urandom >"$pristine/v/victim.bin"
seq 1 9000 >>"$pristine/v/victim.bin"
touch -d @1600000000 "$pristine/v/victim.bin"

# Unreadable file and folder: as root, through another user (root reads
# anything); otherwise the mode is enough.
asuser=()
if t_is_root; then
	if command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
		asuser=(setpriv --reuid="$(id -u nobody)" --regid="$(id -g nobody)" --clear-groups)
		chmod 755 "$TMP"
	else
		asuser=(skip)
	fi
fi
if [ "${asuser[0]:-}" = skip ]; then
	echo "skip: unreadable file: running as root without setpriv or user nobody"
else
	for kind in file dir; do
		start
		if [ $kind = file ]; then
			chmod 000 "$src/v/victim.bin"
		else
			chmod 000 "$src/v"
		fi
		chmod 777 "$out"
		snapshot "$src" >"$TMP/before.snap"
		t_run unreadable "${asuser[@]}" "$EZFS" mkfs -q --no-fsync "$out/img" "$src"
		check "unreadable $kind" 1 "/v(/victim\.bin)?: .*Permission denied"
		chmod 755 "$src/v"
	done
	chmod 700 "$TMP"
fi

# A full disk: the image on a 1 MiB tmpfs, with O_TMPFILE and without
# (the shim refuses it, as some filesystems do).
if ! t_is_root; then
	echo "skip: full disk: needs root to mount a small tmpfs"
elif ! mkdir -p "$TMP/small" || ! mount -t tmpfs -o size=1m tmpfs "$TMP/small"; then
	echo "skip: full disk: cannot mount a tmpfs here"
else
	T_MOUNTS+=("$TMP/small")
	head -c 3000000 /dev/urandom >"$pristine/v/more.bin"
	for notmp in 0 1; do
		start
		rm -rf "$out"
		out=$TMP/small
		t_run full env LD_PRELOAD="$SHIM" EZFS_FAULT_NOTMPFILE=$notmp \
			"$EZFS" mkfs -q --no-fsync "$out/img" "$src"
		check "full disk$([ $notmp = 1 ] && echo ', no O_TMPFILE')" 1 \
			"small/img.*No space left on device"
		out=$TMP/out
	done
	rm -f "$pristine/v/more.bin"
	umount "$TMP/small"
fi

# --fsync: the image is synced before the rename, and a failing sync is
# an error like a failing write; by default (as mkfs.erofs) no sync.
start
t_run nosync env LD_PRELOAD="$SHIM" EZFS_FAULT_FSYNC=1 "$EZFS" mkfs -q \
	"$out/img" "$src"
t_expect "no fsync by default: a build with fsync failing succeeds" \
	[ "$RC" = 0 -a -s "$out/img" ]
for notmp in 0 1; do
	start
	t_run fsync env LD_PRELOAD="$SHIM" EZFS_FAULT_FSYNC=1 \
		EZFS_FAULT_NOTMPFILE=$notmp "$EZFS" mkfs -q --fsync "$out/img" "$src"
	check "--fsync, fsync failing$([ $notmp = 1 ] && echo ', no O_TMPFILE')" \
		1 "img.*fsync.*Input/output error"
done

# Signals mid-build. SIGINT from the shim when the data phase opens the
# victim (deterministic); SIGTERM from outside once the image file is
# open, on a build that takes a while.
for sig in sigint sigterm; do
	for notmp in 0 1; do
		start
		want=130
		[ $sig = sigterm ] && want=143
		t_run "$sig" env LD_PRELOAD="$SHIM" EZFS_FAULT=$sig \
			EZFS_FAULT_PATH=/v/victim.bin EZFS_FAULT_NOTMPFILE=$notmp \
			"$EZFS" mkfs -q --no-fsync -z lz4 "$out/img" "$src"
		check "$sig mid-build$([ $notmp = 1 ] && echo ', no O_TMPFILE')" \
			$want "img: interrupted"
	done
done

start
head -c 24000000 /dev/urandom >"$src/v/slow.bin"
snapshot "$src" >"$TMP/before.snap"
"$EZFS" mkfs -q --no-fsync -z lzma --workers=1 "$out/img" "$src" \
	>"$TMP/term.out" 2>"$TMP/term.err" &
pid=$!
# wait (at most 20 s) until mkfs has its output open in $out
out_open() {
	local f
	for f in "/proc/$pid/fd"/*; do
		case $(readlink "$f" 2>/dev/null) in "$out"/*) return 0 ;; esac
	done
	return 1
}
for _ in $(seq 200); do
	out_open && break
	sleep 0.1
done
if kill -TERM "$pid" 2>/dev/null; then
	RC=0
	wait "$pid" || RC=$?
	ERR=$TMP/term.err
	check "SIGTERM from outside mid-build" 143 "img: interrupted"
else
	wait "$pid"
	t_fail "SIGTERM from outside: the build ended before the signal"
fi

# Over an existing image: a failed build leaves it as it was; a complete
# one takes its name in one step (a reader that had the old one open
# still reads the old bytes), and nothing else is left in the folder.
start
mk "$out/img" "$src" || t_fail "replace: first build"
sha_old=$(sha256sum <"$out/img")
exec 7<"$out/img"
t_run "$EZFS" mkfs -q --no-fsync "$out/img" "$src/nonexistent"
if [ "$RC" -ne 0 ] && [ "$(sha256sum <"$out/img")" = "$sha_old" ] &&
	[ "$(ls -A "$out")" = img ]; then
	t_pass "replace: a failed build leaves the old image"
else
	t_fail "replace: rc $RC, folder: $(ls -A "$out" | tr '\n' ' ')"
fi
echo extra >"$src/added.txt"
if mk -T0 "$out/img" "$src" && [ "$(ls -A "$out")" = img ] &&
	[ "$(sha256sum <"$out/img")" != "$sha_old" ] &&
	[ "$(sha256sum <&7)" = "$sha_old" ] &&
	"$EZFS" cat "$out/img" /added.txt | grep -qx extra; then
	t_pass "replace: the new image in the old one's place"
else
	t_fail "replace: folder: $(ls -A "$out" | tr '\n' ' ')"
fi
exec 7<&-

t_done
