# SPDX-License-Identifier: MIT
# Unit test of lib/codec; included from tests/CMakeLists.txt.
add_executable(test_codec ${CMAKE_CURRENT_LIST_DIR}/test_codec.c)
target_include_directories(test_codec PRIVATE ${CMAKE_SOURCE_DIR}/lib ${DEFLATE_INC})
target_link_libraries(test_codec PRIVATE ezfs_static)
add_test(NAME unit.codec COMMAND test_codec)
# 50 s alone, 110 s under ASan, beyond 300 s there beside other tests
set_tests_properties(unit.codec PROPERTIES LABELS unit TIMEOUT 600
                     ENVIRONMENT "${EZFS_TEST_ENV}")
