#!/bin/sh
# SPDX-License-Identifier: MIT
# usage: man/page.sh SCDOC PAGE.1.scd PAGE.1
# One man page from its scdoc source, with two lines after .TH (which turns
# hyphenation back on): .nh (no hyphenation) and no line break after a
# hyphen, so that option names and operands are never split across lines
# and can be read and copied from a terminal as they are.
set -e
# A line "@include NAME" stands for man/parts/NAME.scd (the sections that
# several pages share, written once).
awk -v parts="$(dirname "$2")/parts" '
/^@include [a-z]+$/ {
	f = parts "/" $2 ".scd"
	n = 0
	while ((r = (getline l < f)) > 0) { print l; n++ }
	close(f)
	if (r < 0 || !n) { print FILENAME ": no " f > "/dev/stderr"; exit 1 }
	next
}
{ print }' "$2" >"$3.in"
"$1" <"$3.in" >"$3.tmp"
rm -f "$3.in"
sed '/^\.TH /a\
.nh\
.cflags 0 -\\[hy]' "$3.tmp" >"$3"
rm -f "$3.tmp"
