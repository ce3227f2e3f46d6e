# SPDX-License-Identifier: MIT
# buildapi.cmake - unit test of the builder's public parameters (size field).
ezfs_unit_test(build_params ${CMAKE_SOURCE_DIR}/tests/unit/test_build_params.c
               ezfs_static)
