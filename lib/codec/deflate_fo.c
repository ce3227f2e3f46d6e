/* SPDX-License-Identifier: MIT */
/*
 * deflate_fo.c - ezfs' own fixed-output DEFLATE encoder ("ezdeflate"):
 * fills a pcluster with as much input as its raw DEFLATE stream fits in,
 * in one pass.
 *
 * No DEFLATE library can stop at an output size: libdeflate and zlib
 * compress a given input, so filling a pcluster with them takes several
 * whole trial compressions (codec.c, ezi_codec_fit). Here the input is
 * parsed once (hash chains over 4-byte prefixes plus a one-entry table
 * for 3-byte matches; a match is weighed against the one a byte later, at
 * levels 8-9 also two bytes later) into literal and match items; the exact
 * size of the block so far (the cheaper of dynamic and fixed Huffman
 * codes, header included) is recomputed from the symbol frequencies at
 * checkpoints placed at 3/4 of the items that would still fit, and where
 * a checkpoint overshoots, a bisection over the last stretch of items finds
 * the longest prefix that fits. Parsing past the cut is the only waste: a
 * small fraction of the last stretch (~1 % of the input at 4 KiB).
 *
 * Blocks are split greedily: every SPLIT_ITEMS items, the last stretch
 * becomes a block of its own when two blocks cost less than one (text that
 * changes character, binaries with tables).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <ezfs/ezfs.h>
#include "codec.h"
#include "deflate_enc.h"

#define WSIZE	  32768u
#define WMASK	  (WSIZE - 1)
#define H4_BITS	  16
#define H3_BITS	  15
#define MAX_MATCH 258
/* a 3-byte match further back costs more than 3 literals (zlib's rule) */
#define TOO_FAR	    4096
#define SPLIT_ITEMS 8192
#define MAX_IN	    (1u << 30) /* input looked at per call */

/*
 * Per level: chain depth, lazy evaluation below `lazy` (0 = greedy),
 * quarter depth once a match is `good`, stop at `nice`, look two bytes
 * ahead (lazy2). Level 9 on the linux tree's drivers/net, 4K/64K, one CPU:
 * depth 1024 3.04/3.76 s, 256 2.55/2.98 s for 0.03 % more; without lazy2
 * 2.42/2.85 s but 0.15 % more (mkfs.erofs 1.9.3: 2.83/4.56 s, 0.2 % more
 * than depth 256).
 */
static const struct fo_level {
	unsigned depth, lazy, good, nice, lazy2;
} levels[10] = {
	{ 4, 0, 4, 8, 0 },	  { 4, 0, 4, 8, 0 },
	{ 8, 0, 4, 16, 0 },	  { 32, 0, 4, 32, 0 },
	{ 16, 4, 4, 16, 0 },	  { 32, 16, 8, 32, 0 },
	{ 128, 16, 8, 128, 0 },	  { 256, 32, 8, 128, 0 },
	{ 160, 128, 32, 258, 1 }, { 256, 258, 32, 258, 1 },
};

struct fo_cctx {
	const struct fo_level *lv;
	uint32_t *head4, *head3;
	uint32_t *prev; /* WSIZE chain links */
	uint32_t base;	/* stamps of this call: base + position */
	/* the parse of the current call */
	const uint8_t *in;
	size_t n, pos;
	size_t ins; /* positions below are in the tables */
	int done;
	uint32_t *items;
	size_t nitems, items_cap;
	double bpi; /* bits per item seen last */
};

static inline uint32_t load32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static inline uint64_t load64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static inline unsigned hash4(uint32_t v)
{
	return (v * 2654435761u) >> (32 - H4_BITS);
}

/* the first three bytes on a little-endian machine (elsewhere other three:
 * worse candidates, still checked) */
static inline unsigned hash3(uint32_t v)
{
	return ((v << 8) * 2654435761u) >> (32 - H3_BITS);
}

/* Common prefix of a and b, at most max bytes. */
static inline unsigned match_len(const uint8_t *a, const uint8_t *b,
				 unsigned max)
{
	unsigned l = 0;

	while (max - l >= 8) {
		uint64_t x = load64(a + l) ^ load64(b + l);

		if (x) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
			return l + ((unsigned)__builtin_ctzll(x) >> 3);
#else
			return l + ((unsigned)__builtin_clzll(x) >> 3);
#endif
		}
		l += 8;
	}
	while (l < max && a[l] == b[l])
		l++;
	return l;
}

