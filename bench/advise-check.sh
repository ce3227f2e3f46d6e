#!/bin/bash
# SPDX-License-Identifier: MIT
# Benchmark, not a test: does `ezfs bench advise` rank as the disk does?
# Runs advise (goal seq) on SOURCE at the local disk's own rate and
# latency, builds the top N candidates of its table with the command it
# prints, and reads every file of each image once, cold (caches dropped,
# mounted afresh), through the kernel's EROFS driver; prints the model's
# sequential MiB/s and rank beside the measured ones.
#
# usage: bench/advise-check.sh SOURCE     (as root; knobs as env vars)
#   EZFS     ezfs binary                          (build/tools/ezfs/ezfs)
#   WORK     images, mount point, JSON            (/tmp/ezfs-advcheck)
#   TOP      candidates to compare                (3)
#   SIZE     advise's --size                      (64M)
#   REPEAT   cold reads of each image, median     (3)
#   ADVISE   more advise options, e.g. "--levels 'zstd:3 lz4hc:12'"
set -euo pipefail

SRC=${1:?usage: bench/advise-check.sh SOURCE}
EZFS=${EZFS:-build/tools/ezfs/ezfs}
WORK=${WORK:-/tmp/ezfs-advcheck}
TOP=${TOP:-3}
SIZE=${SIZE:-64M}
REPEAT=${REPEAT:-3}
[ "$(id -u)" = 0 ] || { echo "advise-check: needs root (mount, drop_caches)" >&2; exit 1; }
mkdir -p "$WORK/mnt"
EZFS=$(realpath "$EZFS")

# the sample advise uses, kept so that the images hold the same data
rm -rf "$WORK/src"
mkdir -p "$WORK/src"
python3 - "$SRC" "$WORK/src" "$SIZE" <<'EOF'
import os, shutil, sys
src, dst, size = sys.argv[1:4]
mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
left = int(size[:-1]) * mult[size[-1]] if size[-1] in mult else int(size)
files = [src] if os.path.isfile(src) else sorted(
    os.path.join(d, f) for d, _, fs in os.walk(src) for f in fs)
for p in files:
    if left <= 0 or not os.path.isfile(p) or os.path.islink(p):
        continue
    n = min(os.path.getsize(p), left)
    out = os.path.join(dst, os.path.relpath(p, src) if p != src else os.path.basename(p))
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(p, "rb") as i, open(out, "wb") as o:
        o.write(i.read(n))
    left -= n
EOF

# advise at the disk WORK is on: its measured rate and latency
eval "set -- $ADVISE"
"$EZFS" bench advise -q --goal seq --storage "$WORK/src" "$@" \
	--json "$WORK/advise.json" "$WORK/src" >"$WORK/advise.txt"
python3 - "$WORK/advise.json" "$TOP" >"$WORK/top.txt" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
c = sorted(d["candidates"], key=lambda x: x["score"])[: int(sys.argv[2])]
print("# storage %.1f MB/s, %.0f us" % (d["storage"]["rate_mb_s"], d["storage"]["latency_us"]))
for x in c:
    z = x["alg"] + ("," + str(x["level"]) if x["level"] >= 0 else "")
    print(z, x["cluster"], "%.1f" % x["seq_mib_s"], "%.4f" % x["ratio"])
EOF
head -1 "$WORK/top.txt"

cold_read() { # IMG -> MiB/s of reading every file once
	local img=$1 t0 t1 bytes
	sync
	echo 3 >/proc/sys/vm/drop_caches
	mount -t erofs -o loop,ro "$img" "$WORK/mnt"
	t0=$(date +%s.%N)
	bytes=$(find "$WORK/mnt" -type f -print0 | xargs -0 cat | wc -c)
	t1=$(date +%s.%N)
	umount "$WORK/mnt"
	python3 -c "print('%.1f' % ($bytes / 1048576 / ($t1 - $t0)))"
}

printf '%-12s %8s %8s %10s %6s %10s %6s\n' candidate cluster ratio \
	"model" rank measured rank
rank=0
tail -n +2 "$WORK/top.txt" | while read -r z cl model ratio; do
	rank=$((rank + 1))
	img=$WORK/cand$rank.img
	"$EZFS" mkfs -q -z "$z" -C "$cl" "$img" "$WORK/src"
	runs=()
	for _ in $(seq "$REPEAT"); do runs+=("$(cold_read "$img")"); done
	med=$(printf '%s\n' "${runs[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
	echo "$z $cl $ratio $model $rank $med"
done >"$WORK/rows.txt"
sort -k6,6gr "$WORK/rows.txt" | awk '{ print $0, NR }' | sort -k5,5n |
	while read -r z cl ratio model r med mr; do
		printf '%-12s %8s %8s %10s %6s %10s %6s\n' "$z" "$cl" "$ratio" \
			"$model" "$r" "$med" "$mr"
	done
echo "(MiB/s: the model's sequential figure for the disk, and the kernel's"
echo " cold read of every file; rank 1 = the fastest of each column)"
