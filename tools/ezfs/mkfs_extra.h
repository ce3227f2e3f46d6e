/* SPDX-License-Identifier: MIT */
/*
 * mkfs_extra.h - `ezfs mkfs` options of mkfs.erofs 1.9.3 for the image's
 * shape: --root-xattr-isize, --fsalignblks, --zfeature-bits,
 * --xattr-inode-digest and --vmdk-desc (written after the build).
 */
#ifndef EZFS_MKFS_EXTRA_H
#define EZFS_MKFS_EXTRA_H

#include "ezfs/build.h"

enum {
	MKFS_OPT_ROOT_XATTR_ISIZE = 0x320,
	MKFS_OPT_FSALIGNBLKS,
	MKFS_OPT_ZFEATURE_BITS,
	MKFS_OPT_XATTR_INODE_DIGEST,
	MKFS_OPT_VMDK_DESC,
};

/* clang-format off */
#define MKFS_EXTRA_OPTS                                                    \
	{ "root-xattr-isize", required_argument, NULL, MKFS_OPT_ROOT_XATTR_ISIZE }, \
	{ "fsalignblks", required_argument, NULL, MKFS_OPT_FSALIGNBLKS },  \
	{ "zfeature-bits", required_argument, NULL, MKFS_OPT_ZFEATURE_BITS }, \
	{ "xattr-inode-digest", optional_argument, NULL, MKFS_OPT_XATTR_INODE_DIGEST }, \
	{ "vmdk-desc", required_argument, NULL, MKFS_OPT_VMDK_DESC }
/* clang-format on */
#define MKFS_EXTRA_HELP                                                        \
	"  --root-xattr-isize=N  at least N bytes (0 or 16..65532) of inline " \
	"xattr\n"                                                              \
	"                        room in the root inode\n"                     \
	"  --fsalignblks=N       the image's size a multiple of N blocks (N\n" \
	"                        rounded up to a power of two, up to 2^30)\n"  \
	"  --zfeature-bits=N     -E features by bit (0..255), each bit up "    \
	"to\n"                                                                 \
	"                        the highest set turning one on or off: 0\n"   \
	"                        legacy-compress, 1 ztailpacking, 2 "          \
	"fragments,\n"                                                         \
	"                        3 all-fragments, 4 dedupe, 5 fragdedupe, 6 "  \
	"48bit,\n"                                                             \
	"                        7 dot-omitted\n"                              \
	"  --xattr-inode-digest[=NAME]\n"                                      \
	"                        each regular file's SHA-256 in xattr NAME\n"  \
	"                        (default erofs.fingerprint.v1, hidden; "      \
	"not\n"                                                                \
	"                        with fragments, --zD, -m or layers)\n"        \
	"  --vmdk-desc=FILE      write a VMDK descriptor of the image (one "   \
	"flat\n"                                                               \
	"                        extent per 2 GiB) to FILE\n"

struct mkfs_extra {
	const char *vmdk; /* --vmdk-desc FILE; NULL: none */
};

/* s as a number (strtoull's bases: 0x.., 0..): 0, or -EINVAL for
 * anything else (a sign, a suffix, empty, out of range). */
int mkfs_number(const char *s, uint64_t *v);
/* One of these options into p and ex: 0, 2 after a usage error, -1 for an
 * option that is not one of them. */
int mkfs_extra_opt(int c, const char *arg, struct ezfs_build_params *p,
		   struct mkfs_extra *ex);
/* What --xattr-inode-digest must fit (the prefix table is stored plain:
 * no packed inode, metabox or layers): 0, or 2 after a usage error. */
int mkfs_extra_check(const struct ezfs_build_params *p, int rebuild);
/* Before the build: the descriptor's folder can take it; 0, or 1 after
 * one line naming it. */
int mkfs_extra_ready(const struct mkfs_extra *ex);
/* After the build: the VMDK descriptor of image (as named on the command
 * line, its filesystem from byte offset on; devs the extra devices' files
 * in device-table order, n of them, or NULL: their tags) written; 0, or 1
 * after one line. */
int mkfs_extra_report(const struct mkfs_extra *ex, const char *image,
		      uint64_t offset, const char *const *devs, unsigned n);

#endif
