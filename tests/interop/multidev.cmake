# SPDX-License-Identifier: MIT
# interop.multidev (tests/interop/multidev.sh): multi-device images from
# Debian's mkfs.erofs (--blobdev) and a committed tar index with its tar,
# read with --device, in flat mode ([index][tar] as one file) and against
# the kernel's mount; missing and short devices. interop.composefs
# (tests/interop/composefs.sh): mkcomposefs' images of composefs' test
# assets against the kernel's view.
ezfs_script_test(interop.multidev interop/multidev.sh
                 LABELS interop TIMEOUT 600)
ezfs_script_test(interop.composefs interop/composefs.sh
                 LABELS interop TIMEOUT 600)
