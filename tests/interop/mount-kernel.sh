#!/bin/bash
# SPDX-License-Identifier: MIT
# ezfs mount --kernel (issue 37, docs/mount.md): the kernel's own EROFS
# driver mounts the persistent cache file of a remote image, and a daemon
# fills the file's missing ranges from fanotify pre-content events.
#  - An image of ezfs mkfs --verity (lz4hc, with fragments and inline
#    tails) pushed to Debian's docker-registry, mounted --kernel by manifest
#    digest with -o fill=none: /proc/mounts says erofs on the cache file,
#    and tools/manifest.py of the mount is the source tree's.
#  - While it is mounted, `ezfs cache gc --max 0` leaves its cache file.
#  - Unmounted with ezfs umount; the registry stopped: a warm remount by
#    digest mounts the complete cache file with no request at all (there
#    is no server to ask) and no daemon, and shows the same tree.
#  - kill -9 of the daemon mid-read (an http:// image with roothash=,
#    served by tests/interop/remote-srv.py with 300 ms a request): the read
#    fails with EIO, what it got is the file's own first bytes, another
#    file fails too (never zeros), and ezfs umount unmounts it; the holder
#    process leaves then.
#  - The URL changed under a mount over http: a reader of it with the same
#    cache folder leaves the mounted file alone (the kernel's view stays).
#  - A layer with neither a dm-verity tree nor a chunk index: refused in
#    one line; --unverified mounts it.
#  - A relative --cache-dir and mount point: the background daemon (which
#    keeps its working folder) serves the files.
#  - A cache folder on tmpfs (no pre-content marks there): one line.
#  - Not root: one line naming the FUSE mount.
# Skips (exit 77) without root, erofs file-backed mounts, fanotify
# pre-content events, libcurl, python3 or docker-registry.
#
# usage: tests/interop/mount-kernel.sh
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
t_init
t_is_root || t_skip "not root (mount(2) and fanotify need CAP_SYS_ADMIN)"
t_need_cmd python3 cmp
t_need_registry

# --- can the kernel mount an erofs file here? -------------------------------
mkdir -p "$TMP/probe.d" "$TMP/probe.mnt"
echo probe >"$TMP/probe.d/f"
"$EZFS" mkfs -q "$TMP/probe.img" "$TMP/probe.d" >/dev/null
t_run probe "$EZFS" mount --kernel "$TMP/probe.img" "$TMP/probe.mnt"
if [ "$RC" != 0 ]; then
	grep -qE "lacks|takes no fanotify" "$ERR" && t_skip "$(head -n 1 "$ERR")"
	t_fail "mount --kernel of a local image: rc=$RC $(head -c 300 "$ERR")"
	t_done
fi
T_MOUNTS+=("$TMP/probe.mnt")
if [ "$(cat "$TMP/probe.mnt/f")" = probe ] && grep -q " $TMP/probe.mnt erofs " /proc/mounts; then
	t_pass "mount --kernel IMAGE: mount(2) of the file itself, type erofs"
else
	t_fail "mount --kernel IMAGE: $(grep " $TMP/probe.mnt " /proc/mounts)"
fi
t_run pumount "$EZFS" umount "$TMP/probe.mnt"
t_check "ezfs umount of a --kernel mount of a file" 0

