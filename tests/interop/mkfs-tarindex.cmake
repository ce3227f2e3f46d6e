# SPDX-License-Identifier: MIT
# interop.mkfs-tarindex (tests/interop/mkfs-tarindex.sh): ezfs mkfs --tar=i
# (tar index images: the kernel's flat mode on [index][tar], -o device=
# with loop devices and files, 48-bit indexes of a sparse 2 TiB tar) and
# --blobdev (Debian's fsck.erofs --device, the kernel); MKFS_EROFS2 adds
# mkfs.erofs 1.9.3 on the same input; refused and failing command lines.
ezfs_script_test(interop.mkfs-tarindex interop/mkfs-tarindex.sh
                 LABELS interop mkfs TIMEOUT 300)
