#!/bin/bash
# SPDX-License-Identifier: MIT
# After ctest: print why each skipped test, or skipped part of a test, was
# skipped (ctest itself only says "Skipped").
# usage: tests/skips.sh BUILD_DIR
log=${1:-build}/Testing/Temporary/LastTest.log
[ -f "$log" ] || exit 0
awk '/^[0-9]+\/[0-9]+ Test: / { name = $3 }
     /^SKIP: / { print "  " name ": " $0 }' "$log" | sort -u
