# SPDX-License-Identifier: MIT
# interop.cli-edges (tests/interop/cli-edges.sh): what a new user meets first
# on the reading commands: stdout errors, quoting of names, option messages,
# non-images, signals during extract (through the fault shim of
# faults.cmake), summaries.
ezfs_script_test(interop.cli-edges interop/cli-edges.sh
                 ENV EZFS_FAULTSHIM=$<TARGET_FILE:ezfs_faultshim>
                 LABELS interop TIMEOUT 300)
