/* SPDX-License-Identifier: MIT */
/* bench.c - raw in-memory decode speed of one engine (ezfs accel bench). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/engine.h"

struct chunk {
	uint8_t *z;
	size_t zlen, len;
	const uint8_t *src;
};

static const struct ezfs_codec_ops *engine_named(const char *name)
{
	struct ezfs_engine_info info;
	unsigned i;

	for (i = 0; i < ezfs_engine_count(); i++)
		if (!ezfs_engine_get_info(i, &info) && !strcmp(info.name, name))
			return ezi_codec_find(name);
	return NULL;
}

/* The first encoder of alg (default level). */
static const struct ezfs_codec_ops *encoder_of(int alg)
{
	const struct ezfs_codec_ops *const *p;

	for (p = ezi_codec_all(); *p; p++)
		if ((*p)->alg == alg && ((*p)->flags & EZFS_CODEC_ENCODE) &&
		    (!(*p)->probe || !(*p)->probe()))
			return *p;
	return NULL;
}

/* CPU time of this thread: decoding runs here, and time spent waiting
 * for a CPU on a loaded machine does not count. */
static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int ezfs_engine_bench_raw(const char *engine, const void *data, size_t len,
			  size_t pcluster, unsigned iters, double *mbps,
			  double *ratio)
{
	const struct ezfs_codec_ops *dec = engine_named(engine), *enc;
	struct ezfs_codec_cfg cfg = { 0 };
	struct ezfs_codec_pool *pool = NULL;
	struct chunk *c = NULL;
	const uint8_t *in = data;
	size_t nc = 0, cap = 0, off = 0, zsum = 0, i;
	uint8_t *out = NULL;
	void *cctx = NULL;
	uint64_t t0, t, best = 0;
	unsigned it, wlog;
	int err = 0;

	*mbps = 0;
	if (!dec || !pcluster || !len || !iters)
		return -EINVAL;
	if (dec->probe && dec->probe())
		return -EOPNOTSUPP;
	enc = encoder_of(dec->alg);
	if (!enc)
		return -EOPNOTSUPP;
	/* the stream parameters ezfs mkfs records for this pcluster size */
	cfg.lzma_dict_size = pcluster * 4 < (32u << 10) ? 32u << 10
			     : pcluster * 4 > (8u << 20)
				     ? 8u << 20
				     : (uint32_t)(pcluster * 4);
	wlog = 10;
	while ((2ul << wlog) <=
	       (pcluster * 8 < (1u << 20) ? pcluster * 8 : 1u << 20))
		wlog++;
	cfg.zstd_windowlog = wlog - 10;
	cctx = enc->cctx_new(enc->default_level, &cfg, &err);
	pool = ezi_codec_pool_new(&cfg);
	/* each pcluster decodes to its place in a buffer of the whole data,
	 * as a file read does (not again and again into one hot buffer) */
	out = malloc(len);
	if (!cctx || !pool || !out) {
		err = err ? err : -ENOMEM;
		goto out;
	}
	while (off < len) {
		size_t inlen = len - off;
		int zl;

		if (inlen > pcluster * 32)
			inlen = pcluster * 32;
		if (nc == cap) {
			struct chunk *n;

			cap = cap ? 2 * cap : 64;
			n = realloc(c, cap * sizeof(*c));
			if (!n) {
				err = -ENOMEM;
				goto out;
			}
			c = n;
		}
		c[nc].z = malloc(pcluster);
		if (!c[nc].z) {
			err = -ENOMEM;
			goto out;
		}
		zl = enc->compress_destsize(cctx, in + off, &inlen, c[nc].z,
					    pcluster);
		if (zl < 0) {
			free(c[nc].z);
			err = zl;
			goto out;
		}
		c[nc].zlen = (size_t)zl;
		c[nc].len = inlen;
		c[nc].src = in + off;
		zsum += (size_t)zl;
		off += inlen;
		nc++;
	}
	/* round 0 checks the output and warms up; the fastest of rounds
	 * 1..iters counts (the least disturbed by other load) */
	for (it = 0; it <= iters && !err; it++) {
		t0 = cpu_ns();
		for (i = 0; i < nc && !err; i++) {
			struct ezfs_dreq rq = {
				.in = c[i].z,
				.inlen = c[i].zlen,
				.out = out + (c[i].src - in),
				.outlen = c[i].len,
			};

			err = ezi_codec_decompress_one(pool, dec, &rq);
			if (!err && it == 0 &&
			    memcmp(rq.out, c[i].src, c[i].len))
				err = -EUCLEAN;
		}
		t = cpu_ns() - t0;
		if (it && (!best || t < best))
			best = t;
	}
	if (!err && best)
		*mbps = (double)len / ((double)best / 1e9) / 1e6;
	if (ratio)
		*ratio = zsum ? (double)len / (double)zsum : 0;
out:
	for (i = 0; i < nc; i++)
		free(c[i].z);
	free(c);
	free(out);
	if (cctx)
		enc->cctx_free(cctx);
	ezi_codec_pool_free(pool);
	return err;
}
