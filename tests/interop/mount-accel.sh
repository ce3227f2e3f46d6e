#!/bin/bash
# SPDX-License-Identifier: MIT
# Live engine switch on a running mount: mount a deflate image with ezfs
# mount, read a file, `ezfs accel set MNT deflate=zlib`, read it again, and
# `ezfs accel stats MNT` must show more zlib requests, the contents the same
# both times and equal to `ezfs cat`. Reads use O_DIRECT so that they reach
# the daemon, not the kernel's page cache. Also: a bad SPEC is a usage error,
# a directory that is no ezfs mount is refused, set by another user is
# refused (when root can switch to nobody).
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
t_init

t_need_fuse
t_need_fixtures
t_fixture_unpack deflate-16k || t_done
FILE=big/text_3m
unset EZFS_ACCEL EZFS_DISPATCH EZFS_STRICT_ACCEL

# no prefetch and no pcluster cache: every read decodes in the daemon
t_fuse_start "$img" "$TMP/daemon.log" -o prefetch=0,cache=4K ||
	{ t_fail "mount"; exit 1; }

# requests of ENGINE in `ezfs accel stats MNT` (0 when not listed)
requests() { awk -v e="$1" '$1 == e {print $3; f = 1} END {if (!f) print 0}' "$OUT"; }
readsum() { dd if="$MP/$FILE" iflag=direct bs=1M status=none | sha1sum | cut -d' ' -f1; }

want=$("$EZFS" cat "$img" "$FILE" | sha1sum | cut -d' ' -f1)
first=$(readsum)
t_expect "read through the mount equals ezfs cat" [ "$first" = "$want" ]
t_run stats0 "$EZFS" accel stats "$MP"
t_expect "stats MNT: exit 0" [ "$RC" -eq 0 ]
grep -q '^order: .*deflate=libdeflate' "$OUT" ||
	grep -q '^order: .*deflate=' "$OUT" || t_fail "stats MNT: no order line: $(head -c 200 "$OUT")"
z0=$(requests zlib)
t_run set "$EZFS" accel set "$MP" deflate=zlib
t_expect "accel set MNT deflate=zlib: exit 0 ($(head -c 200 "$ERR"))" [ "$RC" -eq 0 ]
second=$(readsum)
t_run stats1 "$EZFS" accel stats "$MP"
z1=$(requests zlib)
echo "zlib requests: $z0 before the switch, $z1 after the second read"
grep '^order:' "$OUT"
t_expect "order is now deflate=zlib" grep -q '^order: .*deflate=zlib' "$OUT"
t_expect "zlib requests grew" [ "$z1" -gt "$z0" ]
t_expect "contents identical after the switch" [ "$second" = "$first" ]

# dispatch and strictness switch too; then back to the default order
t_run set2 "$EZFS" accel set --dispatch queue:2 --strict-accel "$MP" default
t_expect "set --dispatch queue:2 --strict-accel default: exit 0" [ "$RC" -eq 0 ]
t_expect "contents identical under queue:2" [ "$(readsum)" = "$want" ]
t_run stats2 "$EZFS" accel stats "$MP"
t_expect "stats shows queue dispatch, strict" grep -q '^dispatch queue, 2 workers.*strict yes' "$OUT"

# errors: bad spec (usage, 2), not a mount (1), another user (1)
t_run bad "$EZFS" accel set "$MP" deflate=bogus
t_expect "bad SPEC: exit 2" [ "$RC" -eq 2 ]
t_run notmnt "$EZFS" accel set "$TMP" deflate=zlib
t_expect "not an ezfs mount: exit 1, one line" [ "$RC" -eq 1 ] && [ "$(wc -l <"$ERR")" = 1 ]
if command -v setpriv >/dev/null; then
	chmod 755 "$TMP"
	t_run other setpriv --reuid=65534 --regid=65534 --clear-groups "$EZFS" accel set "$MP" deflate=zlib
	# without allow_other the kernel itself refuses (EACCES); both are "no"
	t_expect "another user cannot switch: exit 1" [ "$RC" -eq 1 ]
fi

t_expect "umount, daemon exits 0" t_fuse_stop
t_done
