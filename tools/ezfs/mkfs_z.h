/* SPDX-License-Identifier: MIT */
/* mkfs_z.h - `ezfs mkfs -z A[,level=N][:B...]` and --compress-hints FILE. */
#ifndef EZFS_MKFS_Z_H
#define EZFS_MKFS_Z_H

#include "ezfs/build.h"

struct mkfs_z {
	struct ezfs_build_zalg more[EZFS_BUILD_MAX_ZALGS];
	struct ezfs_build_hint *hints;
	size_t nhints;
};

/* Parse a -z list into p (alg/hc/level, more_algs) and z; "none" means no
 * compression. On error prints one line and returns 2. */
int mkfs_z_parse(const char *cmd, const char *arg, struct ezfs_build_params *p,
		 struct mkfs_z *z);

/* Read the hints file (after all options: needs the block size and the
 * -z list) into p->hints. On error prints "FILE:LINE: reason" and
 * returns 2. */
int mkfs_z_hints(const char *cmd, const char *path, struct ezfs_build_params *p,
		 struct mkfs_z *z);

void mkfs_z_free(struct mkfs_z *z);

#endif
