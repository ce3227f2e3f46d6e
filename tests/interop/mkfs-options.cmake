# SPDX-License-Identifier: MIT
# interop.mkfs-options (tests/interop/mkfs-options.sh): mkfs.erofs 1.9.3
# options that change the image (--zD, -E dot-omitted, -m, chunk-based
# files in --block-list-file, --aufs): the kernel shows the source tree,
# ezfs fsck passes; MKFS_EROFS2 adds 1.9.3's image of the same line (same
# kernel view, sizes compared). ~2 min under ASan as root.
ezfs_script_test(interop.mkfs-options interop/mkfs-options.sh
                 LABELS interop mkfs TIMEOUT 600)
