# SPDX-License-Identifier: MIT
# iofault.cmake - unit test: I/O faults through a custom ezfs_io_ops backend.
ezfs_unit_test(iofault ${CMAKE_SOURCE_DIR}/tests/unit/test_iofault.c ezfs_static)
