#!/bin/bash
# SPDX-License-Identifier: MIT
# ezfs bench, its command line on tiny inputs: a SIGHUP ignored at startup
# (nohup) stays ignored, advise prints an `ezfs mkfs` command that builds
# the image when pasted, too short read runs are named on stderr, --no-drop
# is not called a cold cache, an empty source is an error, --accel,
# --strict-accel and --dispatch work as for the other commands, and every
# --help lists exactly the options of the getopt table.
#
# Environment: EZFS (or EZFS_BIN) = the ezfs binary, SRC (or EZFS_SRC).
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
t_init

lic=(/usr/share/common-licenses/*)
[ -e "${lic[0]}" ] || t_skip "no /usr/share/common-licenses to sample"
IN=$TMP/in
mkdir -p "$IN" "$TMP/empty"
cat "${lic[@]}" | head -c 131072 >"$IN/text.txt"
head -c 20000 "$IN/text.txt" >"$IN/small.txt"
: >"$TMP/empty-file"
export TMPDIR=$TMP                 # bench's own temp dirs land here

# has WHAT TEXT PATTERN: pass if TEXT contains PATTERN.
has() {
	case $2 in
	*"$3"*) t_pass "$1" ;;
	*) t_fail "$1: no '$3' in: $2" ;;
	esac
}
hasnt() {
	case $2 in
	*"$3"*) t_fail "$1: '$3' in: $2" ;;
	*) t_pass "$1" ;;
	esac
}
bench_dirs() { find "$TMP" -maxdepth 1 -name 'ezfs-bench.*' | wc -l; }

# 1. SIGHUP ignored at startup (nohup, trap '' HUP) stays ignored: the run
# completes. A ratio run of about a second on 2 MiB, signalled once its
# temporary directory exists; the same without the trap must end at once
# (that the signal came in time).
mkdir -p "$TMP/big"
for _ in 1 2 3 4 5 6 7 8; do cat "${lic[@]}"; done | head -c 2097152 \
	>"$TMP/big/text.txt"
slow=(bench ratio -q --levels "lzma:9 lzma:9 lzma:9 lzma:9" "$TMP/big")
hup_run() { # OUT [trap]: the slow run, SIGHUP once it has its temp dir
	if [ -n "${2:-}" ]; then
		(trap '' HUP; exec "$EZFS" "${slow[@]}" >"$1" 2>&1) &
	else
		"$EZFS" "${slow[@]}" >"$1" 2>&1 &
	fi
	pid=$!
	for _ in $(seq 200); do
		[ "$(bench_dirs)" != 0 ] && break
		sleep 0.02
	done
	sleep 0.1
	kill -HUP $pid 2>/dev/null
	wait $pid 2>/dev/null
}
hup_run "$TMP/hup0.out"
rc=$?
[ $rc = 129 ] && [ "$(bench_dirs)" = 0 ] &&
	t_pass "SIGHUP: the run ends, temporary directory removed" ||
	t_fail "SIGHUP: rc $rc, $(bench_dirs) ezfs-bench.* left"
hup_run "$TMP/hup.out" trap
rc=$?
if [ $rc = 0 ] && grep -q "image blks" "$TMP/hup.out"; then
	t_pass "SIGHUP ignored at startup: the run completes"
else
	t_fail "SIGHUP ignored at startup: rc $rc: $(cat "$TMP/hup.out")"
fi
[ "$(bench_dirs)" = 0 ] &&
	t_pass "SIGHUP ignored: temporary directory removed" ||
	t_fail "SIGHUP ignored: ezfs-bench.* left in $TMP"

# 2. advise: the recommended command is complete; pasted, it builds the image
# (a source name with a space and a quote needs the shell quoting)
SD="$TMP/it's a dir"
mkdir -p "$SD" "$TMP/work"
cp "$IN/small.txt" "$SD/"
out=$(cd "$TMP/work" &&
	"$EZFS" bench advise -q --runtime 0.1 "../it's a dir" 2>&1)
line=$(printf '%s\n' "$out" | grep "^recommended for goal")
cmd=${line#*: }
case $cmd in
"ezfs mkfs -z "*" -C "*) t_pass "advise: an ezfs mkfs command" ;;
*) t_fail "advise: no ezfs mkfs command in: $out" ;;
esac
hasnt "advise: -z ALG,N (no level=)" "$cmd" "level="
rm -f "$TMP/work/"*.erofs
if (cd "$TMP/work" && eval "\"\$EZFS\" ${cmd#ezfs } -q") \
	>"$TMP/paste.out" 2>&1 &&
	img=$(find "$TMP/work" -name '*.erofs') && [ -n "$img" ] &&
	"$EZFS" fsck "$img" >/dev/null 2>&1 &&
	"$EZFS" cat "$img" small.txt | cmp -s - "$SD/small.txt"; then
	t_pass "advise: the pasted command builds ${img##*/} of the source"
