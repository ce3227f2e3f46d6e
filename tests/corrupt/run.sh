#!/bin/sh
# SPDX-License-Identifier: MIT
# run.sh - generate corrupt EROFS images and check that ezfs rejects them cleanly.
#
# Environment:
#   EZFS              the ezfs binary (default: build/tools/ezfs/ezfs)
#   CORRUPT_LEVEL     quick (sanitizer builds) | normal (default) | full
#   CORRUPT_SEED      generator seed (default 1); cases are deterministic
#   CORRUPT_CPU       CPU seconds per command before it counts as a loop (10)
#   CORRUPT_TIMEOUT   wall seconds per command before it counts as a hang (60)
#   CORRUPT_JOBS      cases run in parallel (default: number of CPUs)
#   CORRUPT_FAILDIR   where failing images and their stderr are copied
#                     (default: ./corrupt-failures)
#   EZFS_FIXTURES     fixture directory (default: ../shared/fixtures)
#   CORRUPT_KEEP=1    keep the work directory
# Exit: 0 all passed, 1 a case failed, 77 a prerequisite is missing (skip).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
EZFS=${EZFS:-$root/build/tools/ezfs/ezfs}
level=${CORRUPT_LEVEL:-normal}
seed=${CORRUPT_SEED:-1}
jobs=${CORRUPT_JOBS:-$(nproc 2>/dev/null || echo 2)}
fixtures=${EZFS_FIXTURES:-$root/../shared/fixtures}
CORRUPT_FAILDIR=${CORRUPT_FAILDIR:-$PWD/corrupt-failures}

case $level in
quick) ntiny=10 nfix=5 ;;
full) ntiny=200 nfix=60 ;;
*) ntiny=40 nfix=12 ;;
esac

if [ ! -x "$EZFS" ]; then
	echo "SKIP: ezfs binary not found ($EZFS)"
	exit 77
fi
for t in python3 timeout; do
	if ! command -v $t > /dev/null; then
		echo "SKIP: $t not found"
		exit 77
	fi
done

work=$(mktemp -d "${TMPDIR:-/tmp}/ezfs-corrupt.XXXXXX") || exit 1
if [ "${CORRUPT_KEEP:-0}" != 1 ]; then
	trap 'chmod -R u+rwX "$work" 2>/dev/null; rm -rf "$work"' EXIT INT TERM
fi
rm -rf "$CORRUPT_FAILDIR"
export EZFS CORRUPT_FAILDIR
export CASE_WORK="$work/run"
mkdir -p "$CASE_WORK"

start=$(date +%s)
python3 "$here/gen_corrupt.py" bases --workdir "$work" --fixtures "$fixtures" \
	--level "$level" > "$work/bases.list" || exit 1
if [ ! -s "$work/bases.list" ]; then
	echo "SKIP: no base image (mkfs.erofs missing and no fixtures at $fixtures)"
	exit 77
fi

total=0
nfail=0
nnote=0
while read -r base; do
	name=$(basename "$base" .img)
	case $name in
	tiny-*) count=$ntiny ;;
	*) count=$nfix ;;
	esac
	cases=$work/cases/$name
	python3 "$here/gen_corrupt.py" cases --base "$base" --outdir "$cases" \
		--seed "$seed" --count "$count" || exit 1
	ls "$cases"/*.img | xargs -P "$jobs" -n 1 sh "$here/check_case.sh" \
		> "$work/results.$name"
	n=$(wc -l < "$work/results.$name")
	f=$(grep -c '^FAIL' "$work/results.$name")
	o=$(grep -c '(note:' "$work/results.$name")
	total=$((total + n))
	nfail=$((nfail + f))
	nnote=$((nnote + o))
	printf '%-22s %4d cases, %3d failed\n' "$name" "$n" "$f"
	grep '^FAIL' "$work/results.$name" | while read -r line; do
		c=$(echo "$line" | sed 's/^FAIL \([^:]*\):.*/\1/')
		desc=$(grep "^$c	" "$cases/$name.cases.tsv" | cut -f3)
		idx=$(echo "$c" | sed 's/^.*\.\([0-9][0-9][0-9]\)\.[a-z]*\.img$/\1/')
		echo "  $line"
		echo "    mutation: $desc"
		echo "    regenerate: gen_corrupt.py one --base <bases>/$name.img" \
			"--seed $seed --count $count --index $(expr "$idx" + 0) --out $c"
	done
	grep '(note:' "$work/results.$name" | head -n 3 | sed 's/^/  /'
	rm -rf "$cases"
done < "$work/bases.list"

# tally NAME: add $work/results.NAME to the totals, print its line and its
# failures.
tally() {
	n=$(wc -l < "$work/results.$1")
	f=$(grep -c '^FAIL' "$work/results.$1")
	total=$((total + n))
	nfail=$((nfail + f))
	printf '%-22s %4d cases, %3d failed\n' "$1" "$n" "$f"
	grep '^FAIL' "$work/results.$1" | sed 's/^/  /'
}

# Images that once showed a bug (tests/corrupt/regress/), strict: fsck
# must not call an image clean that extract refuses.
if ls "$here"/regress/*.img > /dev/null 2>&1; then
	ls "$here"/regress/*.img | CORRUPT_STRICT=1 xargs -P "$jobs" -n 1 \
		sh "$here/check_case.sh" > "$work/results.regress"
	tally regress
fi

# Hand-made hostile images (extract must not write through symlinks).
python3 "$here/gen_corrupt.py" crafted --workdir "$work" \
	--outdir "$work/crafted" > "$work/crafted.list" || exit 1
if [ -s "$work/crafted.list" ]; then
	xargs -P "$jobs" -n 1 sh "$here/check_case.sh" < "$work/crafted.list" \
		> "$work/results.crafted"
	tally crafted
fi

end=$(date +%s)
echo "corrupt: $total cases, $nfail failed, $nnote fsck-clean-but-extract-failed," \
	"$((end - start)) s (level $level, seed $seed)"
if [ "$nfail" -gt 0 ]; then
	echo "corrupt: failing images and their stderr are in $CORRUPT_FAILDIR;" \
		"<bases> is made by: gen_corrupt.py bases --workdir DIR" \
		"--fixtures $fixtures --level $level"
	exit 1
fi
exit 0
