#!/bin/bash
# SPDX-License-Identifier: MIT
# ezfs bench: read, ratio, latency, all and advise on a tiny input built here
# (a few hundred KiB of licence texts); CSV and JSON shapes checked with
# python3 (columns and keys, positive numbers, ratio = image / input blocks,
# latency rows for inline, queue and percpu each without and with the busy
# load, read rows per --dispatch mode and --engines engine), charts with
# --plot when gnuplot is installed (else a SKIP line for that part), bad
# option values exit 2, temporary directory removed, SIGINT cleans up too.
#
# Environment: EZFS (or EZFS_BIN) = the ezfs binary, SRC (or EZFS_SRC).
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
t_init

command -v python3 >/dev/null || t_skip "python3 is not installed"
IN=$TMP/in
mkdir -p "$IN/sub"
lic=(/usr/share/common-licenses/*)
[ -e "${lic[0]}" ] || t_skip "no /usr/share/common-licenses to sample"
cat "${lic[@]}" | head -c 393216 >"$IN/text.txt"
head -c 40000 "$IN/text.txt" >"$IN/sub/small.txt"
printf 'x' >"$IN/sub/tiny"
export TMPDIR=$TMP                 # bench's own temp dirs land here
FAST=(-q --runtime 1 --clusters 4K,64K --algs lz4hc,zstd
      --levels "lz4hc:9 deflate:6 libdeflate:6 zstd:3")

# has WHAT TEXT PATTERN: pass if TEXT contains PATTERN.
has() {
	case $2 in
	*"$3"*) t_pass "$1" ;;
	*) t_fail "$1: no '$3' in: $2" ;;
	esac
}

check() { # MODE CSV JSON
	python3 - "$@" <<'PY'
import csv, json, sys
mode, cpath, jpath = sys.argv[1:4]
cols = {"read": ["workload", "target", "alg", "level", "cluster", "engine",
                 "dispatch", "repeat", "bytes", "seconds", "mib_s"],
        "ratio": ["alg", "level", "cluster", "input_blocks", "image_blocks",
                  "ratio", "mkfs_mb_s", "seconds"],
        "latency": ["alg", "cluster", "engine", "dispatch", "load", "samples",
                    "avg_us", "median_us", "min_us", "max_us", "stddev_us"]}
want = ["read", "ratio", "latency"] if mode == "all" else [mode]
rows = list(csv.DictReader(open(cpath)))
recs = json.load(open(jpath))
assert len(rows) == len(recs) > 0, (len(rows), len(recs))
for m in want:
    rs = [r for r in rows if r["mode"] == m]
    js = [r for r in recs if r["mode"] == m]
    assert rs and js, "no %s records" % m
    for r, j in zip(rs, js):
        for c in cols[m]:
            assert c in r and r[c] != "", (m, c, r)
            assert c in j, (m, c, j)
        if m == "read":
            assert float(j["mib_s"]) > 0 and j["bytes"] > 0, j
            # lib rows carry their image's size: ratio = image / input
            assert j["target"] != "lib" or j["input_blocks"] > 0, j
            if j["target"] == "lib":
                assert abs(j["ratio"] - j["image_blocks"] / j["input_blocks"]) < 1e-4, j
        if m == "ratio":
            assert j["input_blocks"] > 0 and j["image_blocks"] > 0, j
            assert abs(j["ratio"] - j["image_blocks"] / j["input_blocks"]) < 1e-4, j
            assert j["mkfs_mb_s"] > 0, j
        if m == "latency":
            assert j["samples"] > 0, j
            assert 0 < j["min_us"] <= j["median_us"] <= j["max_us"], j
            assert j["avg_us"] > 0 and j["stddev_us"] >= 0, j
    if m == "read":
        assert {j["workload"] for j in js} == {"seq", "rand", "small"}
        assert {j["cluster"] for j in js} == {4096, 65536}
        assert {j["alg"] for j in js} == {"lz4hc", "zstd"}
    if m == "read":
        assert all(j["dispatch"] == "inline" for j in js), js
    if m == "latency":
        cells = {(j["alg"], j["dispatch"], j["load"]) for j in js}
        want_cells = {(a, d, l) for a in ("lz4hc", "zstd")
                      for d in ("inline", "queue", "percpu")
                      for l in ("none", "busy")}
        assert cells == want_cells and len(js) == 12, sorted(cells)
print("%s: %d records" % (mode, len(recs)))
PY
}

for mode in read ratio latency all; do
	out=$("$EZFS" bench "$mode" "${FAST[@]}" --csv "$TMP/$mode.csv" \
		--json "$TMP/$mode.json" "$IN" 2>&1)
	rc=$?
	if [ $rc != 0 ]; then
		t_fail "bench $mode exited $rc: $out"
		continue
	fi
	if msg=$(check "$mode" "$TMP/$mode.csv" "$TMP/$mode.json" 2>&1); then
		t_pass "bench $mode: $msg"
	else
		t_fail "bench $mode: $msg"
	fi
done

# read per dispatch mode and deflate engine; seq goes through the window
"$EZFS" bench read -q --runtime 1 --algs deflate --clusters 16K \
	--dispatch inline,queue:1,percpu --engines libdeflate,zlib --window 64K \
	--json "$TMP/disp.json" "$IN" >/dev/null 2>&1
if msg=$(python3 - "$TMP/disp.json" <<'PY' 2>&1
import json, sys
js = json.load(open(sys.argv[1]))
got = {(j["engine"], j["dispatch"], j["workload"]) for j in js}
want = {(e, d, w) for e in ("libdeflate", "zlib")
        for d in ("inline", "queue:1", "percpu")
        for w in ("seq", "rand", "small")}
assert got == want and len(js) == 18, sorted(got)
assert all(j["mib_s"] > 0 and j["bytes"] > 0 for j in js), js
print("%d cells" % len(js))
PY
); then
	t_pass "read --dispatch x --engines: $msg"
else
	t_fail "read --dispatch x --engines: $msg"
fi
out=$("$EZFS" bench latency --runtime 1 --algs lz4 --dispatch percpu \
	--load busy "$IN" 2>&1)
has "latency names the percpu workers" "$out" "percpu: "
for bad in "--dispatch frob" "--load heavy" "--engines nosuch" "--window x"; do
	# shellcheck disable=SC2086  # option and value on purpose
	out=$("$EZFS" bench latency $bad "$IN" 2>&1); rc=$?
	[ $rc = 2 ] && t_pass "bench $bad: exit 2" ||
		t_fail "bench $bad: rc $rc: $out"
done

# tables on stdout
out=$("$EZFS" bench ratio -q --levels zstd:3 "$IN" 2>&1)
has "ratio table" "$out" "image blks"

# an existing image as SOURCE, and --path on a plain directory
"$EZFS" mkfs -q -z lz4hc -C 65536 "$TMP/in.img" "$IN" >/dev/null 2>&1 ||
	"$EZFS" mkfs -z lz4hc -C 65536 "$TMP/in.img" "$IN" >/dev/null
out=$("$EZFS" bench read -q --runtime 1 --json "$TMP/img.json" "$TMP/in.img" 2>&1)
has "image source" "$out" "image   lz4"
out=$("$EZFS" bench read -q --no-drop --runtime 1 --path "$IN" 2>&1)
has "--path on a directory" "$out" "path"

out=$("$EZFS" bench advise -q --runtime 1 --goal random "$IN" 2>&1)
has "advise" "$out" "recommended for goal 'random': ezfs mkfs -z"

out=$("$EZFS" bench frob "$IN" 2>&1); rc=$?
[ $rc = 2 ] && t_pass "unknown mode: exit 2" || t_fail "unknown mode: rc $rc"

# SIGINT during a run: the temporary directory goes away
"$EZFS" bench ratio -q --levels "lzma:9 lzma:9 lzma:9 lzma:9" "$IN" \
	>/dev/null 2>&1 &
pid=$!
sleep 0.5
kill -INT $pid 2>/dev/null
wait $pid 2>/dev/null
left=$(find "$TMP" -maxdepth 1 -name 'ezfs-bench.*' | wc -l)
[ "$left" = 0 ] && t_pass "SIGINT: temporary directory removed" ||
	t_fail "SIGINT: $left ezfs-bench.* left in $TMP"

if command -v gnuplot >/dev/null; then
	"$EZFS" bench all "${FAST[@]}" --plot "$TMP/plot" "$IN" >/dev/null 2>&1
	n=$(find "$TMP/plot" -name '*.png' -size +1k 2>/dev/null | wc -l)
	[ "$n" -ge 5 ] && t_pass "--plot: $n charts" ||
		t_fail "--plot: $n charts in $TMP/plot"
else
	echo "SKIP: --plot (gnuplot not installed: apt-get install gnuplot-nox)"
	out=$("$EZFS" bench ratio -q --levels zstd:3 --plot "$TMP/plot" "$IN" 2>&1)
	has "--plot without gnuplot says how to get it" "$out" \
		"apt-get install gnuplot-nox"
fi
t_done
