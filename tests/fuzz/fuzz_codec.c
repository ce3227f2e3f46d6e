/* SPDX-License-Identifier: MIT */
/* fuzz_codec.c - fuzz target: each codec's decompress on raw input. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ezfs/ezfs.h>
#include "codec/codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * Input layout:
 *   byte 0: bits 0-1 algorithm (lz4, lzma, deflate, zstd), bit 2 partial,
 *           bits 3-4 shift of the output length, bit 5: differential check
 *           of every codec of the algorithm
 *   byte 1-2: le16 output length base; outlen = (base + 1) << shift
 *   rest: the compressed stream (leading zero padding already stripped)
 *
 * Checks: no memory error (exact-size buffers), only documented errors,
 * a successful decode does not depend on what the output buffer held
 * before (skipped with FUZZ_IGNORE=stale), and all codecs of an
 * algorithm that succeed agree.
 */
#define MAX_OUT (1u << 20)

static struct ezfs_codec_pool *pool;
static struct ezfs_codec_cfg cfg = {
	.lzma_dict_size = 1u << 20,
	.deflate_windowbits = 15,
	.zstd_windowlog = 10,
	.lz4_max_distance = 65535,
};

static int err_ok(int err)
{
	return err == 0 || err == -EUCLEAN || err == -EOPNOTSUPP ||
	       err == -ENOMEM || err == -EINVAL;
}

/* Run every codec of alg on its own and compare the successful outputs. */
static void differential(int alg, const struct ezfs_dreq *rq,
			 const uint8_t *ref, int ref_err)
{
	const struct ezfs_codec_ops *const *list = ezi_codec_list(alg);
	struct ezfs_dreq one;
	uint8_t *out;
	int i, err;

	if (!list)
		return;
	out = malloc(rq->outlen);
	if (!out)
		return;
	for (i = 0; list[i]; i++) {
		const struct ezfs_codec_ops *c = list[i];
		void *ctx = NULL;

		if (!c->decompress || (c->probe && c->probe()))
			continue;
		if (c->ctx_new) {
			err = 0;
			ctx = c->ctx_new(&err);
			if (!ctx && err)
				continue;
		}
		one = *rq;
		one.out = out;
		one.cfg = &cfg;
		memset(out, 0, rq->outlen);
		err = c->decompress(ctx, &one);
		if (!err_ok(err)) {
			fprintf(stderr, "fuzz: codec %s returned %d\n", c->name,
				err);
			abort();
		}
		if (!err && !ref_err && memcmp(out, ref, rq->outlen)) {
			fprintf(stderr, "fuzz: codec %s decodes differently\n",
				c->name);
			abort();
		}
		if (c->ctx_free)
			c->ctx_free(ctx);
	}
	free(out);
}

/* Decode again into a buffer filled with 0xff: the output must not change. */
static void stale_check(int alg, struct ezfs_dreq *rq, const uint8_t *ref)
{
	uint8_t *again, *keep = rq->out;
	int err;

	if (getenv("FUZZ_IGNORE") && strstr(getenv("FUZZ_IGNORE"), "stale"))
		return;
	again = malloc(rq->outlen);
	if (!again)
		return;
	memset(again, 0xff, rq->outlen);
	rq->out = again;
	err = ezi_codec_decompress_one(pool, ezi_codec_reference(alg), rq);
	rq->out = keep;
	if (!err && memcmp(ref, again, rq->outlen)) {
		fprintf(stderr,
			"fuzz: alg %d%s: the decoded bytes depend on "
			"the old contents of the output buffer\n",
			alg, rq->partial ? " (partial)" : "");
		abort();
	}
	free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ezfs_dreq rq;
	uint8_t *in, *out;
	size_t outlen;
	int alg, err;

	if (size < 3)
		return 0;
	if (!pool) {
		pool = ezi_codec_pool_new(&cfg);
		if (!pool)
			return 0;
	}
	alg = data[0] & 3;
	outlen = ((size_t)(data[1] | data[2] << 8) + 1) << ((data[0] >> 3) & 3);
	if (outlen > MAX_OUT)
		outlen = MAX_OUT;
	/* exact-size copies so that ASan sees any overrun */
	in = malloc(size - 3 ? size - 3 : 1);
	out = malloc(outlen);
	if (!in || !out)
		goto out;
	memcpy(in, data + 3, size - 3);
	memset(&rq, 0, sizeof(rq));
	rq.in = in;
	rq.inlen = size - 3;
	rq.out = out;
	rq.outlen = outlen;
	rq.partial = data[0] & 4;
	memset(out, 0, outlen);
	err = ezi_codec_decompress_one(pool, ezi_codec_reference(alg), &rq);
	if (!err_ok(err)) {
		fprintf(stderr,
			"fuzz: reference decoder of alg %d returned %d\n", alg,
			err);
		abort();
	}
	if (!err)
		stale_check(alg, &rq, out);
	if (data[0] & 0x20)
		differential(alg, &rq, out, err);
out:
	free(in);
	free(out);
	return 0;
}
