/* SPDX-License-Identifier: MIT */
/*
 * deflate_enc.h - the parts of ezfs' own DEFLATE encoder (RFC 1951):
 * Huffman codes, block costs and the block writer (deflate_huff.c), used by
 * the fixed-output encoder (deflate_fo.c).
 *
 * A parsed block is an array of items: a literal byte (< 256) or a match,
 * (length << 16) | distance with length 3..258 and distance 1..32768.
 */
#ifndef EZFS_CODEC_DEFLATE_ENC_H
#define EZFS_CODEC_DEFLATE_ENC_H

#include <stddef.h>
#include <stdint.h>

#define DFL_NLITLEN 286 /* 0-255 literals, 256 end of block, lengths */
#define DFL_NDIST   30
#define DFL_EOB	    256
#define DFL_MAXBITS 15

#define DFL_ITEM_MATCH(len, dist) (((uint32_t)(len) << 16) | (uint32_t)(dist))
#define DFL_ITEM_LEN(it)	  ((it) >> 16) /* 0: a literal */
#define DFL_ITEM_DIST(it)	  ((it)&0xFFFF)

/* Symbol frequencies of a block (the end-of-block symbol not counted). */
struct dfl_freqs {
	uint32_t lit[DFL_NLITLEN];
	uint32_t dist[DFL_NDIST];
};

/* A block's codes: how it is best sent, and its exact size in bits
 * (header, data and end-of-block, not the alignment of a stored block). */
struct ezi_dfl_plan {
	int dynamic; /* else fixed Huffman codes */
	uint64_t bits;
	uint8_t litlen[DFL_NLITLEN];
	uint8_t distlen[DFL_NDIST];
	/* dynamic: the code lengths as sent (run-length coded) */
	unsigned hlit, hdist, hclen, nrle;
	uint8_t prelen[19];
	uint16_t rle[DFL_NLITLEN + DFL_NDIST]; /* symbol | extra << 5 */
};

/* Length slot (0..28) of a match length 3..258; distance slot (0..29) of
 * a distance 1..32768. */
static inline unsigned dfl_len_slot(unsigned len)
{
	unsigned x = len - 3, b;

	if (x < 8)
		return x;
	if (x == 255)
		return 28;
	b = 31 - (unsigned)__builtin_clz(x);
	return 4 * (b - 1) + ((x >> (b - 2)) & 3);
}

static inline unsigned dfl_dist_slot(unsigned dist)
{
	unsigned x = dist - 1, b;

	if (x < 4)
		return x;
	b = 31 - (unsigned)__builtin_clz(x);
	return 2 * b + ((x >> (b - 1)) & 1);
}

/* Add the items' symbols to f. */
void ezi_dfl_count(struct dfl_freqs *f, const uint32_t *items, size_t n);

/* The cheaper of dynamic and fixed codes for a block with these
 * frequencies; fills p. */
void ezi_dfl_plan(const struct dfl_freqs *f, struct ezi_dfl_plan *p);

/* Bit writer over out[0..cap): LSB first, as DEFLATE packs bits. */
struct dfl_bw {
	uint8_t *out;
	size_t cap, pos; /* bytes written */
	uint64_t acc;
	unsigned nacc; /* bits in acc, < 32 between calls */
	int overflow;
};

static inline uint64_t dfl_bw_bits(const struct dfl_bw *w)
{
	return (uint64_t)w->pos * 8 + w->nacc;
}

/* Write one block of items, planned by ezi_dfl_plan from their frequencies;
 * final sets BFINAL. w->overflow is set if out runs short. */
void ezi_dfl_write_block(struct dfl_bw *w, const struct ezi_dfl_plan *p,
			 const uint32_t *items, size_t n, int final);

/* Flush the last partial byte (zero bits); returns the bytes written, or
 * 0 after an overflow. */
size_t ezi_dfl_bw_finish(struct dfl_bw *w);

#endif
