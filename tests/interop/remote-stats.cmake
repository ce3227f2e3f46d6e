# SPDX-License-Identifier: MIT
# interop.remote-stats (tests/interop/remote-stats.sh): ezfs accel stats
# MOUNTPOINT (text and --json, against its schema) of a running mount of an
# http:// image served by nginx shows the remote source's counters; a
# second read of the same file fetches nothing more; a local mount shows
# none. Skips without root, /dev/fuse, nginx or libcurl.
ezfs_script_test(interop.remote-stats interop/remote-stats.sh
                 LABELS interop remote mount TIMEOUT 300)
