/* SPDX-License-Identifier: MIT */
/* lz4.c - LZ4 block codec through liblz4: decode, fast and HC destsize encode.
 */
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
		ret = LZ4_decompress_safe_partial(
			(const char *)rq->in, (char *)rq->out, (int)rq->inlen,
			(int)rq->outlen, (int)rq->outlen);
	} else {
		ret = LZ4_decompress_safe((const char *)rq->in, (char *)rq->out,
					  (int)rq->inlen, (int)rq->outlen);
	}
	if (ret < 0 || (size_t)ret != rq->outlen)
		return -EUCLEAN;
	return 0;
}

/* ---- encoding ---- */

struct lz4_cctx {
	int level;
	void *hc_state; /* lz4hc only */
};

/* liblz4's matches reach 65535 bytes back; refuse a smaller recorded
 * max_distance rather than write streams that break its promise. */
static int lz4_cfg_ok(const struct ezfs_codec_cfg *cfg)
{
	return !cfg || !cfg->lz4_max_distance || cfg->lz4_max_distance >= 65535;
}

static void *lz4_cctx_new(int level, const struct ezfs_codec_cfg *cfg, int *err)
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

/* LZ4_compress_HC_destSize starts every call from a clean state */
static int lz4_cctx_reset(void *cctx)
{
	(void)cctx;
	return 0;
}

static int lz4_destsize_once(struct lz4_cctx *c, const uint8_t *in, int *srclen,
			     uint8_t *out, int outcap)
{
	if (c->hc_state)
		return LZ4_compress_HC_destSize(c->hc_state, (const char *)in,
						(char *)out, srclen, outcap,
						c->level);
	return LZ4_compress_destSize((const char *)in, (char *)out, srclen,
				     outcap);
}

/*
 * Both destSize encoders look for matches through all of the input they
 * are given, also once the output is full of literals: on incompressible
 * data their time grows with the input, not with what they take (lz4hc-9,
 * 4 KiB out: 0.02 ms for 4 KiB in, 1.2 ms for 1 MiB; mkfs of 64 MiB of
 * random bytes at 4K took 21 CPU s, as mkfs.erofs 1.9.3). So where
 * lz4hc gets small pclusters of data that lz4's fast mode hardly
 * compresses, it is given LZ4_PEEK times the output size first, 8 times
 * more while it takes all of it, then everything. Given the same bytes
 * it stops at the same place as with all the input (checked over 18k
 * pclusters of text), and which input it gets depends on the data alone.
 */
#define LZ4_PEEK	8
#define LZ4_PEEK_MAXCAP 16384

/*
 * Does lz4's fast mode gain less than 1/8 on the first outcap bytes?
 * Only then is the input cut short: where text compresses better than 8:1
 * (register tables in the linux tree) a first try on a cut input was
 * wasted (256 MiB of its sources, lz4hc-12 4K: 7.0 -> 9.0 CPU s).
 * out is scratch here.
 */
static int lz4_poor(const uint8_t *in, int srclen, uint8_t *out, size_t outcap)
{
	/* it too would scan all the input for matches */
	int took = srclen < 2 * (int)outcap ? srclen : 2 * (int)outcap;

	/* a skewed first KiB (text: chi2 in the thousands) compresses: no
	 * need to ask lz4 (that cost lz4hc-12 4K on text 3 % of its time) */
	if (ezfs_byte_chi2(in, took < 1024 ? (size_t)took : 1024) > 1000)
		return 0;
	return LZ4_compress_destSize((const char *)in, (char *)out, &took,
				     (int)outcap) > 0 &&
	       (size_t)took < outcap + outcap / 8;
}

static int lz4_compress_destsize(void *cctx, const uint8_t *in, size_t *inlen,
				 uint8_t *out, size_t outcap)
{
	struct lz4_cctx *c = cctx;
	int srclen, ret;

	if (!*inlen)
		return -EINVAL;
	srclen = *inlen > LZ4_MAX_INPUT_SIZE ? LZ4_MAX_INPUT_SIZE : (int)*inlen;
	if (outcap > INT_MAX / LZ4_PEEK)
		outcap = INT_MAX / LZ4_PEEK;
	if (c->hc_state && outcap <= LZ4_PEEK_MAXCAP &&
	    srclen > (int)outcap * LZ4_PEEK &&
	    lz4_poor(in, srclen, out, outcap)) {
		int peek;

		for (peek = (int)outcap * LZ4_PEEK; peek < srclen;
		     peek *= LZ4_PEEK) {
			int took = peek;

			ret = lz4_destsize_once(c, in, &took, out, (int)outcap);
			if (ret > 0 && took > 0 && took < peek) {
				*inlen = (size_t)took;
				return ret;
			}
			if (peek > INT_MAX / LZ4_PEEK)
				break;
		}
	}
	ret = lz4_destsize_once(c, in, &srclen, out, (int)outcap);
	if (ret <= 0 || srclen <= 0) {
		*inlen = 0;
		return -ENOSPC;
	}
	*inlen = (size_t)srclen;
	return ret;
}

static const char *lz4_version(void)
{
	return LZ4_versionString();
}

const struct ezfs_codec_ops ezi_codec_lz4 = {
	.name = "lz4",
	.alg = EZFS_ALG_LZ4,
	.flags = EZFS_CODEC_PARTIAL | EZFS_CODEC_DECODE | EZFS_CODEC_ENCODE,
	.decompress = lz4_decompress,
	.min_level = 0,
	.max_level = 0,
	.default_level = 0,
	.cctx_new = lz4_cctx_new,
	.cctx_free = lz4_cctx_free,
	.cctx_reset = lz4_cctx_reset,
	.compress_destsize = lz4_compress_destsize,
	.lib = "liblz4",
	.version = lz4_version,
};

const struct ezfs_codec_ops ezi_codec_lz4hc = {
	.name = "lz4hc",
	.alg = EZFS_ALG_LZ4,
	.flags = EZFS_CODEC_ENCODE,
	.min_level = 0,
	.max_level = LZ4HC_CLEVEL_MAX,
	.default_level = LZ4HC_CLEVEL_DEFAULT,
	.cctx_new = lz4hc_cctx_new,
	.cctx_free = lz4_cctx_free,
	.cctx_reset = lz4_cctx_reset,
	.compress_destsize = lz4_compress_destsize,
	.lib = "liblz4",
	.version = lz4_version,
};
