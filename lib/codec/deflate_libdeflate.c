/* SPDX-License-Identifier: MIT */
/* deflate_libdeflate.c - raw DEFLATE through libdeflate: fast whole-buffer decode. */
#include <errno.h>
#include <stdlib.h>

#include <libdeflate.h>

#include <ezfs/ezfs.h>
#include "codec.h"

static void *ld_ctx_new(int *err)
{
	struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();

	if (!d) {
		*err = -ENOMEM;
		return NULL;
	}
	*err = 0;
	return d;
}

static void ld_ctx_free(void *ctx)
{
	libdeflate_free_decompressor(ctx);
}

/* libdeflate decodes whole streams only: a partial request goes on to the
 * next codec of the list. */
static int ld_decompress(void *ctx, const struct ezfs_dreq *rq)
{
	enum libdeflate_result r;
	size_t actual_out = 0;

	if (rq->partial)
		return -EOPNOTSUPP;
	r = libdeflate_deflate_decompress_ex(ctx, rq->in, rq->inlen, rq->out,
					     rq->outlen, NULL, &actual_out);
	if (r == LIBDEFLATE_SUCCESS && actual_out == rq->outlen)
		return 0;
	return -EUCLEAN;
}

const struct ezfs_codec_ops ezfs_codec_libdeflate = {
	.name = "libdeflate",
	.alg = EZFS_ALG_DEFLATE,
	.flags = EZFS_CODEC_DECODE,
	.ctx_new = ld_ctx_new,
	.ctx_free = ld_ctx_free,
	.decompress = ld_decompress,
};
