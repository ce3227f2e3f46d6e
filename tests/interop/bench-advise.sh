#!/bin/bash
# SPDX-License-Identifier: MIT
# ezfs bench advise against the defects of its first model (issue 34, item
# 13), on small generated samples:
#  1. pclusters stored raw are not counted as decoded: random data gives
#     every candidate a decoded share and a decode rate of 0 ("-" in the
#     table); half random, half text: decode rate x read time = the share;
#  2. rows that tie on a single goal (random 4K reads at 20 ms) are decided
#     by the other two axes: the pick has the best balanced score of ratio
#     and sequential time among the rows within 1% of the best;
#  3. the verdict agrees with the table: the term it names is the pick's
#     largest, and what it says of requests and pcluster size holds in the
#     rows of the pick's algorithm (on data whose ratio hardly changes with
#     the pcluster size, where only the readahead window decides);
#  4. readahead windows join requests: the round trips the model counts
#     for a sequential read over http (reader remote) are those of a real
#     `ezfs cat` of the image from nginx (skipped without nginx or libcurl).
#
# Environment: EZFS (or EZFS_BIN) = the ezfs binary, SRC (or EZFS_SRC).
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
t_init
t_need_cmd python3
export TMPDIR=$TMP # bench's own temp dirs land here

# gen OUT KIND BYTES: deterministic text (words) or random bytes
gen() {
	python3 - "$@" <<'PY'
import random, sys
out, kind, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
r = random.Random(7)
if kind == "random":
    data = r.randbytes(n)
elif kind == "symbols":  # 16 symbols, no repeats: entropy coding only, so
    # the ratio hardly changes with the pcluster size
    data = bytes(b"abcdefghijklmnop"[b & 15] for b in r.randbytes(n))
else:
    words = ["".join(r.choice("abcdefghijklmnop") for _ in range(r.randint(2, 9)))
             for _ in range(4000)]
    text, size = [], 0
    while size < n:
        w = r.choice(words)
        text.append(w)
        size += len(w) + 1
    data = " ".join(text).encode()[:n]
open(out, "wb").write(data)
PY
}
mkdir -p "$TMP/raw" "$TMP/mixed" "$TMP/text" "$TMP/sym" "$TMP/big"
gen "$TMP/raw/r.bin" random 786432
gen "$TMP/mixed/r.bin" random 524288
gen "$TMP/mixed/t.txt" text 524288
gen "$TMP/text/t.txt" text 2097152
gen "$TMP/sym/s.txt" symbols 2097152
gen "$TMP/big/t.txt" text 12582912

# adv OUT ARGS...: advise with its JSON in OUT, the table in OUT.txt
adv() {
	local out=$1
	shift
	"$EZFS" bench advise -q --runtime 0.05 --json "$out" "$@" \
		>"$out.txt" 2>&1
}
# pyjson CODE FILE: run CODE on the advise JSON in FILE (d), print its
# lines; exit status 1 when it printed anything starting with "bad"
pyjson() {
	python3 -c "import json, math, sys
d = json.load(open(sys.argv[1]))
c = d['candidates']
p = d['pick']
$1" "$2"
}

