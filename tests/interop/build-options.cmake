# SPDX-License-Identifier: MIT
# build-options.cmake - one build with zstd, libdeflate, ISA-L and FUSE left
# out, in a temporary folder (tests/interop/build-options.sh): --version,
# the one-line refusals, the rest working. A build takes 1-2 minutes on two
# cores (label build; ctest -LE build leaves it out).
if(NOT EZFS_SANITIZE AND NOT EZFS_TSAN)
  ezfs_script_test(interop.build-options interop/build-options.sh
                   LABELS interop build TIMEOUT 900)
endif()
