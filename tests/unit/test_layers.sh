#!/bin/bash
# SPDX-License-Identifier: MIT
# The layers of docs/architecture.md, checked at link level and in the
# sources: every symbol an object file uses must be defined in its own folder
# or in a layer below it, and every `#include "LAYER/..."` of a lib/ file
# must name its own layer or one below.
#
#   util < format < io < codec < engine < read < check, write, extract < mount, remote, bench < tools
#
# Layers of one height sit side by side: neither may call the other. Sub-folders
# (lib/write/compress/...) belong to their layer. A reference that goes up
# or sideways is printed with both files and the symbol, and fails the test.
#
# usage: tests/unit/test_layers.sh BUILD_DIR [SRC]
#        (defaults: $EZFS_BUILD_DIR, $EZFS_SRC or the folder above tests/)
set -euo pipefail
build=${1:-${EZFS_BUILD_DIR:-}}
src=${2:-${EZFS_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}}
[ -n "$build" ] && [ -d "$build" ] || { echo "usage: $0 BUILD_DIR"; exit 2; }
command -v nm >/dev/null || { echo "SKIP: nm (binutils) is not installed"; exit 77; }

# rank LAYER: its height; equal heights may not call each other
rank() {
	case $1 in
	util) echo 0 ;; format) echo 1 ;; io) echo 2 ;; codec) echo 3 ;;
	engine) echo 4 ;; read) echo 5 ;; check | write | extract) echo 6 ;;
	mount | remote | bench) echo 7 ;; tools) echo 8 ;; *) echo -1 ;;
	esac
}

# Every object of the library and the command, as "layer<TAB>object".
objs=$(find "$build" -path '*/CMakeFiles/*' -name '*.o' \( -path '*/lib/*' -o -path '*/tools/ezfs/*' \) |
	grep -v -e '/tests/' -e 'fuzz' | sort)
[ -n "$objs" ] || { echo "FAIL: no object files under $build (build first)"; exit 1; }
# "object layer" for every object whose source still exists (a stale
# build's leftovers are no part of it)
map=$(while read -r o; do
	rel=${o#*.dir/}; rel=${rel%.o}
	[ -f "$src/$rel" ] || continue
	case $o in
	*/tools/ezfs/*) l=tools ;;
	*/lib/*) l=${o##*/lib/}; l=${l%%/*} ;;
	esac
	[ "$(rank "$l")" -ge 0 ] || { echo "FAIL: $o is in no known layer ($l)" >&2; exit 1; }
	echo "$o $(rank "$l") $l"
done <<<"$objs")
n=$(wc -l <<<"$map")
live=$(awk '{print $1}' <<<"$map")
[ -n "$live" ] || { echo "FAIL: no object file under $build has its source in $src"; exit 1; }
# one nm over all objects: definitions first, then the undefined uses;
# a use whose definition sits at the same height or above fails
bad=0
out=$(
	{
		sed 's/^/M /' <<<"$map"
		xargs nm -A --defined-only -g <<<"$live" | awk 'NF == 3 {f = $1; sub(/:[^:]*$/, "", f); print "D", f, $3}'
		xargs nm -A -u <<<"$live" | awk '{f = $1; sub(/:$/, "", f); print "U", f, $NF}'
	} | awk -v build="$build/" '
	$1 == "M" { rk[$2] = $3; ly[$2] = $4; next }
	$1 == "D" { def[$3] = $2; next }
	$1 == "U" {
		d = def[$3]; o = $2
		if (d == "" || ly[d] == ly[o]) next
		if (rk[d] >= rk[o]) {
			od = o; dd = d; sub(build, "", od); sub(build, "", dd)
			print "FAIL: " ly[o] " -> " ly[d] ": " od " uses " $3 " of " dd
		}
	}'
)
if [ -n "$out" ]; then
	echo "$out"
	bad=$(grep -c '^FAIL' <<<"$out")
fi
# The sources: private headers of a layer above are off limits too.
while IFS=: read -r f inc; do
	l=${f#"$src"/lib/}; l=${l%%/*}
	il=${inc#*\"}; il=${il%%/*}
	[ "$(rank "$il")" -ge 0 ] || continue   # ezfs/ (public), system
	[ "$il" = "$l" ] && continue
	if [ "$(rank "$il")" -ge "$(rank "$l")" ]; then
		echo "FAIL: $l -> $il: ${f#"$src"/} includes ${inc#*#include }"
		bad=$((bad + 1))
	fi
done < <(grep -rH '^#include "[a-z]*/' "$src/lib" --include='*.c' --include='*.h')

if [ $bad -gt 0 ]; then
	echo "$bad references go up or sideways across the layers (docs/architecture.md)"
	exit 1
fi
echo "ok: $n object files and the lib/ sources: every reference goes down the layers"
