#!/bin/bash
# SPDX-License-Identifier: MIT
# The rough edges a new user meets first, on the reading commands: stdout
# errors at exit, names from an untrusted image on a terminal, option
# messages, trailing slashes, images that are not images, signals during
# extract, summaries, info -S totals, ls -l times, accel list.
# The signal checks use the fault shim (EZFS_FAULTSHIM); the terminal checks
# use script(1); each part without its tool prints a SKIP line.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
t_init

tree=$TMP/tree
img=$TMP/t.img
mkdir -p "$tree/docs/deep" "$tree/odd"
echo hello >"$tree/hello.txt"
seq 1 20000 >"$tree/docs/numbers.txt"
echo deep >"$tree/docs/deep/f.txt"
chmod 0751 "$tree/docs" "$tree/docs/deep"
touch "$tree/odd/$(printf 'a\033[31mred')" "$tree/odd/$(printf 'new\nline')"
"$EZFS" mkfs -q -z lz4hc "$img" "$tree" >/dev/null ||
	{ echo "FAIL: ezfs mkfs of the test tree"; exit 1; }

check() { t_check "$@"; }
not() { ! "$@"; }
one_line() { t_one_line "$@"; }

# ---- stdout that cannot be written ----
if [ -w /dev/full ]; then
	for cmd in "ls -R $img" "info -S $img" "stat $img hello.txt" \
		   "fsck $img" "accel list" "cat $img docs/numbers.txt" \
		   "ls --help" "--help" "help ls"; do
		OUT=$TMP/full.out ERR=$TMP/full.err
		: >"$OUT"
		# shellcheck disable=SC2086  # cmd is a word list
		"$EZFS" $cmd >/dev/full 2>"$ERR"
		RC=$?
		check "ezfs $cmd >/dev/full: exit 1, says stdout" 1 stderr 'stdout: |No space'
	done
else
	echo "SKIP: /dev/full is not writable here"
fi

# ---- option messages ----
t_run accelarg "$EZFS" info --accel
check "info --accel: names the option" 2 stderr "option '--accel' needs an argument"
t_run badlong "$EZFS" ls --nope=3 "$img"
check "unknown long option named without its value" 2 stderr "unknown option '--nope'"
t_run acclhelp "$EZFS" accel list --help
check "accel list --help: usage, exit 0" 0 stdout usage
t_run helphelp "$EZFS" help --help
check "help --help: usage, exit 0" 0 stdout usage
t_run fsckw "$EZFS" fsck -q --workers=2 "$img"
check "fsck --workers=N" 0
t_run xw "$EZFS" extract -q --workers 2 "$img" "$TMP/xw"
check "extract --workers N" 0
t_run xj0 "$EZFS" extract -j 0 "$img" "$TMP/xj0"
check "extract -j 0: usage error" 2 stderr "'0'"

# ---- trailing slash on a non-directory ----
for cmd in stat cat ls; do
	t_run "slash-$cmd" "$EZFS" "$cmd" "$img" hello.txt/
	check "$cmd FILE/: Not a directory" 1 stderr 'Not a directory'
done
t_run slash-x "$EZFS" extract -q "$img" "$TMP/xs" hello.txt/
check "extract IMG DIR FILE/: Not a directory" 1 stderr 'Not a directory'
t_run slash-dir "$EZFS" ls "$img" docs/
check "ls DIR/ still lists" 0 stdout numbers

# ---- what is not an image ----
head -c 65536 /dev/urandom >"$TMP/random.img"
: >"$TMP/empty.img"
printf 'just some text\n' >"$TMP/text.img"
for f in random empty text; do
	t_run "not-$f" "$EZFS" info "$TMP/$f.img"
	check "$f file: not an EROFS image" 1 stderr "^ezfs info: .*$f.img: not an EROFS image"
	one_line "$f file: one line" "$ERR"
done
head -c 4096 "$img" >"$TMP/trunc.img"
size=$(stat -c %s "$img")
if [ "$size" -gt 8192 ]; then
	t_run trunc "$EZFS" info "$TMP/trunc.img"
	check "truncated image: called truncated, with both sizes" 1 stderr 'truncated: 4 KiB of [0-9.]+ [KM]iB'
	one_line "truncated image: one line" "$ERR"
else
	t_fail "the test image is too small ($size bytes) to truncate"
fi
t_run pipe bash -c '"$1" ls <(cat "$2")' _ "$EZFS" "$img"
check "a pipe as IMAGE: not seekable" 1 stderr 'not seekable'
one_line "a pipe: one line" "$ERR"
mkfifo "$TMP/fifo"
t_run fifo timeout 10 "$EZFS" info "$TMP/fifo"
check "a FIFO without a writer: refused at once" 1 stderr 'not seekable'
t_run missing "$EZFS" stat "$TMP/missing.img" x
check "missing image: No such file" 1 stderr 'missing.img: No such file or directory'
one_line "missing image: one line" "$ERR"

