# SPDX-License-Identifier: MIT
# engines.cmake - every fixture through each dispatch mode and deflate engine
# (tests/interop/engines.sh); skips (77) without fixtures or root.
ezfs_script_test(interop.engines interop/engines.sh
                 LABELS interop engines TIMEOUT 300)
# The live engine switch of a running mount (tests/interop/mount-accel.sh):
# root, /dev/fuse and the deflate-16k fixture, else it skips.
if(EZFS_WITH_FUSE)
  ezfs_script_test(interop.mount-accel interop/mount-accel.sh
                   LABELS interop engines mount TIMEOUT 120)
endif()
