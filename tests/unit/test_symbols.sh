#!/bin/bash
# SPDX-License-Identifier: MIT
# Every symbol that libezfs.so exports must carry the ezfs_ prefix, and the
# public API must be there (a library that exports nothing would pass the
# first check).
#
# usage: tests/unit/test_symbols.sh [LIBEZFS.so]   (default: $EZFS_LIB)
set -euo pipefail
lib=${1:-${EZFS_LIB:-}}
[ -n "$lib" ] || { echo "usage: $0 LIBEZFS.so"; exit 2; }
[ -f "$lib" ] || { echo "FAIL: $lib does not exist"; exit 1; }
command -v nm >/dev/null || { echo "SKIP: nm (binutils) is not installed"; exit 77; }

# Defined dynamic symbols, less the linker's own markers.
syms=$(nm -D --defined-only "$lib" | awk '{print $NF}' |
	grep -v -E '^(_init|_fini|_edata|_end|__bss_start|_DYNAMIC|_GLOBAL_OFFSET_TABLE_)$' | sort -u)
bad=$(grep -v '^ezfs_' <<<"$syms" || true)
n=$(grep -c . <<<"$syms" || true)
fails=0
if [ -n "$bad" ]; then
	echo "FAIL: exported symbols without the ezfs_ prefix:"
	sed 's/^/  /' <<<"$bad" | head -n 40
	fails=$((fails + 1))
else
	echo "ok: all $n exported symbols start with ezfs_"
fi
for want in ezfs_image_open ezfs_image_close; do
	if grep -qx "$want" <<<"$syms"; then
		echo "ok: $want is exported"
	else
		echo "FAIL: $want is not exported"
		fails=$((fails + 1))
	fi
done
[ $fails -eq 0 ]
