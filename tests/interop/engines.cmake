# SPDX-License-Identifier: MIT
# engines.cmake - every fixture through each dispatch mode and deflate engine
# (tests/interop/engines.sh); skips (77) without fixtures or root.
add_test(NAME interop.engines
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/interop/engines.sh)
set_tests_properties(interop.engines PROPERTIES
                     ENVIRONMENT "${EZFS_TEST_ENV}"
                     SKIP_RETURN_CODE 77
                     TIMEOUT 300
                     LABELS "interop;engines")
# The live engine switch of a running mount (tests/interop/mount-accel.sh):
# root, /dev/fuse and the deflate-16k fixture, else it skips.
if(EZFS_WITH_FUSE)
  add_test(NAME interop.mount-accel
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/interop/mount-accel.sh)
  set_tests_properties(interop.mount-accel PROPERTIES
                       ENVIRONMENT "${EZFS_TEST_ENV}"
                       SKIP_RETURN_CODE 77
                       TIMEOUT 120
                       LABELS "interop;engines;mount")
endif()
