# SPDX-License-Identifier: MIT
# remote.cmake - unit test of lib/remote's parsers: Content-Range,
# WWW-Authenticate challenges, oci:// references, JSON, SHA-256, the
# cache map written and read back (libezfs-remote, only with libcurl).
if(TARGET ezfs_remote)
  ezfs_unit_test(remote ${CMAKE_SOURCE_DIR}/tests/unit/test_remote.c
                 ezfs_remote)
  target_include_directories(test_remote PRIVATE ${CMAKE_SOURCE_DIR}/lib)
endif()
