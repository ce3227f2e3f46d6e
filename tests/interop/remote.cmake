# SPDX-License-Identifier: MIT
# interop.remote (tests/interop/remote.sh): every fixture read as
# http://... from nginx (fsck, ls -R, extract, ezfs mount), the persistent
# cache's warm rerun, ezfs cache ls|gc, and hostile servers (Range
# ignored, stalled, 503, a wrong range). Skips without nginx or libcurl.
ezfs_script_test(interop.remote interop/remote.sh
                 LABELS interop remote TIMEOUT 900)
