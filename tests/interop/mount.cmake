# SPDX-License-Identifier: MIT
# ezfs mount (FUSE): every fixture through the mount, option errors, SIGTERM,
# daemon mode, a corrupt pcluster (mount.sh); 8 readers + a lister against a
# small cache budget with the daemon's RSS bounded (mount-stress.sh). Need
# root and /dev/fuse; skip (77) otherwise.
if(EZFS_WITH_FUSE)
  add_test(NAME interop.mount
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/interop/mount.sh)
  add_test(NAME interop.mount-stress
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/interop/mount-stress.sh)
  set_tests_properties(interop.mount interop.mount-stress PROPERTIES
                       ENVIRONMENT "${EZFS_TEST_ENV};EZFS=$<TARGET_FILE:ezfs_tool>;SRC=${CMAKE_SOURCE_DIR}"
                       SKIP_RETURN_CODE 77
                       TIMEOUT 300
                       LABELS "interop;mount")
endif()
