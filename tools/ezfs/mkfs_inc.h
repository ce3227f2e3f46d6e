/* SPDX-License-Identifier: MIT */
/* mkfs_inc.h - `ezfs mkfs --incremental`, `--clean` and `--gzinfo`: an
 * image appended to, a full build, the SOCI zinfo of a gzip tar. */
#ifndef EZFS_MKFS_INC_H
#define EZFS_MKFS_INC_H

#include "ezfs/build.h"

enum {
	MKFS_OPT_INCREMENTAL = 0x340,
	MKFS_OPT_CLEAN,
	MKFS_OPT_GZINFO,
	MKFS_OPT_ASYNC_QUEUE_LIMIT,
};

/* clang-format off */
#define MKFS_INC_OPTS                                                      \
	{ "incremental", optional_argument, NULL, MKFS_OPT_INCREMENTAL },  \
	{ "clean", optional_argument, NULL, MKFS_OPT_CLEAN },              \
	{ "gzinfo", optional_argument, NULL, MKFS_OPT_GZINFO },            \
	{ "async-queue-limit", required_argument, NULL, MKFS_OPT_ASYNC_QUEUE_LIMIT }
/* clang-format on */
#define MKFS_INC_HELP                                                          \
	"  --incremental[=data]  add SOURCE to the EROFS image IMAGE: the "    \
	"new\n"                                                                \
	"                        image holds IMAGE's tree under SOURCE's "     \
	"(its\n"                                                               \
	"                        block size and UUID; IMAGE replaced only "    \
	"once\n"                                                               \
	"                        complete)\n"                                  \
	"  --incremental=rvsp, --clean=rvsp\n"                                 \
	"                        the same, a tar's file data left out (the "   \
	"files\n"                                                              \
	"                        read as zeros)\n"                             \
	"  --clean[=data|0]      a new image (the default; 0: the files of "   \
	"an S3\n"                                                              \
	"                        bucket zeros, others' data copied)\n"         \
	"  --gzinfo=FILE         with --tar of a gzip archive: write its "     \
	"SOCI\n"                                                               \
	"                        zinfo (gzip checkpoints) to FILE\n"           \
	"  --async-queue-limit=N at most N compression jobs queued for the "   \
	"workers\n"                                                            \
	"                        ahead of the writer (0: the default)\n"

struct mkfs_inc {
	int incremental; /* --incremental[=data|rvsp] */
	int gzinfo_bare; /* --gzinfo without =FILE */
	int zerofill;	 /* --clean=0, --incremental=0 */
};

/* One of these options into p and mi: 0, 2 after a usage error, -1 for an
 * option that is not one of them. */
int mkfs_inc_opt(int c, const char *arg, struct ezfs_build_params *p,
		 struct mkfs_inc *mi);
/* After the options, IMAGE known: --incremental reads IMAGE's block size
 * (into p->blksz unless b_given, which must then match) and names it the
 * base; --gzinfo needs --tar; =0 is no rebuild's. 0, 1 (IMAGE unusable:
 * one line) or 2 (a usage error). */
int mkfs_inc_check(struct ezfs_build_params *p, const struct mkfs_inc *mi,
		   const char *image, int tar, int rebuild, int b_given,
		   int quiet);

#endif
