#!/bin/bash
# SPDX-License-Identifier: MIT
# test_write_folders.sh - lib/write's folders call each other without a
# circle (docs/architecture.md, "lib/write's stages"): the files directly
# in lib/write (the stages) count as one folder, each sub-folder (tar/,
# tree/, fragments/, compress/, spool/, io/...) as another. A symbol that
# an object file of one folder uses and an object of another defines is an
# arrow between the two; the arrows must form no circle. A circle is
# printed with a symbol for each of its arrows, and fails the test; so
# does a file of lib/write longer than 1,200 lines. First the search is
# run on made-up arrows with a circle, which it must find.
#
# usage: tests/unit/test_write_folders.sh BUILD_DIR [SRC]
#        (defaults: $EZFS_BUILD_DIR, $EZFS_SRC or the folder above tests/)
set -euo pipefail
build=${1:-${EZFS_BUILD_DIR:-}}
src=${2:-${EZFS_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}}
if [ -z "$build" ] || [ ! -d "$build" ]; then echo "usage: $0 BUILD_DIR"; exit 2; fi
command -v nm >/dev/null || { echo "SKIP: nm (binutils) is not installed"; exit 77; }
MAX_LINES=1200

# circles: reads "FROM TO SYMBOL" lines; prints "order: ..." (the folders,
# each after every folder it calls) and exits 0, or prints one circle as
# "FROM -> TO (SYMBOL)" lines and exits 1
circles() {
	awk '
	{
		if (!(($1, $2) in sym)) { out[$1] = out[$1] " " $2; sym[$1, $2] = $3 }
		node[$1]; node[$2]
	}
	END {
		# peel off the folders whose arrows all lead to peeled ones
		left = length(node)
		do {
			moved = 0
			for (n in node) {
				if (n in done) continue
				k = split(out[n], t, " "); ok = 1
				for (i = 1; i <= k; i++) if (!(t[i] in done)) ok = 0
				if (ok) { done[n]; order = order " " n; left--; moved = 1 }
			}
		} while (moved)
		if (!left) { print "order (each after what it calls):" order; exit 0 }
		# what is left holds a circle: walk until a folder comes again
		for (n in node) if (!(n in done)) { cur = n; break }
		while (!(cur in seen)) {
			seen[cur] = ++step; k = split(out[cur], t, " ")
			for (i = 1; i <= k; i++) if (!(t[i] in done)) { nxt[cur] = t[i]; break }
			cur = nxt[cur]
		}
		start = cur
		do {
			printf "  %s -> %s (%s)\n", cur, nxt[cur], sym[cur, nxt[cur]]
			cur = nxt[cur]
		} while (cur != start)
		exit 1
	}'
}

# the search itself: a made-up circle b -> c -> d -> b must be found
if printf 'a b f1\nb c f2\nc d f3\nd b f4\nd e f5\n' | circles >/dev/null; then
	echo "FAIL: the circle search missed the made-up circle b -> c -> d -> b"
	exit 1
fi
printf 'a b f1\nb c f2\na c f3\n' | circles >/dev/null ||
	{ echo "FAIL: the circle search found a circle in a -> b -> c, a -> c"; exit 1; }

# lib/write's objects (not those of sources since removed), and the
# arrows between their folders: "FROM TO SYMBOL" (FROM uses SYMBOL of TO)
objs=()
for o in $(find "$build" -path '*/CMakeFiles/*' -path '*/lib/write/*' -name '*.o' | sort); do
	rel=${o#*.dir/}
	[ -f "$src/${rel%.o}" ] && objs+=("$o")
done
[ ${#objs[@]} -gt 0 ] || { echo "FAIL: no object files of lib/write under $build (build first)"; exit 1; }
arrows=$({
	nm -A --defined-only -g "${objs[@]}" | awk 'NF == 3 {print "D", $1, $3}'
	nm -A -u "${objs[@]}" | awk '{print "U", $1, $NF}'
} | awk '
	function folder(o) {
		sub(/:.*/, "", o); sub(/.*\/lib\/write\//, "", o)
		return o ~ /\// ? substr(o, 1, index(o, "/")) : "."
	}
	$1 == "D" { def[$3] = folder($2); next }
	($3 in def) && def[$3] != folder($2) { print folder($2), def[$3], $3 }
' | sort -u)
n=${#objs[@]}

bad=0
if ! res=$(circles <<<"$arrows"); then
	echo "FAIL: a circle between lib/write's folders (the top one is '.'):"
	echo "$res"
	bad=1
fi
while read -r f; do
	l=$(wc -l <"$f")
	if [ "$l" -gt $MAX_LINES ]; then
		echo "FAIL: ${f#"$src"/} has $l lines (at most $MAX_LINES)"
		bad=1
	fi
done < <(find "$src/lib/write" -name '*.[ch]' | sort)
[ $bad = 0 ] || exit 1
echo "ok: $n object files of lib/write, no circle between its folders; $res"
echo "ok: no file of lib/write is longer than $MAX_LINES lines"
