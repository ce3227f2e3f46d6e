#!/bin/bash
# SPDX-License-Identifier: MIT
# ezfs mount: every fixture seen through the FUSE mount must describe exactly
# like the kernel's view (NAME.manifest.jsonl); plus option errors, SIGTERM,
# daemon mode, a corrupt pcluster (EIO, one log line, still serving) and a
# concurrent load (8 random readers + a lister, every byte compared) with the
# daemon's peak RSS printed beside the cache budget.
#
# Environment: EZFS (or EZFS_BIN) = the ezfs binary, SRC (or EZFS_SRC) = the
# source tree, EZFS_SHARED = shared material (default $SRC/../shared),
# EZFS_LOAD_SECS (default 10), EZFS_LOAD_IMAGE (default zstd-256k).
set -uo pipefail
[ -n "${EZFS:-}" ] && export EZFS_BIN=$EZFS
[ -n "${SRC:-}" ] && export EZFS_SRC=${EZFS_SRC:-$SRC}
. "$(dirname "$0")/../lib.sh"
t_init

[ "$(id -u)" = 0 ] || t_skip "not root (mounting FUSE and dropping caches need it)"
[ -c /dev/fuse ] && (exec 3<>/dev/fuse) 2>/dev/null ||
	t_skip "/dev/fuse is not usable here"
