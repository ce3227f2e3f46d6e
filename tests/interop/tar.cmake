# SPDX-License-Identifier: MIT
# tar.cmake - interop.mkfs-tar (tests/interop/mkfs-tar.sh): ezfs mkfs --tar
# on archives from GNU tar and Python's tarfile (plain, gzip, xz; file and
# standard input), tar semantics, and hostile archives.
ezfs_script_test(interop.mkfs-tar interop/mkfs-tar.sh
                 LABELS interop mkfs TIMEOUT 300)
