# SPDX-License-Identifier: MIT
# ezfs mkfs round trips (tests/interop/mkfs-roundtrip.sh): images built by
# ezfs mkfs read back by ezfs fsck/extract, the kernel and fsck.erofs.
add_test(NAME interop.mkfs
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/interop/mkfs-roundtrip.sh)
set_tests_properties(interop.mkfs PROPERTIES
                     ENVIRONMENT "EZFS=$<TARGET_FILE:ezfs_tool>;SRC=${CMAKE_SOURCE_DIR};EZFS_SHARED=${EZFS_SHARED_DIR}"
                     SKIP_RETURN_CODE 77
                     TIMEOUT 600
                     LABELS "interop;mkfs")

# Every algorithm x pcluster size 4K..1M (mkfs-roundtrip.sh matrix).
add_test(NAME interop.mkfs-matrix
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/interop/mkfs-roundtrip.sh matrix)
set_tests_properties(interop.mkfs-matrix PROPERTIES
                     ENVIRONMENT "EZFS=$<TARGET_FILE:ezfs_tool>;SRC=${CMAKE_SOURCE_DIR};EZFS_SHARED=${EZFS_SHARED_DIR}"
                     SKIP_RETURN_CODE 77
                     TIMEOUT 600
                     LABELS "interop;mkfs")

# Several algorithms, --compress-hints, -E48bit, owner offsets
# (tests/interop/mkfs-hints.sh).
add_test(NAME interop.mkfs_hints
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/interop/mkfs-hints.sh)
set_tests_properties(interop.mkfs_hints PROPERTIES
                     ENVIRONMENT "EZFS=$<TARGET_FILE:ezfs_tool>;SRC=${CMAKE_SOURCE_DIR};EZFS_SHARED=${EZFS_SHARED_DIR}"
                     SKIP_RETURN_CODE 77
                     TIMEOUT 300
                     LABELS "interop;mkfs")

# The command line and IMAGE at their edges: usage errors, -j, special
# files, symlinks, block devices, modes, nohup (tests/interop/mkfs-usage.sh).
add_test(NAME interop.mkfs-usage
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/interop/mkfs-usage.sh)
set_tests_properties(interop.mkfs-usage PROPERTIES
                     ENVIRONMENT "EZFS=$<TARGET_FILE:ezfs_tool>;SRC=${CMAKE_SOURCE_DIR};EZFS_SHARED=${EZFS_SHARED_DIR}"
                     SKIP_RETURN_CODE 77
                     TIMEOUT 120
                     LABELS "interop;mkfs")

# mkfs.erofs command lines of real pipelines, Android fs_config and
# file_contexts, aufs whiteouts (tests/interop/mkfs-compat.sh).
add_test(NAME interop.mkfs-compat
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/interop/mkfs-compat.sh)
set_tests_properties(interop.mkfs-compat PROPERTIES
                     ENVIRONMENT "EZFS=$<TARGET_FILE:ezfs_tool>;SRC=${CMAKE_SOURCE_DIR};EZFS_SHARED=${EZFS_SHARED_DIR}"
                     SKIP_RETURN_CODE 77
                     TIMEOUT 300
                     LABELS "interop;mkfs")
