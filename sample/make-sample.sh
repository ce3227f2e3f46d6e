#!/bin/bash
# SPDX-License-Identifier: MIT
# Write the demo's small sample tree into DIR (created; must not exist yet).
# Deterministic: same content, modes and mtimes on every run.
#
# usage: sample/make-sample.sh DIR
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
d=$1
[ ! -e "$d" ] || { echo "$0: $d already exists" >&2; exit 1; }
mkdir -p "$d"
cd "$d"

cat > hello.txt <<'TXT'
Hello from ezfs!
This file sits at the root of the sample image.
TXT

mkdir -p docs/notes data empty bin
cat > docs/guide.md <<'TXT'
# A tiny guide

EROFS is a read-only, optionally compressed file system. An image holds a
superblock, inodes, directories, extended attributes and file data; file data
may be cut into physical clusters ("pclusters") compressed one by one.

ezfs reads such images without the kernel: `ezfs ls`, `ezfs cat`,
`ezfs extract` and `ezfs fsck` work on any machine.
TXT
printf 'buy milk\nwrite tests\n' > docs/notes/todo.txt

# Compressible data larger than one pcluster, so the image uses lz4hc for real.
{
	echo "n,square,cube"
	i=0
	while [ $i -lt 6000 ]; do
		echo "$i,$((i * i)),$((i * i * i))"
		i=$((i + 1))
	done
} > data/numbers.csv

cat > bin/greet.sh <<'TXT'
#!/bin/sh
echo "hello, $(id -un)"
TXT
chmod 755 bin/greet.sh

ln -s hello.txt link-to-hello
ln -s ../data/numbers.csv docs/numbers.csv
ln data/numbers.csv data/numbers-hardlink.csv

# An extended attribute, where the file system takes user.* xattrs.
setfattr -n user.comment -v "sample xattr" hello.txt 2>/dev/null || true

chmod 644 hello.txt docs/guide.md docs/notes/todo.txt data/numbers.csv
chmod 755 docs docs/notes data empty bin .
# Fixed times (2024-01-02 03:04:05 UTC) on everything, symlinks included.
find . -depth -exec touch -h -d '2024-01-02 03:04:05 UTC' {} +
