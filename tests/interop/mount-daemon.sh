#!/bin/bash
# SPDX-License-Identifier: MIT
# ezfs mount in the background (no -f), and the command line around it:
# - every fixture through a daemonized mount with each dispatch mode
#   (inline, queue:2, percpu) describes exactly like its manifest, and
#   after `ezfs umount` the daemon is gone within 2 s (the decode workers
#   of queue and percpu were started before the fork, so the daemon had
#   none and its first compressed read hung);
# - a daemon whose read is stuck (its image lies on a FUSE mount whose
#   daemon is stopped) still ends on SIGTERM, and on umount;
# - st_blocks of every file equals the kernel mount's;
# - log lines of a background mount: --log FILE, and the kernel log when
#   no syslog daemon listens on /dev/log;
# - a mount point that is not a directory, a missing image, ezfs umount of
#   what is not an ezfs mount, unknown options: one line, the exit status;
# - `ezfs mount --help` and docs/mount.md name every -o option the parser
#   takes.
#
# Environment: EZFS (or EZFS_BIN), SRC (or EZFS_SRC), EZFS_SHARED as for
# tests/lib.sh; MOUNT_DAEMON_FIXTURES="a b" limits the fixtures.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
t_init

t_need_fuse
t_need_fixtures
MP=$TMP/mnt
mkdir -p "$MP"
T_MOUNTS+=("$MP")

