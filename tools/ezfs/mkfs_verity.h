/* SPDX-License-Identifier: MIT */
/* mkfs_verity.h - `ezfs mkfs --verity`: its options and what it prints. */
#ifndef EZFS_MKFS_VERITY_H
#define EZFS_MKFS_VERITY_H

#include "ezfs/build.h"

enum {
	MKFS_OPT_VERITY = 0x300,
	MKFS_OPT_VERITY_SALT,
	MKFS_OPT_VERITY_UUID,
	MKFS_OPT_ROOT_HASH_FILE,
	MKFS_OPT_VERITY_HASH_FILE,
};

/* clang-format off */
#define MKFS_VERITY_OPTS                                                   \
	{ "verity", no_argument, NULL, MKFS_OPT_VERITY },                  \
	{ "verity-salt", required_argument, NULL, MKFS_OPT_VERITY_SALT },  \
	{ "verity-uuid", required_argument, NULL, MKFS_OPT_VERITY_UUID },  \
	{ "root-hash-file", required_argument, NULL, MKFS_OPT_ROOT_HASH_FILE }, \
	{ "verity-hash-file", required_argument, NULL, MKFS_OPT_VERITY_HASH_FILE }
/* clang-format on */
#define MKFS_VERITY_HELP                                                       \
	"dm-verity (docs/verity.md):\n"                                        \
	"  --verity              append a dm-verity hash tree (veritysetup's " \
	"format,\n"                                                            \
	"                        sha256, 4096-byte blocks) after the image,\n" \
	"                        padded to 4096 bytes; prints roothash=HEX "   \
	"and\n"                                                                \
	"                        hash-offset=N (also with -q)\n"               \
	"  --verity-salt=HEX|-   the salt (-: none; default 32 random "        \
	"bytes)\n"                                                             \
	"  --verity-uuid=UUID    the tree's UUID (default random)\n"           \
	"  --root-hash-file=F    write the root hash to F, as veritysetup "    \
	"does\n"                                                               \
	"  --verity-hash-file=F  the tree goes to F instead, its superblock "  \
	"at 0\n"                                                               \
	"                        (each of them implies --verity)\n"

struct mkfs_verity {
	const char *root_hash_file; /* NULL: none */
};

/* A dm-verity option into p and mv: 0, 2 after a usage error, -1 for an
 * option that is not one of them (--verity-uuid: mkfs.c parses UUIDs). */
int mkfs_verity_opt(int c, const char *arg, struct ezfs_build_params *p,
		    struct mkfs_verity *mv);
/* What else the options must fit (a tar index, a blob device, layers:
 * the data would be outside the tree): 0, or 2 after a usage error. */
int mkfs_verity_check(const struct ezfs_build_params *p, int rebuild);
/* After the build: "roothash=HEX" and "hash-offset=N" on stdout, the
 * root hash file written; 0, or 1 after one line. */
int mkfs_verity_report(ezfs_builder *b, const struct mkfs_verity *mv);

#endif
