# SPDX-License-Identifier: MIT
# corrupt.cmake - ctest "corrupt.images": corrupt images through ezfs fsck/extract.
# Included from tests/CMakeLists.txt (through tests/fuzz/fuzz.cmake while
# tests/corrupt is not an area there). Skips (77) when the binary is missing
# or when mkfs.erofs and the fixtures are both missing. Sanitizer builds run
# fewer cases (CORRUPT_LEVEL=quick).
include_guard(GLOBAL)
set(EZFS_CORRUPT_LEVEL "" CACHE STRING "corrupt test size: quick, normal, full (empty: auto)")
# per command: CPU seconds (a loop) and wall seconds (blocked for good)
set(_ezfs_corrupt_cpu 10)
set(_ezfs_corrupt_timeout 60)
if(EZFS_CORRUPT_LEVEL)
  set(_ezfs_corrupt_level ${EZFS_CORRUPT_LEVEL})
elseif(EZFS_SANITIZE)
  set(_ezfs_corrupt_level quick)
else()
  set(_ezfs_corrupt_level normal)
endif()
if(EZFS_SANITIZE)
  set(_ezfs_corrupt_cpu 40)
  set(_ezfs_corrupt_timeout 120)
endif()
if(NOT EZFS_SHARED_DIR)
  get_filename_component(EZFS_SHARED_DIR "${CMAKE_SOURCE_DIR}/../shared" ABSOLUTE)
endif()
add_test(NAME corrupt.images
         COMMAND sh ${CMAKE_SOURCE_DIR}/tests/corrupt/run.sh
         WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
set_tests_properties(corrupt.images PROPERTIES
  ENVIRONMENT "${EZFS_TEST_ENV};EZFS=$<TARGET_FILE:ezfs_tool>;EZFS_FIXTURES=${EZFS_SHARED_DIR}/fixtures;CORRUPT_LEVEL=${_ezfs_corrupt_level};CORRUPT_TIMEOUT=${_ezfs_corrupt_timeout};CORRUPT_CPU=${_ezfs_corrupt_cpu}"
  SKIP_RETURN_CODE 77
  TIMEOUT 1200
  LABELS "corrupt;slow")
