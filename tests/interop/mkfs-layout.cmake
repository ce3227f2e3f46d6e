# SPDX-License-Identifier: MIT
# Size choices of ezfs mkfs on a crafted tree (tests/interop/mkfs-layout.sh):
# plain + inline tail for files compression barely shrinks, the root in
# block 1 when block 0 cannot hold it, -E fragments near-copies. About
# 60 s alone, 100 s beside other tests on 2 CPUs, more under ASan.
ezfs_script_test(interop.mkfs-layout interop/mkfs-layout.sh
                 LABELS interop mkfs TIMEOUT 300)
