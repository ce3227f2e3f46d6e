# SPDX-License-Identifier: MIT
# interop.verity (tests/interop/verity.sh): dm-verity trees of ezfs mkfs
# --verity against Debian's veritysetup (appended, separate, -b 1024,
# --offset, a block device), signed roots (openssl), one flipped byte
# refused by fsck, cat, extract, export and the FUSE mount, ezfs digest
# against fsverity; veritysetup open + the kernel mount where there is
# device-mapper.
ezfs_script_test(interop.verity interop/verity.sh
                 LABELS interop mkfs TIMEOUT 300)
