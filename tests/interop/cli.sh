#!/bin/bash
# SPDX-License-Identifier: MIT
# The command line: exit codes and messages for good and bad use, on the
# sample image (sample/make-sample.sh, packed by Debian's mkfs.erofs).
# Exit codes: 0 success, 1 error (bad image, missing file...), 2 bad usage.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
t_init
t_need_cmd mkfs.erofs

tree=$TMP/tree
img=$TMP/sample.img
"$SRC/sample/make-sample.sh" "$tree"
mkfs.erofs --quiet -zlz4hc "$img" "$tree" >/dev/null

check() { t_check "$@"; }
one_line() { t_one_line "$@"; }

# --- usage ---
t_run noargs "$EZFS"
check "no arguments: usage, exit 2" 2 stderr usage
t_run help "$EZFS" --help
check "--help: usage on stdout, exit 0" 0 stdout usage stdout info stdout extract stdout fsck
t_run version "$EZFS" --version
check "--version" 0 stdout '[0-9]+\.[0-9]+\.[0-9]+'
t_run unknown "$EZFS" frobnicate "$img"
check "unknown command: named, exit 2" 2 stderr frobnicate
t_run badopt "$EZFS" ls --no-such-option "$img"
check "unknown option: exit 2" 2
t_run noimg "$EZFS" cat
check "cat without image: exit 2" 2

# --- bad images ---
t_run missing "$EZFS" info "$TMP/does-not-exist.img"
check "missing image: exit 1, names the file" 1 stderr does-not-exist\\.img
one_line "missing image: one line of error" "$ERR"
head -c 65536 /dev/urandom > "$TMP/junk.img"
t_run junk "$EZFS" info "$TMP/junk.img"
check "not an EROFS image: exit 1" 1 stderr junk\\.img
t_run junkfsck "$EZFS" fsck -q "$TMP/junk.img"
check "fsck of a non-image: exit 1" 1
# The superblock magic sits at byte 1024; break it.
cp "$img" "$TMP/badmagic.img"
printf '\0\0\0\0' | dd of="$TMP/badmagic.img" bs=1 seek=1024 conv=notrunc status=none
t_run badmagic "$EZFS" fsck -q "$TMP/badmagic.img"
check "fsck of a broken superblock: exit 1" 1

# --- reading the sample ---
t_run info "$EZFS" info "$img"
check "info" 0 stdout 'block|blk' stdout lz4
t_run ls "$EZFS" ls "$img"
check "ls /" 0 stdout hello\\.txt stdout docs stdout link-to-hello
t_run lsdir "$EZFS" ls "$img" /docs/notes
check "ls /docs/notes" 0 stdout todo\\.txt
t_run lslr "$EZFS" ls -l -R "$img"
check "ls -l -R" 0 stdout todo\\.txt stdout numbers-hardlink\\.csv stdout 'link-to-hello.*hello\.txt' stdout greet\\.sh
t_run lsnone "$EZFS" ls "$img" /no/such/dir
check "ls of a missing path: exit 1, names it" 1 stderr /no/such/dir
t_run stat "$EZFS" stat "$img" /data/numbers.csv
check "stat" 0 stdout "$(stat -c %s "$tree/data/numbers.csv")"
t_run statext "$EZFS" stat -e "$img" /data/numbers.csv
check "stat -e: the extent map" 0 stdout lz4
t_run infos "$EZFS" info -S "$img"
check "info -S" 0
t_run helpls "$EZFS" help ls
check "help ls" 0 stdout 'usage: ezfs ls'
t_run cat "$EZFS" cat "$img" /hello.txt
check "cat /hello.txt: exit 0" 0
t_expect "cat /hello.txt: the file's bytes" cmp -s "$OUT" "$tree/hello.txt"
t_run catbig "$EZFS" cat "$img" /data/numbers.csv
check "cat /data/numbers.csv: exit 0" 0
t_expect "cat /data/numbers.csv: the file's bytes (compressed)" cmp -s "$OUT" "$tree/data/numbers.csv"
t_run catlink "$EZFS" cat "$img" /link-to-hello
check "cat through a symlink: exit 0" 0
t_expect "cat through a symlink: the target's bytes" cmp -s "$OUT" "$tree/hello.txt"
t_run catdir "$EZFS" cat "$img" /docs
check "cat of a directory: exit 1, says so" 1 stderr 'directory'
t_expect "cat of a directory writes nothing to stdout" [ ! -s "$OUT" ]
t_run catmissing "$EZFS" cat "$img" /nope.txt
check "cat of a missing file: exit 1, names it" 1 stderr nope\\.txt
t_run fsck "$EZFS" fsck "$img"
check "fsck" 0

# --- extract ---
t_run x1 "$EZFS" extract -q "$img" "$TMP/x"
check "extract into a new folder" 0
t_expect "extract: same tree (diff -r)" diff -r -q --no-dereference "$tree" "$TMP/x"
mkdir -p "$TMP/full"
echo keep > "$TMP/full/mine.txt"
t_run x2 "$EZFS" extract -q "$img" "$TMP/full"
check "extract refuses a non-empty folder without --force" 1
t_expect "extract left the non-empty folder alone" [ "$(find "$TMP/full" -mindepth 1 -printf '%P')" = mine.txt ]
t_run x3 "$EZFS" extract -q --force "$img" "$TMP/full"
check "extract --force into a non-empty folder" 0
t_expect "extract --force wrote the files" cmp -s "$tree/docs/guide.md" "$TMP/full/docs/guide.md"

t_run x4 "$EZFS" extract -q "$img" "$TMP/part" /docs
check "extract of one directory" 0
t_expect "extract of one directory: its contents, nothing else" \
	diff -r -q --no-dereference "$tree/docs" "$TMP/part"

t_done
