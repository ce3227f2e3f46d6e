/* SPDX-License-Identifier: MIT */
/* mkfs_verity.c - `ezfs mkfs --verity`: its options and what it prints. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "mkfs_verity.h"

#define CMD "mkfs"

int mkfs_verity_opt(int c, const char *arg, struct ezfs_build_params *p,
		    struct mkfs_verity *mv)
{
	size_t n;

	switch (c) {
	case MKFS_OPT_VERITY:
		break;
	case MKFS_OPT_VERITY_SALT:
		p->verity_has_salt = 1;
		p->verity_salt_size = 0;
		if (!strcmp(arg, "-"))
			break;
		if (cli_parse_hex(arg, p->verity_salt, sizeof(p->verity_salt),
				  &n))
			return cli_usage_error(CMD,
					       "--verity-salt=%s: hex digits "
					       "(at most 256 bytes), or - for "
					       "none",
					       arg);
		p->verity_salt_size = (unsigned)n;
		break;
	case MKFS_OPT_ROOT_HASH_FILE:
		mv->root_hash_file = arg;
		break;
	case MKFS_OPT_VERITY_HASH_FILE:
		if (!*arg)
			return cli_usage_error(CMD, "--verity-hash-file needs "
						    "a file name");
		p->verity_hash_file = arg;
		break;
	default:
		return -1;
	}
	p->verity = 1;
	return 0;
}

int mkfs_verity_check(const struct ezfs_build_params *p, int rebuild)
{
	if (!p->verity)
		return 0;
	if (p->tar_index || p->blobdev || rebuild)
		return cli_usage_error(CMD,
				       "--verity: the file data of %s would "
				       "be outside the tree",
				       p->tar_index ? "a tar index (--tar=i)"
				       : p->blobdev ? "--blobdev"
						    : "a rebuild (layers)");
	return 0;
}

int mkfs_verity_report(ezfs_builder *b, const struct mkfs_verity *mv)
{
	struct ezfs_verity_info vi;
	char hex[129];
	int fd, err = 0;
	size_t len;

	if (ezfs_builder_verity(b, &vi))
		return 0;
	cli_hex(vi.root, vi.root_size, hex);
	printf("roothash=%s\nhash-offset=%" PRIu64 "\n", hex, vi.hash_offset);
	if (!mv->root_hash_file)
		return 0;
	/* as veritysetup: the hex digits, no newline */
	len = strlen(hex);
	fd = open(mv->root_hash_file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
		  0644);
	if (fd < 0 || write(fd, hex, len) != (ssize_t)len)
		err = errno ? errno : EIO;
	if (fd >= 0 && close(fd) && !err)
		err = errno;
	if (!err)
		return 0;
	cli_error(CMD, "%s: %s", mv->root_hash_file, strerror(err));
	return 1;
}
