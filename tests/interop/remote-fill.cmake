# SPDX-License-Identifier: MIT
# interop.remote-fill (tests/interop/remote-fill.sh): a lazy oci:// mount
# through a pacing proxy of the test's own before docker-registry, counted
# request by request: the first readdir and first bytes, the background
# fill (-o fill=all: each byte once, a warm remount fetches nothing), reads
# during it, a changed blob, --cache-max and a full disk, --record-trace.
ezfs_script_test(interop.remote-fill interop/remote-fill.sh
                 LABELS interop remote mount TIMEOUT 600)
