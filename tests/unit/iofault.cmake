# SPDX-License-Identifier: MIT
# iofault.cmake - unit test: I/O faults through a custom ezfs_io_ops backend.
add_executable(test_iofault ${CMAKE_SOURCE_DIR}/tests/unit/test_iofault.c)
target_link_libraries(test_iofault PRIVATE ezfs_static)
set_target_properties(test_iofault PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/unit)
add_test(NAME unit.iofault COMMAND test_iofault)
set_tests_properties(unit.iofault PROPERTIES
  ENVIRONMENT "${EZFS_TEST_ENV}"
  SKIP_RETURN_CODE 77
  TIMEOUT 300
  LABELS unit)
