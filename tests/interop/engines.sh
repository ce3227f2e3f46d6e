#!/bin/bash
# SPDX-License-Identifier: MIT
# Differential test of the decompression engines and dispatch modes: every
# fixture extracted under each dispatch mode (queue, percpu; inline is what
# fixtures.sh covers), deflate fixtures also with each usable deflate engine
# and with the "fail" test engine first (forced fallback: same bytes, a
# nonzero fallback count), must describe exactly like the kernel's manifest.
#
# usage: tests/interop/engines.sh [NAME...]     (default: every fixture)
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
t_init
t_need_fixtures
t_is_root || t_skip "extract comparison needs root (owners, devices, xattrs)"

t_fixture_names "$@"
unset EZFS_ACCEL EZFS_DISPATCH EZFS_STRICT_ACCEL
tmo=${EZFS_TEST_TIMEOUT:-120}

# usable deflate engines, from `ezfs accel list`
t_run list "$EZFS" accel list
engines=$(awk '$2 == "deflate" && $3 == "yes" && $1 != "fail" {print $1}' "$OUT")
[ -n "$engines" ] || t_fail "ezfs accel list shows no deflate engine"

# one extraction under the given environment, compared with the manifest
check() {	# LABEL ENV...
	local label=$1
	shift
	rm -rf "$TMP/x"
	t_run extract env "$@" timeout "$tmo" "$EZFS" extract -q "$img" "$TMP/x"
	if [ "$RC" -ne 0 ]; then
		t_fail "$name [$label]: ezfs extract -q exited $RC"
		head -n 5 "$ERR" | cut -c1-300
		return
	fi
	t_manifest "$TMP/x" > "$TMP/got.jsonl"
	t_same_manifest "$name [$label]" "$want" "$TMP/got.jsonl"
	rm -rf "$TMP/x"
}

for name in "${names[@]}"; do
	t_fixture_unpack "$name" || continue
	for mode in queue percpu; do
		check "dispatch=$mode" EZFS_DISPATCH=$mode
	done
	if "$EZFS" info "$img" 2>/dev/null | grep -q '^Algorithms:.*deflate'; then
		for e in $engines; do
			check "deflate=$e" EZFS_ACCEL=deflate=$e
		done
		check "fail first, percpu" EZFS_ACCEL=fail EZFS_DISPATCH=percpu
		# the fallback count, through ezfs accel stats
		t_run stats "$EZFS" accel stats --accel fail "$img"
		fb=$(awk '$1 == "fail" {print $5}' "$OUT")
		echo "$name: forced fallback: ${fb:-0} requests fell back to the reference engine"
		if [ "${fb:-0}" -gt 0 ]; then
			t_pass "$name: fallback counted"
		else
			t_fail "$name: no fallback counted"
			head -n 8 "$OUT" "$ERR"
		fi
		t_run strict "$EZFS" accel stats --accel fail --strict-accel "$img"
		t_expect "$name: strict fallback fails" [ "$RC" -eq 1 ]
	fi
	rm -f "$img"
done
t_done
