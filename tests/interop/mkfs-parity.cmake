# SPDX-License-Identifier: MIT
# interop.mkfs-parity (tests/interop/mkfs-parity.sh): the mkfs.erofs 1.9.3
# options with parity fixtures (--root-xattr-isize, --fsalignblks,
# --zfeature-bits, --vmdk-desc): the README's command lines on the same
# tree show the fixtures' manifests (ezfs extract, the kernel), sizes
# align, the VMDK descriptor is the fixture's; bad values exit 2.
# MKFS_EROFS2 / FSCK_EROFS2 (1.9.3) add feature-bit and fsck checks.
ezfs_script_test(interop.mkfs-parity interop/mkfs-parity.sh
                 LABELS interop mkfs TIMEOUT 600)
