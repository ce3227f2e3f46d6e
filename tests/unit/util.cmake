# SPDX-License-Identifier: MIT
# util.cmake - unit test of lib/util: the worker pool, the hash table, vec.
ezfs_unit_test(util ${CMAKE_SOURCE_DIR}/tests/unit/test_util.c
               ezfs_static Threads::Threads)
target_include_directories(test_util PRIVATE ${CMAKE_SOURCE_DIR}/lib)