else
	t_fail "advise: pasting '$cmd' failed: $(cat "$TMP/paste.out")"
fi
out=$("$EZFS" bench advise -q --runtime 0.1 "$IN/small.txt" 2>&1)
has "advise on a file: DIR to fill in" "$out" "small.txt.erofs DIR"

# 2b. advise's JSON: the whole table under the documented model; the pick
# has the lowest score and is on the Pareto front; slow storage picks a
# smaller image than fast storage for goal seq
# (2 MiB of Python sources: the choice at 50 and 5000 MB/s must differ)
ADV=$TMP/adv-in
mkdir -p "$ADV"
cat /usr/lib/python3*/*.py 2>/dev/null | head -c 2097152 >"$ADV/src.py"
[ -s "$ADV/src.py" ] || cp "$IN/text.txt" "$ADV/src.py"
advise_json() { # OUT ARGS...
	local out=$1
	shift
	"$EZFS" bench advise -q --runtime 0.05 --levels "lz4hc:9 zstd:9" \
		--clusters 4K,64K --json "$out" "$@" "$ADV" >"$out.txt" 2>&1
}
ADV_CHECK='
import json, math, sys
d = json.load(open(sys.argv[1]))
c = d["candidates"]
st = d["storage"]
rate, lat = st["rate_mb_s"] * 1e6, st["latency_us"] / 1e6
bad = []
for x in c:
    s = x["ratio"] * 2**20 / rate + x["seq_rounds_per_mib"] * lat + \
        x["read_ms_per_mib"] / 1e3
    r = lat + x["rand_fetch_bytes"] / rate + (x["rand_decode_bytes"] /
        (x["decode_mib_s"] * 2**20) if x["decode_mib_s"] > 0 else 0)
    if abs(1 / s - x["seq_mib_s"]) > 0.01 * x["seq_mib_s"] + 0.1:
        bad.append("seq %s" % x)
    if abs(r * 1e6 - x["rand4k_us"]) > 0.01 * x["rand4k_us"] + 0.1:
        bad.append("rand %s" % x)
dom = lambda a, b: (a["ratio"] <= b["ratio"] and a["seq_mib_s"] >= b["seq_mib_s"]
    and a["rand4k_us"] <= b["rand4k_us"] and (a["ratio"] < b["ratio"] or
    a["seq_mib_s"] > b["seq_mib_s"] or a["rand4k_us"] < b["rand4k_us"]))
for x in c:
    front = not any(dom(y, x) for y in c if y is not x)
    if front != x["front"]:
        bad.append("front %s" % x)
p = [x for x in c if x["pick"]]
if len(p) != 1 or p[0]["score"] > min(x["score"] for x in c) + 1e-9:
    bad.append("pick is not the lowest score")
if p and not p[0]["front"]:
    bad.append("pick off the front")
if not d["command"].startswith("ezfs mkfs -z %s," % p[0]["alg"]):
    bad.append("command %s" % d["command"])
print("\n".join(bad) if bad else "ok", p[0]["ratio"] if p else "")
'
for g in seq balanced; do
	if advise_json "$TMP/adv-$g.json" --goal $g --storage-rate 50 &&
	   r=$(python3 -c "$ADV_CHECK" "$TMP/adv-$g.json") && [ "${r%% *}" = ok ]; then
		t_pass "advise --goal $g --json: the table, the model, the pick on the front"
	else
		t_fail "advise --goal $g --json: $r $(tail -3 "$TMP/adv-$g.json.txt")"
	fi
done
# the picks rest on decode rates measured in each run: a run disturbed by
# the rest of the machine is measured once more, longer, before failing
ADV_TABLE='
import json, sys
for x in json.load(open(sys.argv[1]))["candidates"]:
    print("  %s-%s %d: ratio %.4f decode %.0f MiB/s seq %.1f score %.3f%s" % (
        x["alg"], x["level"], x["cluster"], x["ratio"], x["decode_mib_s"],
        x["seq_mib_s"], x["score"], " pick" if x["pick"] else ""))
'
adv_storage() { # RUNTIME: 0 when 50 MB/s picks a smaller ratio than 5000
	[ "$1" = 0.05 ] || advise_json "$TMP/adv-seq.json" --goal seq \
		--storage-rate 50 --runtime "$1" || return 1
	advise_json "$TMP/adv-fast.json" --goal seq --storage-rate 5000 \
		--runtime "$1" &&
		f=$(python3 -c "$ADV_CHECK" "$TMP/adv-fast.json") &&
		[ "${f%% *}" = ok ] &&
		s=$(python3 -c "$ADV_CHECK" "$TMP/adv-seq.json") &&
		python3 -c "import sys; sys.exit(not float(sys.argv[1]) < float(sys.argv[2]))" \
			"${s#* }" "${f#* }"
}
if command -v ldd >/dev/null && ldd "$EZFS" 2>/dev/null | grep -Eq 'lib(a|t|ub)san'; then
	# the picks rest on decode rates, which a sanitizer's checks of every
	# read of the path around the codec (not of the codec) turn upside down
	echo "SKIP: advise: 50 MB/s against 5000 MB/s in a sanitizer build (its decode rates are not the codecs')"
elif adv_storage 0.05 || adv_storage 0.5; then
	t_pass "advise: 50 MB/s picks a smaller ratio (${s#* }) than 5000 MB/s (${f#* })"
else
	t_fail "advise: 50 MB/s picks ${s#* }, 5000 MB/s ${f#* };" \
		"at 50: $(python3 -c "$ADV_TABLE" "$TMP/adv-seq.json" 2>&1)" \
		"at 5000: $(python3 -c "$ADV_TABLE" "$TMP/adv-fast.json" 2>&1)"
fi
pick_cluster() { python3 -c 'import json,sys
print([x for x in json.load(open(sys.argv[1]))["candidates"] if x["pick"]][0]["cluster"])' "$1"; }
if advise_json "$TMP/adv-l0.json" --goal seq --storage-rate 50 --storage-latency 0 &&
   advise_json "$TMP/adv-l20.json" --goal seq --storage-rate 50 --storage-latency 20ms &&
   advise_json "$TMP/adv-r20.json" --goal random --storage-rate 50 --storage-latency 20ms &&
   c0=$(pick_cluster "$TMP/adv-l0.json") && c20=$(pick_cluster "$TMP/adv-l20.json") &&
   r20=$(pick_cluster "$TMP/adv-r20.json") &&
   [ "$c20" -ge "$c0" ] && [ "$r20" -lt 65536 ]; then
	t_pass "advise: 20 ms latency: seq picks $c20 >= $c0, random picks $r20 (not the largest)"
else
	t_fail "advise: latency: seq ${c20:-?} vs ${c0:-?}, random ${r20:-?}"
fi
t_run advprof "$EZFS" bench advise -q --runtime 0.05 --levels lz4hc:9 \
	--clusters 4K --storage registry-20ms "$IN"
if [ "$RC" = 0 ] && grep -q "^recommended for goal" "$OUT"; then
	t_pass "advise --storage registry-20ms: a profile"
else
	t_fail "advise --storage registry-20ms: rc=$RC $(head -c 300 "$ERR")"
fi
t_run advbad "$EZFS" bench advise --storage nosuch-disk "$IN"
t_check "advise --storage nosuch-disk: one line naming it" 1 \
	stderr "nosuch-disk"
t_run advlat "$EZFS" bench advise --storage-latency 20 "$IN"
t_check "advise --storage-latency without a unit: usage error" 2 \
	stderr "storage-latency"
t_run advrd "$EZFS" bench read --storage-rate 50 "$IN"
t_check "--storage-rate outside advise: usage error" 2 stderr "advise"

# 3. a read of 150 KiB takes well under 50 ms: one warning line; --no-drop
# is no cold cache
err=$("$EZFS" bench read -q --runtime 1 --algs lz4 --clusters 16K \
	--size 1M "$IN" 2>&1 >/dev/null)
has "short runs: warned" "$err" "too short to be meaningful"
has "short runs: what to do" "$err" "--size"
[ "$(printf '%s\n' "$err" | grep -c "too short")" = 1 ] &&
	t_pass "short runs: one line" || t_fail "short runs: $err"
out=$("$EZFS" bench read --no-drop --runtime 1 --path "$IN" 2>/dev/null)
hasnt "--no-drop: not a cold cache" "$out" "cold cache"
has "--no-drop: warm cache" "$out" "warm cache"

# 4. an empty source is an error naming it
for e in "$TMP/empty" "$TMP/empty-file"; do
	for mode in ratio read; do
		err=$("$EZFS" bench "$mode" -q "$e" 2>&1 >/dev/null); rc=$?
		if [ $rc = 1 ] &&
			[ "$err" = "ezfs bench: $e: no file data to measure" ]; then
			t_pass "bench $mode ${e##*/}: exit 1, one line"
		else
			t_fail "bench $mode ${e##*/}: rc $rc: $err"
		fi
	done
