# SPDX-License-Identifier: MIT
# tar.cmake - interop.mkfs-tar (tests/interop/mkfs-tar.sh): ezfs mkfs --tar
# on archives from GNU tar and Python's tarfile (plain, gzip, xz; file and
# standard input), tar semantics, and hostile archives.
add_test(NAME interop.mkfs-tar
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/interop/mkfs-tar.sh)
set_tests_properties(interop.mkfs-tar PROPERTIES
                     ENVIRONMENT "${EZFS_TEST_ENV}"
                     SKIP_RETURN_CODE 77
                     TIMEOUT 300
                     LABELS "interop;mkfs")
