# SPDX-License-Identifier: MIT
# interop.mkfs-memory (tests/interop/mkfs-memory.sh): the peak RSS of a
# build whose packed inode is about 73 MiB (-E fragments, -E all-fragments)
# stays under 128 MiB; the same image for 1 and 2 workers, fsck, nothing
# left in TMPDIR. Not timed; skips without /usr/bin/time and for sanitizer
# builds.
ezfs_script_test(interop.mkfs-memory interop/mkfs-memory.sh
                 LABELS interop mkfs TIMEOUT 600)
