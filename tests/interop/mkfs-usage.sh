#!/bin/bash
# SPDX-License-Identifier: MIT
# ezfs mkfs at the edges of its command line and of IMAGE: usage errors
# (one line naming the option and the valid range, the "Try" hint, exit
# 2, no image), -j/--jobs/--workers, IMAGE a directory, in a missing
# directory, a FIFO or character device (refused, left as they are), a
# symlink (written through), a block device (written in place; the kernel
# mounts it), the mode of new and replaced images, and SIGHUP ignored at
# startup (nohup). A few seconds.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
t_init

src=$TMP/src
mkdir -p "$src/sub/deep"
echo hello >"$src/a.txt"
seq 1 20000 >"$src/sub/numbers"
head -c 5000 /dev/zero >"$src/sub/deep/zeros"
ln -s a.txt "$src/link"

# check WHAT WANT_RC [PATTERN]: exit status of the last t_run, stderr
# matching PATTERN; for status 2 also exactly the error and the hint line.
check() {
	local what=$1 want=$2 pat=${3:-} ok=1 n
	n=$(wc -l <"$ERR")
	[ "$RC" = "$want" ] || { ok=0; echo "  exit status $RC, expected $want"; }
	if [ -n "$pat" ] && ! grep -qE -- "$pat" "$ERR"; then
		ok=0
		echo "  stderr does not match /$pat/"
	fi
	if [ "$want" = 2 ]; then
		[ "$n" = 2 ] && tail -n 1 "$ERR" | grep -qx "Try 'ezfs mkfs --help'." ||
			{ ok=0; echo "  not one error line and the hint ($n lines)"; }
	elif [ "$want" != 0 ] && [ "$n" != 1 ]; then
		ok=0
		echo "  $n lines on stderr, expected 1"
	fi
	if [ $ok = 1 ]; then
		t_pass "$what"
	else
		t_fail "$what"
		sed 's/^/  stderr: /' "$ERR" | head -n 4
	fi
}

# usage WANT_PATTERN ARGS...: `ezfs mkfs ARGS IMAGE SRC` is a usage error
usage() {
	local pat=$1
	shift
	rm -f "$TMP/u.img"
	t_run usage "$EZFS" mkfs -q "$@" "$TMP/u.img" "$src"
	check "usage: $*" 2 "$pat"
	if [ -e "$TMP/u.img" ] || ls -A "$TMP" | grep -q '^\.u\.img'; then
		t_fail "usage: $*: an image was left"
	fi
}

# --- option values ---
usage '^ezfs mkfs: -z lz4hc: level 99 out of range \(0\.\.12\)$' -z lz4hc,99
usage '-z lz4hc: level 13 out of range \(0\.\.12\)' -z lz4hc,level=13
usage '-z zstd: level 23 out of range \(-131072\.\.22\)' -z zstd,23
usage '-z lz4: level 5 out of range \(0\)' -z lz4,5
usage '-z lzma: level 10 out of range \(0\.\.9, or 100\.\.109' -z lzma,10
usage '-z lzma: level 110 out of range' -z lzma,110
usage '-z deflate: level 13 out of range \(0\.\.12\)' -z deflate,13
usage '-z libdeflate: level 13 out of range \(0\.\.12\)' -z libdeflate,13
usage '-z lzma: level 123456789012345678901 out of range' \
	-z lz4:lzma,123456789012345678901
usage "bad -z 'lz4,x'" -z lz4,x
usage '-b 8192: .*512\.\.4096' -b 8192
usage '-b 1000: .*power of two in 512\.\.4096' -b 1000
usage '-C 3000: .*multiple of the block size \(4096\) up to 1048576' \
	-C 3000 -z lz4