# 1. raw pclusters
if adv "$TMP/raw.json" --levels "lz4 zstd:3" --clusters 4K,64K \
	--storage-rate 100 --storage-latency 1ms "$TMP/raw" &&
	r=$(pyjson '
bad = [x for x in c if x.get("decoded_share") != 0 or x["decode_mib_s"] != 0]
print("bad %s" % bad if bad else "ok")' "$TMP/raw.json") && [ "$r" = ok ]; then
	t_pass "random data: nothing counted as decoded"
else
	t_fail "random data: ${r:-} $(tail -5 "$TMP/raw.json.txt")"
fi
if grep -E '^(lz4|zstd-3) ' "$TMP/raw.json.txt" | awk '{ if ($4 != "-") bad = 1 }
	END { exit bad }'; then
	t_pass "random data: the table's decode column says -"
else
	t_fail "random data: decode column: $(grep -E '^(lz4|zstd)' "$TMP/raw.json.txt")"
fi
if adv "$TMP/mixed.json" --levels "lz4 zstd:3" --clusters 4K,64K \
	--storage-rate 100 --storage-latency 1ms "$TMP/mixed" &&
	r=$(pyjson '
bad = []
for x in c:
    s, dec = x.get("decoded_share", 1), x["decode_mib_s"]
    rd = x.get("read_ms_per_mib", 1e3 / dec)
    if not 0.2 < s < 0.8 or abs(dec * rd / 1e3 - s) > 0.02 * s + 0.002:
        bad.append((x["alg"], x["cluster"], s, dec, rd))
print("bad %s" % bad if bad else "ok")' "$TMP/mixed.json") && [ "$r" = ok ]; then
	t_pass "half random: the decode rate counts the encoded half only"
else
	t_fail "half random: ${r:-} $(tail -5 "$TMP/mixed.json.txt")"
fi

# 2. tied rows: random 4 KiB reads at 20 ms
TIE='
def axis(x, b, w):
    return math.log(x / b) / max(math.log(w / b), math.log(1.1))
ax = {"ratio": [x["ratio"] for x in c],
      "seq": [1 / x["seq_mib_s"] for x in c]}
best = min(x["rand4k_us"] for x in c)
tied = [i for i, x in enumerate(c) if x["rand4k_us"] <= 1.01 * best]
def other(i):
    return sum(axis(v[i], min(v), max(v)) for v in ax.values()) / 2
want = min(tied, key=other)
pi = [i for i, x in enumerate(c) if x["pick"]]
if len(tied) < 2:
    print("bad: no rows tie (%s)" % [x["rand4k_us"] for x in c])
elif pi != [want] and abs(other(pi[0]) - other(want)) > 1e-3:
    print("bad: pick %s-%s %s, not the best of the tied rows on ratio and "
          "seq: %s-%s %s" % (c[pi[0]]["alg"], c[pi[0]]["level"],
          c[pi[0]]["cluster"], c[want]["alg"], c[want]["level"],
          c[want]["cluster"]))
else:
    print("ok %d" % len(tied))'
if adv "$TMP/tie.json" --goal random --storage registry-20ms \
	--levels "lz4hc:9 zstd:9" --clusters 4K,16K "$TMP/text" &&
	r=$(pyjson "$TIE" "$TMP/tie.json") && [ "${r%% *}" = ok ] &&
	grep -q "tie on the random 4K time" "$TMP/tie.json.txt"; then
	t_pass "goal random at 20 ms: ${r#ok } rows tie, the other axes pick"
else
	t_fail "goal random at 20 ms: ${r:-} $(tail -6 "$TMP/tie.json.txt")"
fi

# 3. the verdict and the table
VERDICT='
import re
txt = open(sys.argv[1] + ".txt").read()
m = re.search(r"most of it is (.*)", txt)
terms = {"storage": p["seq_storage_ms_per_mib"],
         "requests": p["seq_requests_ms_per_mib"],
         "decode": p["seq_decode_ms_per_mib"]}
top = max(terms, key=terms.get)
said = None if not m else ("storage" if "image" in m.group(1) else
    "requests" if "request" in m.group(1) else "decode")
rows = sorted((x["cluster"], x["seq_requests_ms_per_mib"]) for x in c
              if x["alg"] == p["alg"] and x["level"] == p["level"])
lo, hi = rows[0][1], rows[-1][1]
if said != top or d.get("verdict", {}).get("dominant", top) != top:
    print("bad: the verdict names %s, the largest term is %s" % (said, top))
elif m and "fewer requests" in m.group(1) and not hi * 1.25 < lo:
    print("bad: fewer requests claimed, the table has %.2f ms at %d, %.2f "
          "at %d" % (lo, rows[0][0], hi, rows[-1][0]))
elif m and "changes little" in m.group(1) and hi * 1.25 < lo:
    print("bad: little change claimed, the table has %.2f to %.2f" % (lo, hi))
else:
    print("ok %s" % top)'
for st in "--storage registry-20ms" "--storage-rate 100 --storage-latency 20ms" \
	"--storage-rate 5000 --storage-latency 0"; do
	# shellcheck disable=SC2086  # the options on purpose
	if adv "$TMP/verdict.json" --goal seq $st --levels "zstd:9 deflate:6" \
		--clusters 4K,16K,64K "$TMP/sym" &&
		r=$(pyjson "$VERDICT" "$TMP/verdict.json") && [ "${r%% *}" = ok ]; then
		t_pass "$st: the verdict names the largest term (${r#ok }), as the table shows it"
	else
		t_fail "$st: ${r:-} $(tail -4 "$TMP/verdict.json.txt")"
	fi
done

# 4. the round trips of a sequential read over http
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
if "$EZFS" cache --cache-dir "$TMP/probe" ls 2>&1 | grep -q "without libcurl"; then
	echo "SKIP: rounds over http: ezfs was built without libcurl"
elif [ ! -x "$NGINX" ]; then
	echo "SKIP: rounds over http: nginx is not installed (scripts/deps.sh installs nginx-light)"
else
	NGINX_PID=
	trap '[ -z "$NGINX_PID" ] || kill "$NGINX_PID" 2>/dev/null; t_cleanup' EXIT
	mkdir -p "$TMP/www"
	"$EZFS" mkfs -q -z lz4 -C 65536 "$TMP/www/big.img" "$TMP/big" >/dev/null
	chmod 644 "$TMP/www/big.img"
	if ! t_nginx "$TMP/www"; then
		t_fail "rounds over http: nginx did not start"
	elif adv "$TMP/rounds.json" --goal seq --reader remote --storage-rate 100 \
		--storage-latency 20ms --levels lz4 --clusters 64K "$TMP/big" &&
		EZFS_REMOTE_STATS=$TMP/stats "$EZFS" cat --no-cache \
			"http://127.0.0.1:$PORT/big.img" /t.txt >"$TMP/t.out" &&
		cmp -s "$TMP/t.out" "$TMP/big/t.txt"; then
		got=$(tail -n 1 "$TMP/stats" | tr ' ' '\n' | sed -n 's/^rounds=//p')
		want=$(pyjson 'print("%.1f" % (c[0]["seq_rounds_per_mib"] * 12))' \
			"$TMP/rounds.json")
		if python3 -c 'import sys; sys.exit(abs(float(sys.argv[1]) - float(sys.argv[2])) > 1)' \
			"$want" "${got:-0}"; then
			t_pass "rounds over http: the model counts $want round trips, ezfs cat made $got"
		else
			t_fail "rounds over http: the model counts $want, ezfs cat made ${got:-?}"
		fi
	else
		t_fail "rounds over http: $(tail -3 "$TMP/rounds.json.txt")"
	fi
fi
t_done
