# SPDX-License-Identifier: MIT
# faults.cmake - hostile conditions around building and extracting:
#  - interop.mkfs-faults (tests/interop/mkfs-faults.sh): a source file that
#    is unreadable, vanishes, shrinks, grows or fails to read during the
#    build, a full disk, SIGINT/SIGTERM mid-build. The source changes come
#    from an LD_PRELOAD shim (shim/faultshim.c) at a fixed moment, not from
#    races. Parts needing root or mounts skip with a line saying why.
#  - interop.extract-hostile (tests/interop/extract-hostile.sh): hostile
#    names and symlinks in a crafted image, pre-existing symlinks at the
#    destination, device nodes extracted by a non-root user.
# The shim is built without sanitizers (it is preloaded; the script tells
# ASan not to insist on coming first).
add_library(ezfs_faultshim MODULE ${CMAKE_CURRENT_SOURCE_DIR}/interop/shim/faultshim.c)
set_target_properties(ezfs_faultshim PROPERTIES
  COMPILE_OPTIONS "-Wall;-Wextra;-Werror"
  LINK_OPTIONS ""
  PREFIX ""
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/interop)
target_link_libraries(ezfs_faultshim PRIVATE ${CMAKE_DL_LIBS})

foreach(_t mkfs-faults extract-hostile)
  ezfs_script_test(interop.${_t} interop/${_t}.sh
                   ENV EZFS_FAULTSHIM=$<TARGET_FILE:ezfs_faultshim>
                   LABELS interop faults TIMEOUT 300)
endforeach()
