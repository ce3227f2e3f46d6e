# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Bash completion for ezfs: subcommands, each command's options (read from
# `ezfs COMMAND --help` the first time they are asked for), the values of
# mkfs -z, -E, --incremental=, --clean=, --oci=, --s3= and --gzinfo=, mount -o, bench
# --goal, --storage, --reader and --dispatch, and, for ls, stat, cat,
# extract and export, paths inside the image (`ezfs ls -l IMAGE DIR` of
# the directory typed so far). Installed as
# share/bash-completion/completions/ezfs; works without bash-completion
# too (source this file).

# _ezfs_opt_tokens: the option names in a help text on stdin, one a line:
# "--tar=f" gives --tar, "--[no-]xattrs" gives --xattrs and --no-xattrs,
# "--ovlfs-strip[=0|1]" gives --ovlfs-strip.
_ezfs_opt_tokens()
{
	local t
	grep -oE "(^|[][[:space:](,|'\"])--?[A-Za-z[][][A-Za-z0-9_|[-]*" |
		sed -E 's/^[^-]+//; s/\[=[^]]*\]//g; s/=.*//' |
		while IFS= read -r t; do
			_ezfs_expand "$t"
		done | sort -u
}

# _ezfs_expand TOKEN: each spelling of TOKEN's first [A|B] group (A, B or
# nothing), recursively; a bare "-x|--y" gives both.
_ezfs_expand()
{
	local t=$1 head rest alt alts
	while [[ $t == *']' && $t != *'['* ]]; do t=${t%]}; done
	if [[ $t =~ ^([^[]*)\[([^]]*)\](.*)$ ]]; then
		head=${BASH_REMATCH[1]} alts=${BASH_REMATCH[2]} rest=${BASH_REMATCH[3]}
		_ezfs_expand "$head$rest"
		IFS='|' read -ra alt <<<"$alts"
		for alts in "${alt[@]}"; do
			_ezfs_expand "$head$alts$rest"
		done
		return
	fi
	IFS='|' read -ra alt <<<"$t"
	for t in "${alt[@]}"; do
		t=${t%%[!A-Za-z0-9_-]*}
		[[ $t == -[A-Za-z]* || $t == --[A-Za-z]* ]] && printf '%s\n' "$t"
	done
}

# _ezfs_options EZFS CMD: the options of `EZFS CMD` (CMD empty: of EZFS
# itself), cached for the shell's lifetime.
declare -gA _ezfs_opt_cache 2>/dev/null || declare -A _ezfs_opt_cache
_ezfs_options()
{
	local key="$1 $2"
	if [ -z "${_ezfs_opt_cache[$key]+set}" ]; then
		# shellcheck disable=SC2086  # CMD may be empty on purpose
		_ezfs_opt_cache[$key]=$("$1" $2 --help 2>&1 </dev/null | _ezfs_opt_tokens)
	fi
	printf '%s\n' "${_ezfs_opt_cache[$key]}"
}

# _ezfs_commands EZFS: the subcommands listed under "Commands:" in its help.
_ezfs_commands()
{
	"$1" --help 2>/dev/null </dev/null |
		sed -n '/^Commands:/,/^$/s/^  \([a-z][a-z0-9-]*\).*/\1/p'
}

