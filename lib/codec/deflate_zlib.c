/* SPDX-License-Identifier: MIT */
/* deflate_zlib.c - raw DEFLATE decoding through zlib: the reference codec. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include <zlib.h>

#include <ezfs/ezfs.h>
#include "codec.h"

static void *zlib_ctx_new(int *err)
{
	z_stream *zs = calloc(1, sizeof(*zs));

	if (!zs) {
		*err = -ENOMEM;
		return NULL;
	}
	/* raw deflate; the largest window decodes every valid stream */
	if (inflateInit2(zs, -15) != Z_OK) {
		free(zs);
		*err = -ENOMEM;
		return NULL;
	}
	*err = 0;
	return zs;
}

static void zlib_ctx_free(void *ctx)
{
	z_stream *zs = ctx;

	if (!zs)
		return;
	inflateEnd(zs);
	free(zs);
}

/*
 * inflate() with all input and all output at once returns as soon as either
 * runs out. A full decode must also prove that the stream ends right at
 * outlen: once out is full we give inflate one spare byte; producing it means
 * the stream is too long, reaching Z_STREAM_END means it fits exactly. The
 * loop runs at most twice, so garbage cannot make it spin.
 */
static int zlib_decompress(void *ctx, const struct ezfs_dreq *rq)
{
	z_stream *zs = ctx;
	unsigned char spare;
	bool spilled = false;
	int zr;

	if (rq->inlen > UINT_MAX || rq->outlen > UINT_MAX)
		return -EOPNOTSUPP;
	if (inflateReset(zs) != Z_OK)
		return -EUCLEAN;
	zs->next_in = (Bytef *)rq->in;
	zs->avail_in = (uInt)rq->inlen;
	zs->next_out = rq->out;
	zs->avail_out = (uInt)rq->outlen;
	for (;;) {
		zr = inflate(zs, Z_SYNC_FLUSH);
		if (zr == Z_STREAM_END)
			break;
		if (zr == Z_MEM_ERROR)
			return -ENOMEM;
		if (zr != Z_OK && zr != Z_BUF_ERROR)
			return -EUCLEAN;
		if (zs->avail_out)
			return -EUCLEAN; /* input ran out: truncated */
		if (rq->partial)
			return 0;
		if (spilled)
			return -EUCLEAN; /* decodes to more than outlen */
		spilled = true;
		zs->next_out = &spare;
		zs->avail_out = 1;
	}
	if (spilled)
		return zs->avail_out == 1 ? 0 : -EUCLEAN;
	return zs->avail_out == 0 ? 0 : -EUCLEAN;
}

static const char *zlib_version_(void)
{
	return zlibVersion();
}

const struct ezfs_codec_ops ezi_codec_zlib = {
	.name = "zlib",
	.alg = EZFS_ALG_DEFLATE,
	.flags = EZFS_CODEC_PARTIAL | EZFS_CODEC_DECODE,
	.ctx_new = zlib_ctx_new,
	.ctx_free = zlib_ctx_free,
	.decompress = zlib_decompress,
	.lib = "zlib",
	.version = zlib_version_,
};
