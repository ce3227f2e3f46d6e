#!/bin/bash
# SPDX-License-Identifier: MIT
# What `make install` promises: the library, header, ezfs.pc and the ezfs
# command land under the prefix, and a program built with
# `pkg-config --cflags --libs ezfs` links and opens an image.
#
# usage: EZFS_BUILD_DIR=build tests/interop/install.sh
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
t_init
t_need_cmd cmake pkg-config cc mkfs.erofs
build=${EZFS_BUILD_DIR:-$SRC/build}
# A staged install (DESTDIR) of the prefix the build was configured with,
# as `make install PREFIX=...` does; ezfs.pc names that prefix.
inst=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
root=$TMP/root
prefix=$root$inst

if DESTDIR=$root cmake --install "$build" > "$TMP/install.log" 2>&1; then
	t_pass "cmake --install (DESTDIR, prefix $inst)"
else
	t_fail "cmake --install failed"
	tail -n 5 "$TMP/install.log"
	t_done
fi
for f in include/ezfs/ezfs.h bin/ezfs; do
	t_expect "installed $f" [ -e "$prefix/$f" ]
done
pc=$(find "$prefix" -name ezfs.pc | head -n 1)
t_expect "installed ezfs.pc" [ -n "$pc" ]
[ -n "$pc" ] || t_done
libdir=$(dirname "$(dirname "$pc")")

cat > "$TMP/use.c" <<'C'
#include <ezfs/ezfs.h>
#include <stdio.h>
int main(int argc, char **argv)
{
	struct ezfs_open_params p;
	ezfs_image *img;
	int err;

	ezfs_open_params_init(&p);
	err = ezfs_image_open(argv[1], &p, &img);
	if (err) {
		fprintf(stderr, "open: %d\n", err);
		return 1;
	}
	ezfs_image_close(img);
	puts(argc > 1 ? "opened" : "");
	return 0;
}
C
export PKG_CONFIG_PATH=$libdir/pkgconfig PKG_CONFIG_SYSROOT_DIR=$root
# shellcheck disable=SC2046  # pkg-config prints a list of flags
if cc -o "$TMP/use" "$TMP/use.c" $(pkg-config --cflags --libs ezfs) > "$TMP/cc.log" 2>&1; then
	t_pass "a program builds with pkg-config ezfs"
	mkdir -p "$TMP/t"
	echo hi > "$TMP/t/f"
	mkfs.erofs --quiet "$TMP/t.img" "$TMP/t" >/dev/null
	t_run use env LD_LIBRARY_PATH="$libdir" "$TMP/use" "$TMP/t.img"
	t_expect "it opens an image with the installed library (exit $RC)" grep -q opened "$OUT"
	t_run installed env LD_LIBRARY_PATH="$libdir" "$prefix/bin/ezfs" --version
	t_expect "installed ezfs runs (exit $RC)" grep -q ezfs "$OUT"
else
	t_fail "building against the installed library failed"
	head -n 10 "$TMP/cc.log"
fi
# libezfs.a with what `pkg-config --static` adds (Requires.private and
# Libs.private): every codec symbol resolves, no libezfs.so needed at run
libs=$(pkg-config --static --libs ezfs | sed 's/-lezfs\b/-l:libezfs.a/')
# shellcheck disable=SC2046,SC2086  # lists of flags
if cc -o "$TMP/use-static" "$TMP/use.c" $(pkg-config --cflags ezfs) $libs \
	> "$TMP/ccs.log" 2>&1; then
	t_run use-static "$TMP/use-static" "$TMP/t.img"
	t_expect "libezfs.a through pkg-config --static opens an image (exit $RC)" \
		grep -q opened "$OUT"
else
	t_fail "linking libezfs.a with pkg-config --static: $(head -c 300 "$TMP/ccs.log")"
fi
t_done