command -v python3 >/dev/null || t_skip "python3 is not installed"
command -v zstd >/dev/null || t_skip "zstd is not installed"
FIX=$SHARED/fixtures
ls "$FIX"/*.img.zst >/dev/null 2>&1 || t_skip "no fixtures in $FIX"
help=$("$EZFS" mount --help 2>&1)
case $help in
*"without FUSE"*) t_skip "ezfs was built without FUSE support" ;;
*usage:*) ;;
*) echo "FAIL: 'ezfs mount' is not there: $help"; exit 1 ;;
esac

MP=$TMP/mnt
mkdir -p "$MP"
T_MOUNTS+=("$MP")
PIDS=()
cleanup() {
	local p
	mountpoint -q "$MP" 2>/dev/null && umount -l "$MP" 2>/dev/null
	for p in "${PIDS[@]}"; do
		kill "$p" 2>/dev/null
	done
	t_cleanup
}
trap cleanup EXIT

# wait_mounted PID: until $MP is a mount point (10 s); fails if PID died.
wait_mounted() {
	local i
	for i in $(seq 100); do
		mountpoint -q "$MP" && return 0
		[ -n "$1" ] && ! kill -0 "$1" 2>/dev/null && return 1
		sleep 0.1
	done
	return 1
}

# start IMG LOG [OPTS...]: ezfs mount -f in the background; sets PID.
start() {
	local img=$1 log=$2
	shift 2
	"$EZFS" mount -f "$@" "$img" "$MP" 2>"$log" &
	PID=$!
	PIDS+=("$PID")
	if ! wait_mounted "$PID"; then
		echo "  mount failed: $(head -c 300 "$log")"
		return 1
	fi
}

# stop: ezfs umount, then the daemon must exit 0.
stop() {
	local rc=0
	"$EZFS" umount "$MP" || rc=1
	wait "$PID" || rc=1
	mountpoint -q "$MP" && rc=1
	return $rc
}

unpack() { zstd -q -d -f "$FIX/$1.img.zst" -o "$TMP/$1.img"; }

# --- every fixture: the manifest through the mount -----------------------
for z in "$FIX"/*.img.zst; do
	n=$(basename "$z" .img.zst)
	unpack "$n"
	if ! start "$TMP/$n.img" "$TMP/$n.log"; then
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
	t_expect "$n: umount, daemon exits 0" stop
	[ "$n" = "${EZFS_LOAD_IMAGE:-zstd-256k}" ] || rm -f "$TMP/$n.img"
done

# --- option errors: one line, exit 2 ---------------------------------------
limg=${EZFS_LOAD_IMAGE:-zstd-256k}
[ -f "$TMP/$limg.img" ] || unpack "$limg" 2>/dev/null ||
	limg=$(basename "$(ls "$FIX"/*.img.zst | head -n 1)" .img.zst)
[ -f "$TMP/$limg.img" ] || unpack "$limg"
IMG=$TMP/$limg.img
for bad in bogus cache=12X threads=0 dispatch=fast accel=Bad! rw uid=x; do
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
if start "$IMG" "$TMP/opts.log" -s -o cache=8M,threads=4,uid=123,gid=456,accel=deflate=isal+libdeflate,dispatch=percpu,ro; then
	t_expect "uid=/gid= override" test "$(stat -c %u:%g "$MP")" = 123:456
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
	t_expect "ezfs umount of the daemon" "$EZFS" umount "$MP"
	t_expect "unmounted" bash -c "! mountpoint -q '$MP'"
else
	t_fail "daemonized mount: $(head -c 300 "$TMP/d.err")"
	umount -l "$MP" 2>/dev/null
fi

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
		if start "$cimg" "$TMP/c.log" -o prefetch=0; then
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
			t_expect "corrupt image: umount" stop
		else
			t_fail "corrupt image: mount"
		fi
	else
		echo "note: no extent found to corrupt; corrupt check left out"
	fi
	rm -f "$cimg"
fi

# --- concurrent load: 8 random readers and a lister, every byte compared --
secs=${EZFS_LOAD_SECS:-10}
cache=16M
ref=$TMP/ref
if ! "$EZFS" extract -q "$IMG" "$ref" >/dev/null 2>"$TMP/x.err"; then
	t_fail "load: reference extract of $limg: $(head -c 200 "$TMP/x.err")"
elif start "$IMG" "$TMP/load.log" -o cache=$cache; then
	cat >"$TMP/load.py" <<'PY'
import os, random, stat, sys, time

def reader(mnt, ref, seed, secs):
    rnd = random.Random(seed)
    files = []
    for d, _, names in os.walk(ref):
        for n in names:
            p = os.path.join(d, n)
            st = os.lstat(p)
            if stat.S_ISREG(st.st_mode):
                files.append((os.path.relpath(p, ref), st.st_size))
    end = time.time() + secs
    nr = nb = bad = 0
    while files and time.time() < end:
        rel, size = rnd.choice(files)
        if size and rnd.random() < 0.6:
            off = rnd.randrange(size)
            ln = rnd.randint(1, min(size - off, 1 << 20))
        else:
            off, ln = 0, size
        try:
            fd = os.open(os.path.join(mnt, rel), os.O_RDONLY)
            try:
                got = b""
                while len(got) < ln:
                    b = os.pread(fd, ln - len(got), off + len(got))
                    if not b:
                        break
                    got += b
                # Drop the pages: the next read must reach the daemon.
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
            with open(os.path.join(ref, rel), "rb") as f:
                f.seek(off)
                want = f.read(ln)
        except OSError as e:
            print(f"reader {seed}: {rel}: {e}")
            bad += 1
            continue
        if got != want:
            print(f"reader {seed}: {rel} [{off}, +{ln}): bytes differ")
            bad += 1
        nr += 1
        nb += len(got)
    print(f"reader {seed}: {nr} reads, {nb >> 20} MiB, {bad} bad")
    return 1 if bad or not files else 0

def lister(mnt, secs):
    end = time.time() + secs
    walks = n = bad = 0
    last = time.time()
    while time.time() < end:
        for d, dirs, names in os.walk(mnt):
            for e in dirs + names:
                p = os.path.join(d, e)
                try:
                    st = os.lstat(p)
                    os.listxattr(p, follow_symlinks=False)
                    if stat.S_ISLNK(st.st_mode):
                        os.readlink(p)
                except OSError as ex:
                    print(f"lister: {p}: {ex}")
                    bad += 1
                n += 1
        walks += 1
        if time.time() - last > 3:  # FORGETs reach the daemon
            last = time.time()
            with open("/proc/sys/vm/drop_caches", "w") as f:
                f.write("2\n")
    print(f"lister: {walks} walks, {n} entries, {bad} bad")
    return 1 if bad else 0

if sys.argv[1] == "read":
    sys.exit(reader(sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])))
sys.exit(lister(sys.argv[2], float(sys.argv[3])))
PY
	lp=()
	for i in 1 2 3 4 5 6 7 8; do
		python3 "$TMP/load.py" read "$MP" "$ref" "$i" "$secs" >"$TMP/r$i.out" 2>&1 &
		lp+=($!)
	done
	python3 "$TMP/load.py" list "$MP" "$secs" >"$TMP/l.out" 2>&1 &
	lp+=($!)
	lrc=0
	for p in "${lp[@]}"; do
		wait "$p" || lrc=1
	done
	cat "$TMP"/r?.out "$TMP/l.out" | sed 's/^/  /' | head -n 30
	t_expect "load on $limg: every byte matched, no errors" test $lrc = 0
	t_expect "load: daemon still alive" kill -0 "$PID"
	hwm=$(awk '/^VmHWM/ { print $2, $3 }' "/proc/$PID/status")
	echo "daemon peak RSS (VmHWM): $hwm with cache=$cache"
	t_expect "load: umount" stop
else
	t_fail "load: mount of $limg"
fi
t_done
