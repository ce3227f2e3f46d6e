/* SPDX-License-Identifier: MIT */
/* tar.c - tar archives as the builder's source (in progress). */
#include <errno.h>

#include "build/internal.h"

int bld_scan_tar(struct ezfs_builder *b, const char *path, const char *tmpdir)
{
	(void)path;
	(void)tmpdir;
	bld_log(b, EZFS_LOG_ERROR, "tar sources: not supported yet");
	return -ENOTSUP;
}