# --- the image: random and repetitive files, a folder, a link ---------------
src=$TMP/src
mkdir -p "$src/d/e"
python3 - "$src" <<'EOF'
import os, random, sys
r = random.Random(37)
root = sys.argv[1]
for i in range(24):
    n = r.randint(100000, 1500000)
    name = os.path.join(root, "d" if i % 4 == 0 else "", "f%02d" % i)
    with open(name, "wb") as f:
        if i % 3:
            f.write(os.urandom(n))
        else:
            f.write(b"line %d of a file that compresses\n" % i * (n // 32))
with open(os.path.join(root, "big"), "wb") as f:
    f.write(os.urandom(8 << 20))
with open(os.path.join(root, "d/e/tiny"), "w") as f:
    f.write("tiny\n")
os.symlink("d/e/tiny", os.path.join(root, "link"))
EOF
IMG=$TMP/v.img
t_run mkfs "$EZFS" mkfs -q --verity -z lz4hc -E fragments,ztailpacking "$IMG" "$src"
[ "$RC" = 0 ] || { t_fail "mkfs --verity: $(head -c 300 "$ERR")"; t_done; }
ROOT=$(sed -n 's/^roothash=//p' "$OUT")
t_manifest "$src" >"$TMP/want.man"

t_registry && rc=0 || rc=$?
PIDS+=("$REG_PID")
[ $rc = 0 ] || { t_fail "docker-registry did not start"; t_done; }
R=oci://127.0.0.1:$RPORT
t_run push timeout "$tmo" "$EZFS" push -q "$IMG" "$R/k/v:1"
md=$(sed -n 's/^manifest //p' "$OUT")
[ "$RC" = 0 ] && [ -n "$md" ] || { t_fail "push: $(head -c 300 "$ERR")"; t_done; }
REFD=$R/k/v@$md

# --- cold: the kernel's view -------------------------------------------------
C=$TMP/cache
MP=$TMP/mnt
mkdir -p "$MP"
t_run cold timeout "$tmo" "$EZFS" mount --kernel -o fill=none --cache-dir "$C" "$REFD" "$MP"
if [ "$RC" != 0 ]; then
	grep -qE "lacks|takes no fanotify" "$ERR" && t_skip "$(head -n 1 "$ERR")"
	t_fail "mount --kernel REPO@MANIFEST: rc=$RC $(head -c 300 "$ERR")"
	t_done
fi
T_MOUNTS+=("$MP")
data=$(awk -v m="$MP" '$2 == m && $3 == "erofs" { print $1 }' /proc/mounts)
if [ -n "$data" ] && [ "${data%.data}" != "$data" ] && [ "$(dirname "$data")" = "$C" ]; then
	t_pass "mount --kernel: /proc/mounts shows type erofs on the cache file $(basename "$data")"
else
	t_fail "mount --kernel: /proc/mounts: $(grep " $MP " /proc/mounts)"
fi
t_manifest "$MP" >"$TMP/cold.man"
t_same_manifest "mount --kernel cold (fill=none): the kernel's view is the source tree" "$TMP/want.man" "$TMP/cold.man"
"$EZFS" cache --cache-dir "$C" gc --max 0 >/dev/null 2>&1
if [ -f "$data" ] && cmp -s "$MP/big" "$src/big"; then
	t_pass "cache gc --max 0 while mounted: the mounted cache file stays"
else
	t_fail "cache gc removed the mounted cache file"
fi
t_run umount1 "$EZFS" umount "$MP"
t_check "ezfs umount of a --kernel mount" 0
sleep 0.5
mountpoint -q "$MP" && t_fail "still mounted after ezfs umount"
if pgrep -f -- "--cache-dir $C " >/dev/null; then
	t_fail "the daemon or its holder stayed after the unmount"
else
	t_pass "the daemon and its holder left with the unmount"
fi

# --- warm: no registry at all -------------------------------------------------
# the rest of the file, then the registry goes
t_run fill timeout "$tmo" "$EZFS" mount --kernel --cache-dir "$C" "$REFD" "$MP"
for _ in $(seq 200); do
	pgrep -f -- "--cache-dir $C " >/dev/null || break
	sleep 0.1
done
pgrep -f -- "--cache-dir $C " >/dev/null && t_fail "the fill=all daemon did not leave once the file was complete"
"$EZFS" umount "$MP" 2>/dev/null
stop_all
t_run warm timeout "$tmo" "$EZFS" mount --kernel --cache-dir "$C" "$REFD" "$MP"
if [ "$RC" = 0 ] && ! pgrep -f -- "--cache-dir $C " >/dev/null; then
	t_pass "warm remount by digest with the registry stopped: mounted with no request and no daemon"
else
	t_fail "warm remount: rc=$RC $(head -c 300 "$ERR")"
fi
t_manifest "$MP" >"$TMP/warm.man"
t_same_manifest "warm remount: the same tree" "$TMP/want.man" "$TMP/warm.man"
"$EZFS" umount "$MP" 2>/dev/null

# --- kill -9 of the daemon mid-read -------------------------------------------
mkdir -p "$TMP/www"
cp "$IMG" "$TMP/www/v.img"
DELAY_MS=300 python3 "$SRC/tests/interop/remote-srv.py" delay "$TMP/port" "$TMP/www" "$TMP/srv.log" 2>"$TMP/srv.err" &
PIDS+=("$!")
for _ in $(seq 100); do [ -s "$TMP/port" ] && break; sleep 0.1; done
HP=$(cat "$TMP/port")
C2=$TMP/cache2
"$EZFS" mount --kernel -f -o fill=none,roothash="$ROOT" --cache-dir "$C2" \
	"http://127.0.0.1:$HP/v.img" "$MP" 2>"$TMP/kill.err" &
DPID=$!
for _ in $(seq 300); do
	grep -q " $MP erofs " /proc/mounts && break
	sleep 0.1
done
if ! grep -q " $MP erofs " /proc/mounts; then
	t_fail "mount --kernel -f over http: not mounted: $(head -c 300 "$TMP/kill.err")"
	kill -9 "$DPID" 2>/dev/null
	t_done
fi
(
	rc=0
	cat "$MP/big" >"$TMP/big.out" 2>"$TMP/big.err" || rc=$?
	echo "$rc" >"$TMP/big.rc"
) &
RPID=$!
sleep 1
kill -9 "$DPID"
wait "$DPID" 2>/dev/null
if ! timeout 30 tail --pid="$RPID" -f /dev/null; then
	t_fail "the reader still waits 30 s after the daemon was killed"
fi
got=$(stat -c %s "$TMP/big.out")
if [ "$(cat "$TMP/big.rc" 2>/dev/null)" != 0 ] && [ "$got" -lt $((8 << 20)) ] &&
	head -c "$got" "$src/big" | cmp -s - "$TMP/big.out" && grep -q "Input/output error" "$TMP/big.err"; then
	t_pass "kill -9 of the daemon mid-read: the read fails with EIO after $got right bytes"
else
	t_fail "kill -9 mid-read: rc=$(cat "$TMP/big.rc" 2>/dev/null) $got bytes, $(head -c 200 "$TMP/big.err")"
fi
if ! cat "$MP/f01" >/dev/null 2>&1 && ! cmp -s "$MP/f02" "$src/f02"; then
	t_pass "after the kill: other files fail to read (EIO), never zeros"
else
	t_fail "after the kill a file read succeeded"
fi
t_run kumount "$EZFS" umount "$MP"
t_check "ezfs umount after the daemon was killed" 0
sleep 0.5
if pgrep -f -- "--cache-dir $C2 " >/dev/null; then
	t_fail "the holder process stayed after the unmount"
else
	t_pass "the holder process left with the unmount"
fi

# --- another open of the URL with new validators leaves the mounted file ------
mkdir -p "$TMP/www2"
cp "$IMG" "$TMP/www2/v.img"
DELAY_MS=0 python3 "$SRC/tests/interop/remote-srv.py" delay "$TMP/port2" "$TMP/www2" 2>"$TMP/srv2.err" &
PIDS+=("$!")
for _ in $(seq 100); do [ -s "$TMP/port2" ] && break; sleep 0.1; done
U2=http://127.0.0.1:$(cat "$TMP/port2")/v.img
C4=$TMP/cache4
t_run pin timeout "$tmo" "$EZFS" mount --kernel -o fill=none,roothash="$ROOT" --cache-dir "$C4" "$U2" "$MP"
t_check "mount --kernel over http with roothash=" 0
t_manifest "$MP" >"$TMP/pin0.man"
t_same_manifest "mount --kernel over http: the kernel's view" "$TMP/want.man" "$TMP/pin0.man"
# the URL now serves another image (new ETag): a reader of it must not
# truncate or rewrite the file the kernel reads
"$EZFS" mkfs -q "$TMP/www2/v.img.new" "$TMP/probe.d" >/dev/null
touch -d '2001-01-01' "$TMP/www2/v.img.new"
mv "$TMP/www2/v.img.new" "$TMP/www2/v.img"
t_run pincat timeout "$tmo" "$EZFS" cat --cache-dir "$C4" "$U2" /f
t_check "a reader of the changed URL with the same cache folder" 0 stderr "mounted by the kernel"
# what the kernel reads next comes from the file again
sync
echo 3 >/proc/sys/vm/drop_caches
t_manifest "$MP" >"$TMP/pin.man"
t_same_manifest "the kernel's view after that reader: unchanged" "$TMP/want.man" "$TMP/pin.man"
"$EZFS" umount "$MP" 2>/dev/null

# --- neither a tree nor a chunk index -------------------------------------------
t_registry && rc=0 || rc=$?
PIDS+=("$REG_PID")
R=oci://127.0.0.1:$RPORT
"$EZFS" mkfs -q "$TMP/plain.img" "$src" >/dev/null
"$EZFS" push -q "$TMP/plain.img" "$R/k/plain:1" >/dev/null
t_run plain timeout "$tmo" "$EZFS" mount --kernel --cache-dir "$TMP/c3" "$R/k/plain:1" "$MP"
t_check "mount --kernel of a layer nothing checks: refused" 1 stderr "neither a dm-verity tree nor a chunk index"
t_one_line "its refusal: one line" "$ERR"
t_run plainu timeout "$tmo" "$EZFS" mount --kernel --unverified -o fill=none --cache-dir "$TMP/c3" "$R/k/plain:1" "$MP"
t_check "mount --kernel --unverified: mounted" 0
t_manifest "$MP" >"$TMP/plain.man"
t_same_manifest "--unverified: the kernel's view" "$TMP/want.man" "$TMP/plain.man"
"$EZFS" umount "$MP" 2>/dev/null

# --- a cache folder and mount point named relative to the working folder -----
mkdir -p "$TMP/rmnt"
t_run rel bash -c 'cd "$1" && timeout "$2" "$3" mount --kernel -o fill=none --cache-dir rc "$4" rmnt' \
	_ "$TMP" "$tmo" "$EZFS" "$R/k/v@$md"
T_MOUNTS+=("$TMP/rmnt")
if [ "$RC" = 0 ] && cmp -s "$TMP/rmnt/big" "$src/big" && cmp -s "$TMP/rmnt/d/f00" "$src/d/f00"; then
	t_pass "relative --cache-dir and mount point: the background daemon serves the files"
else
	t_fail "relative paths: rc=$RC $(head -c 300 "$ERR")"
fi
"$EZFS" umount "$TMP/rmnt" 2>/dev/null

# --- a cache folder on a file system without pre-content marks (tmpfs) ----------
if [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ]; then
	SHM=$(mktemp -d /dev/shm/ezfs-test.XXXXXX)
	t_run shm timeout "$tmo" "$EZFS" mount --kernel --cache-dir "$SHM/c" "$R/k/v@$md" "$MP"
	rm -rf "$SHM"
	t_check "mount --kernel with its cache folder on tmpfs: refused" 1 stderr "takes no fanotify pre-content marks"
	t_one_line "its refusal: one line" "$ERR"
else
	echo "SKIP: the tmpfs check (/dev/shm is no tmpfs here)"
fi

# --- not root ----------------------------------------------------------------------
if command -v setpriv >/dev/null && setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null &&
	setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$EZFS"; then
	t_run user setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
		"$EZFS" mount --kernel "$REFD" "$MP"
	t_check "mount --kernel without root: refused, naming the FUSE mount" 1 stderr "needs root.*ezfs mount"
	t_one_line "its refusal: one line" "$ERR"
else
	echo "SKIP: the non-root check (no setpriv, or ezfs not reachable for nobody)"
fi
t_done
