/* SPDX-License-Identifier: MIT */
/* compress.c - fixed-output compression of one file into pclusters. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "build/internal.h"
#include "format/erofs_fs.h"

bool bld_compress_wanted(const struct ezfs_builder *b, const struct binode *in)
{
	return b->p.alg >= 0 && S_ISREG(in->mode) && in->size > b->blksz;
}

void bld_zfile_free(struct bzfile *z)
{
	if (!z)
		return;
	free(z->ext);
	free(z->data);
	free(z);
}

int bld_zindex_encode(const struct ezfs_builder *b, const struct binode *in,
		      uint8_t *h)
{
	return -EOPNOTSUPP;
}

int bld_zjobs_start(struct ezfs_builder *b)
{
	return 0;
}

int bld_zjobs_take(struct ezfs_builder *b, struct binode *in,
		   struct bzfile **z)
{
	*z = NULL;
	return 0;
}

void bld_zjobs_stop(struct ezfs_builder *b)
{
}
