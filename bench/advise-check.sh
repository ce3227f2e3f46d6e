#!/bin/bash
# SPDX-License-Identifier: MIT
# Benchmark, not a test: does `ezfs bench advise` model reads as they run?
#
# LINK=disk (the default; root): advise (goal seq) on SOURCE at the local
# disk's own rate and latency, builds the top N candidates of its table
# with the command it prints, and reads every file of each image once,
# cold (caches dropped, mounted afresh), through the kernel's EROFS
# driver; prints the model's sequential MiB/s and rank beside the measured
# ones.
#
# LINK=http: the same images read over http:// by ezfs, as
# bench/remote-compare.sh measures them (its own server answering each
# request after RTT ms, `ezfs cat --no-cache` of the largest file). The
# sample is SOURCE's data as one file, so that the largest file is all of
# it. The link's rate is taken from remote-compare.sh's rows at 0 ms (the
# image's bytes fetched over the time the remote read took beyond the read
# of the downloaded copy); the model (advise's JSON: ratio, round trips
# and read time per MiB, reader remote) then predicts the sequential MB/s
# at each RTT, beside what remote-compare.sh measured there. Each must be
# within 1.5x (exit 1 otherwise).
#
# usage: bench/advise-check.sh SOURCE     (knobs as env vars)
#   EZFS     ezfs binary                          (build/tools/ezfs/ezfs)
#   WORK     images, mount point, JSON            (/tmp/ezfs-advcheck)
#   TOP      candidates to compare                (3)
#   SIZE     advise's --size                      (64M)
#   REPEAT   cold reads of each image, median     (3)
#   LINK     disk or http                         (disk)
#   RTTS     http: round trips to model, ms       ("20"; 0 is always run)
#   ADVISE   more advise options, e.g. "--levels 'zstd:3 lz4hc:12'"
set -euo pipefail

SRC=${1:?usage: bench/advise-check.sh SOURCE}
EZFS=${EZFS:-build/tools/ezfs/ezfs}
WORK=${WORK:-/tmp/ezfs-advcheck}
TOP=${TOP:-3}
SIZE=${SIZE:-64M}
REPEAT=${REPEAT:-3}
LINK=${LINK:-disk}
RTTS=${RTTS:-20}
case $LINK in
disk) [ "$(id -u)" = 0 ] || { echo "advise-check: needs root (mount, drop_caches)" >&2; exit 1; } ;;
http) ;;
*) echo "advise-check: LINK is disk or http" >&2; exit 2 ;;
esac
mkdir -p "$WORK/mnt"
EZFS=$(realpath "$EZFS")
here=$(cd "$(dirname "$0")" && pwd)

# the sample advise uses, kept so that the images hold the same data
rm -rf "$WORK/src"
mkdir -p "$WORK/src"
python3 - "$SRC" "$WORK/src" "$SIZE" "$LINK" <<'EOF'
import os, shutil, sys
src, dst, size, link = sys.argv[1:5]
mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
left = int(size[:-1]) * mult[size[-1]] if size[-1] in mult else int(size)
files = [src] if os.path.isfile(src) else sorted(
    os.path.join(d, f) for d, _, fs in os.walk(src) for f in fs)
for p in files:
    if left <= 0 or not os.path.isfile(p) or os.path.islink(p):
        continue
    n = min(os.path.getsize(p), left)
    out = os.path.join(dst, os.path.relpath(p, src) if p != src else os.path.basename(p))
    if link == "http":  # one file: remote-compare.sh reads the largest
        out = os.path.join(dst, "sample")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(p, "rb") as i, open(out, "ab" if link == "http" else "wb") as o:
        o.write(i.read(n))
    left -= n
EOF

eval "set -- $ADVISE"
if [ "$LINK" = http ]; then
	# the rate is a placeholder for advise's ranking: each candidate's
	# figure is recomputed below with the link's measured rate
	"$EZFS" bench advise -q --goal seq --reader remote --storage-rate 100 \
		--storage-latency "${RTTS##* }ms" --size "$SIZE" "$@" \
		--json "$WORK/advise.json" "$WORK/src" >"$WORK/advise.txt"
	python3 - "$WORK/advise.json" "$TOP" >"$WORK/top.txt" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
for x in sorted(d["candidates"], key=lambda x: x["score"])[: int(sys.argv[2])]:
    z = x["alg"] + ("," + str(x["level"]) if x["level"] >= 0 else "")
    print(z, x["cluster"], x["ratio"], x["seq_rounds_per_mib"], x["read_ms_per_mib"])
EOF
	printf '%-10s %8s %7s %5s %11s %9s %9s %9s %9s %5s\n' candidate cluster \
		ratio rtt "rounds m/r" "link MB/s" model "(advise)" measured x
	bad=0
	n=0
	while read -r z cl ratio rounds readms; do
		n=$((n + 1))
		img=$WORK/cand$n.img
		"$EZFS" mkfs -q -z "$z" -C "$cl" "$img" "$WORK/src"
		RTTS="0 $RTTS" REPEAT=$REPEAT EZFS=$EZFS "$here/remote-compare.sh" "$img" \
			>"$WORK/rc$n.txt" 2>&1 </dev/null || { cat "$WORK/rc$n.txt"; exit 1; }
		python3 - "$WORK/rc$n.txt" "$z" "$cl" "$ratio" "$rounds" "$readms" <<'EOF' || bad=1
import sys
rows, size = {}, 0
for line in open(sys.argv[1]):
    f = line.split()
    if line.startswith("image:"):
        size = int(line.split("seq: ")[1].split("(")[1].split()[0])
    if len(f) == 10 and f[0].isdigit():
        rows[(int(f[0]), f[1])] = f
z, cl = sys.argv[2], sys.argv[3]
ratio, rounds, readms = map(float, sys.argv[4:7])
mib = size / 2**20
seq0, dl0 = rows[(0, "seq")], rows[(0, "download")]
fetched, ms0, base0, dlms = int(seq0[5]), int(seq0[4]), int(seq0[9]), int(dl0[4])
# the link's rate: the remote read at 0 ms beyond the read of the copy;
# the read itself as this machine did it then (a busy machine's CPU is
# not the model's to predict)
local = base0 - dlms
rate = fetched / max(1e-3, (ms0 - local) / 1e3)
bad = 0
for (rtt, row), f in sorted(rows.items()):
    if row != "seq":
        continue
    meas = float(f[8])
    out = []
    for read in (local / mib, readms):
        t = ratio * 2**20 / rate + rounds * rtt / 1e3 + read / 1e3
        out.append(2**20 / t / 1e6)
    x = out[0] / meas
    ok = 1 / 1.5 <= x <= 1.5
    bad |= not ok
    print("%-10s %8s %7.4f %5d %6.1f/%-4s %9.1f %9.1f %9.1f %9.1f %5.2f%s" % (
        z, cl, ratio, rtt, rounds * mib, f[2], rate / 1e6, out[0], out[1],
        meas, x, "" if ok else "  outside 1.5x"))
sys.exit(bad)
EOF
	done <"$WORK/top.txt"
	echo "(rounds: the model's round trips for the file and remote-compare.sh's;"
	echo " MB/s of file data: the model's sequential figure, with the link's rate"
	echo " and this machine's read of the image from the 0 ms rows, (advise) with"
	echo " advise's own read rate instead, and remote-compare.sh's seq row;"
	echo " x = model / measured, each within 1.5x)"
	exit $bad
fi

# advise at the disk WORK is on: its measured rate and latency
"$EZFS" bench advise -q --goal seq --storage "$WORK/src" --size "$SIZE" "$@" \
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
