# SPDX-License-Identifier: MIT
# engine.cmake - unit test of lib/engine: selection, fallback, dispatch modes.
ezfs_unit_test(engine ${CMAKE_SOURCE_DIR}/tests/unit/test_engine.c
               ezfs_static Threads::Threads)
if(EZFS_WITH_ISAL)
  target_compile_definitions(test_engine PRIVATE EZFS_TEST_HAVE_ISAL=1)
endif()