/* Enter position pos into the tables (needs 4 bytes); the position the
 * 3-byte table held goes to *old3 when asked for, and the chain's head
 * (the 4-byte table's) is left in prev[pos & WMASK]. */
static inline void insert(struct fo_cctx *c, size_t pos, uint32_t *old3)
{
	uint32_t v = load32(c->in + pos), st = c->base + (uint32_t)pos;
	unsigned h = hash4(v), h3 = hash3(v);

	c->prev[pos & WMASK] = c->head4[h];
	c->head4[h] = st;
	if (old3)
		*old3 = c->head3[h3];
	c->head3[h3] = st;
}

/*
 * Enter pos and return the longest match there longer than `bar` (0 if
 * none), its distance in *dist.
 */
static unsigned find(struct fo_cctx *c, size_t pos, unsigned depth,
		     unsigned bar, unsigned *dist)
{
	const uint8_t *in = c->in, *p = in + pos;
	size_t avail = c->n - pos;
	unsigned maxlen = avail < MAX_MATCH ? (unsigned)avail : MAX_MATCH;
	uint32_t v, cur, c3, st = c->base + (uint32_t)pos;
	unsigned best = bar, bestd = 0, nice = c->lv->nice;

	if (avail < 4)
		return 0;
	v = load32(p);
	if (avail >= 12) { /* buckets of a position 8 on, ahead of time */
		uint32_t nv = load32(p + 8);

		__builtin_prefetch(&c->head4[hash4(nv)]);
		__builtin_prefetch(&c->head3[hash3(nv)]);
	}
	insert(c, pos, &c3);
	cur = c->prev[pos & WMASK];
	if (best >= maxlen)
		return 0;
	if (best < 3 && c3 >= c->base) {
		size_t d = st - c3;

		if (d <= TOO_FAR && !((load32(in + (c3 - c->base)) ^ v) &
				      (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
					       ? 0xFFFFFFu
					       : 0xFFFFFF00u))) {
			unsigned l = match_len(in + (c3 - c->base), p, maxlen);

			if (l > best) {
				best = l;
				bestd = (unsigned)d;
			}
		}
	}
	if (best >= maxlen)
		depth = 0; /* p[best] below is the next byte */
	while (cur >= c->base && depth--) {
		size_t cpos = cur - c->base, d = pos - cpos;
		const uint8_t *q = in + cpos;

		if (d > WSIZE)
			break;
		if (q[best] == p[best] && load32(q) == v) {
			unsigned l = 4 + match_len(q + 4, p + 4, maxlen - 4);

			if (l > best) {
				best = l;
				bestd = (unsigned)d;
				if (l >= nice || l >= maxlen)
					break;
			}
		}
		if (d == WSIZE)
			break; /* its link slot now holds pos's */
		cur = c->prev[cpos & WMASK];
	}
	if (!bestd)
		return 0;
	if (best == 3 && bestd > TOO_FAR)
		return 0;
	*dist = bestd;
	return best;
}

