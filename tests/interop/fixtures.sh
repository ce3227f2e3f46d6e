#!/bin/bash
# SPDX-License-Identifier: MIT
# The fixtures are the compatibility contract: every image in shared/fixtures
# (made by erofs-utils 1.9.3) must pass `ezfs fsck`, and its extraction must
# describe exactly like the kernel's view of it (NAME.manifest.jsonl).
#
# usage: tests/interop/fixtures.sh [NAME...]     (default: every fixture)
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
t_init
t_need_fixtures

t_fixture_names "$@"

extract=1
if ! t_is_root; then
	extract=0
	echo "SKIP: extract comparison needs root (owners, devices, trusted.* xattrs); running fsck only"
fi
tmo=${EZFS_TEST_TIMEOUT:-120}

for name in "${names[@]}"; do
	t_fixture_unpack "$name" || continue

	t_run fsck timeout "$tmo" "$EZFS" fsck -q "$img"
	if [ "$RC" -eq 0 ]; then
		t_pass "$name: fsck"
	else
		t_fail "$name: ezfs fsck -q exited $RC"
		head -n 5 "$ERR" "$OUT" | cut -c1-300
	fi

	if [ $extract = 1 ]; then
		rm -rf "$TMP/x"
		t_run extract timeout "$tmo" "$EZFS" extract -q "$img" "$TMP/x"
		if [ "$RC" -ne 0 ]; then
			t_fail "$name: ezfs extract -q exited $RC"
			head -n 5 "$ERR" | cut -c1-300
		elif [ ! -d "$TMP/x" ]; then
			t_fail "$name: ezfs extract made no directory"
		else
			t_manifest "$TMP/x" > "$TMP/got.jsonl"
			t_same_manifest "$name: extract" "$want" "$TMP/got.jsonl"
		fi
		rm -rf "$TMP/x"
	fi
	rm -f "$img"
done
t_done
