/* SPDX-License-Identifier: MIT */
/*
 * mkfs_s3.h - `ezfs mkfs --s3`: an image of an S3 bucket's objects, listed
 * with ListObjectsV2 and fetched through libezfs-remote (or filled with
 * zeros, --clean=0).
 */
#ifndef EZFS_MKFS_S3_H
#define EZFS_MKFS_S3_H

#include "ezfs/build.h"

enum {
	MKFS_OPT_S3 = 0x351,
};

/* clang-format off */
#define MKFS_S3_OPTS                                                       \
	{ "s3", required_argument, NULL, MKFS_OPT_S3 }
/* clang-format on */
#define MKFS_S3_HELP                                                           \
	"  --s3=ENDPOINT[,OPTS]  SOURCE is BUCKET[/PREFIX]: each object's "    \
	"key "                                                                 \
	"a path\n"                                                             \
	"                        of the image; OPTS: passwd_file=FILE "        \
	"(KEY:SECRET),\n"                                                      \
	"                        urlstyle=path|vhost, sig=4, region=R "        \
	"(SigV4)\n"

struct mkfs_s3 {
	int on;
	char *endpoint; /* with its scheme */
	char *passwd_file, *region;
	int vhost;
	char *tree; /* the objects as files, under the spool folder */
};

/* --s3=... into ms: 0, 2 after a usage error, -1 for another option. */
int mkfs_s3_opt(int c, const char *arg, struct mkfs_s3 *ms);
/* Once the options are read: what --s3 excludes; 0, or 2 after a usage
 * error. */
int mkfs_s3_check(const struct mkfs_s3 *ms, const struct ezfs_build_params *p,
		  int tar, int incremental);
/* The objects under BUCKET[/PREFIX] src fetched (zerofill: files of their
 * size, all zeros) into a folder in tmpdir, scanned into b: 0, 1 after
 * one line, or the scan's negative errno (said by the builder's log). */
int mkfs_s3_scan(struct mkfs_s3 *ms, ezfs_builder *b, const char *src,
		 const char *tmpdir, int zerofill, int quiet);
/* The folder removed, ms's strings freed. */
void mkfs_s3_free(struct mkfs_s3 *ms);

#endif
