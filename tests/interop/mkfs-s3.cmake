# SPDX-License-Identifier: MIT
# interop.mkfs-s3 (tests/interop/mkfs-s3.sh): mkfs --s3 of a bucket of the
# tests' own S3 server (ListObjectsV2 in pages, SigV4 checked by botocore):
# the tree through ezfs extract and the kernel, a prefix, --clean=0 (zeros),
# bad credentials, bucket and endpoint. Skips without botocore or libcurl.
ezfs_script_test(interop.mkfs-s3 interop/mkfs-s3.sh
                 LABELS interop mkfs remote TIMEOUT 300)
