# SPDX-License-Identifier: MIT
# interop.remote (tests/interop/remote.sh): every fixture read as
# http://... from nginx (fsck, ls -R, extract, ezfs mount), the persistent
# cache's warm rerun and kill -9 during a fill, ezfs cache ls|gc, hostile
# servers (Range ignored, stalled, 503, a wrong range, expiring tokens),
# and docker-registry: ezfs push, then oci:// read and mounted. Skips
# without nginx or libcurl; the registry part without docker-registry.
ezfs_script_test(interop.remote interop/remote.sh
                 LABELS interop remote TIMEOUT 900)
