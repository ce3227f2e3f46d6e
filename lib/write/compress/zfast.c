/* SPDX-License-Identifier: MIT */
/*
 * zfast.c - a cheap test that a file's rest belongs in the packed inode.
 *
 * With fragments, a rest that the configured codec compresses into less
 * than one pcluster becomes a fragment, and its bytes are compressed again
 * in the packed inode. Finding that out with the configured codec costs a
 * whole compression that is then thrown away: lz4hc-12 on the linux tree
 * compressed 293 MB (2,348 files) twice, a quarter of all its CPU time.
 * lz4's fast mode runs at several hundred MB/s, and every other codec here
 * (lz4hc, deflate, zstd and lzma at a level that compresses at all) packs
 * at least as tightly, so a rest that lz4 fits into the pcluster is a
 * fragment for them too. Only a rest that lz4 does not fit gets the real
 * test.
 *
 * The same holds for a whole lz4hc file that lz4's fast mode already
 * packs into one block: a pcluster is a whole number of blocks, and no
 * encoding of a non-empty file takes less than one, so the slow search
 * cannot make the image smaller. Its fast stream (the same lz4 format)
 * is kept. Most files of a source tree are this small: on the linux
 * tree this saves lz4hc-12 at 64 KiB 3.5 % of its CPU time.
 *
 * And the other way round: for lz4hc and deflate, bytes whose histogram
 * is as flat as random bytes' and that hold no repeats are stored raw
 * without running the encoder over them (ezi_bld_random_fast): neither can
 * gain a byte there. Compressed media in a tree otherwise cost deflate-9
 * ~60 MB/s per CPU and lz4hc on small pclusters far more, for nothing.
 */
#include <string.h>

#include <lz4.h>

#include "write/internal.h"
#include "codec/codec.h"

static bool stronger_than_lz4(const struct ezfs_build_zalg *za)
{
	switch (za->alg) {
	case EZFS_ALG_LZ4:
		return za->hc; /* lz4 itself: the real test costs as much */
	case EZFS_ALG_DEFLATE:
	case EZFS_ALG_ZSTD:
		return za->level != 0; /* libdeflate 0 only stores */
	case EZFS_ALG_LZMA:
		return true;
	}
	return false;
}

bool ezi_bld_fits_fast(const struct ezfs_builder *b, unsigned zalg,
		       const uint8_t *src, size_t len, uint32_t cap,
		       uint8_t *tmp)
{
	if (!stronger_than_lz4(&b->zalgs[zalg]) ||
	    len > (size_t)LZ4_MAX_INPUT_SIZE || cap < 2)
		return false;
	/* 0: it did not fit in cap - 1 bytes */
	return LZ4_compress_default((const char *)src, (char *)tmp, (int)len,
				    (int)cap - 1) > 0;
}

int ezi_bld_one_block_fast(const struct ezfs_builder *b, unsigned zalg,
			   const uint8_t *src, size_t len, uint8_t *dst)
{
	const struct ezfs_build_zalg *za = &b->zalgs[zalg];

	if (za->alg != EZFS_ALG_LZ4 || !za->hc ||
	    len > (size_t)LZ4_MAX_INPUT_SIZE)
		return 0;
	return LZ4_compress_default((const char *)src, (char *)dst, (int)len,
				    (int)b->blksz);
}

/*
 * Repeats of 5 bytes or more in src[0, n), looked for at every position
 * through a table of the last position of each 5-byte hash (random bytes
 * give about n^2 / 2^41 by chance: one at 1 MiB). lz4's fast mode is no
 * test for this: on incompressible data it skips ahead faster and faster
 * and misses the few repeats there are (a gzip member's header in a
 * concatenation of .gz files, which zstd and lzma then take).
 */
static size_t repeats5(const uint8_t *src, size_t n)
{
	uint32_t pos[4096] = { 0 }; /* last position + 1 of each hash */
	size_t i, hits = 0;

	for (i = 0; i + 8 <= n; i++) {
		uint64_t v;
		unsigned h;

		memcpy(&v, src + i, 8);
		v &= 0xFFFFFFFFFFull; /* 5 bytes (little-endian; elsewhere
				       * other 5: still a test of repeats) */
		h = (unsigned)((v * 0x9E3779B97F4A7C15ull) >> 52);
		if (pos[h]) {
			uint64_t w;

			memcpy(&w, src + pos[h] - 1, 8);
			hits += (w & 0xFFFFFFFFFFull) == v;
		}
		pos[h] = (uint32_t)i + 1;
	}
	return hits;
}

bool ezi_bld_random_fast(const struct ezfs_builder *b, unsigned zalg,
			 const uint8_t *src, size_t n)
{
	const struct ezfs_build_zalg *za = &b->zalgs[zalg];

	/*
	 * For lz4hc and deflate only: chi2 <= 300 bounds what an order-0
	 * code gains to 54 bytes, less than a deflate literal table costs
	 * (lz4 codes literals raw), and with no repeats there is nothing for
	 * matches to take. Random bytes pass 97 % of the time; the rest go
	 * the usual way. zstd and lzma model more than that (lzma codes
	 * literals in the context of the byte before): on a concatenation of
	 * .gz files they saved a few blocks that this test would have thrown
	 * away (lzma-6 64K: 3 blocks more than mkfs.erofs 1.9.3).
	 */
	if (!stronger_than_lz4(za) ||
	    (za->alg != EZFS_ALG_LZ4 && za->alg != EZFS_ALG_DEFLATE))
		return false;
	/* the first KiB rules out text at once (random bytes: 255 +- 23
	 * there too), so that it costs compressible data next to nothing
	 * (the whole histogram cost lz4hc-12 4K on text 4 % of its time) */
	return n >= 4096 && n <= UINT32_MAX &&
	       ezfs_byte_chi2(src, 1024) <= 600 &&
	       ezfs_byte_chi2(src, n) <= 300 &&
	       repeats5(src, n) <= 2 + n / (1u << 20);
}
