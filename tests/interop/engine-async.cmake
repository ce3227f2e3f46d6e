# SPDX-License-Identifier: MIT
# engine-async.cmake - an asynchronous engine under each dispatch mode
# (tests/interop/engine-async.sh): the test engine that plays a device,
# and the DPDK plugin on its zlib software driver (skips where the plugin
# or DPDK is missing).
ezfs_script_test(interop.engine-async interop/engine-async.sh
                 LABELS interop engines TIMEOUT 600)
ezfs_script_test(interop.engine-dpdk interop/engine-async.sh
                 ARGS dpdk:compress_zlib LABELS interop engines TIMEOUT 600)
