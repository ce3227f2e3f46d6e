# SPDX-License-Identifier: MIT
# interop.remote-s3 (tests/interop/remote-s3.sh): s3://BUCKET/KEY against a
# GetObject endpoint of the test's own whose Signature Version 4 checks are
# botocore's: credentials from the environment and ~/.aws, a session
# token, a public bucket unsigned, fsck/ls/extract/mount, refusals in one
# line. Skips without libcurl or python3-botocore.
ezfs_script_test(interop.remote-s3 interop/remote-s3.sh
                 LABELS interop remote TIMEOUT 300)