# _ezfs_image_paths EZFS IMAGE CUR: COMPREPLY gets the entries of the
# image's directory named by CUR's part up to its last '/' that start with
# the rest; directories end in '/'. "/d" and "d" both mean the root's d.
_ezfs_image_paths()
{
	local ezfs=$1 img=$2 cur=${3//\\/} dir='' base line name
	[ -f "$img" ] || [ -b "$img" ] || return 0
	if [[ $cur == */* ]]; then
		dir=${cur%/*}/
	fi
	base=${cur##*/}
	while IFS= read -r line; do
		# mode links uid gid size date time UTC name[ -> target]
		[[ $line =~ ^([^[:space:]]+)([[:space:]]+[^[:space:]]+){6}[[:space:]]+UTC[[:space:]](.*)$ ]] ||
			continue
		name=${BASH_REMATCH[3]}
		[[ ${BASH_REMATCH[1]} == l* ]] && name=${name% -> *}
		[[ $name == "$base"* ]] || continue
		[[ ${BASH_REMATCH[1]} == d* ]] && name+=/
		COMPREPLY+=("$(printf '%q' "$dir$name")")
	done < <("$ezfs" ls -l "$img" "${dir:-/}" 2>/dev/null </dev/null)
	# a directory goes on to its entries: no space after it
	if [[ ${COMPREPLY[*]} == */* ]] && type compopt &>/dev/null; then
		compopt -o nospace 2>/dev/null
	fi
	return 0
}

# The values of options that take one of a few words (each in the
# command's --help; interop.completion checks that they still are).
_ezfs_z_algs="lz4 lz4hc lzma deflate libdeflate zstd none"
_ezfs_e_opts="noinline_data force-inode-compact force-inode-extended \
legacy-compress nosbcrc ztailpacking fragments all-fragments dedupe \
force-chunk-indexes 48bit dot-omitted fragdedupe= force-inode-blockmap \
xattr-name-filter ^xattr-name-filter plain-xattr-prefixes"
_ezfs_mount_opts="cache= threads= allow_other offset= device= uid= gid= \
accel= dispatch= prefetch= readahead= ro fill="
_ezfs_goals="size seq random balanced"
_ezfs_storages="cloud-hdd cloud-ssd nvme emmc registry-20ms"
_ezfs_readers="kernel remote"
_ezfs_dispatches="inline queue percpu"

# _ezfs_list CUR SEP WORDS: COMPREPLY gets CUR's part up to its last SEP
# followed by each of WORDS that starts with the rest (a list such as
# -E ztailpacking,fragments); no space after a word that ends in '=' or
# SEP, where more is to come.
_ezfs_list()
{
	local cur=$1 sep=$2 head='' w
	if [[ $cur == *"$sep"* ]]; then
		head=${cur%"$sep"*}$sep
		cur=${cur##*"$sep"}
	fi
	for w in $3; do
		[[ $w == "$cur"* ]] && COMPREPLY+=("$head$w")
	done
	if [[ ${COMPREPLY[*]} == *= || ${COMPREPLY[*]} == *"= "* ]] &&
		type compopt &>/dev/null; then
		compopt -o nospace 2>/dev/null
	fi
	return 0
}

# _ezfs_takes_value CMD WORD: WORD is an option of CMD whose value is the
# next word.
_ezfs_takes_value()
{
	case $2 in
	--jobs | --workers | --accel | --dispatch | --qd | --log | --goal | --load | \
		--algs | --levels | --engines | --clusters | --cluster | --bs | \
		--size | --runtime | --repeat | --io-share | --window | --csv | \
		--json | --plot | --path | --device | --offset | --skip | --length | \
		--storage | --storage-rate | --storage-latency | --slot | \
		--errors | --fs-config | --file-contexts | --mount-point | \
		--output | --format | --compress | --cache-dir | --cache-max | \
		--remote-timeout | --remote-retries | --max | --reader | --root-hash | \
		--root-hash-file | --root-hash-signature | --trusted-cert | \
		--hash-offset | --verity-hash-file | --verity-salt | --verity-uuid | \
		--root-xattr-isize | --fsalignblks | --zfeature-bits | --vmdk-desc)
		return 0
		;;
	esac
	case $1:$2 in
	mkfs:-[zCbTULxEdj] | fsck:-j | extract:-j | export:-o | mount:-o | accel:-[ensr] | lpinfo:-s)
		return 0
		;;
	esac
	return 1
}

_ezfs()
{
	local cur prev words cword
	if declare -F _get_comp_words_by_ref >/dev/null; then
		_get_comp_words_by_ref -n =: cur prev words cword
	else
		words=("${COMP_WORDS[@]}") cword=$COMP_CWORD
		cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
	fi
	COMPREPLY=()
	local ezfs=${words[0]/#\~/$HOME} cmd='' i n=0 args=()
	command -v "$ezfs" >/dev/null 2>&1 || ezfs=ezfs

	# The subcommand: the first word after ezfs' own options; then its
	# operands (not options, nor the value after an option that takes one).
	for ((i = 1; i < cword; i++)); do
		if [[ -z $cmd ]]; then
			[[ ${words[i]} == -* ]] || cmd=${words[i]}
		elif _ezfs_takes_value "$cmd" "${words[i]}"; then
			((i++))
		elif [[ ${words[i]} != -* ]]; then
			args+=("${words[i]}")
		fi
	done
	if [[ -z $cmd ]]; then
		if [[ $cur == -* ]]; then
			mapfile -t COMPREPLY < <(compgen -W "$(_ezfs_options "$ezfs" '')" -- "$cur")
		else
			mapfile -t COMPREPLY < <(compgen -W "$(_ezfs_commands "$ezfs")" -- "$cur")
		fi
		return 0
	fi
	if [[ $cmd == help ]]; then
		mapfile -t COMPREPLY < <(compgen -W "$(_ezfs_commands "$ezfs")" -- "$cur")
		return 0
	fi
	# mkfs --incremental=, --clean= (data, rvsp, 0) and --gzinfo= (a file)
	case $cmd:$cur in
	mkfs:--incremental=* | mkfs:--clean=*)
		mapfile -t COMPREPLY < <(compgen -P "${cur%%=*}=" -W "data rvsp 0" -- "${cur#*=}")
		return 0
		;;
	mkfs:--oci=*)
		mapfile -t COMPREPLY < <(compgen -P "--oci=" -W "f i f,layer= f,blob= i,layer= i,blob=" -- "${cur#*=}")
		return 0
		;;
	mkfs:--s3=*)
		mapfile -t COMPREPLY < <(compgen -P "--s3=" -W "http:// https://" -- "${cur#*=}")
		compopt -o nospace 2>/dev/null
		return 0
		;;
	mkfs:--gzinfo=*)
		mapfile -t COMPREPLY < <(compgen -P "--gzinfo=" -f -- "${cur#*=}")
		return 0
		;;
	esac
	if [[ $cur == -* ]]; then
		mapfile -t COMPREPLY < <(compgen -W "$(_ezfs_options "$ezfs" "$cmd")" -- "$cur")
		return 0
	fi
	# The value of an option: its words, or a file name where it names
	# one, else nothing.
	if _ezfs_takes_value "$cmd" "$prev"; then
		case $cmd:$prev in
		mkfs:-z)
			_ezfs_list "$cur" : "$_ezfs_z_algs"
			return 0
			;;
		mkfs:-E)
			_ezfs_list "$cur" , "$_ezfs_e_opts"
			return 0
			;;
		mount:-o)
			_ezfs_list "$cur" , "$_ezfs_mount_opts"
			return 0
			;;
		*:--goal)
			_ezfs_list "$cur" , "$_ezfs_goals"
			return 0
			;;
		*:--dispatch)
			_ezfs_list "$cur" , "$_ezfs_dispatches"
			return 0
			;;
		*:--reader)
			_ezfs_list "$cur" , "$_ezfs_readers"
			return 0
			;;
		*:--storage)
			# a profile, or a file or device to measure
			_ezfs_list "$cur" , "$_ezfs_storages"
			;;
		esac
		case $prev in
		--log | --csv | --json | --plot | --path | --device | --storage | \
			--errors | --fs-config | --file-contexts | --output | -o | \
			--cache-dir | --root-hash-file | --root-hash-signature | \
			--trusted-cert | --verity-hash-file)
			# mount -o takes mount options, not a file
			[[ $prev == -o && $cmd == mount ]] && return 0
			mapfile -t -O "${#COMPREPLY[@]}" COMPREPLY < <(compgen -f -- "$cur")
			type compopt &>/dev/null && compopt -o filenames 2>/dev/null
			;;
		--format)
			mapfile -t COMPREPLY < <(compgen -W "pax gnu cpio zip" -- "$cur")
			;;
		--compress)
			mapfile -t COMPREPLY < <(compgen -W "gzip xz zstd" -- "$cur")
			;;
		esac
		return 0
	fi
	n=${#args[@]}
	case $cmd in
	accel)
		if ((n == 0)); then
			mapfile -t COMPREPLY < <(compgen -W "list stats set bench" -- "$cur")
			return 0
		fi
		;;
	cache)
		if ((n == 0)); then
			mapfile -t COMPREPLY < <(compgen -W "ls gc" -- "$cur")
			return 0
		fi
		;;
	bench)
		if ((n == 0)); then
			mapfile -t COMPREPLY < <(compgen -W "read ratio latency all advise" -- "$cur")
			return 0
		fi
		;;
	ls | stat)
		if ((n == 1)); then
			_ezfs_image_paths "$ezfs" "${args[0]}" "$cur"
			return 0
		fi
		;;
	export)
		if ((n == 1)); then
			_ezfs_image_paths "$ezfs" "${args[0]}" "$cur"
			return 0
		fi
		;;
	cat | digest)
		if ((n >= 1)); then
			_ezfs_image_paths "$ezfs" "${args[0]}" "$cur"
			return 0
		fi
		;;
	extract)
		if ((n == 1)); then
			mapfile -t COMPREPLY < <(compgen -d -- "$cur")
			type compopt &>/dev/null && compopt -o filenames 2>/dev/null
			return 0
		elif ((n == 2)); then
			_ezfs_image_paths "$ezfs" "${args[0]}" "$cur"
			return 0
		fi
		;;
	esac
	# Images, directories, tar files: the file system's names.
	mapfile -t COMPREPLY < <(compgen -f -- "$cur")
	type compopt &>/dev/null && compopt -o filenames 2>/dev/null
	return 0
}
complete -F _ezfs ezfs
