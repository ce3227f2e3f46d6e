#!/bin/bash
# SPDX-License-Identifier: MIT
# completion/ezfs.bash, sourced into a fresh bash (alone, and after
# bash-completion's own script when it is installed): COMPREPLY for a
# subcommand prefix, an option prefix of a command (read from its --help),
# the image's directory entries after `ezfs ls IMG` and a path prefix inside
# the image (`ezfs ls IMG DIR` of the typed directory), for ls, stat, cat
# and extract's third operand, on a fixture image; the values of mkfs -z
# and -E, mount -o, bench --goal and --storage, --dispatch, each of them
# in its command's --help.
#
# usage: EZFS_BIN=build/tools/ezfs/ezfs tests/interop/completion.sh
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
t_init
t_need_fixtures
comp=$SRC/completion/ezfs.bash
[ -f "$comp" ] || { t_fail "no $comp"; t_done; }

# lz4-4k (a root of directories with files), else the first fixture there.
fixture=${1:-lz4-4k}
if [ ! -f "$SHARED/fixtures/$fixture.img.zst" ] && [ $# = 0 ]; then
	t_fixture_names
	fixture=${names[0]}
fi
t_fixture_unpack "$fixture" || t_done
img=$TMP/$fixture.img
# An entry of the image's root that is a directory, and one of its entries.
dir=$("$EZFS" ls -l "$img" / | awk '/^d/ { print $NF; exit }')
sub=$("$EZFS" ls "$img" "/$dir" | head -n 1)
[ -n "$dir" ] && [ -n "$sub" ] ||
	{ t_fail "$fixture: no directory with an entry at the root"; t_done; }

# complete PRELOAD WORD...: COMPREPLY, one a line, when the last WORD is
# being completed in a bash that sourced PRELOAD (or nothing) then ezfs.bash.
complete_words() {
	local pre=$1
	shift
	PRE=$pre COMP=$comp EZFS_DIR=$(dirname "$EZFS") bash --norc --noprofile -c '
		[ -n "$PRE" ] && . "$PRE"
		. "$COMP" || exit 9
		PATH=$EZFS_DIR:$PATH
		COMP_WORDS=("$@")
		COMP_CWORD=$(($# - 1))
		COMP_LINE="$*"
		COMP_POINT=${#COMP_LINE}
		COMPREPLY=()
		_ezfs ezfs "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
		printf "%s\n" "${COMPREPLY[@]}"
	' bash "$@" 2>"$TMP/comp.err"
}

# want WHAT EXPECTED GOT: EXPECTED (lines) are all in GOT, and GOT has
# nothing that does not start with PREFIX ($4, optional).
want() {
	local what=$1 exp=$2 got=$3 prefix=${4:-} l ok=1
	while IFS= read -r l; do
		grep -qxF -- "$l" <<<"$got" || { ok=0; echo "  missing: $l"; }
	done <<<"$exp"
	if [ -n "$prefix" ]; then
		while IFS= read -r l; do
			[ -z "$l" ] || [[ $l == "$prefix"* ]] || { ok=0; echo "  not $prefix...: $l"; }
		done <<<"$got"
	fi
	if [ $ok = 1 ]; then
		t_pass "$what"
	else
		t_fail "$what; got: $(tr '\n' ' ' <<<"$got" | head -c 300) $(head -c 200 "$TMP/comp.err")"
	fi
}

preloads=("")
bc=/usr/share/bash-completion/bash_completion
if [ -f "$bc" ]; then
	preloads+=("$bc")
else
	echo "SKIP: with bash-completion loaded (not installed: $bc)"
fi
for pre in "${preloads[@]}"; do
	w=${pre:+" (after bash-completion)"}
	got=$(complete_words "$pre" ezfs ex)
	want "subcommand prefix 'ex'$w" extract "$got" ex
	got=$(complete_words "$pre" ezfs m)
	want "subcommand prefix 'm'$w" "$(printf 'mkfs\nmount')" "$got" m
	got=$(complete_words "$pre" ezfs --ver)
	want "ezfs' own option prefix '--ver'$w" --version "$got" --ver
	got=$(complete_words "$pre" ezfs ls --rec)
	want "ls option prefix '--rec'$w" --recursive "$got" --rec
	got=$(complete_words "$pre" ezfs mkfs --fs-config)
	want "mkfs option prefix '--fs-config'$w" \
		"$(printf -- '--fs-config-file\n--fs-config-missing')" "$got" --fs-config
	got=$(complete_words "$pre" ezfs fsck --no)
	want "fsck option prefix '--no'$w" "$(printf -- '--no-data\n--no-preserve')" "$got" --no
	got=$(complete_words "$pre" ezfs ls "$img" "")
	want "ls IMG <tab>: the root's entries$w" "$dir/" "$got"
	got=$(complete_words "$pre" ezfs ls "$img" "/${dir:0:2}")
	want "ls IMG /${dir:0:2}<tab>$w" "/$dir/" "$got" "/${dir:0:2}"
	got=$(complete_words "$pre" ezfs stat -e "$img" "$dir/${sub:0:1}")
	want "stat -e IMG $dir/${sub:0:1}<tab>$w" "$dir/$sub" "$got" "$dir/${sub:0:1}"
	got=$(complete_words "$pre" ezfs cat "$img" /x /"$dir"/)
	want "cat IMG /x /$dir/<tab>$w" "/$dir/$sub" "$got" "/$dir/"
	got=$(complete_words "$pre" ezfs extract -j 2 "$img" "$TMP/out" "/$dir/")
	want "extract -j 2 IMG DIR /$dir/<tab>$w" "/$dir/$sub" "$got" "/$dir/"
	got=$(complete_words "$pre" ezfs ls "$img" /no-such-dir/)
	want "ls IMG /no-such-dir/<tab>: nothing$w" "" "$got" /no-such-dir/
	got=$(complete_words "$pre" ezfs accel s)
	want "accel s<tab>$w" "$(printf 'set\nstats')" "$got" s
	# option values
	got=$(complete_words "$pre" ezfs mkfs -z l)
	want "mkfs -z l<tab>$w" "$(printf 'lz4\nlz4hc\nlzma\nlibdeflate')" "$got" l
	got=$(complete_words "$pre" ezfs mkfs -z lz4hc,12:z)
	want "mkfs -z lz4hc,12:z<tab>$w" lz4hc,12:zstd "$got" lz4hc,12:z
	got=$(complete_words "$pre" ezfs mkfs -q -E ztailpacking,fr)
	want "mkfs -E ztailpacking,fr<tab>$w" \
		"$(printf 'ztailpacking,fragments\nztailpacking,fragdedupe=')" "$got" ztailpacking,fr
	got=$(complete_words "$pre" ezfs bench advise --goal r)
	want "bench --goal r<tab>$w" random "$got" r
	got=$(complete_words "$pre" ezfs bench advise --reader k)
	want "bench --reader k<tab>$w" kernel "$got" k
	got=$(complete_words "$pre" ezfs bench advise --storage cloud)
	want "bench --storage cloud<tab>$w" "$(printf 'cloud-hdd\ncloud-ssd')" "$got" cloud
	got=$(complete_words "$pre" ezfs bench advise --storage "$TMP/$fixture.i")
	want "bench --storage FILE<tab>: files too$w" "$img" "$got"
	got=$(complete_words "$pre" ezfs mount --kern)
	want "mount option prefix '--kern'$w" --kernel "$got" --kern
	got=$(complete_words "$pre" ezfs mount -o cache=64M,allow)
	want "mount -o cache=64M,allow<tab>$w" cache=64M,allow_other "$got" cache=64M,allow
	got=$(complete_words "$pre" ezfs cat --dispatch p)
	want "cat --dispatch p<tab>$w" percpu "$got" p
	got=$(complete_words "$pre" ezfs export -o "$TMP/$fixture.i")
	want "export -o FILE<tab>: a file name$w" "$img" "$got"
done

# Every value offered is in the --help of its command (so neither falls
# behind the other).
src_vals() { bash --norc --noprofile -c '. "$1"; eval "printf %s \"\$$2\""' bash "$comp" "$1"; }
in_help() {
	local var=$1 help v miss=
	shift
	help=$("$EZFS" "$@" --help 2>&1)
	[ -n "$(src_vals "$var")" ] || { echo "  no \$$var in $comp"; return 1; }
	for v in $(src_vals "$var"); do
		v=${v#^}
		v=${v%=}
		grep -qE -- "(^|[^a-z0-9_-])$v([^a-z0-9_-]|\$)" <<<"$help" || miss+=" $v"
	done
	[ -z "$miss" ] || { echo "  not in 'ezfs $* --help':$miss"; return 1; }
}
t_expect "mkfs -z values are in 'mkfs --help'" in_help _ezfs_z_algs mkfs
t_expect "mkfs -E values are in 'mkfs --help'" in_help _ezfs_e_opts mkfs
t_expect "mount -o values are in 'mount --help'" in_help _ezfs_mount_opts mount
t_expect "--goal values are in 'bench --help'" in_help _ezfs_goals bench
t_expect "--storage values are in 'bench --help'" in_help _ezfs_storages bench
t_expect "--reader values are in 'bench --help'" in_help _ezfs_readers bench
t_expect "--dispatch values are in 'cat --help'" in_help _ezfs_dispatches cat
t_done
