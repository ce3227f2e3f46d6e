#!/bin/bash
# SPDX-License-Identifier: MIT
# Round trip through Debian's mkfs.erofs (erofs-utils 1.5): build images of
# make_tree.py trees with each layout 1.5 can write, then `ezfs fsck` must
# pass and `ezfs extract` must give what the kernel shows for the same image.
# Without a kernel mount the oracle is the source tree, times left out.
#
# usage: tests/interop/mkfs-erofs-roundtrip.sh [SEED...]   (default: 2 3)
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
t_init
t_need_shared
t_need_cmd mkfs.erofs python3
t_is_root || t_skip "make_tree.py needs root (devices, owners, trusted.* xattrs)"

seeds=("$@")
[ ${#seeds[@]} -gt 0 ] || seeds=(2 3)

# What erofs-utils 1.5 writes (it accepts unknown -E options silently, so
# only real 1.5 options are listed: no fragments or dedupe before 1.6).
variants=(
	""
	"-Enoinline_data"
	"-Eforce-inode-extended"
	"-Eforce-inode-compact -T0 --all-root"
	"--chunksize=8192"
	"-zlz4"
	"-zlz4 -Elegacy-compress"
	"-zlz4hc"
	"-zlz4hc,9 -C65536"
	"-zlz4hc -C16384 -Eztailpacking"
	"-zlz4hc -Eforce-inode-compact -T0 --all-root"
)

if t_can_kmount; then
	oracle=kernel
	echo "oracle: the kernel's view of each image (mount -t erofs -o loop,ro)"
else
	oracle=source
	echo "oracle: the source tree without times (no kernel erofs mount here)"
fi
tmo=${EZFS_TEST_TIMEOUT:-120}

for seed in "${seeds[@]}"; do
	tree=$TMP/tree$seed
	python3 "$SHARED/tools/make_tree.py" "$seed" "$tree" --small
	# erofs-utils 1.5 fails on a 255-byte name ("Could not format the device").
	find "$tree" -regextype posix-extended -regex '.*/[^/]{255}' -delete
	src_nt=$TMP/src$seed.notimes.jsonl
	t_manifest "$tree" --no-times > "$src_nt"

	for v in "${variants[@]}"; do
		what="seed $seed, mkfs.erofs ${v:-(defaults)}"
		img=$TMP/img
		rm -f "$img"
		# shellcheck disable=SC2086  # $v is a list of options
		if ! mkfs.erofs --quiet $v "$img" "$tree" > "$TMP/mkfs.log" 2>&1; then
			t_fail "$what: mkfs.erofs failed: $(tail -n 1 "$TMP/mkfs.log")"
			continue
		fi

		t_run fsck timeout "$tmo" "$EZFS" fsck -q "$img"
		if [ "$RC" -eq 0 ]; then
			t_pass "$what: fsck"
		else
			t_fail "$what: ezfs fsck exited $RC"
			head -n 5 "$ERR" | cut -c1-300
		fi

		rm -rf "$TMP/x"
		t_run extract timeout "$tmo" "$EZFS" extract -q "$img" "$TMP/x"
		if [ "$RC" -ne 0 ]; then
			t_fail "$what: ezfs extract exited $RC"
			head -n 5 "$ERR" | cut -c1-300
			continue
		fi
		if [ $oracle = kernel ]; then
			t_kmount "$img" "$TMP/mnt" || { t_fail "$what: kernel mount failed"; continue; }
			t_manifest "$TMP/mnt" > "$TMP/want.jsonl"
			t_kumount "$TMP/mnt"
			t_manifest "$TMP/x" > "$TMP/got.jsonl"
		else
			opts=(--no-times)
			case "$v" in *--all-root*) opts+=(--no-owner) ;; esac
			if [ ${#opts[@]} -gt 1 ]; then
				t_manifest "$tree" "${opts[@]}" > "$TMP/want.jsonl"
			else
				cp "$src_nt" "$TMP/want.jsonl"
			fi
			t_manifest "$TMP/x" "${opts[@]}" > "$TMP/got.jsonl"
		fi
		t_same_manifest "$what: extract" "$TMP/want.jsonl" "$TMP/got.jsonl"
		rm -rf "$TMP/x"
	done
	rm -rf "$tree"
done
t_done
