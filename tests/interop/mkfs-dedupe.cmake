# SPDX-License-Identifier: MIT
# interop.mkfs-dedupe (tests/interop/mkfs-dedupe.sh): -E dedupe across
# files on decoded data: later files that repeat parts of an earlier one
# refer to its pclusters (PARTIAL_REF extents in `ezfs stat -e`), a smaller
# image, the same for 1 and 2 workers; ezfs fsck, extract and the kernel
# mount read it; MKFS_EROFS2 adds 1.9.3's fsck --extract and the sizes
# (ezfs's no larger).
ezfs_script_test(interop.mkfs-dedupe interop/mkfs-dedupe.sh
                 LABELS interop mkfs TIMEOUT 600)
