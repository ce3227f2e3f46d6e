#!/bin/bash
# SPDX-License-Identifier: MIT
# Every C source and header of the repository is as .clang-format lays it
# out: `clang-format --dry-run --Werror` on each tracked *.c and *.h.
# Reformat with: git ls-files '*.c' '*.h' | xargs clang-format -i
#
# usage: tests/unit/test_format.sh [SRC]   (default: $EZFS_SRC or the
#        folder above tests/)
set -uo pipefail
src=${1:-${EZFS_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}}
cd "$src" || exit 1
command -v clang-format >/dev/null ||
	{ echo "SKIP: clang-format is not installed (scripts/deps.sh installs it)"; exit 77; }
if git rev-parse --git-dir >/dev/null 2>&1; then
	mapfile -t files < <(git ls-files '*.c' '*.h')
else
	mapfile -t files < <(find lib tools include tests scripts -name '*.c' -o -name '*.h' | sort)
fi
[ ${#files[@]} -gt 0 ] || { echo "FAIL: no C sources found under $src"; exit 1; }
bad=()
for f in "${files[@]}"; do
	clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
	echo "FAIL: ${#bad[@]} of ${#files[@]} files are not formatted (.clang-format):"
	printf '  %s\n' "${bad[@]}" | head -n 40
	echo "  fix: git ls-files '*.c' '*.h' | xargs clang-format -i"
	exit 1
fi
echo "ok: ${#files[@]} C files match .clang-format"
