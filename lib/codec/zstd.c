/* SPDX-License-Identifier: MIT */
/* zstd.c - Zstandard codec through libzstd: streaming decode, destsize encode.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include <ezfs/ezfs.h>
#include "codec.h"

#ifdef EZFS_HAVE_ZSTD
#include <zstd.h>
#include <zstd_errors.h>

static void *zstd_ctx_new(int *err)
{
	ZSTD_DCtx *d = ZSTD_createDCtx();

	if (!d) {
		*err = -ENOMEM;
		return NULL;
	}
	*err = 0;
	return d;
}

static void zstd_ctx_free(void *ctx)
{
	ZSTD_freeDCtx(ctx);
}

static int zstd_errno(size_t r)
{
	return ZSTD_getErrorCode(r) == ZSTD_error_memory_allocation ? -ENOMEM
								    : -EUCLEAN;
}

/* log2 of the largest window the image allows (section 3.2), clamped to
 * what this libzstd accepts. */
static int zstd_window_log(const struct ezfs_codec_cfg *cfg)
{
	ZSTD_bounds b = ZSTD_dParam_getBounds(ZSTD_d_windowLogMax);
	int wlog = (cfg ? (int)cfg->zstd_windowlog : 0) + 10;

	if (!ZSTD_isError(b.error)) {
		if (wlog < b.lowerBound)
			wlog = b.lowerBound;
		if (wlog > b.upperBound)
			wlog = b.upperBound;
	}
	return wlog;
}

/*
 * The window a frame declares (zstd format, frame header): the Window
 * Descriptor, or the content size for a single-segment frame. 0 if the
 * header is too short or not a zstd frame; the decoder then reports that.
 */
static uint64_t zstd_frame_window(const uint8_t *in, size_t inlen)
{
	static const uint8_t did_bytes[4] = { 0, 1, 2, 4 };
	static const uint8_t fcs_bytes[4] = { 0, 2, 4, 8 };
	unsigned fhd, fcs_len, pos = 5;
	uint64_t fcs = 0;
	unsigned i;

	if (inlen < 6 || in[0] != 0x28 || in[1] != 0xb5 || in[2] != 0x2f ||
	    in[3] != 0xfd)
		return 0;
	fhd = in[4];
	if (!(fhd & 0x20)) {
		unsigned wd = in[5], wlog = 10 + (wd >> 3);
		uint64_t base = 1ull << wlog;

		return base + (base >> 3) * (wd & 7);
	}
	pos += did_bytes[fhd & 3];
	fcs_len = fcs_bytes[fhd >> 6];
	if (!fcs_len)
		fcs_len = 1; /* single segment: a 1-byte content size */
	if (inlen < pos + fcs_len)
		return 0;
	for (i = 0; i < fcs_len; i++)
		fcs |= (uint64_t)in[pos + i] << (8 * i);
	if (fcs_len == 2)
		fcs += 256;
	return fcs < 1024 ? 1024 : fcs;
}

/*
 * ZSTD_decompressStream() into out: it stops when out is full, which gives
 * partial decoding. A full decode must see the frame end (return 0) with
 * out exactly full and all input consumed; if out fills before the frame
 * ends, one spare output byte tells "too long" from "only the epilogue
 * left". Every round must move input or output, so garbage cannot spin.
 */
static int zstd_decompress(void *ctx, const struct ezfs_dreq *rq)
{
	ZSTD_DCtx *d = ctx;
	ZSTD_inBuffer in = { rq->in, rq->inlen, 0 };
	ZSTD_outBuffer out = { rq->out, rq->outlen, 0 };
	uint8_t spare;
	bool spilled = false;
	int wlog = zstd_window_log(rq->cfg);
	size_t r;

	/*
	 * libzstd checks the window only when it streams: when out holds the
	 * whole frame it decodes in one pass and skips the check. Check here
	 * so that full and partial decodes (and the kernel) agree.
	 */
	if (zstd_frame_window(rq->in, rq->inlen) > (1ull << wlog))
		return -EUCLEAN;
	r = ZSTD_DCtx_reset(d, ZSTD_reset_session_only);
	if (ZSTD_isError(r))
		return -EUCLEAN;
	r = ZSTD_DCtx_setParameter(d, ZSTD_d_windowLogMax, wlog);
	if (ZSTD_isError(r))
		return -EUCLEAN;
	for (;;) {
		size_t in0 = in.pos, out0 = out.pos;

		r = ZSTD_decompressStream(d, &out, &in);
		if (ZSTD_isError(r))
			return zstd_errno(r);
		if (r == 0)
			break; /* frame complete */
		if (out.pos == out.size) {
			if (rq->partial)
				return 0;
			if (spilled)
				return -EUCLEAN; /* too long */
			spilled = true;
			out = (ZSTD_outBuffer){ &spare, 1, 0 };
			continue;
		}
		if (in.pos == in0 && out.pos == out0)
			return -EUCLEAN; /* truncated */
	}
	if (spilled)
		return out.pos == 0 && in.pos == in.size ? 0 : -EUCLEAN;
	if (out.pos != rq->outlen)
		return -EUCLEAN;
	if (!rq->partial && in.pos != in.size)
		return -EUCLEAN; /* trailing bytes after the frame */
	return 0;
}