usage '-C 3000: .*multiple of the block size' -C 3000
usage '-C 2048: .*multiple of the block size \(4096\)' -z lz4 -C 2048
usage '-C 2097152: .*up to 1048576' -z lz4 -C 2097152
usage "--exclude-regex '\(': not a POSIX extended regex" --exclude-regex='('
usage "--chunksize 2048: less than the block size \(4096\)" --chunksize=2048
usage "--chunksize '3000': not a power of two" --chunksize=3000
usage "-x 'abc': not an integer in -2147483648\.\.2147483647" -x abc
usage "-x '99999999999999999999': not an integer" -x 99999999999999999999
usage "-E '': empty option" -E ''
usage "-E 'ztailpacking,,dedupe': empty option" -E ztailpacking,,dedupe
usage "unknown -E option 'nosuch'" -E nosuch
usage "unknown -E option 'nosuch'" -E ztailpacking,nosuch
usage "exclude each other" -E force-inode-compact,force-inode-extended
usage "unknown option '--bogus'" --bogus
usage "unknown option '-y'" -y
usage "-j: bad thread count '0' \(1\.\.1024\)" -j 0
usage "--jobs: bad thread count 'x' \(1\.\.1024\)" --jobs=x
usage "--workers: bad thread count '2000' \(1\.\.1024\)" --workers=2000
if grep -q '(null)' "$TMP"/usage.err; then
	t_fail "a message says (null)"
fi

# --- accepted values ---
ok_build() {
	local what=$1
	shift
	rm -f "$TMP/ok.img"
	t_run ok "$EZFS" mkfs -q "$@" "$TMP/ok.img" "$src"
	if [ "$RC" = 0 ] && "$EZFS" fsck -q "$TMP/ok.img" >/dev/null 2>&1; then
		t_pass "$what"
	else
		t_fail "$what: rc=$RC $(head -c 300 "$ERR")"
	fi
}
ok_build "-j 2" -j 2 -z lz4
ok_build "--jobs=1" --jobs=1 -z lz4hc,12
ok_build "--workers=2 (as mkfs.erofs)" --workers=2 -z lzma,109
ok_build "-x -1, -z zstd,22, -z deflate,12" -x -1 -z zstd,22:deflate,12
ok_build "-b 512 -C 1536" -b 512 -C 1536 -z lz4hc
ok_build "-C 4096 without -z" -C 4096

# --- IMAGE and SOURCEDIR ---
mkdir "$TMP/imgdir"
t_run imgdir "$EZFS" mkfs -q "$TMP/imgdir" "$src"
check "IMAGE a directory" 1 "^ezfs mkfs: $TMP/imgdir: Is a directory$"
t_run nodir "$EZFS" mkfs -q "$TMP/nonexist/x.img" "$src"
check "IMAGE in a missing directory: names IMAGE" 1 \
	"^ezfs mkfs: $TMP/nonexist/x.img: No such file or directory$"
t_run nosrc "$EZFS" mkfs -q "$TMP/n.img" "$TMP/nosuch"
check "missing SOURCEDIR" 1 "$TMP/nosuch: No such file or directory"
t_run filesrc "$EZFS" mkfs -q "$TMP/n.img" "$src/a.txt"
check "SOURCEDIR a file" 1 "$src/a.txt"
if [ -e "$TMP/n.img" ]; then
	t_fail "an image was left after a bad SOURCEDIR"
fi
mkdir -m 0 "$TMP/locked"
if t_is_root && command -v setpriv >/dev/null; then
	chmod 1777 "$TMP"
	t_run locked setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$EZFS" mkfs -q "$TMP/l.img" "$TMP/locked"
	chmod 0700 "$TMP"
	check "unreadable SOURCEDIR" 1 "$TMP/locked: .*Permission denied"
elif ! t_is_root; then
	t_run locked "$EZFS" mkfs -q "$TMP/l.img" "$TMP/locked"
	check "unreadable SOURCEDIR" 1 "$TMP/locked: .*Permission denied"
else
	echo "SKIP: unreadable SOURCEDIR (root without setpriv)"
fi

mkfifo "$TMP/fifo"
t_run fifo "$EZFS" mkfs -q "$TMP/fifo" "$src"
check "IMAGE a FIFO: refused" 1 "$TMP/fifo: a FIFO, not a regular file"
t_expect "the FIFO stays a FIFO" [ -p "$TMP/fifo" ]
if t_is_root && mknod "$TMP/null" c 1 3 2>/dev/null; then
	t_run chr "$EZFS" mkfs -q "$TMP/null" "$src"
	check "IMAGE a character device: refused" 1 \
		"$TMP/null: a character device, not a regular file"
	t_expect "the character device stays one" [ -c "$TMP/null" ]
else
	echo "SKIP: IMAGE a character device (needs root for mknod)"
fi

