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
ezfs=$(cd "$(dirname "$ezfs")" && pwd)/$(basename "$ezfs")
command -v mkfs.erofs >/dev/null || { echo "demo: mkfs.erofs missing (apt-get install erofs-utils)" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/ezfs-demo.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
tree=sample
img=sample.erofs
bold='' plain=''
if [ -t 1 ]; then bold=$(printf '\033[1m') plain=$(printf '\033[0m'); fi
step=0
heading() {
	step=$((step + 1))
	printf '\n%s== %d. %s%s\n' "$bold" "$step" "$*" "$plain"
}
# Echo a command (ezfs by its short name), then run it.
show() {
	local shown=("$@")
	[ "$1" = "$ezfs" ] && shown[0]=ezfs
	echo "\$ ${shown[*]}"
	"$@"
}
echo "demo: working in $work"

heading "A small sample tree (sample/make-sample.sh)"
"$here/make-sample.sh" "$tree"
(cd "$tree" && find . | LC_ALL=C sort | sed 's|^\./||' | grep -v '^\.$')

heading "Pack it with Debian's mkfs.erofs (lz4hc, 64 KiB pclusters)"
show mkfs.erofs --quiet -zlz4hc -C65536 "$img" "$tree"
echo "$img: $(stat -c %s "$img") bytes"

heading "ezfs info: the superblock"
show "$ezfs" info "$img"

heading "ezfs ls -l -R: every entry"
show "$ezfs" ls -l -R "$img"

heading "ezfs stat: one inode"
show "$ezfs" stat "$img" /data/numbers.csv

heading "ezfs cat: file contents"
show "$ezfs" cat "$img" /hello.txt
show "$ezfs" cat "$img" /docs/notes/todo.txt
echo "\$ ezfs cat $img /data/numbers.csv | tail -n 3"
"$ezfs" cat "$img" /data/numbers.csv | tail -n 3
"$ezfs" cat "$img" /data/numbers.csv | cmp - "$tree/data/numbers.csv"
echo "(numbers.csv is byte-identical to the source, $(stat -c %s "$tree/data/numbers.csv") bytes)"

heading "ezfs extract, then diff -r against the sample tree"
show "$ezfs" extract -q "$img" out
echo "\$ diff -r --no-dereference $tree out"
if diff -r --no-dereference "$tree" out; then
	echo "diff -r: no differences"
else
	echo "demo: the extracted tree differs from the sample" >&2
	exit 1
fi

heading "ezfs fsck: check every inode and all the data"
show "$ezfs" fsck "$img"

heading "ezfs mkfs: build our own image of the same tree (zstd, 64 KiB pclusters)"
show "$ezfs" mkfs -q -z zstd -C 65536 -E ztailpacking ezfs.erofs "$tree"
echo "ezfs.erofs: $(stat -c %s ezfs.erofs) bytes (mkfs.erofs' lz4hc image: $(stat -c %s "$img"))"
show "$ezfs" fsck -q ezfs.erofs
show "$ezfs" extract -q ezfs.erofs out2
diff -r --no-dereference "$tree" out2 && echo "diff -r: no differences"

heading "The kernel reads ezfs' image too"
mnt=$work/mnt
mkdir -p "$mnt"
if [ "$(id -u)" = 0 ] && mount -t erofs -o loop,ro ezfs.erofs "$mnt" 2>/dev/null; then
	echo "\$ mount -t erofs -o loop,ro ezfs.erofs mnt"
	if diff -r --no-dereference "$tree" "$mnt"; then
		echo "diff -r sample mnt: no differences"
	else
		umount "$mnt"
		echo "demo: the kernel's view differs from the sample" >&2
		exit 1
	fi
	umount "$mnt"
else
	echo "(skipped: mounting needs root, a loop device and the erofs module)"
fi

heading "ezfs mount: the same image through FUSE"
if "$ezfs" help 2>&1 | grep -q '^  mount' && [ -w /dev/fuse ] &&
   show "$ezfs" mount "$img" "$mnt" 2>/dev/null; then
	if diff -r --no-dereference "$tree" "$mnt"; then
		echo "diff -r sample mnt: no differences"
	else
		"$ezfs" umount "$mnt"
		echo "demo: the FUSE view differs from the sample" >&2
		exit 1
	fi
	show "$ezfs" umount "$mnt"
else
	echo "(skipped: no usable /dev/fuse here)"
fi

heading "ezfs accel list: the decompression engines of this machine"
show "$ezfs" accel list

heading "ezfs bench ratio: what each algorithm does to the sample"
show "$ezfs" bench ratio -q --levels "lz4hc:9 deflate:6 zstd:3" "$tree"

printf '\n%sdemo: all steps passed%s\n' "$bold" "$plain"
