# SPDX-License-Identifier: MIT
# interop.mount-kernel (tests/interop/mount-kernel.sh): ezfs mount --kernel
# of an image of mkfs --verity pushed to docker-registry: type erofs on the
# cache file in /proc/mounts, the kernel's view is the source tree
# (tools/manifest.py), cache gc leaves the mounted file, a warm remount by
# digest needs no registry and no daemon; kill -9 of the daemon mid-read
# gives EIO, never wrong bytes, and ezfs umount still unmounts; a layer
# nothing checks is refused without --unverified; a relative cache folder
# and mount point; a cache folder on tmpfs and a user without root: one
# line each.
# Skips without root, erofs file-backed mounts, fanotify pre-content
# events, libcurl or docker-registry.
ezfs_script_test(interop.mount-kernel interop/mount-kernel.sh
                 LABELS interop remote mount TIMEOUT 300)
