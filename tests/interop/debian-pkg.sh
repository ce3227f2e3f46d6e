#!/bin/bash
# SPDX-License-Identifier: MIT
# The Debian packages (debian/): dpkg-buildpackage -b of a copy of the
# committed tree (git archive HEAD; EZFS_DEB_TREE=worktree copies the
# working tree's tracked and unignored files instead), then
#  - lintian finds no errors (its warnings are shown);
#  - each .deb unpacked with dpkg -x into one folder (nothing installed on
#    this machine): ezfs --version, the demo of `make demo`
#    (sample/demo.sh) and the compat names run from there against the
#    packaged libraries (LD_LIBRARY_PATH), the man pages render, the
#    completion is there, a program builds with the packaged ezfs.pc;
#  - ezfs-erofs-compat's postinst and prerm, run with DPKG_ROOT on a
#    scratch root: beside a real /usr/bin/mkfs.erofs (erofs-utils) the file
#    stays as it is; on a root without one the name becomes ezfs' link, and
#    the prerm takes it away again.
# Skips (77) without dpkg-buildpackage or the build dependencies
# (dpkg-checkbuilddeps says which).
#
# usage: tests/interop/debian-pkg.sh      (EZFS_KEEP=1 keeps the .debs)
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
t_init
t_need_cmd dpkg-buildpackage dpkg-checkbuilddeps dpkg-deb dpkg-architecture \
	dpkg-parsechangelog update-alternatives
[ -f "$SRC/debian/control" ] || { t_fail "no debian/control in $SRC"; t_done; }

# The tree to build: never the source tree itself (its build*/ folders,
# others' work in progress).
tree=$TMP/ezfs
mkdir -p "$tree"
if [ "${EZFS_DEB_TREE:-}" = worktree ]; then
	(cd "$SRC" && git ls-files -co --exclude-standard -z |
		xargs -0 -r tar -c --no-recursion -f - 2>/dev/null) | tar -x -C "$tree" ||
		{ t_fail "copying the working tree"; t_done; }
	echo "building the working tree"
elif git -C "$SRC" rev-parse --verify -q HEAD >/dev/null; then
	git -C "$SRC" archive HEAD | tar -x -C "$tree" ||
		{ t_fail "git archive HEAD"; t_done; }
	echo "building HEAD ($(git -C "$SRC" log -1 --format=%h))"
	[ -f "$tree/debian/control" ] ||
		t_skip "debian/ is not committed yet (EZFS_DEB_TREE=worktree builds the working tree)"
else
	tar -C "$SRC" --exclude='./build*' --exclude='./obj-*' -c . | tar -x -C "$tree"
fi
cd "$tree" || exit 1
if ! dpkg-checkbuilddeps >"$TMP/deps.log" 2>&1; then
	t_skip "build dependencies missing: $(sed 's/^dpkg-checkbuilddeps: error: //' "$TMP/deps.log" | tr '\n' ' ')"
fi

version=$(dpkg-parsechangelog -S Version)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
start=$(date +%s)
if DEB_BUILD_OPTIONS="parallel=2 noddebs" dpkg-buildpackage -us -uc -b \
	>"$TMP/build.log" 2>&1; then
	t_pass "dpkg-buildpackage -us -uc -b ($(($(date +%s) - start)) s)"
else
	t_fail "dpkg-buildpackage failed:"
	tail -n 25 "$TMP/build.log"
	t_done
fi
if grep -E "dpkg-gensymbols: warning|dpkg-shlibdeps: warning" "$TMP/build.log"; then
	echo "  (debian/libezfs0.symbols: add the new symbols with their version)"
fi

debs=()
for p in ezfs libezfs0 libezfs-dev ezfs-erofs-compat; do
	d=$(ls "$TMP"/${p}_"$version"_*.deb 2>/dev/null | head -n 1)
	if [ -n "$d" ]; then
		debs+=("$d")
	else
		t_fail "no $p .deb"
	fi
