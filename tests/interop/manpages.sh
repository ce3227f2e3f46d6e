#!/bin/bash
# SPDX-License-Identifier: MIT
# The manual pages (man/*.1.scd) against the commands they describe, both
# read now, not at configure time:
#  - every command has a page: ezfs (ezfs.1), each subcommand listed under
#    "Commands:" in `ezfs --help` (ezfs-CMD.1) and the compat names beside
#    the binary (ezfs-mkfs.erofs.1 ...);
#  - scdoc turns each page into roff (man/page.sh, as the build does), and `man --warnings -l` renders it at
#    80 columns with nothing on stderr;
#  - the options a page names (tokens like -x, --foo, --[no-]bar, read from
#    the rendered page) are the options its command's --help names, no more
#    and no fewer. --help and -h are left out on both sides: every command
#    takes them and ezfs(1) says so once;
#  - a page that names http:// images names oci:// and s3:// ones too;
#  - ezfs(1) and README.md list every command (README.md after `make
#    demo` and `make check`); docs/remote.md names only options that the
#    commands it speaks of take.
#
# usage: EZFS_BIN=build/tools/ezfs/ezfs tests/interop/manpages.sh
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
t_init
t_need_cmd scdoc man python3 col

man_dir=$SRC/man
bindir=$(dirname "$EZFS")

# The option tokens of a text on stdin, one a line, sorted.
tokens() {
	python3 -c '
import re, sys

def expand(t):
    """Each spelling of t: "[A|B]" groups give A, B or nothing."""
    m = re.match(r"^([^\[]*)\[([^\]]*)\](.*)$", t)
    if not m:
        return t.split("|")
    out = []
    for alt in [""] + m.group(2).split("|"):
        out += expand(m.group(1) + alt + m.group(3))
    return out

text = sys.stdin.read()
for c in "\u2010\u2011\u2012\u2013\u2212":
    text = text.replace(c, "-")
seen = set()
pat = r"(?<![\w./=+-])(--[A-Za-z\[][\w\[\]|=-]*|-[A-Za-z][A-Za-z0-9]*)"
for m in re.finditer(pat, text):
    t = m.group(1)
    while t.endswith("]") and t.count("]") > t.count("["):
        t = t[:-1]
    t = re.sub(r"\[=[^\]]*\]", "", t).split("=")[0]
    for s in expand(t):
        s = s.rstrip("-")
        if re.match(r"^(--[A-Za-z][\w-]*|-[A-Za-z][A-Za-z0-9]*)$", s):
            seen.add(s)
seen -= {"--help", "-h"}
print("\n".join(sorted(seen)))
'
}

# Render PAGE.1 (roff) at WIDTH columns as plain text; warnings to stderr.
render() {
	MANWIDTH=$2 LC_ALL=C.UTF-8 MAN_KEEP_FORMATTING='' man --warnings -l "$1" | col -bx
}

cmds=()
while IFS= read -r c; do
	[ "$c" = help ] || cmds+=("$c")
