/* SPDX-License-Identifier: MIT */
/* lz4.c - LZ4 block codec through liblz4: decode, fast and HC destsize encode. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include <lz4.h>
#include <lz4hc.h>

#include <string.h>

#include <ezfs/ezfs.h>
#include "codec.h"

static int lz4_decompress(void *ctx, const struct ezfs_dreq *rq)
{
	int ret;

	(void)ctx;
	if (rq->inlen > INT_MAX || rq->outlen > INT_MAX)
		return -EOPNOTSUPP;
	if (rq->partial) {
		/* liblz4 1.9.4's partial decoder accepts a match offset of 0
		 * in a corrupt stream and copies output bytes it has not
		 * written yet: start from zeros so that nothing stale (heap
		 * contents) can reach a reader. Found by fuzz.codec. */
		memset(rq->out, 0, rq->outlen);
		ret = LZ4_decompress_safe_partial((const char *)rq->in,
						  (char *)rq->out,
						  (int)rq->inlen,
						  (int)rq->outlen,
						  (int)rq->outlen);
	} else {
		ret = LZ4_decompress_safe((const char *)rq->in,
					  (char *)rq->out, (int)rq->inlen,
					  (int)rq->outlen);
	}
	if (ret < 0 || (size_t)ret != rq->outlen)
		return -EUCLEAN;
	return 0;
}

/* ---- encoding ---- */

struct lz4_cctx {
	int level;
	void *hc_state;   /* lz4hc only */
};

/* liblz4's matches reach 65535 bytes back; refuse a smaller recorded
 * max_distance rather than write streams that break its promise. */
static int lz4_cfg_ok(const struct ezfs_codec_cfg *cfg)
{
	return !cfg || !cfg->lz4_max_distance ||
	       cfg->lz4_max_distance >= 65535;
}

static void *lz4_cctx_new(int level, const struct ezfs_codec_cfg *cfg,
			  int *err)
{
	struct lz4_cctx *c;

	if (level < 0)
		level = 0;
	if (level > 0 || !lz4_cfg_ok(cfg)) {
		*err = -EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		*err = -ENOMEM;
		return NULL;
	}
	*err = 0;
	return c;
}

static void *lz4hc_cctx_new(int level, const struct ezfs_codec_cfg *cfg,
			    int *err)
{
	struct lz4_cctx *c;

	if (level < 0)
		level = LZ4HC_CLEVEL_DEFAULT;
	if (level > LZ4HC_CLEVEL_MAX || !lz4_cfg_ok(cfg)) {
		*err = -EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		goto nomem;
	c->level = level;
	c->hc_state = malloc((size_t)LZ4_sizeofStateHC());
	if (!c->hc_state) {
		free(c);
		goto nomem;
	}
	*err = 0;
	return c;
nomem:
	*err = -ENOMEM;
	return NULL;
}

static void lz4_cctx_free(void *cctx)
{
	struct lz4_cctx *c = cctx;

	if (!c)
		return;
	free(c->hc_state);
	free(c);
}

static int lz4_compress_destsize(void *cctx, const uint8_t *in,
				 size_t *inlen, uint8_t *out, size_t outcap)
{
	struct lz4_cctx *c = cctx;
	int srclen, ret;

	if (!*inlen)
		return -EINVAL;
	srclen = *inlen > LZ4_MAX_INPUT_SIZE ? LZ4_MAX_INPUT_SIZE : (int)*inlen;
	if (outcap > INT_MAX)
		outcap = INT_MAX;
	if (c->hc_state)
		ret = LZ4_compress_HC_destSize(c->hc_state, (const char *)in,
					       (char *)out, &srclen,
					       (int)outcap, c->level);
	else
		ret = LZ4_compress_destSize((const char *)in, (char *)out,
					    &srclen, (int)outcap);
	if (ret <= 0 || srclen <= 0) {
		*inlen = 0;
		return -ENOSPC;
	}
	*inlen = (size_t)srclen;
	return ret;
}

const struct ezfs_codec_ops ezfs_codec_lz4 = {
	.name = "lz4",
	.alg = EZFS_ALG_LZ4,
	.flags = EZFS_CODEC_PARTIAL | EZFS_CODEC_DECODE | EZFS_CODEC_ENCODE,
	.decompress = lz4_decompress,
	.min_level = 0,
	.max_level = 0,
	.default_level = 0,
	.cctx_new = lz4_cctx_new,
	.cctx_free = lz4_cctx_free,
	.compress_destsize = lz4_compress_destsize,
};

const struct ezfs_codec_ops ezfs_codec_lz4hc = {
	.name = "lz4hc",
	.alg = EZFS_ALG_LZ4,
	.flags = EZFS_CODEC_ENCODE,
	.min_level = 0,
	.max_level = LZ4HC_CLEVEL_MAX,
	.default_level = LZ4HC_CLEVEL_DEFAULT,
	.cctx_new = lz4hc_cctx_new,
	.cctx_free = lz4_cctx_free,
	.compress_destsize = lz4_compress_destsize,
};
