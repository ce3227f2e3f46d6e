# SPDX-License-Identifier: MIT
# ezfs mkfs, through tests/lib.sh scripts (ezfs_script_test):
#  - interop.mkfs, interop.mkfs-matrix (mkfs-roundtrip.sh): images built by
#    ezfs mkfs read back by ezfs fsck/extract, the kernel and fsck.erofs;
#    the matrix: every algorithm x pcluster size 4K..1M;
#  - interop.mkfs_hints (mkfs-hints.sh): several algorithms,
#    --compress-hints, -E48bit, owner offsets;
#  - interop.mkfs-usage (mkfs-usage.sh): the command line and IMAGE at their
#    edges: usage errors, -j, special files, symlinks, block devices, modes,
#    nohup;
#  - interop.mkfs-compat (mkfs-compat.sh): mkfs.erofs command lines of real
#    pipelines, Android fs_config and file_contexts, aufs whiteouts.
ezfs_script_test(interop.mkfs interop/mkfs-roundtrip.sh
                 LABELS interop mkfs TIMEOUT 600)
ezfs_script_test(interop.mkfs-matrix interop/mkfs-roundtrip.sh ARGS matrix
                 LABELS interop mkfs TIMEOUT 600)
ezfs_script_test(interop.mkfs_hints interop/mkfs-hints.sh
                 LABELS interop mkfs TIMEOUT 300)
ezfs_script_test(interop.mkfs-usage interop/mkfs-usage.sh
                 LABELS interop mkfs TIMEOUT 120)
ezfs_script_test(interop.mkfs-compat interop/mkfs-compat.sh
                 LABELS interop mkfs TIMEOUT 300)