# symlinks: written through to their target, which keeps its mode
mkdir "$TMP/real"
"$EZFS" mkfs -q "$TMP/real/r.img" "$src"
chmod 0604 "$TMP/real/r.img"
ln -s real/r.img "$TMP/link.img"
ln -s real/new.img "$TMP/dangling.img"
ln -s link.img "$TMP/link2.img"
t_run link "$EZFS" mkfs -q "$TMP/link2.img" "$src"
if [ "$RC" = 0 ] && [ -L "$TMP/link2.img" ] && [ -L "$TMP/link.img" ] &&
   [ "$(stat -c %a "$TMP/real/r.img")" = 604 ] &&
   "$EZFS" fsck -q "$TMP/real/r.img" >/dev/null 2>&1 &&
   ! ls -A "$TMP/real" | grep -q '^\.'; then
	t_pass "a chain of symlinks: the target is rebuilt, the links stay"
else
	t_fail "symlinked IMAGE: rc=$RC $(ls -l "$TMP" "$TMP/real" | tr '\n' ' ')"
fi
t_run dangling "$EZFS" mkfs -q "$TMP/dangling.img" "$src"
if [ "$RC" = 0 ] && [ -L "$TMP/dangling.img" ] && [ -f "$TMP/real/new.img" ]; then
	t_pass "a dangling symlink: its target is created"
else
	t_fail "dangling symlink: rc=$RC $(ls -l "$TMP" | tr '\n' ' ')"
fi

# modes: a new image gets 0666 less the umask; a replaced one keeps its
# mode (and owner)
(umask 077 && "$EZFS" mkfs -q "$TMP/m1.img" "$src")
(umask 022 && "$EZFS" mkfs -q "$TMP/m2.img" "$src")
(umask 002 && "$EZFS" mkfs -q "$TMP/m3.img" "$src")
t_expect "new image under umask 077: 0600" [ "$(stat -c %a "$TMP/m1.img")" = 600 ]
t_expect "new image under umask 022: 0644" [ "$(stat -c %a "$TMP/m2.img")" = 644 ]
t_expect "new image under umask 002: 0664" [ "$(stat -c %a "$TMP/m3.img")" = 664 ]
chmod 0640 "$TMP/m2.img"
owner=
if t_is_root; then
	chown 1234:5678 "$TMP/m2.img"
	owner=" and owner"
fi
want=$(stat -c %a:%u:%g "$TMP/m2.img")
(umask 077 && "$EZFS" mkfs -q "$TMP/m2.img" "$src")
t_expect "a replaced image keeps its mode$owner ($want)" \
	[ "$(stat -c %a:%u:%g "$TMP/m2.img")" = "$want" ]

# SIGHUP ignored at startup (nohup) stays ignored; SIGTERM still ends it.
# The tar source is a FIFO, so mkfs waits for it with its handlers set.
if command -v tar >/dev/null; then
	tar -C "$src" -cf "$TMP/src.tar" .
	# hup SIG IGNORE: start mkfs --tar on a FIFO (SIGHUP ignored when
	# IGNORE=1), send SIG once its signal thread is up, then feed it
	hup() {
		local sig=$1 ign=$2 pid i
		rm -f "$TMP/in.fifo" "$TMP/h.img"
		mkfifo "$TMP/in.fifo"
		if [ "$ign" = 1 ]; then
			(trap '' HUP && exec "$EZFS" mkfs -q --tar "$TMP/h.img" \
				"$TMP/in.fifo") 2>"$TMP/hup.err" &
		else
			"$EZFS" mkfs -q --tar "$TMP/h.img" "$TMP/in.fifo" \
				2>"$TMP/hup.err" &
		fi
		pid=$!
		for i in $(seq 100); do
			[ "$(ls "/proc/$pid/task" 2>/dev/null | wc -l)" -ge 2 ] && break
			sleep 0.05
		done
		kill -s "$sig" "$pid"
		sleep 0.2
		# feed it unless it is gone (then opening the FIFO would hang)
		if kill -0 "$pid" 2>/dev/null; then
			timeout 10 cat "$TMP/src.tar" >"$TMP/in.fifo" 2>/dev/null || true
		fi
		RC=0
		wait "$pid" 2>/dev/null || RC=$?
	}
	hup HUP 1
	if [ "$RC" = 0 ] && "$EZFS" fsck -q "$TMP/h.img" >/dev/null 2>&1; then
		t_pass "SIGHUP ignored at startup: mkfs goes on, exit 0"
	else
		t_fail "SIGHUP ignored at startup: rc=$RC $(head -c 200 "$TMP/hup.err")"
	fi
	hup TERM 1
	if [ "$RC" = 143 ] && [ ! -e "$TMP/h.img" ] &&
	   grep -q 'interrupted' "$TMP/hup.err"; then
		t_pass "SIGTERM still interrupts it: exit 143, no image"
	else
		t_fail "SIGTERM: rc=$RC $(head -c 200 "$TMP/hup.err")"
	fi
	hup HUP 0 2>/dev/null # no "Hangup" job line
	t_expect "SIGHUP not ignored: interrupted, exit 129 ($RC)" [ "$RC" = 129 ]
