# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2034  # RC, OUT, ERR... are for the tests
# Shell helpers for the interop tests: source it, then call t_init.
#
# Environment (ctest sets the first three; by hand they default sensibly):
#   EZFS_BIN     the ezfs binary (or EZFS)  (default: $SRC/build/tools/ezfs/ezfs)
#   EZFS_SRC     the source tree (or SRC)   (default: the folder above tests/)
#   EZFS_SHARED  the shared material        (default: $EZFS_SRC/../shared)
#   EZFS_KEEP=1  keep the temporary folder of a run (its path is printed)
#   EZFS_TEST_NO_KMOUNT=1  act as if the kernel could not mount erofs images
#   EZFS_TEST_TIMEOUT      seconds allowed to one ezfs command (default 120)
#   EZFS_SANITIZED=asan|tsan  set by ctest in the sanitizer builds: what only
#                the image's bytes decide (the kernel's view of an image
#                ezfs wrote, another tool reading it) is checked by the plain
#                build's run, which writes the same bytes; loops over many
#                alike cases run fewer of them (t_sanitized)
#
# A test exits 0 when it passed, 1 when it failed and 77 when it could not
# run here (ctest shows that as "Skipped"); it prints "SKIP: reason" first.

T_SKIP=77

t_init() {
	# EZFS and SRC (as the mkfs/mount/bench ctest entries set them) win
	SRC=${SRC:-${EZFS_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}}
	EZFS=${EZFS:-${EZFS_BIN:-$SRC/build/tools/ezfs/ezfs}}
	export EZFS_BIN=$EZFS EZFS_SRC=$SRC
	SHARED=${EZFS_SHARED:-$SRC/../shared}
	[ -d "$SHARED" ] && SHARED=$(cd "$SHARED" && pwd)
	T_FAILS=0
	T_PASSES=0
	T_MOUNTS=()
	T_PIDS=()
	MP=
	TMP=$(mktemp -d "${TMPDIR:-/tmp}/ezfs-test.XXXXXX")
	trap t_cleanup EXIT
	trap 'exit 130' INT TERM
	[ -x "$EZFS" ] || { echo "FAIL: no ezfs binary at $EZFS (build first)"; exit 1; }
}

t_cleanup() {
	local m
	for m in "${T_MOUNTS[@]}"; do
		mountpoint -q "$m" 2>/dev/null &&
			{ umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; }
	done
	for m in "${T_PIDS[@]}"; do
		kill "$m" 2>/dev/null || :
	done
	if [ -n "${EZFS_KEEP:-}" ]; then
		echo "kept: $TMP"
	else
		rm -rf "$TMP"
	fi
}

t_skip() { echo "SKIP: $*"; exit $T_SKIP; }
t_pass() { T_PASSES=$((T_PASSES + 1)); echo "ok: $*"; }
t_fail() { T_FAILS=$((T_FAILS + 1)); echo "FAIL: $*"; }
# t_expect WHAT CMD...: pass if CMD succeeds, fail otherwise.
t_expect() {
	local what=$1
	shift
	if "$@"; then t_pass "$what"; else t_fail "$what"; fi
}

# Print the closing line; exit 0 if nothing failed, 1 otherwise.
t_done() {
	echo "$T_PASSES passed, $T_FAILS failed"
	[ "$T_FAILS" -eq 0 ] || exit 1
	exit 0
}

t_is_root() { [ "$(id -u)" = 0 ]; }
t_need_cmd() {
	local c
	for c; do
		command -v "$c" >/dev/null || t_skip "'$c' is not installed (scripts/deps.sh installs it)"
	done
}
t_need_shared() {
	[ -d "$SHARED/tools" ] || t_skip "shared material not found at $SHARED (set EZFS_SHARED)"
}

# t_need_fixtures: skip unless $SHARED/fixtures, zstd and python3 are there.
t_need_fixtures() {
	t_need_shared
	[ -d "$SHARED/fixtures" ] || t_skip "no fixtures at $SHARED/fixtures"
	t_need_cmd zstd python3
}