done
[ ${#debs[@]} = 4 ] || t_done

if command -v lintian >/dev/null; then
	lintian --fail-on error "$TMP"/ezfs_"$version"_*.changes >"$TMP/lintian.log" 2>&1
	rc=$?
	grep -v 'running with root privileges' "$TMP/lintian.log" | sed 's/^/  /'
	if [ $rc = 0 ] && ! grep -q '^E: ' "$TMP/lintian.log"; then
		t_pass "lintian: no errors ($(grep -c '^W: ' "$TMP/lintian.log") warnings)"
	else
		t_fail "lintian found errors (exit $rc)"
	fi
else
	echo "SKIP: lintian checks ('lintian' is not installed; scripts/deps.sh installs it)"
fi

root=$TMP/root
for d in "${debs[@]}"; do
	dpkg -x "$d" "$root" || t_fail "dpkg -x $(basename "$d")"
done
export LD_LIBRARY_PATH=$root/usr/lib/$multiarch
ezfs=$root/usr/bin/ezfs

t_run version "$ezfs" --version
t_check "packaged ezfs --version" 0 stdout "^ezfs ${version%%-*}"
libs=$(ldd "$ezfs" 2>&1)
if grep -q "libezfs.so.0 => $root/" <<<"$libs"; then
	t_pass "the packaged ezfs runs on the packaged libezfs.so.0"
else
	t_fail "ezfs does not load the packaged library: $(grep ezfs <<<"$libs")"
fi
dyn=$(readelf -d "$ezfs" 2>&1)
if grep -qE 'RUNPATH|RPATH' <<<"$dyn"; then
	t_fail "the packaged ezfs has an RPATH: $(grep -E 'R(UN)?PATH' <<<"$dyn")"
else
	t_pass "no RPATH in the packaged ezfs"
fi

if command -v mkfs.erofs >/dev/null && [ -x "$SRC/sample/demo.sh" ]; then
	if bash "$SRC/sample/demo.sh" "$ezfs" >"$TMP/demo.log" 2>&1; then
		t_pass "the demo (sample/demo.sh) with the packaged ezfs"
	else
		t_fail "the demo with the packaged ezfs failed:"
		tail -n 15 "$TMP/demo.log"
	fi
else
	echo "SKIP: the demo (it needs Debian's mkfs.erofs: erofs-utils)"
fi

for n in mkfs.erofs fsck.erofs; do
	t_run "$n" "$root/usr/libexec/ezfs/$n" -V
	t_check "ezfs-erofs-compat: /usr/libexec/ezfs/$n -V" 0 stdout "^$n \(ezfs\)"
done

for p in ezfs ezfs-mkfs ezfs-ls ezfs-mkfs.erofs; do
	f=$root/usr/share/man/man1/$p.1.gz
	warn=
	[ -f "$f" ] && warn=$(MANWIDTH=80 man --warnings -l "$f" 2>&1 >/dev/null)
	if [ -n "$warn" ]; then
		t_fail "$p.1.gz: man warns: ${warn:0:300}"
	else
		t_expect "packaged man page $p.1.gz" [ -f "$f" ]
	fi
done
t_expect "packaged bash completion" [ -f "$root/usr/share/bash-completion/completions/ezfs" ]
t_expect "libezfs-dev: libezfs.a holds ezfs_image_open" \
	bash -c "nm '$root/usr/lib/$multiarch/libezfs.a' 2>/dev/null | grep -q ' T ezfs_image_open$'"

# A program against the packaged headers, ezfs.pc and library.
if command -v pkg-config >/dev/null && command -v cc >/dev/null; then
	printf '%s\n' '#include <ezfs/ezfs.h>' '#include <stdio.h>' \
		'int main(void) { struct ezfs_open_params p;' \
		'ezfs_open_params_init(&p); puts(EZFS_VERSION_STRING); return 0; }' >"$TMP/use.c"
	# shellcheck disable=SC2046  # pkg-config prints a list of flags
	if PKG_CONFIG_PATH=$root/usr/lib/$multiarch/pkgconfig PKG_CONFIG_SYSROOT_DIR=$root \
		cc -o "$TMP/use" "$TMP/use.c" $(PKG_CONFIG_PATH=$root/usr/lib/$multiarch/pkgconfig \
		PKG_CONFIG_SYSROOT_DIR=$root pkg-config --cflags --libs ezfs) >"$TMP/cc.log" 2>&1 &&
		[ "$("$TMP/use")" = "${version%%-*}" ]; then
		t_pass "libezfs-dev: a program builds with pkg-config ezfs and runs"
	else
		t_fail "libezfs-dev: pkg-config ezfs: $(head -c 300 "$TMP/cc.log")"
	fi
fi

# The alternatives, on scratch roots (DPKG_ROOT: update-alternatives works
# under it and leaves this machine alone).
compat=$(ls "$TMP"/ezfs-erofs-compat_"$version"_*.deb)
dpkg-deb -e "$compat" "$TMP/compat.ctl"
alt_root() {
	local r=$TMP/$1
	mkdir -p "$r/var/lib/dpkg/alternatives" "$r/etc/alternatives" "$r/var/log"
	dpkg -x "$compat" "$r"
	dpkg -x "$(ls "$TMP"/ezfs_"$version"_*.deb)" "$r"
	echo "$r"
}
r=$(alt_root with-erofs-utils)
mkdir -p "$r/usr/bin"
echo '#!/bin/sh' >"$r/usr/bin/mkfs.erofs"
chmod 755 "$r/usr/bin/mkfs.erofs"
if DPKG_ROOT=$r sh "$TMP/compat.ctl/postinst" configure >"$TMP/alt1.log" 2>&1; then
	t_expect "postinst beside erofs-utils: /usr/bin/mkfs.erofs stays its file" \
		[ -f "$r/usr/bin/mkfs.erofs" -a ! -L "$r/usr/bin/mkfs.erofs" ]
	DPKG_ROOT=$r update-alternatives --query mkfs.erofs >"$TMP/alt1.q" 2>&1
	t_expect "postinst: mkfs.erofs registered at priority 10" \
		grep -qx 'Priority: 10' "$TMP/alt1.q"
else
	t_fail "postinst configure (erofs-utils present): $(head -c 300 "$TMP/alt1.log")"
fi
r=$(alt_root alone)
if DPKG_ROOT=$r sh "$TMP/compat.ctl/postinst" configure >"$TMP/alt2.log" 2>&1; then
	ok=1
	for n in mkfs.erofs fsck.erofs dump.erofs; do
		[ "$(readlink "$r/usr/bin/$n")" = "/etc/alternatives/$n" ] &&
			[ "$(readlink "$r/etc/alternatives/$n")" = "/usr/libexec/ezfs/$n" ] || ok=0
	done
	t_expect "postinst alone: /usr/bin/{mkfs,fsck,dump}.erofs -> ezfs" [ $ok = 1 ]
	t_expect "postinst alone: the man page mkfs.erofs.1.gz -> ezfs-mkfs.erofs.1.gz" \
		[ "$(readlink "$r/etc/alternatives/mkfs.erofs.1.gz")" = /usr/share/man/man1/ezfs-mkfs.erofs.1.gz ]
	DPKG_ROOT=$r sh "$TMP/compat.ctl/prerm" remove >"$TMP/alt3.log" 2>&1
	t_expect "prerm remove: the links are gone" \
		[ ! -e "$r/usr/bin/mkfs.erofs" -a ! -L "$r/usr/bin/dump.erofs" ]
else
	t_fail "postinst configure (alone): $(head -c 300 "$TMP/alt2.log")"
fi

if [ -n "${EZFS_KEEP:-}" ]; then
	echo "packages: $(ls "$TMP"/*.deb | tr '\n' ' ')"
fi
t_done