# The pid of the process whose command line is exactly "$@" (read with
# bash's own mapfile: a process per /proc entry took minutes on a busy
# machine).
cmd_pid() {
	local p args

	for p in /proc/[0-9]*; do
		mapfile -d '' -t args 2>/dev/null <"$p/cmdline" || continue
		[ ${#args[@]} = $# ] && [ "${args[*]}" = "$*" ] || continue
		echo "${p#/proc/}"
		return 0
	done
	return 1
}

# Is pid still running? A zombie is gone: an orphaned daemon's exit
# status waits for PID 1 to collect it, which may take a while.
alive() {
	local st

	st=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 1
	[ -n "$st" ] && [ "$st" != Z ]
}

# gone_within PID SECONDS: true once pid is gone, false after SECONDS.
gone_within() {
	local i n

	n=$(awk -v s="$2" 'BEGIN { print int(s * 20) }')
	for ((i = 0; i < n; i++)); do
		alive "$1" || return 0
		sleep 0.05
	done
	! alive "$1"
}

# dmount NAME MP IMG ARGS...: `ezfs mount ARGS IMG MP` in the background;
# sets DPID to the daemon's pid. False (with a line) unless it is mounted.
dmount() {
	local name=$1 mp=$2 img=$3
	shift 3
	DPID=
	if ! "$EZFS" mount "$@" "$img" "$mp" 2>"$TMP/dm.err"; then
		t_fail "$name: mount: $(head -c 300 "$TMP/dm.err")"
		return 1
	fi
	DPID=$(cmd_pid "$EZFS" mount "$@" "$img" "$mp")
	[ -n "$DPID" ] && T_PIDS+=("$DPID")
	if ! mountpoint -q "$mp"; then
		t_fail "$name: not mounted after the command returned"
		return 1
	fi
	return 0
}

# dumount NAME MP: ezfs umount returns 0 and the daemon is gone in 2 s.
dumount() {
	local name=$1 mp=$2 rc=0

	timeout 10 "$EZFS" umount "$mp" 2>"$TMP/du.err" || rc=$?
	if [ $rc != 0 ]; then
		t_fail "$name: ezfs umount rc=$rc: $(head -c 200 "$TMP/du.err")"
		umount -l "$mp" 2>/dev/null
	fi
	if [ -z "$DPID" ]; then
		t_fail "$name: no daemon process found"
	elif gone_within "$DPID" 2; then
		[ $rc = 0 ] && t_pass "$name: umount, daemon gone within 2 s"
	else
		t_fail "$name: daemon $DPID still running 2 s after umount"
		kill -KILL "$DPID" 2>/dev/null
	fi
}

t_fixture_names ${MOUNT_DAEMON_FIXTURES:-}

# --- every fixture, every dispatch mode, daemonized -------------------
# (a sanitizer build: each fixture in one of the modes, in turn)
f=0
for n in "${names[@]}"; do
	t_fixture_unpack "$n" || continue
	f=$((f + 1))
	m=0
	for d in inline queue:2 percpu; do
		m=$((m + 1))
		t_sanitized && [ $(((f + m) % 3)) != 0 ] && continue
		name="$n [dispatch=$d, daemon]"
		dmount "$name" "$MP" "$img" -o dispatch="$d" || continue
		rc=0
		timeout 60 python3 "$SHARED/tools/manifest.py" "$MP" \
			>"$TMP/got.json" 2>"$TMP/got.err" || rc=$?
		if [ $rc = 124 ]; then
			t_fail "$name: manifest: no answer in 60 s (a read hangs)"
		elif [ $rc != 0 ]; then
			t_fail "$name: manifest rc=$rc: $(head -c 200 "$TMP/got.err")"
		else
			t_same_manifest "$name: manifest" "$want" "$TMP/got.json"
		fi
		dumount "$name" "$MP"
	done
	[ "$n" = lz4-4k ] || rm -f "$img"
done

# --- a stuck read: SIGTERM and umount still end the daemon -------------
# The image lies on a second ezfs mount (-f, plain image built by
# mkfs.erofs) whose daemon gets SIGSTOP: the outer daemon's read of the
# image then waits for it, killably, until it is continued.
stuck_check() {
	local how=$1 outer=$TMP/outer.img m1=$TMP/m1 m2=$TMP/m2 d1 tp rc

	mkdir -p "$m1" "$m2"
	T_MOUNTS+=("$m1" "$m2")
	"$EZFS" mount -f "$outer" "$m1" 2>"$TMP/d1.err" &
	d1=$!
	T_PIDS+=("$d1")
	for _ in $(seq 100); do
		mountpoint -q "$m1" && break
		sleep 0.1
	done
	if ! dmount "stuck read ($how)" "$m2" "$m1/inner.img" \
		--log "$TMP/stuck.log"; then
		kill "$d1"
		wait "$d1"
		return
	fi
	stat "$m2/big/text_3m" >/dev/null
	kill -STOP "$d1"
	echo 1 >/proc/sys/vm/drop_caches
	timeout -s KILL 30 cat "$m2/big/text_3m" >/dev/null 2>&1 &
	tp=$!
	sleep 1
	if ! kill -0 "$tp" 2>/dev/null; then
		echo "note: stuck read ($how): the read was not stuck; not checked"
		kill -CONT "$d1"
		dumount "stuck read ($how) unstuck" "$m2"
	elif [ "$how" = SIGTERM ]; then
		kill -TERM "$DPID"
		if gone_within "$DPID" 3; then
			t_pass "stuck read: SIGTERM ends the daemon within 3 s"
		else
			t_fail "stuck read: daemon alive 3 s after SIGTERM"
		fi
		t_expect "stuck read: SIGTERM: a log line says why" \
			grep -q "still busy" "$TMP/stuck.log"
		t_expect "stuck read: SIGTERM: the mount is gone" \
			bash -c "! mountpoint -q '$m2'"
	else
		# the reader holds the file open: kill it, then umount
		kill -KILL "$(pgrep -P "$tp")" 2>/dev/null
		wait "$tp" 2>/dev/null
		rc=0
		timeout 10 "$EZFS" umount "$m2" 2>"$TMP/du.err" || rc=$?
		t_expect "stuck read: ezfs umount returns 0 ($(head -c 100 "$TMP/du.err"))" \
			test $rc = 0
		if gone_within "$DPID" 3; then
			t_pass "stuck read: daemon gone within 3 s of umount"
		else
			t_fail "stuck read: daemon alive 3 s after umount"
		fi
	fi
	kill -KILL "$DPID" 2>/dev/null
	umount -l "$m2" 2>/dev/null
	kill -CONT "$d1"
	kill -KILL "$(pgrep -P "$tp")" 2>/dev/null
	wait "$tp" 2>/dev/null
	"$EZFS" umount "$m1" || umount -l "$m1"
	wait "$d1"
}

if [ -f "$TMP/lz4-4k.img" ] && command -v mkfs.erofs >/dev/null &&
   command -v pgrep >/dev/null; then
	mkdir -p "$TMP/outer.d"
	cp "$TMP/lz4-4k.img" "$TMP/outer.d/inner.img"
	if mkfs.erofs --quiet "$TMP/outer.img" "$TMP/outer.d" >/dev/null 2>&1; then
		stuck_check SIGTERM
		stuck_check umount
	else
		echo "SKIP: stuck read: mkfs.erofs failed"
	fi
	rm -rf "$TMP/outer.d" "$TMP/outer.img"
else
	echo "SKIP: stuck read: needs the lz4-4k fixture, mkfs.erofs, pgrep"
fi

# --- st_blocks: what the kernel's driver reports -------------------------
# find -printf %b is st_blocks (512-byte units).
if t_can_kmount; then
	for n in plain plain-inline lz4-4k zstd-256k dir-compressed \
		 all-fragments bs1024 48bit chunked; do
		[ -f "$SHARED/fixtures/$n.img.zst" ] || continue
		t_fixture_unpack "$n" || continue
		if ! t_kmount "$img" "$TMP/kmnt"; then
			echo "note: st_blocks: the kernel refused $n"
			rm -f "$img"
			continue
		fi
		(cd "$TMP/kmnt" && find . -printf '%p %b\n' | sort) >"$TMP/kb"
		t_kumount "$TMP/kmnt"
		if dmount "$n: st_blocks" "$MP" "$img"; then
			(cd "$MP" && find . -printf '%p %b\n' | sort) >"$TMP/fb"
			if cmp -s "$TMP/kb" "$TMP/fb"; then
				t_pass "$n: st_blocks of every file as the kernel's ($(wc -l <"$TMP/kb") files, du $(du -s "$MP" | cut -f1))"
			else
				t_fail "$n: st_blocks differ from the kernel's (- kernel, + ezfs):"
				diff -U0 "$TMP/kb" "$TMP/fb" | grep '^[-+][^-+]' | head -n 6
			fi
			dumount "$n: st_blocks" "$MP"
		fi
		[ "$n" = lz4-4k ] || rm -f "$img"
	done
else
	echo "SKIP: st_blocks against the kernel: it cannot mount erofs here"
fi

# --- log lines of a background mount -----------------------------------
# A corrupt pcluster makes one log line (mount.sh checks it with -f).
cimg=
if [ -f "$TMP/lz4-4k.img" ]; then
	pa=$("$EZFS" stat -e "$TMP/lz4-4k.img" /big/text_3m 2>/dev/null |
	     awk '$NF ~ /encoded/ { n++; if (n == 10) print $2 }')
	if [ -n "$pa" ]; then
		cimg=$TMP/corrupt.img
		cp "$TMP/lz4-4k.img" "$cimg"
		python3 - "$cimg" "$pa" <<'PY'
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(int(sys.argv[2]))
    f.write(b"\xff" * 4096)
PY
	fi
fi
if [ -n "$cimg" ]; then
	rm -f "$TMP/bg.log"
	if dmount "--log FILE" "$MP" "$cimg" --log "$TMP/bg.log" -o prefetch=0; then
		cat "$MP/big/text_3m" >/dev/null 2>&1
		t_expect "--log FILE: the daemon's line is in FILE ($(head -n 1 "$TMP/bg.log" | head -c 200))" \
			grep -q "ezfs\[$DPID\]: .*nid" "$TMP/bg.log"
		dumount "--log FILE" "$MP"
	fi
	if python3 - <<'PY'
import socket, sys
for t in (socket.SOCK_DGRAM, socket.SOCK_STREAM):
    s = socket.socket(socket.AF_UNIX, t)
    try:
        s.connect("/dev/log")
        sys.exit(0)
    except OSError:
        pass
sys.exit(1)
PY
	then
		echo "SKIP: kernel log fallback: a syslog daemon listens on /dev/log here"
	elif ! [ -w /dev/kmsg ] || ! dmesg >/dev/null 2>&1; then
		echo "SKIP: kernel log fallback: /dev/kmsg not writable or dmesg not readable"
	elif dmount "no /dev/log" "$MP" "$cimg" -o prefetch=0; then
		cat "$MP/big/text_3m" >/dev/null 2>&1
		sleep 0.2
		t_expect "no syslog daemon: the line goes to the kernel log" \
			bash -c "dmesg | grep -q 'ezfs\[$DPID\]: .*nid'"
		dumount "no /dev/log" "$MP"
	fi
	rm -f "$cimg"
else
	echo "SKIP: log lines: no lz4-4k fixture or no extent to corrupt"
fi

# --- command line errors: one line, the exit status ---------------------
IMG=$TMP/lz4-4k.img
[ -f "$IMG" ] || IMG=$img
touch "$TMP/afile"
t_run notdir "$EZFS" mount "$IMG" "$TMP/afile"
t_expect "mount on a file: exit 1, one line naming it ($(cat "$ERR"))" \
	test "$RC" = 1 -a "$(wc -l <"$ERR")" = 1 -a \
	"$(cat "$ERR")" = "ezfs mount: $TMP/afile: Not a directory"
t_expect "mount on a file: nothing mounted" \
	bash -c "! grep -q ' $TMP/afile ' /proc/self/mountinfo"
umount -l "$TMP/afile" 2>/dev/null

(cd "$TMP" && "$EZFS" mount missing.img "$MP") >/dev/null 2>"$TMP/miss.err"
rc=$?
t_expect "missing image: exit 1, one line ($(cat "$TMP/miss.err"))" \
	test $rc = 1 -a "$(cat "$TMP/miss.err")" = \
	"ezfs mount: missing.img: No such file or directory"

t_run notmnt "$EZFS" umount "$TMP/afile"
t_expect "umount of a plain file: not mounted, exit 1 ($(cat "$ERR"))" \
	test "$RC" = 1 -a "$(cat "$ERR")" = "ezfs umount: $TMP/afile: not mounted"
t_run notmnt2 "$EZFS" umount "$MP"
t_expect "umount of a directory: not mounted, exit 1" \
	test "$RC" = 1 -a "$(cat "$ERR")" = "ezfs umount: $MP: not mounted"

mkdir -p "$TMP/tmpfs"
if mount -t tmpfs none "$TMP/tmpfs" 2>/dev/null; then
	T_MOUNTS+=("$TMP/tmpfs")
	t_run tmpfs "$EZFS" umount "$TMP/tmpfs"
	t_expect "umount of tmpfs: refused, exit 1 ($(cat "$ERR"))" \
		test "$RC" = 1 -a "$(wc -l <"$ERR")" = 1
	t_expect "umount of tmpfs: still mounted" mountpoint -q "$TMP/tmpfs"
	umount "$TMP/tmpfs"
else
	echo "SKIP: umount of tmpfs: cannot mount tmpfs here"
fi
if t_can_kmount && t_kmount "$IMG" "$TMP/kmnt"; then
	t_run kerofs "$EZFS" umount "$TMP/kmnt"
	t_expect "umount of a kernel erofs mount: refused, exit 1 ($(cat "$ERR"))" \
		test "$RC" = 1 -a "$(wc -l <"$ERR")" = 1
	t_expect "umount of a kernel erofs mount: still mounted" \
		mountpoint -q "$TMP/kmnt"
	t_kumount "$TMP/kmnt"
else
	echo "SKIP: umount of a kernel erofs mount: the kernel cannot mount it"
fi

for bad in --bogus --bogus=1 -x; do
	t_run badopt "$EZFS" umount "$bad" "$MP"
	t_expect "umount $bad: exit 2, names it ($(head -n 1 "$ERR"))" \
		test "$RC" = 2 -a "$(head -n 1 "$ERR")" = \
		"ezfs umount: unknown option '${bad%%=*}'"
done

# --- --help and docs/mount.md name every -o option the parser takes ------
"$EZFS" mount --help >"$TMP/help" 2>&1
opts=$(grep -o '!strcmp(opt, "[a-z_]*")' "$SRC/lib/mount/opts.c" |
       sed 's/.*"\(.*\)".*/\1/' | sort -u)
if [ -z "$opts" ]; then
	t_fail "--help: no options found in lib/mount/opts.c"
fi
for o in $opts; do
	t_expect "--help names -o $o" grep -qE "(^|[ ,])$o([=, ]|\$)" "$TMP/help"
	t_expect "docs/mount.md names -o $o" grep -q "\`$o" "$SRC/docs/mount.md"
done
t_expect "--help: nothing 'not yet used'" \
	bash -c "! grep -qi 'not yet used' '$TMP/help'"

t_done
