/* SPDX-License-Identifier: MIT */
/* deflate_libdeflate.c - raw DEFLATE through libdeflate: fast whole-buffer
 * decode. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include <ezfs/ezfs.h>
#include "codec.h"

#ifdef EZFS_HAVE_LIBDEFLATE
#include <libdeflate.h>

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

/* ---- encoding ---- */

struct ld_cctx {
	struct libdeflate_compressor *c;
	struct libdeflate_compressor *c1; /* level 1: aims the trials */
	struct ezfs_fit fit;
};

static long ld_trial(void *arg, const uint8_t *in, size_t len, uint8_t *buf,
		     size_t bufcap)
{
	struct ld_cctx *cc = arg;
	size_t n = libdeflate_deflate_compress(cc->c, in, len, buf, bufcap);

	return n ? (long)n : -EIO; /* cannot happen with bufcap >= bound */
}

static long ld_estimate(void *arg, const uint8_t *in, size_t len, uint8_t *buf,
			size_t bufcap)
{
	struct ld_cctx *cc = arg;
	size_t n = libdeflate_deflate_compress(cc->c1, in, len, buf, bufcap);

	return n ? (long)n : -EIO;
}

static size_t ld_bound(void *arg, size_t len)
{
	struct ld_cctx *cc = arg;

	return libdeflate_deflate_compress_bound(cc->c, len);
}

static void *ld_cctx_new(int level, const struct ezfs_codec_cfg *cfg, int *err)
{
	struct ld_cctx *cc;

	if (level < 0)
		level = 6;
	/* libdeflate always uses a 32 KiB window */
	if (level > 12 ||
	    (cfg && cfg->deflate_windowbits && cfg->deflate_windowbits != 15)) {
		*err = -EINVAL;
		return NULL;
	}
	cc = calloc(1, sizeof(*cc));
	if (!cc)
		goto nomem;
	cc->c = libdeflate_alloc_compressor(level);
	if (!cc->c) {
		free(cc);
		goto nomem;
	}
	cc->fit.trial = ld_trial;
	cc->fit.bound = ld_bound;
	cc->fit.arg = cc;
	/*
	 * Pclusters filled to within 1/256: each trial is a whole
	 * compression, and the last 0.4 % took half of them (256 MiB of text
	 * at level 9, 64 KiB: 52.8 -> 25.3 CPU s; 3.2 trials per pcluster,
	 * 3.6 at 4 KiB; image +0.14 %, still 0.44 % below mkfs.erofs
	 * 1.9.3's kite deflate at the same level).
	 */
	cc->fit.slack_shift = 8;
	/* level 1 runs ~7x faster than 9; below 4 it would cost a trial */
	if (level >= 4) {
		cc->c1 = libdeflate_alloc_compressor(1);
		if (cc->c1)
			cc->fit.estimate = ld_estimate;
	}
	*err = 0;
	return cc;
nomem:
	*err = -ENOMEM;
	return NULL;
}

static void ld_cctx_free(void *cctx)
{
	struct ld_cctx *cc = cctx;

	if (!cc)
		return;
	ezi_codec_fit_free(&cc->fit);
	libdeflate_free_compressor(cc->c);
	libdeflate_free_compressor(cc->c1);
	free(cc);
}

/*
 * libdeflate has no fixed-output mode: ezi_codec_fit() searches the prefix
 * with whole-buffer trials. A stream that starts with a non-final stored
 * block has a 0x00 first byte, which 0padding cannot tell from padding
 * (format notes 9.8); bits 3-7 of that byte pad the stored block header to
 * a byte boundary and every inflater ignores them, so set bit 3.
 */
static int ld_compress_destsize(void *cctx, const uint8_t *in, size_t *inlen,
				uint8_t *out, size_t outcap)
{
	struct ld_cctx *cc = cctx;
	int ret;

	if (outcap > INT_MAX)
		outcap = INT_MAX;
	ret = ezi_codec_fit(&cc->fit, in, inlen, out, outcap);
	if (ret > 0 && out[0] == 0x00)
		out[0] = 0x08;
	return ret;
}

static const char *ld_version(void)
{
	return LIBDEFLATE_VERSION_STRING;
}

const struct ezfs_codec_ops ezi_codec_libdeflate = {
	.name = "libdeflate",
	.alg = EZFS_ALG_DEFLATE,
	.flags = EZFS_CODEC_DECODE | EZFS_CODEC_ENCODE | EZFS_CODEC_FIT,
	.ctx_new = ld_ctx_new,
	.ctx_free = ld_ctx_free,
	.decompress = ld_decompress,
	.min_level = 0,
	.max_level = 12,
	.default_level = 6,
	.cctx_new = ld_cctx_new,
	.cctx_free = ld_cctx_free,
	.compress_destsize = ld_compress_destsize,
	.lib = "libdeflate",
	.version = ld_version,
};
#else /* !EZFS_HAVE_LIBDEFLATE: built without libdeflate */
const struct ezfs_codec_ops ezi_codec_libdeflate =
	EZI_CODEC_STUB("libdeflate", EZFS_ALG_DEFLATE);
#endif
