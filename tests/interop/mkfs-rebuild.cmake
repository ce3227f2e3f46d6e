# SPDX-License-Identifier: MIT
# interop.mkfs-rebuild (tests/interop/mkfs-rebuild.sh): ezfs mkfs IMAGE
# LAYER.erofs... (rebuild mode, containerd's fsmerge): three layers made
# with --tar=f -Enoinline_data and with --tar=i (tar appended), merged;
# ezfs fsck/ls/cat/extract with --device, the kernel's -o device= mount
# against overlayfs of the layers; MKFS_EROFS2 adds mkfs.erofs 1.9.3's
# meta image; refused layers.
ezfs_script_test(interop.mkfs-rebuild interop/mkfs-rebuild.sh
                 LABELS interop mkfs TIMEOUT 300)
