/* SPDX-License-Identifier: MIT */
/* mkfs_inc.c - `ezfs mkfs --incremental`, `--clean` and `--gzinfo`. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "ezfs/ezfs.h"
#include "mkfs_extra.h"
#include "mkfs_inc.h"

#define CMD "mkfs"

int mkfs_inc_opt(int c, const char *arg, struct ezfs_build_params *p,
		 struct mkfs_inc *mi)
{
	const char *name = c == MKFS_OPT_CLEAN ? "clean" : "incremental";

	switch (c) {
	case MKFS_OPT_INCREMENTAL:
	case MKFS_OPT_CLEAN:
		/* 0: an S3 source's files filled with zeros; a directory's
		 * or a tar's data copied, as 1.9.3 does */
		mi->zerofill = arg && !strcmp(arg, "0");
		if (arg && strcmp(arg, "data") && strcmp(arg, "rvsp") &&
		    !mi->zerofill)
			return cli_usage_error(
				CMD, "--%s=%s: not data, rvsp or 0", name, arg);
		/* rvsp: a tar's file data left out (zeros); a directory's is
		 * copied, as 1.9.3 does */
		p->tar_rvsp = arg && !strcmp(arg, "rvsp");
		mi->incremental = c == MKFS_OPT_INCREMENTAL;
		return 0;
	case MKFS_OPT_GZINFO:
		if (arg && !*arg)
			return cli_usage_error(CMD, "--gzinfo= needs a file "
						    "name");
		p->gzinfo_file = arg;
		mi->gzinfo_bare = !arg;
		return 0;
	case MKFS_OPT_ASYNC_QUEUE_LIMIT: {
		uint64_t v;

		if (mkfs_number(arg, &v) || v > UINT_MAX)
			return cli_usage_error(CMD,
					       "--async-queue-limit=%s: not a "
					       "number of jobs",
					       arg);
		p->async_queue_limit = (unsigned)v;
		return 0;
	}
	default:
		return -1;
	}
}

/* The image's block size, or 0 after one line. */
static unsigned image_blksz(const char *image)
{
	struct ezfs_sb_info si;
	ezfs_image *img;
	int err = ezfs_image_open(image, NULL, &img);

	if (err) {
		cli_error(CMD, "%s: %s%s", image, ezfs_strerror(err),
			  err == -ENOENT ? " (--incremental appends to an "
					   "existing image)"
					 : "");
		return 0;
	}
	ezfs_get_sb_info(img, &si);
	ezfs_image_close(img);
	return si.blksz;
}

int mkfs_inc_check(struct ezfs_build_params *p, const struct mkfs_inc *mi,
		   const char *image, int tar, int rebuild, int b_given,
		   int quiet)
{
	unsigned bs;

	if ((p->gzinfo_file || mi->gzinfo_bare) && (!tar || p->tar_index))
		return cli_usage_error(CMD, "--gzinfo: only with --tar=f of a "
					    "gzip archive");
	if (mi->zerofill && rebuild)
		return cli_usage_error(CMD,
				       "--%s=0: not with layers (rebuild "
				       "mode), as mkfs.erofs 1.9.3",
				       mi->incremental ? "incremental"
						       : "clean");
	if (mi->gzinfo_bare && !quiet)
		cli_error(CMD, "warning: --gzinfo without =FILE writes no "
			       "zinfo (as mkfs.erofs 1.9.3)");
	if (!mi->incremental)
		return 0;
	if (p->tar_rvsp && p->tar_index)
		return cli_usage_error(CMD, "rvsp: not with --tar=i");
	if (rebuild || p->tar_index || p->image_offset)
		return cli_usage_error(CMD, "--incremental: not with %s",
				       rebuild	      ? "layers (rebuild mode)"
				       : p->tar_index ? "--tar=i"
						      : "--offset");
	bs = image_blksz(image);
	if (!bs)
		return 1;
	if (b_given && bs != p->blksz) {
		cli_error(CMD,
			  "%s: block size %u, not %u (-b): an incremental "
			  "build keeps the image's",
			  image, bs, p->blksz);
		return 1;
	}
	p->blksz = bs;
	p->incremental_base = image;
	return 0;
}
