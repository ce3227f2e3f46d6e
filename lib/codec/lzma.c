/* SPDX-License-Identifier: MIT */
/* lzma.c - MicroLZMA codec through liblzma: decode and native destsize encode.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include <lzma.h>

#include <ezfs/ezfs.h>
#include "codec.h"

#define LZMA_DICT_MIN 4096u
#define LZMA_DICT_MAX (8u << 20) /* section 3.2 */

static void *lzma_ctx_new(int *err)
{
	lzma_stream *s = malloc(sizeof(*s));

	if (!s) {
		*err = -ENOMEM;
		return NULL;
	}
	*s = (lzma_stream)LZMA_STREAM_INIT;
	*err = 0;
	return s;
}

static void lzma_ctx_free(void *ctx)
{
	lzma_stream *s = ctx;

	if (!s)
		return;
	lzma_end(s);
	free(s);
}

static int lzma_errno(lzma_ret lr)
{
	return lr == LZMA_MEM_ERROR ? -ENOMEM : -EUCLEAN;
}

/*
 * The decoder is re-initialised per request (liblzma keeps its allocations
 * when the dictionary size does not change). It is told the exact input
 * size; a full decode also gets the exact output size, so liblzma checks that
 * the range coder finishes right at in + inlen. A partial decode gets
 * uncomp_size_is_exact = false and stops after outlen bytes.
 */
static int lzma_decompress(void *ctx, const struct ezfs_dreq *rq)
{
	lzma_stream *s = ctx;
	uint32_t dict = rq->cfg ? rq->cfg->lzma_dict_size : 0;
	lzma_ret lr;

	if (!dict) {
		/* matches never reach before the start of the output */
		dict = rq->outlen > LZMA_DICT_MAX ? LZMA_DICT_MAX
						  : (uint32_t)rq->outlen;
	}
	if (dict < LZMA_DICT_MIN)
		dict = LZMA_DICT_MIN;
	lr = lzma_microlzma_decoder(s, rq->inlen, rq->outlen, !rq->partial,
				    dict);
	if (lr != LZMA_OK)
		return lzma_errno(lr);
	s->next_in = rq->in;
	s->avail_in = rq->inlen;
	s->next_out = rq->out;
	s->avail_out = rq->outlen;
	for (;;) {
		size_t in0 = s->avail_in, out0 = s->avail_out;

		lr = lzma_code(s, LZMA_RUN);
		if (lr == LZMA_STREAM_END)
			break;
		if (lr != LZMA_OK)
			return lzma_errno(lr);
		if (s->avail_in == in0 && s->avail_out == out0)
			return -EUCLEAN; /* truncated */
	}
	return s->avail_out == 0 ? 0 : -EUCLEAN;
}

/* ---- encoding ---- */

struct lzma_cctx {
	lzma_stream strm;
	lzma_options_lzma opt;
	uint32_t max_dict; /* what the image records (cfg) */
};

static void *lzma_cctx_new(int level, const struct ezfs_codec_cfg *cfg,
			   int *err)
{
	struct lzma_cctx *c;
	uint32_t preset;

	if (level < 0)
		level = 6;
	if (level <= 9)
		preset = (uint32_t)level;
	else if (level >= 100 && level <= 109)
		preset = (uint32_t)(level - 100) | LZMA_PRESET_EXTREME;
	else
		goto inval;
	if (!cfg || cfg->lzma_dict_size < LZMA_DICT_MIN ||
	    cfg->lzma_dict_size > LZMA_DICT_MAX)
		goto inval;
	c = calloc(1, sizeof(*c));
	if (!c) {
		*err = -ENOMEM;
		return NULL;
	}
	c->strm = (lzma_stream)LZMA_STREAM_INIT;
	if (lzma_lzma_preset(&c->opt, preset)) {
		free(c);
		goto inval;
	}
	c->max_dict = cfg->lzma_dict_size;
	c->opt.dict_size = c->max_dict;
	*err = 0;
	return c;
inval:
	*err = -EINVAL;
	return NULL;
}

static void lzma_cctx_free(void *cctx)
{
	struct lzma_cctx *c = cctx;

	if (!c)
		return;
	lzma_end(&c->strm);
	free(c);
}

/* Each pcluster starts a fresh encoder (below): nothing to forget */
static int lzma_cctx_reset(void *cctx)
{
	(void)cctx;
	return 0;
}

/*
 * The MicroLZMA encoder is liblzma's native fixed-output mode (format notes
 * 9.14): one lzma_code(LZMA_FINISH) encodes as much input as fits in
 * avail_out and reports total_in. It needs at least 6 output bytes.
 *
 * The encoder is re-initialised for every pcluster, and that clears match
 * finder tables sized by the dictionary: with a 1 MiB dictionary and 4 KiB
 * pclusters the clearing took most of the time (3.9 MB/s). A pcluster's
 * matches cannot reach before its own input, which is rarely more than 8 x
 * its output, so the encoder uses min(recorded dict, 8 x outcap, >= 32 KiB)
 * as a power of two; a smaller dictionary than the recorded one is always
 * valid for the decoder.
 */
static int lzma_compress_destsize(void *cctx, const uint8_t *in, size_t *inlen,
				  uint8_t *out, size_t outcap)
{
	struct lzma_cctx *c = cctx;
	lzma_stream *s = &c->strm;
	uint32_t dict;
	lzma_ret lr;

	if (!*inlen)
		return -EINVAL;
	if (outcap < 6) {
		*inlen = 0;
		return -ENOSPC;
	}
	if (outcap > INT_MAX)
		outcap = INT_MAX;
	dict = 32768;
	while (dict < c->max_dict && dict / 8 < outcap)
		dict *= 2;
	c->opt.dict_size = dict < c->max_dict ? dict : c->max_dict;
	lr = lzma_microlzma_encoder(s, &c->opt);
	if (lr != LZMA_OK)
		return lr == LZMA_MEM_ERROR ? -ENOMEM : -EINVAL;
	s->next_in = in;
	s->avail_in = *inlen;
	s->next_out = out;
	s->avail_out = outcap;
	lr = lzma_code(s, LZMA_FINISH);
	if (lr != LZMA_STREAM_END)
		return lr == LZMA_MEM_ERROR ? -ENOMEM : -EINVAL;
	if (!s->total_in || s->total_out > outcap) {
		*inlen = 0;
		return -ENOSPC;
	}
	*inlen = (size_t)s->total_in;
	return (int)s->total_out;
}

static const char *lzma_version(void)
{
	return lzma_version_string();
}

const struct ezfs_codec_ops ezi_codec_lzma = {
	.name = "lzma",
	.alg = EZFS_ALG_LZMA,
	.flags = EZFS_CODEC_PARTIAL | EZFS_CODEC_DECODE | EZFS_CODEC_ENCODE,
	.ctx_new = lzma_ctx_new,
	.ctx_free = lzma_ctx_free,
	.decompress = lzma_decompress,
	.min_level = 0, /* 0..9, and 100..109 = extreme */
	.max_level = 109,
	.default_level = 6,
	.cctx_new = lzma_cctx_new,
	.cctx_free = lzma_cctx_free,
	.cctx_reset = lzma_cctx_reset,
	.compress_destsize = lzma_compress_destsize,
	.lib = "liblzma",
	.version = lzma_version,
};
