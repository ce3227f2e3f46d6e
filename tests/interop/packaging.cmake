# SPDX-License-Identifier: MIT
# Packaging: the man pages (man/*.1.scd) against each command's --help and
# the bash completion (completion/ezfs.bash). Each skips (77) without the
# tools it needs (scdoc, man; the fixtures).
ezfs_script_test(interop.manpages interop/manpages.sh LABELS "interop;packaging" TIMEOUT 120)
ezfs_script_test(interop.completion interop/completion.sh LABELS "interop;packaging" TIMEOUT 120)