done

# 5. --accel SPEC, --strict-accel, --dispatch MODE
out=$(EZFS_ACCEL=bogus "$EZFS" bench read -q --runtime 1 --algs lz4 \
	--clusters 16K --accel lz4=lz4 --dispatch queue:1 \
	--json "$TMP/accel.json" "$IN" 2>&1); rc=$?
[ $rc = 0 ] && t_pass "--accel lz4=lz4 beats a bad EZFS_ACCEL" ||
	t_fail "--accel lz4=lz4: rc $rc: $out"
if command -v python3 >/dev/null; then
	if msg=$(python3 - "$TMP/accel.json" <<'PY' 2>&1
import json, sys
js = json.load(open(sys.argv[1]))
assert len(js) == 3, js
assert all(j["engine"] == "lz4=lz4" and j["dispatch"] == "queue:1"
           for j in js), js
PY
	); then
		t_pass "--accel, --dispatch: the records name them"
	else
		t_fail "--accel, --dispatch: $msg"
	fi
fi
# the test engine 'fail' always fails: a fallback, an error when strict
f=(bench read -q --runtime 1 --algs deflate --clusters 16K --accel deflate=fail)
"$EZFS" "${f[@]}" "$IN" >/dev/null 2>&1; rc=$?
[ $rc = 0 ] && t_pass "--accel deflate=fail: the fallback serves" ||
	t_fail "--accel deflate=fail: rc $rc"
