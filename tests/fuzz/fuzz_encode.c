/* SPDX-License-Identifier: MIT */
/* fuzz_encode.c - fuzz target: fixed-output encoders, round trip. */
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
 *   byte 0: bits 0-1 encoder (ezdeflate twice as often, libdeflate, lz4hc),
 *           bits 4-7 level (clamped to the encoder's range)
 *   byte 1-2: le16 output capacity base; outcap = base % 70000 + 1
 *   rest: the data, cut into pieces with compress_destsize as mkfs does
 *
 * Checks: no memory error (exact-size output buffers), only documented
 * errors, each piece's length within the capacity, at least one byte
 * consumed unless -ENOSPC, no stream starting with 0x00 (0padding), and
 * every piece decodes to exactly its input.
 */
static struct ezfs_codec_pool *pool;
static const struct ezfs_codec_cfg cfg = {
	.deflate_windowbits = 15,
	.lz4_max_distance = 65535,
};

static void fail(const char *what, const char *codec, size_t pos, int ret)
{
	fprintf(stderr, "fuzz_encode: %s: %s at %zu (ret %d)\n", codec, what,
		pos, ret);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[4] = { "ezdeflate", "ezdeflate",
					      "libdeflate", "lz4hc" };
	const struct ezfs_codec_ops *ops;
	size_t outcap, pos = 0, pieces = 0;
	uint8_t *out, *dec;
	void *cc;
	int level, err;

	if (size < 4)
		return 0;
	if (!pool)
		pool = ezi_codec_pool_new(&cfg);
	ops = ezi_codec_find(names[data[0] & 3]);
	level = data[0] >> 4;
	if (level > ops->max_level)
		level = ops->max_level;
	outcap = (data[1] | (size_t)data[2] << 8) % 70000 + 1;
	data += 3;
	size -= 3;
	cc = ops->cctx_new(level, &cfg, &err);
	if (!cc)
		fail("cctx_new", ops->name, 0, err);
	out = malloc(outcap);
	dec = malloc(size);
	/* a few pieces are enough; tiny capacities would take thousands */
	while (pos < size && out && dec && pieces++ < 24) {
		size_t used = size - pos;
		int ret = ops->compress_destsize(cc, data + pos, &used, out,
						 outcap);
		struct ezfs_dreq rq = { 0 };

		if (ret == -ENOSPC) {
			if (used || outcap >= 64)
				fail("-ENOSPC", ops->name, pos, ret);
			break;
		}
		if (ret == -ENOMEM)
			break;
		if (ret <= 0 || (size_t)ret > outcap || !used ||
		    used > size - pos)
			fail("bad result", ops->name, pos, ret);
		if (!out[0])
			fail("stream starts with 0x00", ops->name, pos, ret);
		rq.in = out;
		rq.inlen = (size_t)ret;
		rq.out = dec;
		rq.outlen = used;
		err = ezi_codec_decompress_one(
			pool, ezi_codec_reference(ops->alg), &rq);
		if (err || memcmp(dec, data + pos, used))
			fail("round trip", ops->name, pos, err);
		pos += used;
	}
	ops->cctx_free(cc);
	free(out);
	free(dec);
	return 0;
}