# t_fixture_names [NAME...]: the fixtures to test into the array names: the
# arguments, else every $SHARED/fixtures/*.img.zst; skips when there are none.
t_fixture_names() {
	local z

	names=("$@")
	T_NAMES_GIVEN=${#names[@]}
	if [ ${#names[@]} -eq 0 ]; then
		for z in "$SHARED"/fixtures/*.img.zst; do
			if [ -e "$z" ]; then
				names+=("$(basename "$z" .img.zst)")
			fi
		done
	fi
	[ ${#names[@]} -gt 0 ] || t_skip "no *.img.zst in $SHARED/fixtures"
}

# t_sanitized_names N: in a sanitizer build, keep every Nth of names (the
# first, the N+1th...): a loop over every fixture runs the same code on
# fewer images there. Names given on the command line stay.
t_sanitized_names() {
	local i keep=()

	t_sanitized && [ "$T_NAMES_GIVEN" = 0 ] || return 0
	for i in "${!names[@]}"; do
		[ $((i % $1)) = 0 ] && keep+=("${names[$i]}")
	done
	echo "note: a $EZFS_SANITIZED build: ${#keep[@]} of ${#names[@]} fixtures"
	names=("${keep[@]}")
}

# t_fixture_unpack NAME: unpack the fixture to img=$TMP/NAME.img and set want
# to its manifest; a missing fixture fails and returns 1, a bad one exits.
t_fixture_unpack() {
	local z=$SHARED/fixtures/$1.img.zst

	want=$SHARED/fixtures/$1.manifest.jsonl
	img=$TMP/$1.img
	if [ ! -f "$z" ]; then
		t_fail "$1: no such fixture ($z)"
		return 1
	fi
	zstd -q -d -f "$z" -o "$img" || exit
}

# manifest DIR [--no-times] [--no-owner]: the tree as JSON lines.
t_manifest() { python3 "$SHARED/tools/manifest.py" "$@"; }

# t_same_manifest WHAT EXPECTED_FILE ACTUAL_FILE: compare, show a short diff.
t_same_manifest() {
	if cmp -s "$2" "$3"; then
		t_pass "$1"
	else
		t_fail "$1: manifests differ in $(diff "$2" "$3" | grep -c '^[<>]') lines (- expected, + actual):"
		diff -U0 "$2" "$3" | grep -E '^[-+][^-+]' | head -n 10 | cut -c1-400
	fi
}

# Mount IMG read-only at DIR with the kernel's erofs driver; unmounted on exit.
t_kmount() {
	mkdir -p "$2"
	mount -t erofs -o loop,ro "$1" "$2" 2>/dev/null || return 1
	T_MOUNTS+=("$2")
}
t_kumount() { umount "$1"; }

# t_fill_bytes FILE POS LEN BYTE: LEN bytes of value BYTE (0..255) written
# over FILE at POS (a damaged extent, a flipped block).
t_fill_bytes() {
	python3 -c '
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(int(sys.argv[2]))
    f.write(bytes([int(sys.argv[4], 0)]) * int(sys.argv[3]))' "$@"
}

# t_sanitized: true in a sanitizer build (EZFS_SANITIZED).
t_sanitized() { [ -n "${EZFS_SANITIZED:-}" ]; }

# Can this machine mount an erofs image through a loop device? (Not asked
# in a sanitizer build: see EZFS_SANITIZED.)
t_can_kmount() {
	[ -z "${EZFS_TEST_NO_KMOUNT:-}" ] || return 1
	if t_sanitized; then
		echo "note: kernel mounts are checked in the plain build's run (a $EZFS_SANITIZED build writes the same image bytes)"
		return 1
	fi
	t_is_root || return 1
	grep -qw erofs /proc/filesystems 2>/dev/null || modprobe erofs 2>/dev/null || return 1
	mkdir -p "$TMP/probe.d"
	echo probe > "$TMP/probe.d/f"
	mkfs.erofs --quiet "$TMP/probe.img" "$TMP/probe.d" >/dev/null 2>&1 || return 1
	t_kmount "$TMP/probe.img" "$TMP/probe.mnt" || return 1
	t_kumount "$TMP/probe.mnt"
}

# t_need_fuse: root, a usable /dev/fuse and an ezfs built with FUSE, else
# skip; an ezfs without the mount command at all is a failure.
t_need_fuse() {
	t_is_root || t_skip "not root (mounting FUSE and dropping caches need it)"
	[ -c /dev/fuse ] && (exec 3<>/dev/fuse) 2>/dev/null ||
		t_skip "/dev/fuse is not usable here"
	local help
	help=$("$EZFS" mount --help 2>&1)
	case $help in
	*"without FUSE"*) t_skip "ezfs was built without FUSE support" ;;
	*usage:*) ;;
	*) echo "FAIL: 'ezfs mount' is not there: $help"; exit 1 ;;
	esac
}

# t_fuse_start IMG LOG [MOUNT ARGS...]: `ezfs mount -f` of IMG on $MP
# (default $TMP/mnt; made, and unmounted at exit) in the background, its
# stderr in LOG; sets PID (killed at exit). Fails, with a line, unless it is
# mounted within 10 s.
t_fuse_start() {
	local img=$1 log=$2 i
	shift 2
	MP=${MP:-$TMP/mnt}
	mkdir -p "$MP"
	T_MOUNTS+=("$MP")
	"$EZFS" mount -f "$@" "$img" "$MP" 2>"$log" &
	PID=$!
	T_PIDS+=("$PID")
	for i in $(seq 100); do
		mountpoint -q "$MP" && return 0
		kill -0 "$PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "  mount failed: $(head -c 300 "$log")"
	return 1
}

# t_fuse_stop: ezfs umount $MP; true if it is gone and the daemon exited 0.
t_fuse_stop() {
	local rc=0
	"$EZFS" umount "$MP" || rc=1
	wait "$PID" || rc=1
	mountpoint -q "$MP" && rc=1
	return $rc
}

# t_extent_at IMG PATH OFF: "la pa plen" of the extent of file PATH in IMG
# that holds byte OFF (from `ezfs stat -e`: "la..end  pa  plen  alg
# flags"); nothing when none does.
t_extent_at() {
	"$EZFS" stat -e "$1" "$2" | awk -v o="$3" '$1 ~ /^[0-9]+\.\.[0-9]+$/ {
		split($1, r, "\\.\\."); if (r[1] <= o && o < r[2]) { print r[1], $2, $3; exit } }'
}

# t_need_make_tree: what the tests building make_tree.py trees need: the
# shared material, python3, root (devices, owners, trusted.* xattrs); sets
# MKTREE, and KMOUNT=1 when the kernel can mount erofs here (else prints
# the skip line of the kernel checks and sets KMOUNT=0).
t_need_make_tree() {
	t_need_shared
	t_need_cmd python3
	t_is_root || t_skip "needs root (make_tree.py makes devices, owners, trusted.* xattrs)"
	MKTREE=$SHARED/tools/make_tree.py
	[ -f "$MKTREE" ] || t_skip "no $MKTREE"
	KMOUNT=0
	if t_can_kmount; then
		KMOUNT=1
	else
		echo "SKIP: kernel mount checks (no root, loop device or erofs module)"
	fi
}

# t_check_image NAME IMG WANT [MANIFEST_OPTS...]: ezfs fsck passes, and
# the manifest (with MANIFEST_OPTS) of ezfs extract and, when KMOUNT=1, of
# the kernel mount equals the JSON lines in WANT.
t_check_image() {
	local name=$1 img=$2 want=$3
	shift 3
	t_run fsck "$EZFS" fsck "$img"
	if [ "$RC" = 0 ]; then
		t_pass "$name: ezfs fsck"
	else
		t_fail "$name: ezfs fsck rc=$RC: $(head -c 300 "$ERR")"
	fi
	rm -rf "$TMP/x"
	t_run extract "$EZFS" extract "$img" "$TMP/x"
	if [ "$RC" = 0 ]; then
		t_manifest "$TMP/x" "$@" >"$TMP/x.json"
		t_same_manifest "$name: ezfs extract" "$want" "$TMP/x.json"
	else
		t_fail "$name: ezfs extract rc=$RC: $(head -c 300 "$ERR")"
	fi
	rm -rf "$TMP/x"
	[ "${KMOUNT:-0}" = 1 ] || return 0
	if t_kmount "$img" "$TMP/mnt"; then
		t_manifest "$TMP/mnt" "$@" >"$TMP/k.json"
		t_kumount "$TMP/mnt"
		t_same_manifest "$name: kernel mount" "$want" "$TMP/k.json"
	else
		t_fail "$name: kernel refused to mount"
	fi
}

# run_cmd NAME CMD...: run, keep stdout/stderr in $TMP/NAME.{out,err}, set RC.
t_run() {
	local name=$1
	shift
	RC=0
	"$@" >"$TMP/$name.out" 2>"$TMP/$name.err" || RC=$?
	OUT=$TMP/$name.out
	ERR=$TMP/$name.err
}

# t_check WHAT WANT_RC [stdout|stderr PATTERN]...: judge the last t_run: its
# exit code, and each stream matching its extended regex (any case).
t_check() {
	local what=$1 want=$2 ok=1 f
	shift 2
	if [ "$RC" -ne "$want" ]; then
		ok=0
		echo "  exit code $RC, expected $want"
	fi
	while [ $# -ge 2 ]; do
		f=$OUT
		[ "$1" = stderr ] && f=$ERR
		if ! grep -qiE -- "$2" "$f"; then
			ok=0
			echo "  $1 does not match /$2/"
		fi
		shift 2
	done
	if [ $ok = 1 ]; then
		t_pass "$what"
	else
		t_fail "$what"
		echo "  stdout: $(head -c 300 "$OUT")"
		echo "  stderr: $(head -c 300 "$ERR")"
	fi
}
# t_one_line WHAT FILE: the file holds exactly one line.
t_one_line() {
	local n
	n=$(wc -l <"$2")
	t_expect "$1 ($n lines)" [ "$n" -eq 1 ]
}

# t_free_port: a TCP port of 127.0.0.1 free now.
t_free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
# t_wait_port PORT: true once 127.0.0.1:PORT takes connections (10 s).
t_wait_port() {
	local i
	for i in $(seq 100); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
# t_nginx WWW [SERVER_LINES]: nginx (NGINX, default the one in PATH) on a
# free port of 127.0.0.1 with its own config under $TMP/nginx, WWW as its
# root, SERVER_LINES added to its server block; sets PORT and NGINX_PID
# (the caller stops it). Returns 1, with nginx's stderr, if it does not
# come up.
t_nginx() {
	local www=$1 extra=${2:-}
	mkdir -p "$TMP/nginx"
	# nginx's workers may run as another user: they need to get in
	chmod 711 "$TMP"
	chmod 755 "$www"
	PORT=$(t_free_port)
	cat >"$TMP/nginx/nginx.conf" <<CONF
daemon off;
worker_processes 1;
pid $TMP/nginx/nginx.pid;
error_log $TMP/nginx/error.log;
events { worker_connections 256; }
http {
	access_log $TMP/nginx/access.log;
	client_body_temp_path $TMP/nginx/body;
	proxy_temp_path $TMP/nginx/proxy;
	fastcgi_temp_path $TMP/nginx/fastcgi;
	uwsgi_temp_path $TMP/nginx/uwsgi;
	scgi_temp_path $TMP/nginx/scgi;
	server {
		listen 127.0.0.1:$PORT;
		root $www;
		$extra
	}
}
CONF
	"${NGINX:-nginx}" -c "$TMP/nginx/nginx.conf" -p "$TMP/nginx" \
		-e "$TMP/nginx/error.log" >"$TMP/nginx/stderr" 2>&1 &
	NGINX_PID=$!
	t_wait_port "$PORT" || { cat "$TMP/nginx/stderr"; return 1; }
}

# t_registry [CONFIG_LINES]: Debian's docker-registry (REG, default the one
# in PATH) on a free port of 127.0.0.1, its storage under
# $TMP/registry/store (deletes allowed), CONFIG_LINES (YAML, e.g. an auth
# section) added to its config; sets RPORT and REG_PID (the caller stops
# it). Returns 1, with the start of its log, if it does not come up.
t_registry() {
	RPORT=$(t_free_port)
	mkdir -p "$TMP/registry"
	cat >"$TMP/registry/config.yml" <<CONF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $TMP/registry/store
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$RPORT
${1:-}
CONF
	"${REG:-docker-registry}" serve "$TMP/registry/config.yml" >"$TMP/registry/log" 2>&1 &
	REG_PID=$!
	t_wait_port "$RPORT" || { head -c 300 "$TMP/registry/log"; return 1; }
}

# t_need_registry: skip without libcurl in ezfs or Debian's docker-registry;
# sets REG, tmo (EZFS_TEST_TIMEOUT, default 120) and PIDS, whose processes
# (servers started by the test) stop_all ends, as the test exits too.
t_need_registry() {
	if "$EZFS" cache --cache-dir "$TMP/probe" ls 2>&1 | grep -q "without libcurl"; then
		t_skip "ezfs was built without libcurl (remote images)"
	fi
	REG=$(command -v docker-registry || true)
	[ -n "$REG" ] || t_skip "docker-registry is not installed (scripts/deps.sh installs it)"
	tmo=${EZFS_TEST_TIMEOUT:-120}
	PIDS=()
	trap 'stop_all; t_cleanup' EXIT
}
stop_all() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	PIDS=()
}

# t_kmount_ok: KMOUNT=1 when the kernel can mount erofs here, else 0 and
# the skip line of the kernel checks.
t_kmount_ok() {
	KMOUNT=0
	t_can_kmount && KMOUNT=1
	[ "$KMOUNT" = 1 ] || echo "SKIP: kernel mounts (not root or no erofs): only ezfs fsck and extract"
}
# t_need_botocore: PY, a python3 (EZFS_TEST_PY first) that imports
# botocore (tests/interop/s3_server.py checks signatures with it), else
# skip.
t_need_botocore() {
	local p
	PY=
	for p in ${EZFS_TEST_PY:-} python3 /usr/bin/python3; do
		if "$p" -c 'import botocore.auth' 2>/dev/null; then
			PY=$p
			return 0
		fi
	done
	t_skip "no python3 with botocore (scripts/deps.sh installs python3-botocore)"
}
# t_portfile FILE: the port a server wrote to FILE once it listens (it
# waits up to 10 s for it), or 0.
t_portfile() {
	local i
	for i in $(seq 100); do
		[ -s "$1" ] && break
		sleep 0.1
	done
	cat "$1" 2>/dev/null || echo 0
}
# t_peer_mkfs: PEER=$MKFS_EROFS2 (mkfs.erofs 1.9.3 built beside ezfs) when
# it is set and runs, else empty and the skip line of the comparisons.
t_peer_mkfs() {
	PEER=
	if [ -n "${MKFS_EROFS2:-}" ] && [ -x "$MKFS_EROFS2" ]; then
		PEER=$MKFS_EROFS2
	else
		echo "SKIP: comparison with mkfs.erofs 1.9.3 (set MKFS_EROFS2 to its mkfs.erofs)"
	fi
}
