# SPDX-License-Identifier: MIT
# extract.cmake - unit test of lib/extract's public API (include/ezfs/
# extract.h): ezfs_extract and ezfs_export called without the command.
ezfs_unit_test(extract ${CMAKE_SOURCE_DIR}/tests/unit/test_extract.c ezfs_static)
