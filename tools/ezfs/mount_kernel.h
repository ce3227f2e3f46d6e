/* SPDX-License-Identifier: MIT */
/* mount_kernel.h - ezfs mount --kernel (mount_kernel.c). */
#ifndef EZFS_TOOL_MOUNT_KERNEL_H
#define EZFS_TOOL_MOUNT_KERNEL_H

#include "ezfs/mount.h"

struct kmount_opts {
	ezfs_log_fn log;	/* the mount's log lines (arg NULL) */
	ezfs_log_fn remote_log; /* a remote source's (arg: its URL) */
	void (*choose_log)(int foreground); /* where lines go once mounted */
	int require;			    /* --require-verified */
	int unverified; /* --unverified: a layer nothing checks is served */
	int fill_none;	/* -o fill=none: fetch only what is read */
};

/* --kernel's own -o options (fill=all|none) taken from opts into o; the
 * others into *rest (malloc'ed; free it, also after an error): 0, or 2
 * after a line (a bad value), 1 out of memory. */
int mount_kernel_options(const char *opts, struct kmount_opts *o, char **rest);

/* p parsed by ezfs mount (image, mountpoint, dm-verity options, -f, -v):
 * the exit status. */
int mount_kernel(struct ezfs_mount_params *p, const struct kmount_opts *o);

#endif
