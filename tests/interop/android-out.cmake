# SPDX-License-Identifier: MIT
# interop.android-out (tests/interop/android-out.sh): what ezfs writes for
# Android and for archives: simg2img of `ezfs mkfs --sparse` is the plain
# image; extract --android by a non-root user and a rebuild from its
# sidecars give the kernel the same tree; `ezfs export | ezfs mkfs
# --tar=f` gives every fixture's tree, GNU tar and bsdtar read the
# archives; --keep-going names exactly three damaged files; ezfs mount
# SUPER:NAME. Skips (77) without the fixtures; parts that need root,
# simg2img, libselinux, libarchive, bsdtar or FUSE skip with a line.
ezfs_script_test(interop.android-out interop/android-out.sh
                 LABELS interop TIMEOUT 900)
