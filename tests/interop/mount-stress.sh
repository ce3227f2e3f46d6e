#!/bin/bash
# SPDX-License-Identifier: MIT
# ezfs mount under concurrent load with a small cache budget: 8 readers of
# random files and ranges (every byte compared with the source tree) and a
# process walking the directories (lstat, listxattr, readlink; dentries
# dropped every few seconds so FORGETs reach the daemon), for STRESS_SECONDS.
# Meanwhile the daemon's VmRSS is sampled; its peak (VmHWM) must stay under
# the cache budget plus a fixed overhead:
#
#   baseline   RSS of the idle daemon once mounted (libraries, the image's
#              metadata, the root) - measured, not assumed
#   workers    per FUSE worker thread (threads=$THREADS, so at most that
#              many), 4 MiB: libfuse's receive buffer (1 MiB + a page: 256
#              pages of max_write), the read buffer of op_read (reads
#              outside encoded extents: at most 1 MiB), one decoded pcluster in use
#              beyond the budget while it is copied (entries in use are not
#              evicted), and what malloc keeps of those after free (ezfs
#              mount limits glibc to two arenas)
#   store-     decoded extents held for the page cache by queued jobs
#   ahead      (they cannot be evicted): a quarter of the cache budget
#              (1..16 MiB); per helper thread (one per CPU, at most 4) 2
#              MiB: a plain extent read into a buffer and malloc's slack
#   spares     buffers of evicted extents kept for the next decodes: an
#              eighth of the budget, at most 32 MiB
#
# so bound = baseline + cache * 11/8 + THREADS * 4 MiB + helpers * 2 MiB.
# Measured on 2 CPUs, cache=8M: about 35 MiB against a bound of 49; the
# same load with an unbounded cache (cache=256M) peaks at about 66 MiB.
#
# Environment: EZFS (or EZFS_BIN), SRC (or EZFS_SRC), EZFS_SHARED as for the
# other interop tests; STRESS_SECONDS (default 10), STRESS_CACHE (8M),
# STRESS_ALG (lz4hc,level=4), STRESS_THREADS (8), STRESS_OPTS (more -o
# options).
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
t_init

t_need_fuse
t_need_cmd python3 fusermount3
t_need_shared

SECS=${STRESS_SECONDS:-10}
CACHE=${STRESS_CACHE:-8M}
ALG=${STRESS_ALG:-lz4hc,level=4}
THREADS=${STRESS_THREADS:-8}

# --- the tree and its image ------------------------------------------------
tree=$TMP/tree
if ! python3 "$SHARED/tools/make_tree.py" 11 "$tree" >"$TMP/tree.log" 2>&1; then
	echo "FAIL: make_tree.py: $(tail -n 3 "$TMP/tree.log")"
	exit 1
fi
# Big text files, so that the decoded data read (48 MiB) is much more than
# the cache budget: an unbounded cache would show in the RSS.
python3 - "$tree/big" <<'PY'
import os, random, sys
rnd = random.Random(5)
words = [bytes(rnd.choices(b"etaoinshrdlucmfwyp", k=rnd.randint(2, 9)))
         for _ in range(5000)]
lines = [b" ".join(rnd.choices(words, k=12)) + b"\n" for _ in range(20000)]
os.makedirs(sys.argv[1], exist_ok=True)
for i in range(6):
    size = (8 << 20) + i * 4099
    data = b"".join(rnd.choices(lines, k=size // 60 + 1))[:size]
    with open(os.path.join(sys.argv[1], f"text_{i}"), "wb") as f:
        f.write(data)
PY
img=$TMP/stress.img
if ! "$EZFS" mkfs -q -z "$ALG" -C 65536 "$img" "$tree" >"$TMP/mkfs.log" 2>&1; then
	echo "FAIL: ezfs mkfs -z $ALG -C 65536: $(head -c 300 "$TMP/mkfs.log")"
	exit 1
fi
nfiles=$(find "$tree" -type f | wc -l)
echo "tree: $nfiles files, $(du -sm "$tree" | cut -f1) MiB; image $ALG, 64K pclusters"

if ! t_fuse_start "$img" "$TMP/mount.log" \
	-o "cache=$CACHE,threads=$THREADS${STRESS_OPTS:+,$STRESS_OPTS}"; then
	echo "FAIL: mount"
	exit 1
fi
rss_kib() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$PID/status"; }
stat "$MP" >/dev/null
base=$(rss_kib VmRSS)

# --- the load ----------------------------------------------------------------
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
    big = [f for f in files if f[1] > (4 << 20)]
    end = time.time() + secs
    nr = nb = bad = 0
    while files and time.time() < end:
        rel, size = rnd.choice(big if big and rnd.random() < 0.5 else files)
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
    return 1 if bad or not files or not nr else 0

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
    return 1 if bad or not walks else 0

if sys.argv[1] == "read":
    sys.exit(reader(sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])))
sys.exit(lister(sys.argv[2], float(sys.argv[3])))
PY
lp=()
for i in 1 2 3 4 5 6 7 8; do
	python3 "$TMP/load.py" read "$MP" "$tree" "$i" "$SECS" >"$TMP/r$i.out" 2>&1 &
	lp+=($!)
done
python3 "$TMP/load.py" list "$MP" "$SECS" >"$TMP/l.out" 2>&1 &
lp+=($!)
# Sample the daemon's RSS while the load runs.
max=0
samples=0
while kill -0 "${lp[0]}" 2>/dev/null; do
	r=$(rss_kib VmRSS)
	[ -n "$r" ] && [ "$r" -gt "$max" ] && max=$r
	samples=$((samples + 1))
	sleep 0.2
done
lrc=0
for p in "${lp[@]}"; do
	wait "$p" || lrc=1
done
cat "$TMP"/r?.out "$TMP/l.out" | sed 's/^/  /' | head -n 30
t_expect "load: every byte matched, no errors" test $lrc = 0
t_expect "load: daemon still alive" kill -0 "$PID"

# --- memory ------------------------------------------------------------------
hwm=$(rss_kib VmHWM)
cache_kib=$(( $(numfmt --from=iec "$CACHE") / 1024 ))
queued=$((cache_kib / 4))
[ $queued -lt 1024 ] && queued=1024
[ $queued -gt 16384 ] && queued=16384
helpers=$(nproc)
[ "$helpers" -gt 4 ] && helpers=4
spares=$((cache_kib / 8))
[ $spares -gt 32768 ] && spares=32768
bound=$((base + cache_kib + queued + spares + THREADS * 4096 + helpers * 2048))
echo "daemon RSS: idle $((base / 1024)) MiB, sampled max $((max / 1024)) MiB" \
	"($samples samples), peak VmHWM $((hwm / 1024)) MiB; cache=$CACHE," \
	"threads=$THREADS, bound $((bound / 1024)) MiB"
# (not `ldd | grep -q`: with pipefail, grep leaving early fails ldd)
libs=$(ldd "$EZFS" 2>/dev/null)
if [[ $libs == *libasan* || $libs == *libtsan* ]]; then
	# The sanitizer's quarantine and shadow memory are RSS too.
	echo "note: sanitizer build, the RSS bound is not checked"
else
	t_expect "peak RSS ${hwm} KiB under the bound ${bound} KiB" \
		test "${hwm:-0}" -gt 0 -a "${hwm:-0}" -lt "$bound"
fi

# --- clean stop ----------------------------------------------------------------
t_expect "umount, daemon exits 0" t_fuse_stop
t_done
