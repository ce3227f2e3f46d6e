/* SPDX-License-Identifier: MIT */
/* extract.h - the command side of ezfs_extract, shared by ezfs extract and
 * fsck.erofs --extract. */
#ifndef EZFS_TOOL_EXTRACT_H
#define EZFS_TOOL_EXTRACT_H

#include <stdint.h>

/*
 * One extraction (ezfs extract, fsck.erofs --extract): IMG's tree, or
 * subpath, or the inode nid (by_nid), into dest. threads 0 = online CPUs;
 * no_owner: no chown even as root; no_xattrs: no xattrs at all. Returns
 * the exit status, 0 or 1, after printing any errors.
 */
struct x_opts {
	const char *img, *dest, *subpath;
	uint64_t nid;
	int by_nid;
	unsigned threads;
	int force, quiet, no_owner, no_xattrs, no_sparse;
	/* ezfs extract only (zero for fsck.erofs --extract) */
	int keep_going, android;
	const char *errors, *fs_config, *file_contexts, *mount_point;
	/* the messages' command (NULL: "extract") and the option that
	 * extracts into a non-empty directory (NULL: "--force") */
	const char *cmd, *force_opt;
};
int x_extract(const struct x_opts *o);

#endif
