# SPDX-License-Identifier: MIT
# verity.cmake - unit test of dm-verity trees (lib/format, lib/io, the
# builder's --verity) and fs-verity digests.
ezfs_unit_test(verity ${CMAKE_SOURCE_DIR}/tests/unit/test_verity.c
               ezfs_static Threads::Threads)
target_include_directories(test_verity PRIVATE ${CMAKE_SOURCE_DIR}/lib)
