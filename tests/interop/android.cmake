# SPDX-License-Identifier: MIT
# interop.android-read (tests/interop/android-read.sh): Android sparse
# images, split sparse sets and super images (SUPER:NAME) read in place,
# against the fixtures' manifests; broken containers give one error line.
# Skips (77) without the fixtures; the img2simg/simg2img parts need
# android-sdk-libsparse-utils.
ezfs_script_test(interop.android-read interop/android-read.sh
                 LABELS interop TIMEOUT 600)
