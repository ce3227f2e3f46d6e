# SPDX-License-Identifier: MIT
# interop.extract-export (tests/interop/extract-export.sh): holes on
# extraction and in archives, split sparse sets, what each export format
# cannot hold, compressed and sparse tar input to mkfs, names in zip.
ezfs_script_test(interop.extract-export interop/extract-export.sh
                 LABELS interop TIMEOUT 600)
