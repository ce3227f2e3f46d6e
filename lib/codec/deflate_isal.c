/* SPDX-License-Identifier: MIT */
/* deflate_isal.c - raw DEFLATE decoding through ISA-L's isal_inflate. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include <isa-l/igzip_lib.h>
#if __has_include(<isa-l.h>)
#include <isa-l.h> /* ISAL_MAJOR_VERSION... */
#endif

#include <ezfs/ezfs.h>
#include "codec.h"

static void *isal_ctx_new(int *err)
{
	struct inflate_state *st = malloc(sizeof(*st));

	if (!st) {
		*err = -ENOMEM;
		return NULL;
	}
	isal_inflate_init(st);
	*err = 0;
	return st;
}

static void isal_ctx_free(void *ctx)
{
	free(ctx);
}

/*
 * Same shape as the zlib codec: decode into out; a full decode that fills out
 * gets one spare byte to prove that the stream ends there. isal_inflate()
 * returns when input or output runs out, so a call that moves nothing means
 * truncated input; the iteration bound is a second guard against spinning.
 */
static int isal_decompress(void *ctx, const struct ezfs_dreq *rq)
{
	struct inflate_state *st = ctx;
	uint8_t spare;
	bool spilled = false;
	int i, ret;

	if (rq->inlen > UINT32_MAX || rq->outlen > UINT32_MAX)
		return -EOPNOTSUPP;
	isal_inflate_reset(st);
	st->crc_flag = ISAL_DEFLATE;
	st->hist_bits = 0;
	st->next_in = (uint8_t *)rq->in;
	st->avail_in = (uint32_t)rq->inlen;
	st->next_out = rq->out;
	st->avail_out = (uint32_t)rq->outlen;
	for (i = 0; i < 64; i++) {
		uint32_t in0 = st->avail_in, out0 = st->total_out;
		int state0 = st->block_state;

		ret = isal_inflate(st);
		/*
		 * On an error isal_inflate() may still report a full output
		 * whose tail is stale bytes of its internal buffer (found by
		 * fuzz_codec: ISAL_INVALID_LOOKBACK with avail_out 0), so an
		 * error is an error even for a partial request; the reference
		 * engine then decodes what prefix there is.
		 */
		if (ret < 0 || ret == ISAL_NEED_DICT)
			return -EUCLEAN;
		if (rq->partial && !spilled && st->avail_out == 0)
			return 0;
		if (st->block_state == ISAL_BLOCK_FINISH)
			break;
		if (st->avail_out == 0) {
			if (rq->partial)
				return 0;
			if (spilled)
				return -EUCLEAN;
			spilled = true;
			st->next_out = &spare;
			st->avail_out = 1;
			continue;
		}
		if (st->avail_in == in0 && st->total_out == out0 &&
		    (int)st->block_state == state0)
			return -EUCLEAN; /* no progress: truncated */
	}
	if (st->block_state != ISAL_BLOCK_FINISH)
		return -EUCLEAN;
	if (spilled)
		return st->avail_out == 1 ? 0 : -EUCLEAN;
	return st->avail_out == 0 ? 0 : -EUCLEAN;
}

#define ISAL_STR_(x) #x
#define ISAL_STR(x)  ISAL_STR_(x)
static const char *isal_version(void)
{
#ifdef ISAL_MAJOR_VERSION
	return ISAL_STR(ISAL_MAJOR_VERSION) "." ISAL_STR(
		ISAL_MINOR_VERSION) "." ISAL_STR(ISAL_PATCH_VERSION);
#else
	return NULL;
#endif
}

const struct ezfs_codec_ops ezi_codec_isal = {
	.name = "isal",
	.alg = EZFS_ALG_DEFLATE,
	.flags = EZFS_CODEC_PARTIAL | EZFS_CODEC_DECODE,
	.ctx_new = isal_ctx_new,
	.ctx_free = isal_ctx_free,
	.decompress = isal_decompress,
	.lib = "libisal",
	.version = isal_version,
};
