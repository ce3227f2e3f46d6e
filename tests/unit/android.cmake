# SPDX-License-Identifier: MIT
# android.cmake - unit test of lib/io's Android containers: SHA-256, sparse
# images and split sets read back at every offset, corrupted and cut.
ezfs_unit_test(android ${CMAKE_SOURCE_DIR}/tests/unit/test_android.c
               ezfs_static)
target_include_directories(test_android PRIVATE ${CMAKE_SOURCE_DIR}/lib)
