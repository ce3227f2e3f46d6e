# SPDX-License-Identifier: MIT
# ezfs bench: every mode on a tiny generated input, CSV/JSON shapes checked
# with python3, charts when gnuplot is installed. Skips (77) without python3.
add_test(NAME interop.bench
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/interop/bench.sh)
set_tests_properties(interop.bench PROPERTIES
                     ENVIRONMENT "${EZFS_TEST_ENV};EZFS=$<TARGET_FILE:ezfs_tool>;SRC=${CMAKE_SOURCE_DIR}"
                     SKIP_RETURN_CODE 77
                     TIMEOUT 180
                     LABELS "interop;bench")
