#!/bin/bash
# SPDX-License-Identifier: MIT
# The demo behind `make demo`: pack the sample tree with Debian's mkfs.erofs,
# then look at the image with each ezfs subcommand and check that an
# extraction gives back the same tree.
#
# usage: sample/demo.sh [EZFS_BINARY]     (default: build/tools/ezfs/ezfs)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ezfs=${1:-$here/../build/tools/ezfs/ezfs}
[ -x "$ezfs" ] || { echo "demo: no ezfs binary at $ezfs (run make build)" >&2; exit 1; }
command -v mkfs.erofs >/dev/null || { echo "demo: mkfs.erofs missing (apt-get install erofs-utils)" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/ezfs-demo.XXXXXX")
trap 'rm -rf "$work"' EXIT
tree=$work/sample
img=$work/sample.erofs
step=0
heading() {
	step=$((step + 1))
	printf '\n\033[1m== %d. %s\033[0m\n' "$step" "$*"
}
show() {
	echo "\$ $*" | sed "s|$work|\$DEMO|g; s|$ezfs|ezfs|"
	"$@"
}

heading "A small sample tree (sample/make-sample.sh)"
"$here/make-sample.sh" "$tree"
(cd "$tree" && find . | LC_ALL=C sort | sed 's|^\./||' | grep -v '^\.$')

heading "Pack it with Debian's mkfs.erofs (lz4hc)"
show mkfs.erofs --quiet -zlz4hc "$img" "$tree"
ls -l "$img" | sed "s|$work|\$DEMO|"

heading "ezfs info: the superblock"
show "$ezfs" info "$img"

heading "ezfs ls -l -R: every entry"
show "$ezfs" ls -l -R "$img"

heading "ezfs stat: one inode"
show "$ezfs" stat "$img" /data/numbers.csv

heading "ezfs cat: file contents"
show "$ezfs" cat "$img" /hello.txt
show "$ezfs" cat "$img" /docs/notes/todo.txt
echo "\$ ezfs cat \$DEMO/sample.erofs /data/numbers.csv | tail -n 3"
"$ezfs" cat "$img" /data/numbers.csv | tail -n 3
"$ezfs" cat "$img" /data/numbers.csv | cmp - "$tree/data/numbers.csv"
echo "(numbers.csv is byte-identical to the source, $(stat -c %s "$tree/data/numbers.csv") bytes)"

heading "ezfs extract, then diff -r against the sample tree"
show "$ezfs" extract -q "$img" "$work/out"
if diff -r --no-dereference "$tree" "$work/out"; then
	echo "diff -r: no differences"
else
	echo "demo: the extracted tree differs from the sample" >&2
	exit 1
fi

heading "ezfs fsck: check every inode and all the data"
show "$ezfs" fsck "$img"

printf '\n\033[1mdemo: all steps passed\033[0m\n'