else
	echo "SKIP: SIGHUP under nohup (no tar to make the source)"
fi

# --- a block device: written in place, mounted by the kernel ---
LOOPS=()
# still_blk DEV NODE: DEV is still the block device NODE (stat -c %t:%T:%a
# of it before); a mkfs that turned it into a file gets it put back
still_blk() {
	local t min mode
	[ -b "$1" ] && return 0
	IFS=: read -r t min mode <<<"$2"
	rm -f "$1" && mknod -m "$mode" "$1" b $((16#$t)) $((16#$min))
	return 1
}
cleanup_loops() {
	local l
	for l in "${LOOPS[@]}"; do
		mountpoint -q "$TMP/bmnt" 2>/dev/null && umount "$TMP/bmnt"
		losetup -d "$l" 2>/dev/null || true
	done
	t_cleanup
}
trap cleanup_loops EXIT
if ! t_is_root; then
	echo "SKIP: block device IMAGE (not root)"
elif ! command -v losetup >/dev/null; then
	echo "SKIP: block device IMAGE (no losetup)"
elif [ ! -f "$SHARED/tools/manifest.py" ]; then
	echo "SKIP: block device IMAGE (no shared manifest.py at $SHARED)"
elif ! t_can_kmount; then
	echo "SKIP: block device IMAGE (the kernel cannot mount erofs here)"
elif ! head -c 8M /dev/urandom >"$TMP/back" ||
     ! loop=$(losetup -f --show "$TMP/back" 2>/dev/null); then
	echo "SKIP: block device IMAGE (no free loop device)"
else
	LOOPS+=("$loop")
	node=$(stat -c %t:%T:%a "$loop")
	t_run blk "$EZFS" mkfs -q -z lz4hc -T 1 --mkfs-time \
		-U 01234567-89ab-cdef-0123-456789abcdef "$loop" "$src"
	check "mkfs $loop: exit 0" 0
	t_expect "$loop is still a block device" still_blk "$loop" "$node"
	mkdir -p "$TMP/bmnt"
	if mount -t erofs -o ro "$loop" "$TMP/bmnt" 2>"$TMP/mount.err"; then
		t_manifest "$src" >"$TMP/want.json"
		t_manifest "$TMP/bmnt" >"$TMP/got.json"
		umount "$TMP/bmnt"
		t_same_manifest "kernel mount of $loop" "$TMP/want.json" "$TMP/got.json"
	else
		t_fail "mount -t erofs $loop: $(cat "$TMP/mount.err")"
	fi
	# the device holds the bytes of the same image built into a file
	# (gaps zeroed over the old contents)
	"$EZFS" mkfs -q -z lz4hc -T 1 --mkfs-time -U 01234567-89ab-cdef-0123-456789abcdef \
		"$TMP/same.img" "$src"
	t_expect "$loop holds the file image's bytes" \
		cmp -s -n "$(stat -c %s "$TMP/same.img")" "$TMP/same.img" "$loop"
	# a device too small for the image
	head -c 8192 /dev/zero >"$TMP/small"
	if small=$(losetup -f --show "$TMP/small" 2>/dev/null); then
		LOOPS+=("$small")
		node=$(stat -c %t:%T:%a "$small")
		t_run small "$EZFS" mkfs -q "$small" "$src"
		check "a device smaller than the image: refused" 1 \
			"$small: the image is larger than the device \(8192 bytes\)"
		t_expect "$small is still a block device" still_blk "$small" "$node"
	else
		echo "SKIP: too small a device (no second loop device)"
	fi
fi
t_done
