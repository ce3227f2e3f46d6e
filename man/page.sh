#!/bin/sh
# SPDX-License-Identifier: MIT
# usage: man/page.sh SCDOC PAGE.1.scd PAGE.1
# One man page from its scdoc source, with two lines after .TH (which turns
# hyphenation back on): .nh (no hyphenation) and no line break after a
# hyphen, so that option names and operands are never split across lines
# and can be read and copied from a terminal as they are.
set -e
"$1" <"$2" >"$3.tmp"
sed '/^\.TH /a\
.nh\
.cflags 0 -\\[hy]' "$3.tmp" >"$3"
rm -f "$3.tmp"