"$EZFS" "${f[@]}" --strict-accel "$IN" >/dev/null 2>&1; rc=$?
[ $rc = 1 ] && t_pass "--strict-accel: the failing engine is an error" ||
	t_fail "--strict-accel: rc $rc"
"$EZFS" bench latency -q --runtime 1 --algs deflate --accel deflate=fail \
	--strict-accel --dispatch inline --load none "$IN" >/dev/null 2>&1; rc=$?
[ $rc = 1 ] && t_pass "latency --strict-accel: an error" ||
	t_fail "latency --strict-accel: rc $rc"
for bad in "--accel nosuch" "--accel lz4 --engines zlib" "--dispatch frob"; do
	# shellcheck disable=SC2086  # option and value on purpose
	out=$("$EZFS" bench read $bad "$IN" 2>&1); rc=$?
	[ $rc = 2 ] && t_pass "bench read $bad: exit 2" ||
		t_fail "bench read $bad: rc $rc: $out"
done

# 6. each --help lists exactly the options of the getopt table
tab=$(sed -n '/struct option lo\[\]/,/};/p' "$SRC/tools/ezfs/bench/main.c")
want=$(printf '%s\n' "$tab" | grep -oE '\{ ?"[a-z-]*"' | tr -d '{" ')
if printf '%s\n' "$tab" | grep -q CLI_ENGINE_OPTS; then
	want+=$'\n'$(sed -n '/define CLI_ENGINE_OPTS/,/^$/p' \
		"$SRC/tools/ezfs/common.h" | grep -oE '\{ ?"[a-z-]*"' | tr -d '{" ')
fi
want=$(printf '%s\n' "$want" | sort -u)
for a in "" read ratio latency all advise; do
	# shellcheck disable=SC2086  # no mode: no argument
	help=$("$EZFS" bench $a --help 2>&1); rc=$?
	got=$(printf '%s\n' "$help" | grep -oE '^  (-[a-z], )?--[a-z-]+' |
		grep -oE -- '--[a-z-]+$' | cut -c3- | sort -u)
	if [ $rc = 0 ] && [ -n "$want" ] && [ "$got" = "$want" ]; then
		t_pass "bench ${a:+$a }--help: the options of the table"
	else
		t_fail "bench ${a:+$a }--help: rc $rc; differs: $(diff \
			<(printf '%s\n' "$want") <(printf '%s\n' "$got") | \
			grep '^[<>]' | tr '\n' ' ')"
	fi
done
has "help lists --accel" "$help" "--accel SPEC"
for o in $want; do
	out=$("$EZFS" bench read --"$o" 2>&1)
	hasnt "--$o is accepted" "$out" "unknown option"
done
t_done
