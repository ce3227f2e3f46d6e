# SPDX-License-Identifier: MIT
# dispatch-read.cmake - ezfs cat, extract and fsck of files larger than
# their read window under inline, queue and percpu dispatch, intact and
# with a damaged pcluster (tests/interop/dispatch-read.sh).
ezfs_script_test(interop.dispatch-read interop/dispatch-read.sh
                 LABELS interop engines TIMEOUT 300)
