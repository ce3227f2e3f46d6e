# SPDX-License-Identifier: MIT
# Packaging: the man pages (man/*.1.scd) against each command's --help, the
# bash completion (completion/ezfs.bash) and the Debian packages (debian/).
# Each skips (77) without the tools it needs (scdoc and man; the fixtures;
# dpkg-buildpackage and the build dependencies).
# The man pages and the completion against --help: checked by the plain
# build's run (PLAIN_ONLY).
ezfs_script_test(interop.manpages interop/manpages.sh LABELS "interop;packaging"
                 TIMEOUT 300 PLAIN_ONLY)
ezfs_script_test(interop.completion interop/completion.sh LABELS "interop;packaging"
                 TIMEOUT 300 PLAIN_ONLY)
# The Debian packages (tests/interop/debian-pkg.sh): a whole dpkg-buildpackage
# of the committed tree, lintian, and the unpacked packages run; about
# 1-3 minutes on 2 cores, so labelled slow (ctest -LE slow leaves it out).
# Once per make check: not again in the sanitizer builds, whose own binary
# it does not use.
if(NOT EZFS_SANITIZE AND NOT EZFS_TSAN)
  ezfs_script_test(interop.debian-pkg interop/debian-pkg.sh
                   LABELS "interop;packaging;slow" TIMEOUT 900)
endif()
