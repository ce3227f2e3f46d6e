#!/bin/sh
# SPDX-License-Identifier: MIT
# check_case.sh - run ezfs fsck and ezfs extract on one corrupt image, judge.
#
# usage: check_case.sh IMAGE   (environment from run.sh: EZFS, CASE_WORK,
#        CORRUPT_TIMEOUT, CORRUPT_FAILDIR, CORRUPT_MAX_LINES_FSCK/EXTRACT)
# Prints one line: "PASS <case>" or "FAIL <case>: <reasons>". A case passes
# when each command exits 0 or 1 within the limits, with no sanitizer
# report, no signal, a short stderr, an error message when it fails, and
# extract writes nothing outside its target directory. With CORRUPT_STRICT=1
# an image that fsck finds clean must also extract.
img=$1
name=$(basename "$img")
# A loop is caught by CPU time (CORRUPT_CPU seconds, all threads), a
# command blocked forever by wall time (CORRUPT_TIMEOUT): a loaded machine
# (make check beside other jobs on 2 CPUs) stretches wall time tenfold,
# not the CPU a command takes (under 0.5 s each here, ASan included).
to=${CORRUPT_TIMEOUT:-60}
cpu=${CORRUPT_CPU:-10}
work=$CASE_WORK/$name.d
max_fsck=${CORRUPT_MAX_LINES_FSCK:-5000}
max_extract=${CORRUPT_MAX_LINES_EXTRACT:-50}
reasons=

mkdir -p "$work" || exit 1

# judge TAG RC OUT ERR MAXLINES
judge() {
	tag=$1 rc=$2 out=$3 err=$4 max=$5
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		reasons="$reasons $tag:timeout(${to}s)"
		return
	fi
	if [ "$rc" -eq 152 ]; then # SIGXCPU
		reasons="$reasons $tag:cpu-limit(${cpu}s)"
		return
	fi
	if grep -qE 'AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:|ThreadSanitizer|MemorySanitizer' "$err"; then
		reasons="$reasons $tag:sanitizer($(grep -m1 -oE '(ERROR: [A-Za-z]+Sanitizer: .{0,50}|runtime error: .{0,60})' "$err"))"
	fi
	if [ "$rc" -ge 128 ]; then
		reasons="$reasons $tag:signal$((rc - 128))"
	elif [ "$rc" -gt 1 ]; then
		reasons="$reasons $tag:exit$rc"
	fi
	lines=$(wc -l < "$err")
	if [ "$lines" -gt "$max" ]; then
		reasons="$reasons $tag:stderr-$lines-lines"
	fi
	if [ "$rc" -eq 1 ] && [ ! -s "$err" ] && [ ! -s "$out" ]; then
		reasons="$reasons $tag:failed-silently"
	fi
}

# limited CMD...: CMD under both limits
limited() {
	(ulimit -t "$cpu" && exec timeout -k 2 "$to" "$@")
}

# 1. fsck
limited "$EZFS" fsck -q "$img" > "$work/fsck.out" 2> "$work/fsck.err"
frc=$?
judge fsck "$frc" "$work/fsck.out" "$work/fsck.err" "$max_fsck"

# 2. extract into a sandbox: canaries one, two and three levels above the
# target must stay alone and unchanged.
sb=$work/sb
mkdir -p "$sb/l1/l2/out"
for d in "$sb" "$sb/l1" "$sb/l1/l2"; do
	echo canary > "$d/canary"
done
limited "$EZFS" extract -q "$img" "$sb/l1/l2/out" > "$work/extract.out" 2> "$work/extract.err"
xrc=$?
judge extract "$xrc" "$work/extract.out" "$work/extract.err" "$max_extract"
for d in "$sb" "$sb/l1" "$sb/l1/l2"; do
	case $d in
	*/l2) want="canary out" ;;	# extract may remove its target
	*/l1) want="canary l2" ;;
	*) want="canary l1" ;;
	esac
	got=$(ls -A "$d" 2>/dev/null | sort | tr '\n' ' ' | sed 's/ $//')
	if [ "$got" != "$want" ] && [ "$got" != canary ] ||
	   [ "$(cat "$d/canary" 2>/dev/null)" != canary ]; then
		reasons="$reasons extract:wrote-outside-target($d)"
	fi
done

# 3. fsck says clean but extract fails: inconsistent (reported, not fatal)
note=
if [ "$frc" -eq 0 ] && [ "$xrc" -eq 1 ]; then
	note=" (note: fsck clean, extract failed: $(head -c 120 "$work/extract.err" | head -n1))"
fi

if [ -n "$note" ] && [ "${CORRUPT_STRICT:-0}" = 1 ]; then
	reasons="$reasons fsck-clean-but-extract-failed"
fi
if [ -n "$reasons" ]; then
	echo "FAIL $name:$reasons$note"
	if [ -n "${CORRUPT_FAILDIR:-}" ]; then
		mkdir -p "$CORRUPT_FAILDIR"
		cp "$img" "$CORRUPT_FAILDIR/" 2>/dev/null
		for f in fsck.err extract.err; do
			head -c 20000 "$work/$f" > "$CORRUPT_FAILDIR/$name.$f"
		done
	fi
else
	echo "PASS $name$note"
fi
chmod -R u+rwX "$work" 2>/dev/null
rm -rf "$work"
exit 0
