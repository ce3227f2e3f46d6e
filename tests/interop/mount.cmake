# SPDX-License-Identifier: MIT
# ezfs mount (FUSE): every fixture through the mount, option errors, SIGTERM,
# daemon mode, a corrupt pcluster (mount.sh); 8 readers + a lister against a
# small cache budget with the daemon's RSS bounded (mount-stress.sh); random
# reads decode each extent about once (mount-random.sh); daemonized
# mounts with every dispatch mode, a stuck read, st_blocks against the
# kernel, log lines, command line errors (mount-daemon.sh). Need root and
# /dev/fuse; skip (77) otherwise.
if(EZFS_WITH_FUSE)
  foreach(_t mount mount-stress mount-random mount-daemon)
    ezfs_script_test(interop.${_t} interop/${_t}.sh
                     LABELS interop mount TIMEOUT 600)
  endforeach()
endif()