done < <("$EZFS" --help 2>&1 | sed -n '/^Commands:/,/^$/s/^  \([a-z][a-z0-9-]*\).*/\1/p')
if [ ${#cmds[@]} -lt 5 ]; then
	t_fail "ezfs --help lists ${#cmds[@]} commands under 'Commands:'"
	t_done
fi

# page name -> the command line whose --help it documents
declare -A runs=([ezfs]="$EZFS")
for c in "${cmds[@]}"; do
	runs[ezfs-$c]="$EZFS $c"
done
for n in mkfs.erofs fsck.erofs dump.erofs; do
	if [ -x "$bindir/$n" ]; then
		runs[ezfs-$n]="$bindir/$n"
	else
		t_fail "no $n beside $EZFS"
	fi
done

# The long options of the getopt tables in tools/ezfs/FILE... (index K of a
# file's tables with FILE:K), CLI_* macros of common.h expanded: --help must
# name every option the parser takes.
table_opts() {
	python3 - "$SRC/tools/ezfs" "$@" <<'PY'
import re, sys
d = sys.argv[1]
common = open(d + "/common.h").read()
macros = {m.group(1): m.group(2) for m in
          re.finditer(r"#define (CLI_\w+_OPTS)((?:.*\\\n)*.*)", common)}
def names(body):
    out = set(re.findall(r'\{\s*"([a-z0-9-]+)"', body))
    for mac, val in macros.items():
        if re.search(r"\b%s\b" % mac, body):
            out |= names(val)
    return out
seen = set()
for arg in sys.argv[2:]:
    f, _, k = arg.partition(":")
    tabs = re.findall(r"struct option \w+\[\] = \{(.*?)\n\s*\};",
                      open(d + "/" + f).read(), re.S)
    for i, t in enumerate(tabs):
        if not k or int(k) == i:
            seen |= names(t)
seen.discard("help")
print("\n".join("--" + n for n in sorted(seen)))
PY
}
declare -A tables=([ezfs-accel]="accel.c accel_bench.c accel_ctl.c"
	[ezfs-bench]="bench/main.c" [ezfs-mount]="mount.c:0" [ezfs-umount]="mount.c:1"
	[ezfs-fsck.erofs]="compat_fsck.c" [ezfs-dump.erofs]="compat_dump.c"
	[ezfs-mkfs.erofs]="mkfs.c")

for page in $(printf '%s\n' "${!runs[@]}" | sort); do
	src=${tables[$page]:-${page#ezfs-}.c}
	if [ "$page" != ezfs ]; then
		# shellcheck disable=SC2086  # a list of files
		table_opts $src >"$TMP/$page.table-opts"
		# shellcheck disable=SC2086  # the command line is words on purpose
		${runs[$page]} --help 2>&1 </dev/null | tokens >"$TMP/$page.help-all"
		if [ ! -s "$TMP/$page.table-opts" ]; then
			t_fail "$page: no getopt table read from tools/ezfs/$src"
		elif miss=$(comm -23 "$TMP/$page.table-opts" "$TMP/$page.help-all") &&
			[ -z "$miss" ]; then
			t_pass "$page: --help names the $(wc -l <"$TMP/$page.table-opts") long options of its getopt table"
		else
			t_fail "$page: --help leaves out options its parser takes:" $miss
		fi
	fi
	scd=$man_dir/$page.1.scd
	if [ ! -f "$scd" ]; then
		t_fail "$page: no man page (man/$page.1.scd)"
		continue
	fi
	if ! sh "$man_dir/page.sh" scdoc "$scd" "$TMP/$page.1" 2>"$TMP/$page.scdoc"; then
		t_fail "$page: scdoc: $(head -c 300 "$TMP/$page.scdoc")"
		continue
	fi
	render "$TMP/$page.1" 80 >"$TMP/$page.txt" 2>"$TMP/$page.warn"
	if [ -s "$TMP/$page.warn" ] || [ ! -s "$TMP/$page.txt" ]; then
		t_fail "$page: man --warnings -l at 80 columns: $(head -c 300 "$TMP/$page.warn")"
	else
		t_pass "$page: renders at 80 columns without warnings"
	fi
	# A page that speaks of http:// images speaks of oci:// and s3:// too
	# (ezfs-cache(1) once knew only http).
	if grep -q 'http://' "$TMP/$page.txt" &&
		! { grep -q 'oci://' "$TMP/$page.txt" && grep -q 's3://' "$TMP/$page.txt"; }; then
		t_fail "$page: names http:// images but not oci:// and s3:// ones"
	fi
	# Wide enough that no option name is broken across lines (groff breaks
	# lines after a hyphen).
	render "$TMP/$page.1" 3000 2>/dev/null | tokens >"$TMP/$page.man-opts"
	# shellcheck disable=SC2086  # the command line is words on purpose
	${runs[$page]} --help 2>&1 </dev/null | tokens >"$TMP/$page.help-opts"
	if [ ! -s "$TMP/$page.help-opts" ] && [ "$page" != ezfs-cat ]; then
		t_fail "$page: no options read from '${runs[$page]} --help'"
		continue
	fi
	if cmp -s "$TMP/$page.help-opts" "$TMP/$page.man-opts"; then
		t_pass "$page: the page names the $(wc -l <"$TMP/$page.man-opts") options of --help"
	else
		t_fail "$page: options differ between '${runs[$page]##*/} --help' and the page:"
		comm -23 "$TMP/$page.help-opts" "$TMP/$page.man-opts" | sed 's/^/  only in --help: /'
		comm -13 "$TMP/$page.help-opts" "$TMP/$page.man-opts" | sed 's/^/  only in the page: /'
	fi
done

# ezfs(1) lists every command of `ezfs --help` under COMMANDS and in SEE
# ALSO (it had left out push).
for c in "${cmds[@]}"; do
	if ! sed -n '/^# COMMANDS/,/^# OPTIONS/p' "$man_dir/ezfs.1.scd" | grep -qE "^(\*[a-z]+\*, )*\*$c\*"; then
		t_fail "ezfs(1): COMMANDS does not list $c"
	elif ! sed -n '/^# SEE ALSO/,$p' "$man_dir/ezfs.1.scd" | grep -qF "*ezfs-$c*(1)"; then
		t_fail "ezfs(1): SEE ALSO does not name ezfs-$c(1)"
	else
		t_pass "ezfs(1) lists $c and ezfs-$c(1)"
	fi
done

# README.md: its first commands are `make demo` and `make check`, and it
# names every command (it had no word of push, cache or lpinfo) and the
# kinds of image they take (remote, Android sparse).
readme=$SRC/README.md
first=$(awk '/^```/ { if (on) exit; on = 1; next } on' "$readme")
t_expect "README.md starts with 'make demo' and 'make check'" \
	[ "$first" = "$(printf 'make demo\nmake check')" ]
for c in "${cmds[@]}"; do
	t_expect "README.md names 'ezfs $c'" grep -q "ezfs $c\b" "$readme"
done
for w in 'http://' 'oci://' 's3://' 'sparse image' 'SUPER:NAME' 'extract --android'; do
	t_expect "README.md speaks of '$w'" grep -qF -- "$w" "$readme"
done

# An option docs/remote.md tells users to pass is one the commands it is
# about take: `ezfs cat` (every command that reads an image takes the
# same), else a command its section names (`ezfs mount`, `ezfs accel
# stats`...); "without `-x`" tells of none. It once said (`-v`) of the
# warnings of every command, where only mount takes -v.
"$EZFS" cat --help >"$TMP/cat.help" 2>&1
bad=$(python3 - "$SRC/docs/remote.md" "$EZFS" "$TMP/cat.help" <<'PY'
import re, subprocess, sys
doc, ezfs, cat_help = sys.argv[1], sys.argv[2], open(sys.argv[3]).read()
cmds = ["accel stats", "cache", "push", "mount", "umount", "bench", "info",
        "ls", "stat", "cat", "extract", "export", "fsck", "mkfs", "lpinfo"]
helps = {}
def takes(help_text, opt):
    return re.search(r"(?<![\w-])" + re.escape(opt) + r"(?![\w-])", help_text)
for sec in re.split(r"\n(?=#)", open(doc).read()):
    for m in re.finditer(r"`(--?[A-Za-z][\w-]*)[^`]*`", sec):
        opt = m.group(1)
        if takes(cat_help, opt) or re.search(r"\b(without|no)\s+$",
                                             sec[max(0, m.start() - 12):m.start()]):
            continue
        ok = False
        for c in cmds:
            if not re.search(r"ezfs %s\b" % c, sec):
                continue
            if c not in helps:
                helps[c] = subprocess.run([ezfs] + c.split() + ["--help"],
                    capture_output=True, text=True).stdout
            ok = ok or takes(helps[c], opt)
        if not ok:
            line = sec[:m.start()].count("\n") + 1
            print("%s (section '%s', its line %d)" % (opt, sec.split("\n", 1)[0], line))
PY
)
if [ -z "$bad" ]; then
	t_pass "docs/remote.md names only options its commands take"
else
	t_fail "docs/remote.md names options no command it speaks of takes:"
	printf '  %s\n' "$bad"
fi

# Pages that document no command any more.
for scd in "$man_dir"/*.1.scd; do
	page=$(basename "$scd" .1.scd)
	[ -n "${runs[$page]+set}" ] || [ "$page" = ezfs-mount ] || [ "$page" = ezfs-umount ] ||
		t_fail "$page: a man page for a command ezfs does not have"
done
t_done
