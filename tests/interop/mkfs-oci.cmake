# SPDX-License-Identifier: MIT
# interop.mkfs-oci (tests/interop/mkfs-oci.sh): mkfs --oci from Debian's
# docker-registry on 127.0.0.1: two gzip tar layers merged with the OCI
# whiteout rules (against an independent application of them), one layer
# with overlayfs whiteouts, --oci=i with the blob as device, bad inputs;
# MKFS_EROFS2 adds mkfs.erofs 1.9.3 where the rules agree. Skips without
# docker-registry or libcurl.
ezfs_script_test(interop.mkfs-oci interop/mkfs-oci.sh
                 LABELS interop mkfs remote TIMEOUT 300)
