/* SPDX-License-Identifier: MIT */
/* cmd.h - entry points of the ezfs subcommands (argv[0] is the command). */
#ifndef EZFS_TOOL_CMD_H
#define EZFS_TOOL_CMD_H

/* Each returns the process exit status: 0 ok, 1 error, 2 usage. */
int cmd_info(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_stat(int argc, char **argv);
int cmd_cat(int argc, char **argv);
int cmd_extract(int argc, char **argv);
int cmd_fsck(int argc, char **argv);
/* tools/ezfs/accel.c */
int cmd_accel(int argc, char **argv);
/* tools/ezfs/mkfs.c; main.c carries a weak stand-in. */
int cmd_mkfs(int argc, char **argv);
int cmd_mount(int argc, char **argv);
int cmd_umount(int argc, char **argv);
/* The erofs-utils front ends (main.c calls them when argv[0] is
 * fsck.erofs or dump.erofs): tools/ezfs/compat_fsck.c, compat_dump.c. */
int compat_fsck_main(int argc, char **argv);
int compat_dump_main(int argc, char **argv);
/* tools/ezfs/bench/ */
int cmd_bench(int argc, char **argv);

#endif
