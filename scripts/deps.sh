#!/bin/bash
# SPDX-License-Identifier: MIT
# Install the Debian packages ezfs needs, only those that are missing.
#
# usage: scripts/deps.sh [GROUP...]      (default: core)
#   core   compilers, CMake/Ninja, codec and FUSE headers, and the tools the
#          tests use (zstd, xz-utils, python3, erofs-utils, squashfs-tools, attr,
#          gnuplot-nox for ezfs bench --plot, procps for pgrep, clang-format
#          for the layout check, img2simg/simg2img/simg2simg for the
#          Android sparse tests, libarchive-dev for ezfs export and
#          libarchive-tools (bsdtar) for its tests, dpkg-dev/debhelper/fakeroot/lintian for
#          the Debian packages, scdoc and man-db for the man pages,
#          bash-completion, libcurl4-openssl-dev for remote images and
#          nginx-light and docker-registry for their tests,
#          python3-jsonschema for the --json schemas, python3-botocore to
#          check the SigV4 signatures of s3:// requests, libssl-dev
#          (libcrypto: dm-verity, fs-verity, signed roots) and the
#          verity tests' oracles cryptsetup-bin (veritysetup) and fsverity,
#          libdpdk-dev (DPDK 22.11 compressdev: the dpdk engine plugin and
#          its tests on the compress_zlib / compress_isal software drivers))
#   fuzz   clang and its libFuzzer runtime (make fuzz)
#   bench  fio, squashfuse and the Linux source tarball (bench/)
#   all    every group
# Set EZFS_NO_APT=1 to only report what is missing.
set -euo pipefail

core=(build-essential cmake ninja-build pkg-config liblz4-dev libdeflate-dev zlib1g-dev
      libzstd-dev liblzma-dev libisal-dev libfuse3-dev fuse3 zstd xz-utils python3 erofs-utils
      squashfs-tools attr gnuplot-nox procps clang-format libselinux1-dev selinux-utils
      python3-selinux libcap2-bin android-sdk-libsparse-utils libarchive-dev libarchive-tools
      dpkg-dev debhelper fakeroot lintian scdoc man-db bash-completion libcurl4-openssl-dev
      nginx-light docker-registry python3-jsonschema python3-botocore libssl-dev
      cryptsetup-bin fsverity libdpdk-dev)
fuzz=(clang libclang-rt-14-dev)
bench=(fio linux-source-6.1 xz-utils squashfuse)

groups=("$@")
[ ${#groups[@]} -gt 0 ] || groups=(core)
want=()
for g in "${groups[@]}"; do
	case "$g" in
	core) want+=("${core[@]}") ;;
	fuzz) want+=("${fuzz[@]}") ;;
	bench) want+=("${bench[@]}") ;;
	all) want+=("${core[@]}" "${fuzz[@]}" "${bench[@]}") ;;
	*) echo "deps: unknown group '$g' (core, fuzz, bench, all)" >&2; exit 2 ;;
	esac
done

missing=()
for p in "${want[@]}"; do
	st=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
	[ "${st:0:2}" = ii ] || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
	echo "deps: all ${#want[@]} packages (${groups[*]}) are installed"
	exit 0
fi
echo "deps: missing: ${missing[*]}"
if [ -n "${EZFS_NO_APT:-}" ]; then
	echo "deps: EZFS_NO_APT is set, not installing" >&2
	exit 1
fi
if [ "$(id -u)" != 0 ]; then
	echo "deps: run as root to install them: apt-get install ${missing[*]}" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "deps: apt-get update"
if ! apt-get -q update >"$log" 2>&1; then
	cat "$log" >&2
	echo "deps: apt-get update failed" >&2
	exit 1
fi
echo "deps: apt-get install ${missing[*]}"
if ! apt-get -q -y install --no-install-recommends "${missing[@]}" >"$log" 2>&1; then
	tail -n 30 "$log" >&2
	echo "deps: apt-get install failed" >&2
	exit 1
fi
echo "deps: installed ${#missing[@]} packages"
