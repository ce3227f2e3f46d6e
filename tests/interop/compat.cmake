# SPDX-License-Identifier: MIT
# interop.compat-names (tests/interop/compat-names.sh): ezfs called as
# mkfs.erofs, fsck.erofs and dump.erofs (the links beside the command)
# against Debian's erofs-utils on the same images and the fixtures'
# manifests. Skips (77) without the fixtures or erofs-utils.
ezfs_script_test(interop.compat-names interop/compat-names.sh
                 LABELS interop TIMEOUT 600)
