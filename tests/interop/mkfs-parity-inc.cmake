# SPDX-License-Identifier: MIT
# interop.mkfs-parity-inc (tests/interop/mkfs-parity-inc.sh): mkfs
# --gzinfo (the SOCI zinfo byte for byte 1.9.3's) and --incremental=data
# (three sources appended show 1.9.3's kernel view; bad inputs leave the
# image as it was) against ../shared/fixtures/parity; MKFS_EROFS2 adds
# fresh 1.9.3 output on other archives and trees.
ezfs_script_test(interop.mkfs-parity-inc interop/mkfs-parity-inc.sh
                 LABELS interop mkfs TIMEOUT 600)