# ---- summaries ----
t_run fsckq "$EZFS" fsck -q "$img"
check "fsck -q of a clean image" 0
t_expect "fsck -q prints nothing on a clean image" [ ! -s "$OUT" ]
t_run fsckv "$EZFS" fsck "$img"
check "fsck prints its summary" 0 stdout '0 problems'
t_run xsum "$EZFS" extract "$img" "$TMP/xsum"
check "extract prints a summary on success" 0 stdout 'entries'
t_run xq "$EZFS" extract -q "$img" "$TMP/xq"
check "extract -q" 0
t_expect "extract -q prints nothing" test ! -s "$OUT" -a ! -s "$ERR"

# ---- info -S against fsck, zstd's windowlog ----
t_run infoS "$EZFS" info -S "$img"
sdirs=$(awk '/^ *directories/ {print $2}' "$OUT")
t_run fsckd "$EZFS" fsck "$img"
fdirs=$(sed -n 's/.*(\([0-9]*\) dirs.*/\1/p' "$OUT")
t_expect "info -S counts the directories fsck counts ($sdirs, $fdirs)" \
	test -n "$sdirs" -a "$sdirs" = "$fdirs"
"$EZFS" mkfs -q -z zstd -C 65536 "$TMP/z.img" "$tree" >/dev/null
t_run zinfo "$EZFS" info "$TMP/z.img"
check "info: zstd's windowlog is log2 of its window" 0 stdout 'window 1 MiB, windowlog 20\)|window ([0-9]+) KiB, windowlog 1[0-9]\)'

# ---- ls -l times, accel list ----
t_run lsl "$EZFS" ls -l "$img"
check "ls -l labels its times UTC" 0 stdout '[0-9]{2}:[0-9]{2} UTC hello.txt'
t_run al "$EZFS" accel list
check "accel list explains PARTIAL" 0 stdout '^PARTIAL: '
t_expect "accel list hides the test engine" not grep -q '^fail ' "$OUT"
t_run ala "$EZFS" accel list --all
check "accel list --all shows it" 0 stdout '^fail '

# ---- names on a terminal and in errors ----
t_run lsraw "$EZFS" ls "$img" odd
t_expect "ls into a pipe: names as they are" grep -q "$(printf 'a\033')" "$OUT"
if command -v script >/dev/null; then
	script -qec "$EZFS ls $img odd" /dev/null >"$OUT" 2>&1
	t_expect "ls on a tty: no raw escape" not grep -q "$(printf '\033')" "$OUT"
	t_expect "ls on a tty: shell quoted as GNU ls" grep -qF "'a'\$'\\033''[31mred'" "$OUT"
	t_expect "ls on a tty: a newline quoted" grep -qF "'new'\$'\\012''line'" "$OUT"
	script -qec "$EZFS stat $img 'odd/$(printf 'a\033[31mred')'" /dev/null >"$OUT" 2>&1
	t_expect "stat on a tty: Path quoted" grep -qF "Path:        'odd/a'\$'\\033''[31mred'" "$OUT"
else
	echo "SKIP: script(1) is not installed: the tty checks did not run"
fi
t_run errname "$EZFS" stat "$img" "odd/$(printf 'a\033[31mred')/"
check "an error line escapes control characters" 1 stderr 'a\\033\[31mred/: Not a directory'
t_expect "an error line has no raw escape" not grep -q "$(printf '\033')" "$ERR"

# ---- signals during extract ----
SHIM=${EZFS_FAULTSHIM:-$(dirname "$EZFS")/../../tests/interop/ezfs_faultshim.so}
if [ -f "$SHIM" ]; then
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
	for sig in sigint sigterm; do
		want=130
		[ $sig = sigterm ] && want=143
		rm -rf "$TMP/xsig"
		# (bash's own "Terminated" note goes to the log, not the test)
		t_run "x-$sig" env LD_PRELOAD="$SHIM" EZFS_FAULT=$sig \
			EZFS_FAULT_PATH=f.txt EZFS_FAULT_HOLD_MS=500 \
			"$EZFS" extract -j 1 "$img" "$TMP/xsig"
		check "extract $sig: says interrupted, killed by the signal" $want stderr 'interrupted'
		modes=$(stat -c %a "$TMP/xsig/docs" "$TMP/xsig/docs/deep" 2>/dev/null | tr '\n' ' ')
		t_expect "extract $sig: directory modes restored ($modes)" \
			[ "$modes" = "751 751 " ]
	done
else
	echo "SKIP: no fault shim at $SHIM: the extract signal checks did not run"
fi

t_done
