# SPDX-License-Identifier: MIT
# engine.cmake - unit test of lib/engine: selection, fallback, dispatch modes.
add_executable(test_engine ${CMAKE_SOURCE_DIR}/tests/unit/test_engine.c)
target_link_libraries(test_engine PRIVATE ezfs_static Threads::Threads)
if(EZFS_WITH_ISAL)
  target_compile_definitions(test_engine PRIVATE EZFS_TEST_HAVE_ISAL=1)
endif()
set_target_properties(test_engine PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/unit)
add_test(NAME unit.engine COMMAND test_engine)
set_tests_properties(unit.engine PROPERTIES
  ENVIRONMENT "${EZFS_TEST_ENV}"
  SKIP_RETURN_CODE 77
  TIMEOUT 300
  LABELS unit)