static int push(struct fo_cctx *c, uint32_t item)
{
	if (c->nitems == c->items_cap) {
		size_t ncap = c->items_cap ? 2 * c->items_cap : 16384;
		uint32_t *p = realloc(c->items, ncap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		c->items = p;
		c->items_cap = ncap;
	}
	c->items[c->nitems++] = item;
	return 0;
}

/* Take the match at c->pos: enter the positions it covers that no
 * lookahead entered yet. */
static int emit_match(struct fo_cctx *c, unsigned len, unsigned dist)
{
	size_t p, end = c->pos + len;

	for (p = c->ins; p < end && c->n - p >= 4; p++)
		insert(c, p, NULL);
	if (c->ins < end)
		c->ins = end;
	c->pos = end;
	return push(c, DFL_ITEM_MATCH(len, dist));
}

/* find() at the next position not entered yet (each position once). */
static unsigned look(struct fo_cctx *c, size_t pos, unsigned depth,
		     unsigned bar, unsigned *dist)
{
	c->ins = pos + 1;
	return find(c, pos, depth, bar, dist);
}

static inline unsigned log2u(unsigned x)
{
	return 31 - (unsigned)__builtin_clz(x);
}

/*
 * Is a match of l2 at distance d2 one byte later worth a literal before
 * it, against l1 at d1 now? Longer wins; as long, it must save at least
 * one distance extra bit (a literal costs about what the later match
 * covers more).
 */
static inline int later_better(unsigned l1, unsigned d1, unsigned l2,
			       unsigned d2)
{
	return l2 > l1 || (l2 == l1 && log2u(d2) < log2u(d1));
}

/*
 * Parse on until `target` items are out or the input ends (c->done).
 * Greedy levels take the longest match at each position; lazy ones first
 * look one byte on (lazy2 levels two) for a better match and emit
 * literals to reach it.
 */
static int parse(struct fo_cctx *c, size_t target)
{
	const struct fo_level *lv = c->lv;
	const uint8_t *in = c->in;
	int err = 0;

	while (c->nitems < target && !err) {
		unsigned len, dist, l2, d2, depth;

		if (c->pos >= c->n) {
			c->done = 1;
			break;
		}
		len = c->pos < c->ins ? 0
				      : look(c, c->pos, lv->depth, 2, &dist);
		if (!len) {
			err = push(c, in[c->pos++]);
			continue;
		}
		while (lv->lazy && len < lv->lazy && c->pos + 1 < c->n) {
			depth = len >= lv->good ? lv->depth >> 2 : lv->depth;
			l2 = look(c, c->pos + 1, depth ? depth : 1, len - 1,
				  &d2);
			if (l2 && later_better(len, dist, l2, d2)) {
				err = push(c, in[c->pos++]);
				len = l2;
				dist = d2;
				continue;
			}
			if (!lv->lazy2 || c->pos + 2 >= c->n)
				break;
			l2 = look(c, c->pos + 2, depth ? depth : 1, len, &d2);
			if (l2 && later_better(len + 1, dist, l2, d2)) {
				err = push(c, in[c->pos++]);
				err = err ? err : push(c, in[c->pos++]);
				len = l2;
				dist = d2;
				continue;
			}
			break;
		}
		if (!err)
			err = emit_match(c, len, dist);
	}
	return err;
}

static void start(struct fo_cctx *c, const uint8_t *in, size_t n)
{
	/* stamps of earlier calls stay below base */
	if (c->base > UINT32_MAX - 2 * MAX_IN - 2) {
		memset(c->head4, 0, sizeof(uint32_t) << H4_BITS);
		memset(c->head3, 0, sizeof(uint32_t) << H3_BITS);
		memset(c->prev, 0, sizeof(uint32_t) * WSIZE);
		c->base = 1;
	} else {
		c->base += (uint32_t)c->n + 1;
	}
	c->in = in;
	c->n = n;
	c->pos = c->nitems = 0;
	c->ins = 0;
	c->done = 0;
}

/* Input bytes covered by items[a..b). */
static size_t span(const uint32_t *items, size_t a, size_t b)
{
	size_t s = 0;

	for (; a < b; a++)
		s += DFL_ITEM_LEN(items[a]) ? DFL_ITEM_LEN(items[a]) : 1;
	return s;
}

/* a -= b, symbol by symbol */
static void freqs_sub(struct dfl_freqs *a, const struct dfl_freqs *b)
{
	unsigned s;

	for (s = 0; s < DFL_NLITLEN; s++)
		a->lit[s] -= b->lit[s];
	for (s = 0; s < DFL_NDIST; s++)
		a->dist[s] -= b->dist[s];
}

static int fo_compress_destsize(void *cctx, const uint8_t *in, size_t *inlen,
				uint8_t *out, size_t outcap)
{
	struct fo_cctx *c = cctx;
	struct dfl_bw w = { .out = out, .cap = outcap };
	struct dfl_freqs f, f0, snap; /* f0: f where the stretch began */
	struct ezi_dfl_plan plan, pa;
	uint64_t cap, fit_bits = 10, seg_bits = 10;
	size_t bstart = 0, checked = 0, segstart = 0, n = *inlen;
	int err;

	if (!n)
		return -EINVAL;
	if (n > MAX_IN)
		n = MAX_IN;
	if (outcap > INT_MAX) /* the length is returned as an int */
		w.cap = INT_MAX;
	cap = (uint64_t)w.cap * 8;
	start(c, in, n);
	memset(&f, 0, sizeof(f));
	f0 = f;
	for (;;) {
		uint64_t room = cap - dfl_bw_bits(&w);
		/* items that would still fit at the last rate: parse 3/4 of
		 * them (1/2 took twice the cost evaluations, 7/8 overshot
		 * more often; either ~4 % slower at 4 KiB) */
		double est = room > fit_bits
				     ? (double)(room - fit_bits) / c->bpi
				     : 0;
		size_t step = (size_t)(est * 0.75) + 16, lo, hi;

		if (step > segstart + SPLIT_ITEMS - checked)
			step = segstart + SPLIT_ITEMS - checked;
		err = parse(c, checked + step);
		if (err)
			return err;
		if (c->nitems == checked && c->done)
			break; /* all of it fits */
		snap = f;
		ezi_dfl_count(&f, c->items + checked, c->nitems - checked);
		ezi_dfl_plan(&f, &plan);
		c->bpi = (double)plan.bits / (double)(c->nitems - bstart);
		if (plan.bits <= room) {
			checked = c->nitems;
			fit_bits = plan.bits;
			if (checked - segstart < SPLIT_ITEMS)
				continue;
			/* split here if the last stretch is better alone */
			if (segstart > bstart) {
				struct ezi_dfl_plan pb;
				struct dfl_freqs seg = f;

				freqs_sub(&seg, &f0);
				ezi_dfl_plan(&seg, &pb);
				if (seg_bits + pb.bits + 64 < plan.bits) {
					ezi_dfl_plan(&f0, &pa);
					ezi_dfl_write_block(
						&w, &pa, c->items + bstart,
						segstart - bstart, 0);
					bstart = segstart;
					f = seg;
					fit_bits = pb.bits;
				}
			}
			segstart = checked;
			seg_bits = fit_bits;
			f0 = f;
			continue;
		}
		/* [checked, nitems) overshoots: the longest prefix that fits;
		 * snap is kept at lo */
		lo = checked;
		hi = c->nitems;
		while (hi - lo > 1) {
			size_t mid = lo + (hi - lo) / 2;
			struct dfl_freqs g = snap;

			ezi_dfl_count(&g, c->items + lo, mid - lo);
			ezi_dfl_plan(&g, &pa);
			if (pa.bits <= room) {
				lo = mid;
				snap = g;
			} else {
				hi = mid;
			}
		}
		f = snap;
		checked = lo;
		break;
	}
	if (!checked) {
		*inlen = 0;
		return -ENOSPC;
	}
	ezi_dfl_plan(&f, &plan);
	ezi_dfl_write_block(&w, &plan, c->items + bstart, checked - bstart, 1);
	if (!ezi_dfl_bw_finish(&w))
		return -EIO; /* a cost went wrong: never written past out */
	*inlen = span(c->items, 0, checked);
	return (int)w.pos;
}

static void fo_cctx_free(void *cctx)
{
	struct fo_cctx *c = cctx;

	if (!c)
		return;
	free(c->head4);
	free(c->head3);
	free(c->prev);
	free(c->items);
	free(c);
}

static void *fo_cctx_new(int level, const struct ezfs_codec_cfg *cfg, int *err)
{
	struct fo_cctx *c;

	if (level < 0)
		level = 6;
	if (level > 9 ||
	    (cfg && cfg->deflate_windowbits && cfg->deflate_windowbits != 15)) {
		*err = -EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		goto nomem;
	c->lv = &levels[level];
	c->head4 = calloc((size_t)1 << H4_BITS, sizeof(uint32_t));
	c->head3 = calloc((size_t)1 << H3_BITS, sizeof(uint32_t));
	c->prev = calloc(WSIZE, sizeof(uint32_t));
	if (!c->head4 || !c->head3 || !c->prev) {
		fo_cctx_free(c);
		goto nomem;
	}
	c->base = 1;
	c->bpi = 6.0;
	*err = 0;
	return c;
nomem:
	*err = -ENOMEM;
	return NULL;
}

const struct ezfs_codec_ops ezi_codec_ezdeflate = {
	.name = "ezdeflate",
	.alg = EZFS_ALG_DEFLATE,
	.flags = EZFS_CODEC_ENCODE,
	.min_level = 0,
	.max_level = 9,
	.default_level = 6,
	.cctx_new = fo_cctx_new,
	.cctx_free = fo_cctx_free,
	.compress_destsize = fo_compress_destsize,
};
