#!/bin/sh
# SPDX-License-Identifier: MIT
# run.sh - run every libFuzzer target for a while; keep new crashes.
#
# usage: tests/fuzz/run.sh [TARGET...]     (default: all targets)
# Environment:
#   FUZZ_SECONDS  seconds per target (default 60)
#   FUZZ_BUILD    a build directory configured with -DEZFS_FUZZ=ON and clang
#                 (default: build-fuzz-clang, configured and built here)
#   FUZZ_JOBS     parallel fuzzing processes per target (default 1)
#   FUZZ_ARGS     extra libFuzzer flags
# New inputs that add coverage go to $FUZZ_BUILD/fuzz-corpus/<target>/ (not
# into git). Crashes, leaks, timeouts and OOMs go to tests/fuzz/crashes/
# with a one-line reproducer printed. Exit 1 if any target found something.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
secs=${FUZZ_SECONDS:-60}
build=${FUZZ_BUILD:-$root/build-fuzz-clang}
jobs=${FUZZ_JOBS:-1}
targets=${*:-super dir xattr zmap image codec android verity cindex}
crashes=$here/crashes

if [ ! -x "$build/tests/fuzz/fuzz_super" ] ||
   ! grep -q 'EZFS_FUZZ:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
	if ! command -v clang > /dev/null; then
		echo "SKIP: clang not found (libFuzzer builds need clang)"
		exit 77
	fi
	echo "fuzz: configuring $build (clang, EZFS_FUZZ=ON)"
	cmake -S "$root" -B "$build" -G Ninja -DCMAKE_C_COMPILER=clang \
		-DEZFS_FUZZ=ON -DEZFS_WITH_FUSE=OFF \
		-DCMAKE_BUILD_TYPE=RelWithDebInfo > "$build.configure.log" 2>&1 ||
		{ echo "fuzz: configure failed, see $build.configure.log"; exit 1; }
fi
set -- $targets
tgt=
for t; do
	tgt="$tgt fuzz_$t"
done
cmake --build "$build" --target $tgt || exit 1

mkdir -p "$crashes"
found=0
summary=
for t; do
	bin=$build/tests/fuzz/fuzz_$t
	work=$build/fuzz-corpus/$t
	mkdir -p "$work"
	# Seeds without the regress-* inputs: those are checked by ctest, and
	# one that still crashes would stop the fuzzer before it starts.
	seeds=$build/fuzz-seeds/$t
	rm -rf "$seeds"
	mkdir -p "$seeds"
	for f in "$here/corpus/$t"/*; do
		case ${f##*/} in
		regress-*) ;;
		*) cp "$f" "$seeds/" ;;
		esac
	done
	before=$(ls "$crashes" | wc -l)
	log=$build/fuzz-$t.log
	echo "fuzz: $t for ${secs}s (log $log)"
	# -timeout: one input running longer is a hang; -rss_limit_mb: OOM.
	par=
	if [ "$jobs" -gt 1 ]; then
		par="-jobs=$jobs -workers=$jobs"
	fi
	rm -f "$build"/fuzz-[0-9]*.log
	(cd "$build" && exec "$bin" -max_total_time="$secs" -timeout=10 \
		-rss_limit_mb=2048 -print_final_stats=1 $par \
		-artifact_prefix="$crashes/$t-" ${FUZZ_ARGS:-} \
		"$work" "$seeds") > "$log" 2>&1
	rc=$?
	cat "$build"/fuzz-[0-9]*.log >> "$log" 2>/dev/null
	execs=$(grep -h 'stat::number_of_executed_units' "$log" |
		awk '{s += $2} END {print s + 0}')
	cov=$(grep -hoE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -n 1)
	summary="$summary
  $t: rc $rc, $execs execs, ${cov:-cov: ?}, corpus $(ls "$work" | wc -l) files"
	after=$(ls "$crashes" | wc -l)
	if [ "$after" -gt "$before" ] || [ "$rc" -ne 0 ]; then
		found=1
		grep -E '^==[0-9]+==ERROR|^SUMMARY|^fuzz:|runtime error' "$log" | head -n 5
		ls -t "$crashes" | head -n $((after - before)) | while read -r c; do
			echo "  new: tests/fuzz/crashes/$c"
			echo "  reproduce: $bin $crashes/$c"
		done
	fi
done
rm -f "$build"/fuzz-[0-9]*.log
echo "fuzz summary:$summary"
if [ "$found" -ne 0 ]; then
	echo "fuzz: problems found; add a minimised reproducer to tests/fuzz/corpus/<target>/" \
		"(<bin> -minimize_crash=1 -runs=10000 FILE)"
	exit 1
fi
exit 0
