#!/bin/bash
# SPDX-License-Identifier: MIT
# ezfs mount: every fixture seen through the FUSE mount must describe exactly
# like the kernel's view (NAME.manifest.jsonl); plus option errors, SIGTERM,
# daemon mode and a corrupt pcluster (EIO, one log line, still serving).
# The concurrent load with its memory bound is mount-stress.sh.
#
# Environment: EZFS (or EZFS_BIN) = the ezfs binary, SRC (or EZFS_SRC) = the
# source tree, EZFS_SHARED = shared material (default $SRC/../shared),
# EZFS_OPT_IMAGE (the fixture for the option checks, default zstd-256k).
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
t_init

t_need_fuse
t_need_cmd python3 zstd
FIX=$SHARED/fixtures
ls "$FIX"/*.img.zst >/dev/null 2>&1 || t_skip "no fixtures in $FIX"
MP=$TMP/mnt
mkdir -p "$MP"
T_MOUNTS+=("$MP")

unpack() { zstd -q -d -f "$FIX/$1.img.zst" -o "$TMP/$1.img"; }

# --- every fixture: the manifest through the mount -----------------------
for z in "$FIX"/*.img.zst; do
	n=$(basename "$z" .img.zst)
	unpack "$n"
	if ! t_fuse_start "$TMP/$n.img" "$TMP/$n.log"; then
		t_fail "$n: mount"
		continue
	fi
	python3 "$SHARED/tools/manifest.py" "$MP" >"$TMP/$n.got" 2>"$TMP/$n.err"
	if cmp -s "$TMP/$n.got" "$FIX/$n.manifest.jsonl"; then
		t_pass "$n: manifest through the mount"
	else
		t_fail "$n: manifest through the mount"
		diff "$FIX/$n.manifest.jsonl" "$TMP/$n.got" | head -n 10
		head -n 3 "$TMP/$n.err"
	fi
	t_expect "$n: umount, daemon exits 0" t_fuse_stop
	[ "$n" = "${EZFS_OPT_IMAGE:-zstd-256k}" ] || rm -f "$TMP/$n.img"
done

# --- round trips: a make_tree.py tree built by ezfs mkfs with each
# algorithm, through the mount, equals the source tree --------------------
MKTREE=$SHARED/tools/make_tree.py
if [ -f "$MKTREE" ] && python3 "$MKTREE" 5 "$TMP/rt" --small >/dev/null; then
	python3 "$SHARED/tools/manifest.py" "$TMP/rt" >"$TMP/rt.want"
	for z in "" "-z lz4 -C 16384" "-z lz4hc -C 65536 -E ztailpacking" \
		 "-z deflate -C 65536" "-z zstd -C 262144 -E fragments" \
		 "-z lzma -C 1048576"; do
		name="round trip [${z:-plain}]"
		# shellcheck disable=SC2086
		if ! "$EZFS" mkfs -q $z "$TMP/rt.img" "$TMP/rt" 2>"$TMP/rt.err"; then
			t_fail "$name: mkfs: $(head -c 300 "$TMP/rt.err")"
			continue
		fi
		if ! t_fuse_start "$TMP/rt.img" "$TMP/rt.log"; then
			t_fail "$name: mount"
			continue
		fi
		python3 "$SHARED/tools/manifest.py" "$MP" >"$TMP/rt.got" 2>&1
		if cmp -s "$TMP/rt.want" "$TMP/rt.got"; then
			t_pass "$name: manifest through the mount equals the source"
		else
			t_fail "$name: manifest through the mount"
			diff "$TMP/rt.want" "$TMP/rt.got" | head -n 10
		fi
		t_expect "$name: umount, daemon exits 0" t_fuse_stop
	done
	rm -rf "$TMP/rt" "$TMP/rt.img"
else
	echo "SKIP: round trips through the mount: no make_tree.py tree here"
fi

# --- option errors: one line, exit 2 ---------------------------------------
limg=${EZFS_OPT_IMAGE:-zstd-256k}
[ -f "$TMP/$limg.img" ] || unpack "$limg" 2>/dev/null ||
	limg=$(basename "$(ls "$FIX"/*.img.zst | head -n 1)" .img.zst)
[ -f "$TMP/$limg.img" ] || unpack "$limg"
IMG=$TMP/$limg.img
for bad in bogus cache=12X threads=0 dispatch=fast accel=Bad! rw uid=x readahead=1Z; do
	"$EZFS" mount -o "$bad" "$IMG" "$MP" >"$TMP/o.out" 2>"$TMP/o.err"
	rc=$?
	if [ $rc = 2 ] && [ "$(wc -l <"$TMP/o.err")" = 1 ] &&
	   ! mountpoint -q "$MP"; then
		t_pass "-o $bad: rejected ($(cat "$TMP/o.err"))"
	else
		t_fail "-o $bad: exit $rc, stderr: $(head -c 200 "$TMP/o.err")"
	fi
done

# --- options that must be accepted; SIGTERM unmounts cleanly --------------
if t_fuse_start "$IMG" "$TMP/opts.log" -s -o cache=8M,threads=4,uid=123,gid=456,accel=deflate=isal+libdeflate,dispatch=percpu,readahead=2M,ro; then
	t_expect "uid=/gid= override" test "$(stat -c %u:%g "$MP")" = 123:456
	ra=/sys/class/bdi/$(mountpoint -d "$MP")/read_ahead_kb
	head -c 1 "$(find "$MP" -type f | head -n 1)" >/dev/null
	t_expect "readahead=2M: the kernel's window is 2048 KiB once a file is open" test "$(cat "$ra")" = 2048
	t_expect "statfs: namemax 255, read-only" \
		test "$(stat -f -c %l "$MP")" = 255
	kill -TERM "$PID"
	wait "$PID"
	rc=$?
	if [ $rc = 0 ] && ! mountpoint -q "$MP"; then
		t_pass "SIGTERM: unmounted, exit 0"
	else
		t_fail "SIGTERM: exit $rc, $(mountpoint "$MP")"
		umount -l "$MP" 2>/dev/null
	fi
else
	t_fail "mount with all options"
fi

# --- daemon mode: returns once mounted -------------------------------------
if "$EZFS" mount "$IMG" "$MP" 2>"$TMP/d.err" && mountpoint -q "$MP"; then
	t_pass "daemonized mount is up when the command returns"
	t_run umount "$EZFS" umount "$MP"
	if [ "$RC" = 0 ]; then
		t_pass "ezfs umount of the daemon"
	else
		# who keeps it busy (another process walking into it?)
		t_fail "ezfs umount of the daemon: rc=$RC $(head -c 200 "$ERR");" \
			"$(fuser -vm "$MP" 2>&1 | head -c 300)"
		umount -l "$MP" 2>/dev/null
	fi
	t_expect "unmounted" bash -c "! mountpoint -q '$MP'"
else
	t_fail "daemonized mount: $(head -c 300 "$TMP/d.err")"
	umount -l "$MP" 2>/dev/null
fi

# --- a killed daemon leaves no stuck mount point (auto_unmount) ------------
# The daemon is killed once it serves: the mount point shows as mounted
# as soon as fusermount3 has mounted, before it hands the connection to
# the daemon and starts watching it; a daemon killed in between may leave
# it nothing to watch (the likely cause of a mount left behind twice in
# CI under load on 2026-12-01, once on a mount point of its own). That is
# not a crash of a running daemon, which this checks.
MP0=$MP
MP=$TMP/kmnt
if ! command -v fusermount3 >/dev/null; then
	echo "SKIP: killed daemon: no fusermount3, so no auto_unmount"
elif t_fuse_start "$IMG" "$TMP/k.log"; then
	for _ in $(seq 100); do
		ls "$MP" >/dev/null 2>&1 && break
		sleep 0.1
	done
	# the daemon asked for auto_unmount: fusermount3 stays to watch it
	watcher=
	if command -v pgrep >/dev/null; then
		watcher=$(pgrep -f "^fusermount3 .*auto_unmount.* -- $MP\$" | head -n 1)
		t_expect "SIGKILL: fusermount3 watches the mount (auto_unmount)" \
			[ -n "$watcher" ]
	else
		echo "SKIP: SIGKILL: no pgrep, fusermount3's watcher not looked for"
	fi
	kill -KILL "$PID"
	wait "$PID" 2>/dev/null
	# mountinfo, not mountpoint(1): the stat of a dead FUSE mount fails
	# (ENOTCONN), which mountpoint takes for "not a mount point".
	mounted() { awk -v m="$MP" '$5 == m { f = 1 } END { exit !f }' /proc/self/mountinfo; }
	for _ in $(seq 300); do
		mounted || break
		sleep 0.1
	done
	if mounted && [ -n "$watcher" ] && ! kill -0 "$watcher" 2>/dev/null; then
		# fusermount3 saw the daemon go and left without unmounting:
		# its own decision, nothing the daemon can do (seen a few
		# times under ctest -j2, with ASan and without; not understood)
		echo "note: SIGKILL: fusermount3 exited and left the mount point (not counted): $(ls "$MP" 2>&1 | head -c 100)"
		umount -l "$MP" 2>/dev/null
	elif mounted; then
		t_fail "SIGKILL: the mount point is still there ($(ls "$MP" 2>&1 | head -c 100))"
		umount -l "$MP" 2>/dev/null
	else
		t_pass "SIGKILL: fusermount3 unmounted the mount point"
	fi
else
	t_fail "mount for the SIGKILL check"
fi
MP=$MP0

# --- a corrupt pcluster: EIO for that file, one log line, still serving ----
if [ -f "$FIX/lz4-4k.img.zst" ]; then
	unpack lz4-4k
	cimg=$TMP/lz4-4k.img
	pa=$("$EZFS" stat -e "$cimg" /big/text_3m 2>/dev/null |
	     awk '$NF ~ /encoded/ { n++; if (n == 10) print $2 }')
	if [ -n "$pa" ]; then
		python3 - "$cimg" "$pa" <<'PY'
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(int(sys.argv[2]))
    f.write(b"\xff" * 4096)
PY
		if t_fuse_start "$cimg" "$TMP/c.log" -o prefetch=0; then
			cat "$MP/big/text_3m" >/dev/null 2>"$TMP/c1.err"
			c1=$?
			cat "$MP/big/text_3m" >/dev/null 2>/dev/null
			t_expect "corrupt file: EIO" grep -q "Input/output error" "$TMP/c1.err"
			t_expect "corrupt file: exit status" test $c1 != 0
			want=$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e["path"] == "big/dup_a": print(e["sha256"])' "$FIX/lz4-4k.manifest.jsonl")
			got=$(sha256sum "$MP/big/dup_a" | cut -d' ' -f1)
			t_expect "still serving other files" test "$got" = "$want"
			nl=$(grep -c "nid" "$TMP/c.log")
			t_expect "one log line naming the inode ($(head -n 1 "$TMP/c.log"))" test "$nl" = 1
			t_expect "corrupt image: umount" t_fuse_stop
		else
			t_fail "corrupt image: mount"
		fi
	else
		echo "note: no extent found to corrupt; corrupt check left out"
	fi
	rm -f "$cimg"
fi

t_done