/* ---- encoding ---- */

struct zstd_cctx {
	ZSTD_CCtx *c;
	struct ezfs_fit fit;
};

static long zstd_trial(void *arg, const uint8_t *in, size_t len, uint8_t *buf,
		       size_t bufcap)
{
	struct zstd_cctx *cc = arg;
	size_t r = ZSTD_compress2(cc->c, buf, bufcap, in, len);

	if (ZSTD_isError(r))
		return zstd_errno(r) == -ENOMEM ? -ENOMEM : -EIO;
	return (long)r;
}

static size_t zstd_bound(void *arg, size_t len)
{
	(void)arg;
	return ZSTD_compressBound(len);
}

/*
 * The frame's window must stay within what the image records (cfg), so
 * cfg is required. Frames are one-shot (ZSTD_compress2): the content size
 * is in the header, no checksum.
 */
static void *zstd_cctx_new(int level, const struct ezfs_codec_cfg *cfg,
			   int *err)
{
	struct zstd_cctx *cc;
	size_t r;

	if (level < 0)
		level = ZSTD_CLEVEL_DEFAULT;
	if (!cfg || cfg->zstd_windowlog > 10 || level > ZSTD_maxCLevel()) {
		*err = -EINVAL;
		return NULL;
	}
	cc = calloc(1, sizeof(*cc));
	if (!cc)
		goto nomem;
	cc->c = ZSTD_createCCtx();
	if (!cc->c) {
		free(cc);
		goto nomem;
	}
	r = ZSTD_CCtx_setParameter(cc->c, ZSTD_c_compressionLevel, level);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(cc->c, ZSTD_c_windowLog,
					   (int)cfg->zstd_windowlog + 10);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(cc->c, ZSTD_c_checksumFlag, 0);
	if (ZSTD_isError(r)) {
		ZSTD_freeCCtx(cc->c);
		free(cc);
		*err = -EINVAL;
		return NULL;
	}
	cc->fit.trial = zstd_trial;
	cc->fit.bound = zstd_bound;
	cc->fit.arg = cc;
	*err = 0;
	return cc;
nomem:
	*err = -ENOMEM;
	return NULL;
}

static void zstd_cctx_free(void *cctx)
{
	struct zstd_cctx *cc = cctx;

	if (!cc)
		return;
	ezi_codec_fit_free(&cc->fit);
	ZSTD_freeCCtx(cc->c);
	free(cc);
}

/* libzstd has no fixed-output mode: search with ezi_codec_fit(). A frame
 * starts with its magic, never with 0x00. */
static int zstd_compress_destsize(void *cctx, const uint8_t *in, size_t *inlen,
				  uint8_t *out, size_t outcap)
{
	struct zstd_cctx *cc = cctx;

	if (outcap > INT_MAX)
		outcap = INT_MAX;
	return ezi_codec_fit(&cc->fit, in, inlen, out, outcap);
}

static const char *zstd_version(void)
{
	return ZSTD_versionString();
}

const struct ezfs_codec_ops ezi_codec_zstd = {
	.name = "zstd",
	.alg = EZFS_ALG_ZSTD,
	.flags = EZFS_CODEC_PARTIAL | EZFS_CODEC_DECODE | EZFS_CODEC_ENCODE,
	.ctx_new = zstd_ctx_new,
	.ctx_free = zstd_ctx_free,
	.decompress = zstd_decompress,
	.min_level = 1,
	.max_level = 22,
	.default_level = ZSTD_CLEVEL_DEFAULT,
	.cctx_new = zstd_cctx_new,
	.cctx_free = zstd_cctx_free,
	.compress_destsize = zstd_compress_destsize,
	.lib = "libzstd",
	.version = zstd_version,
};
#else /* !EZFS_HAVE_ZSTD: built without libzstd */
static void *zstd_stub_cctx_new(int level, const struct ezfs_codec_cfg *cfg,
				int *err)
{
	*err = -EOPNOTSUPP;
	return NULL;
}

static void zstd_stub_cctx_free(void *cctx)
{
}

static int zstd_stub_compress(void *cctx, const uint8_t *in, size_t *inlen,
			      uint8_t *out, size_t outcap)
{
	return -EOPNOTSUPP;
}

const struct ezfs_codec_ops ezi_codec_zstd = {
	.name = "zstd",
	.alg = EZFS_ALG_ZSTD,
	.cctx_new = zstd_stub_cctx_new,
	.cctx_free = zstd_stub_cctx_free,
	.compress_destsize = zstd_stub_compress,
};
#endif
