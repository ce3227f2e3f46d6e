# SPDX-License-Identifier: MIT
# write.cmake - the structure of lib/write: no circle between its folders
# (the stages directly in lib/write, and tar/, tree/, fragments/,
# compress/, spool/, io/), no file of it over 1,200 lines.
ezfs_script_test(unit.write-folders unit/test_write_folders.sh
                 ARGS ${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR}
                 LABELS unit TIMEOUT 120)
