# SPDX-License-Identifier: MIT
# json.cmake - --json of info, ls, stat, fsck and accel on every fixture
# against docs/schemas and the manifests, info's minimum Linux, mkfs
# --max-kernel (tests/interop/json.sh); skips (77) without fixtures.
ezfs_script_test(interop.json interop/json.sh LABELS interop json TIMEOUT 600)
